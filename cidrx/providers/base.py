"""What the use cases (cidrx.app) ask of a plugin's object: the protocols a provider's `PROVIDER` and an
in-cluster IPAM's `IPAM` implement.

Why it exists: the app layer names no plugin. It looks a plan's strategy up in the registry, finds the spec
that owns it (`registry.owner_of`) and loads that spec's object; everything it then calls is one of these
protocols, so a new cloud or IPAM is its own package, never a branch in shared code. `PlanOwner` is what both
kinds of owner share for an apply: the step APIs its plans' executors reach, and whether an apply needs only
the cluster (`cluster_only`: in-cluster IPAM plans touch nothing but the Kubernetes API, so apply re-reads the
cluster alone and needs no cloud credentials).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Capacity, Diagnosis, Finding
    from cidrx.model.kube import KubeSection
    from cidrx.model.options import Access
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target


class PlanOwner(Protocol):
    """The provider or IPAM object that owns a strategy, as an apply or a rollback of its plans sees it."""

    @property
    def cluster_only(self) -> bool:
        """True when its plans change only in-cluster objects (an apply re-reads only the cluster)."""
        ...

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any:
        """What the executors of `plan` reach through `ctx.apis` (cloud clients, the cluster's client)."""
        ...


class Provider(Protocol):
    """The object a provider package exports (named in its registry entry by `provider`). analyze and
    address_maps are pure; `cloud_permissions` is what collect (and fleet listing) reads. Plans, drift checks
    and executors are its strategies' own (their declarations), never the provider object's."""

    cluster_only: bool

    def collect(self, target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot: ...

    def analyze(self, snapshot: Snapshot) -> Diagnosis: ...

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any: ...

    def address_maps(self, snapshot: Snapshot) -> Sequence[Any]: ...

    def cloud_permissions(self) -> tuple[str, ...]: ...


class Ipam(Protocol):
    """What an in-cluster IPAM package exports as `IPAM` (its registry entry names it with `ipam`)."""

    def analyze(self, section: Any, kube: KubeSection) -> tuple[list[Capacity], list[Finding]]:
        """Capacity and findings of its `section` of the snapshot's kube section (never None here)."""
        ...
