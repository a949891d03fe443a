"""What a command hands the layers below it, as plain values: plan choices and how to reach a cluster.

Why it exists: providers and IPAMs must not import CLI types (click, `TargetOptions`), yet need the choices
the user made. The CLI turns its flags into these; dispatch passes them down.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlanOptions:
    """What `expand --plan` may choose; each provider maps it to its own options type.

    `pool_name` / `template` name the new node group or pool and the one it copies.
    """

    strategy: str | None = None
    cidr: str | None = None
    add_nodes: int | None = None
    pool_name: str | None = None
    template: str | None = None
    max_pods_per_node: int | None = None
    allow_class_e: bool = False
    # Plan another expansion although a plan cidrx applied still has room in its new space (the plan says so).
    force: bool = False


@dataclass(frozen=True)
class Access:
    """How to reach a target: the kubeconfig and context for the cluster, the cloud profile (AWS) for the
    cloud, and whether in-cluster reads were turned off (`--no-kube`)."""

    kubeconfig: str | None = None
    context: str | None = None
    profile: str | None = None
    no_kube: bool = False
