"""The strategy expand --plan uses without --strategy (the spec's default_strategy): subnet discovery where the
installed VPC CNI supports it and custom networking is off, else custom networking.
"""

from __future__ import annotations

from cidrx.model.options import PlanOptions
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.facts import discovery
from cidrx.providers.eks.facts.cni import cni_config

# Options only a node-group strategy reads: given without --strategy, they ask for custom networking.
NODEGROUP_OPTIONS = ("pool_name", "template")


def default_strategy(snapshot: Snapshot, opts: PlanOptions) -> str:
    """`subnet-discovery` where the installed VPC CNI supports it and custom networking is off (unless a
    node-group option asks for custom networking), else the first strategy (custom networking)."""
    eks = snapshot.eks
    if eks is None or any(getattr(opts, name) for name in NODEGROUP_OPTIONS):
        return "custom-networking"
    state = discovery.discovery_state(eks, snapshot.kube, cni_config(eks, snapshot.kube))
    return "subnet-discovery" if state.supported and not state.custom_networking else "custom-networking"
