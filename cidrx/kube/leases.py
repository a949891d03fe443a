"""The `coordination.k8s.io/v1` Lease calls of the plan lock (cidrx.engine.lock.LeaseClient) over KubeApi.

Why it exists: the engine's lock decides who holds a plan, and must not import the Kubernetes client; this
adapter turns the client's 409 answers into the lock's "someone else wrote it" (None) results.
"""

from __future__ import annotations

import contextlib
from typing import Any

from cidrx.kube.api import KubeApi
from cidrx.kube.errors import AlreadyExists, Conflict, NotFound

JSON = dict[str, Any]
LEASE = ("coordination.k8s.io", "v1", "leases", "Lease")


class KubeLeases:
    def __init__(self, kube: KubeApi) -> None:
        self.kube = kube

    def get(self, namespace: str, name: str) -> JSON | None:
        return self.kube.get_custom(*LEASE[:3], name, namespace)

    def create(self, namespace: str, body: JSON) -> JSON | None:
        try:
            return self.kube.create_custom(*LEASE, {**body, "metadata": {**body["metadata"], "namespace": namespace}})
        except AlreadyExists:
            return None

    def replace(self, body: JSON) -> JSON | None:
        try:
            return self.kube.replace_custom(*LEASE[:3], body)
        except Conflict:
            return None

    def delete(self, namespace: str, name: str, resource_version: str) -> None:
        # Conflict: renewed by someone who took it over; NotFound: gone. Either way not ours to delete any more.
        with contextlib.suppress(Conflict, NotFound):
            self.kube.delete_custom(*LEASE[:3], name, namespace, resource_version=resource_version or None)
