"""Adapters: execute core plans against Kubernetes and kcp with lightkube."""
