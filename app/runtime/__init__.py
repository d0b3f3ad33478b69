"""The daemon's runtime primitives: work queues, informer caches and leader election.

They know nothing about PublishedResources or plans; controllers are built on top of them.
"""
