"""What a command points at: one cluster on one provider. Plans and snapshots carry it so that a plan
can never be applied to a different cluster than the one it was made for."""

from __future__ import annotations

from dataclasses import dataclass, fields

from cidrx import registry

# A provider's name as registered (cidrx.registry); an unknown one is refused where it is dispatched, and the
# published JSON schemas (docs/schemas) list the registered names.
Provider = str


@dataclass(frozen=True)
class Target:
    provider: Provider
    cluster: str
    region: str | None = None
    project: str | None = None
    location: str | None = None
    context: str | None = None
    subscription: str | None = None
    resource_group: str | None = None

    def __post_init__(self) -> None:
        # msgspec decodes a document that lacks a field (a snapshot written before the field existed) without
        # setting it on the instance, and its encoders then drop it: set every missing field to its default.
        for f in fields(self):
            if f.name not in self.__dict__:
                object.__setattr__(self, f.name, f.default)
        if registry.provider_spec(self.provider) is None:
            known = ", ".join(registry.provider_names())
            raise ValueError(f"unknown provider {self.provider!r} (cidrx knows {known})")

    def label(self) -> str:
        """Short human name: `<provider>:<where>/<cluster>`, where is the provider's other TARGET options
        (region; project/location; subscription/resource group), or the kubeconfig context."""
        spec = registry.provider_spec(self.provider)
        named = [str(getattr(self, n)) for n in (spec.requires if spec else ()) if n != "cluster" and getattr(self, n)]
        where = "/".join(named) or self.context or ""
        return f"{self.provider}:{where}/{self.cluster}" if where else f"{self.provider}:{self.cluster}"

    def flags(self) -> str:
        """The TARGET options that point cidrx back at this cluster, for fix commands in findings."""
        spec = registry.provider_spec(self.provider)
        if spec is None or spec.in_cluster:
            return in_cluster_flags(self.context)
        return " ".join([spec.flag, *(f"{option_flag(name)} {getattr(self, name)}" for name in spec.requires)])


def option_flag(name: str) -> str:
    """The flag of a TARGET option field (`resource_group` -> `--resource-group`)."""
    return "--" + name.replace("_", "-")


def in_cluster_flags(context: str | None) -> str:
    """`--k8s`, with the kubeconfig context when one is known (a pod's own service account has none)."""
    return f"--k8s --context {context}" if context and context != "in-cluster" else "--k8s"
