"""Which plugin object serves a target or a plan: the registry lookups every use case shares.

Why it exists: diagnose, plan, apply and rollback all need "the provider of this target" and "the owner of
this plan's strategy"; one module answers, so none of them keeps an if-chain over plugin kinds. Objects are
loaded by their lazy registry paths: `cidrx --help` and `diagnose --snapshot` never pay for a cloud SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from cidrx import registry
from cidrx.errors import InvalidInput

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.options import Access
    from cidrx.model.plan import Plan
    from cidrx.model.target import Target
    from cidrx.providers.base import Provider


def require_supported(target: Target) -> registry.ProviderSpec:
    """The spec of `target`'s provider; InvalidInput (exit 2) for one cidrx does not know."""
    spec = registry.provider_spec(target.provider)
    if spec is None:
        raise InvalidInput(f"unknown provider {target.provider!r}")
    return spec


def provider(target: Target) -> Provider:
    return cast("Provider", registry.load(require_supported(target).provider))


def provider_named(name: str) -> Provider:
    spec = registry.provider_spec(name)
    if spec is None:
        raise InvalidInput(f"unknown provider {name!r}")
    return cast("Provider", registry.load(spec.provider))


def owner_spec(plan: Plan) -> registry.ProviderSpec | registry.IpamSpec:
    """The provider or IPAM whose strategy made `plan` (a strategy no longer registered: the target's
    provider, which then refuses it as it always did)."""
    return registry.owner_of(plan.strategy) or require_supported(plan.target)


def owner_object(spec: registry.ProviderSpec | registry.IpamSpec) -> Any:
    """The object `spec` names: a provider's `Provider`, an IPAM's `Ipam` (cidrx.providers.base)."""
    return registry.load(spec.provider if isinstance(spec, registry.ProviderSpec) else spec.ipam)


def cluster_only(plan: Plan) -> bool:
    """Whether `plan` changes only in-cluster objects: its apply re-reads only the cluster (no cloud
    credentials needed) and every step of it needs the cluster."""
    return bool(owner_object(owner_spec(plan)).cluster_only)


def step_apis(plan: Plan, access: Access, kube: KubeApi | None) -> Any:
    """What the executors (and undos) of `plan` reach through `ctx.apis`, from the owner of its strategy."""
    return owner_object(owner_spec(plan)).apis(plan, access, kube)
