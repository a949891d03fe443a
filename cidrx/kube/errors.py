"""The errors the Kubernetes client raises, for the code that catches them (steps, leases, collection).

Why it exists: callers that only need to tell a lost race (`Conflict`) or a missing object (`NotFound`) from
other failures should not load the client, and kubeconfig resolution raises `KubeUnavailable` too.
"""

from __future__ import annotations

from cidrx.errors import AccessDenied, CloudError


class KubeUnavailable(AccessDenied):
    """No Kubernetes configuration, or the API server cannot be reached (collection degrades, never fails)."""


class Conflict(CloudError):
    """A write lost a race: stale resourceVersion, failed delete precondition, or the object already exists."""


class AlreadyExists(Conflict):
    """Create of an object whose name is taken."""


class PatchTestFailed(Conflict):
    """A JSON patch was rejected with 422: a `test` op failed (or a path it touches no longer exists)."""


class NotFound(CloudError):
    """The object (or the whole resource type) does not exist."""


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters: how the client quotes a failure in a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
