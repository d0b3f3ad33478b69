"""What is fixed for every object of one PublishedResource while its objects are planned.

Its own module so that reading (`gather.py`) and deciding (`plan.py`) can both use it without
importing each other.
"""

from __future__ import annotations

from attrs import frozen

from servlet.core.model import PublishedResource, ServletIdentity
from servlet.core.projection import Projected

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["SyncContext"]


@frozen
class SyncContext:
    """The servlet, the PublishedResource and its projection."""

    servlet: ServletIdentity
    published: PublishedResource
    projected: Projected
