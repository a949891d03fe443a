"""What the Whereabouts actions read from the cluster right before they write: the Kubernetes API of the step,
and the pods, read once per decision round.

Why it exists: both actions decide each entry again on the pool and the pods as they are at that moment
(the liveness rule of cidrx.ipam.whereabouts.analyze: every unfinished pod reporting the address makes it
live, whoever the record names), so both need the same fresh reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx.engine.executor import StepContext
from cidrx.errors import CloudError
from cidrx.ipam.liveness import AddressHolders
from cidrx.model.kube import PodState
from cidrx.model.plan import Step

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

ATTEMPTS = 5  # re-read-and-decide rounds when another writer keeps bumping the object


def kube_of(ctx: StepContext, step: Step) -> KubeApi:
    """The cluster the step writes to (refused when apply runs without Kubernetes access)."""
    kube: KubeApi | None = getattr(ctx.apis, "kube", None)
    if kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return kube


class Pods:
    """Pods read once per decision round: the named ones by "namespace/name", and every unfinished pod
    (one list) for the liveness rule: an address any of them reports is live, whoever the record names."""

    def __init__(self, kube: KubeApi) -> None:
        self.kube = kube
        self.seen: dict[str, PodState | None] = {}
        self._holders: AddressHolders | None = None

    @property
    def holders(self) -> AddressHolders:
        if self._holders is None:
            from cidrx.kube.collect import POD_FIELD_SELECTOR, pod_state_from

            self._holders = AddressHolders.of(pod_state_from(p) for p in self.kube.pod_records(POD_FIELD_SELECTOR))
        return self._holders

    def get(self, ref: str) -> PodState | None:
        if ref not in self.seen:
            from cidrx.kube.collect import pod_state_from

            namespace, _, name = ref.partition("/")
            obj = self.kube.get_custom("", "v1", "pods", name, namespace) if namespace and name else None
            self.seen[ref] = pod_state_from(obj) if obj is not None else None
        return self.seen[ref]
