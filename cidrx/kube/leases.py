"""The `coordination.k8s.io/v1` Lease calls of the plan lock (cidrx.engine.lock.LeaseClient) over KubeApi.

Why it exists: the engine's lock decides who holds a plan, and must not import the Kubernetes client; this
adapter turns the client's 409 answers into the lock's "someone else wrote it" (None) results, and a write the
cluster failed in a way that may or may not have taken effect (5xx, 429, a broken connection) into
RetriesExhausted, which the lock answers by re-reading the Lease rather than by exit 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cidrx.errors import CloudError, RetriesExhausted
from cidrx.kube.api import KubeApi, classify
from cidrx.kube.errors import AlreadyExists, Conflict, NotFound
from cidrx.transport.retry import RETRY_LATER_HINT

JSON = dict[str, Any]
LEASE = ("coordination.k8s.io", "v1", "leases", "Lease")


def _uncertain(exc: CloudError) -> RetriesExhausted | None:
    """RetriesExhausted for a write failure the cluster may recover from, else None (a real refusal)."""
    cause = exc.__cause__
    if cause is None or classify(cause, write=False) is None:
        return None
    return RetriesExhausted(exc.message, hint=RETRY_LATER_HINT)


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    try:
        yield
    except (Conflict, NotFound):
        raise
    except CloudError as exc:
        uncertain = _uncertain(exc)
        if uncertain is None:
            raise
        raise uncertain from exc


class KubeLeases:
    def __init__(self, kube: KubeApi) -> None:
        self.kube = kube

    def get(self, namespace: str, name: str) -> JSON | None:
        return self.kube.get_custom(*LEASE[:3], name, namespace)

    def create(self, namespace: str, body: JSON) -> JSON | None:
        try:
            with _writing():
                return self.kube.create_custom(
                    *LEASE, {**body, "metadata": {**body["metadata"], "namespace": namespace}}
                )
        except AlreadyExists:
            return None

    def replace(self, body: JSON) -> JSON | None:
        try:
            with _writing():
                return self.kube.replace_custom(*LEASE[:3], body)
        except Conflict:
            return None

    def delete(self, namespace: str, name: str, resource_version: str) -> None:
        # Conflict: renewed by someone who took it over; NotFound: gone. Either way not ours to delete any more.
        with contextlib.suppress(Conflict, NotFound), _writing():
            self.kube.delete_custom(*LEASE[:3], name, namespace, resource_version=resource_version or None)
