"""How the Calico actions read and write Calico's objects: the cluster of the step, the API group and version
its plan read them from, compare-and-swap deletes as Calico's own IPAM does them.

Why it exists: Calico's IPAM (calico-ipam on each node, kube-controllers) writes the same objects at any
moment, so every action writes guarded by the resourceVersion it just read, in the API the objects were
read from (v1 unless the plan says v3), and deletes blocks and handles the way Calico does
(k8s/resources/ipam_block.go, ipam_handle.go DeleteKVP, projectcalico/calico at
87c15906f20c4ca1fda55af92295e7678b0cc0b2).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import StepContext
from cidrx.errors import CloudError
from cidrx.ipam.calico.collect import api_parts
from cidrx.ipam.calico.model import V1_API
from cidrx.model.plan import Step

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

CONFLICT_RETRIES = 5
JSON = dict[str, Any]


def kube_of(ctx: StepContext, step: Step) -> KubeApi:
    kube: KubeApi | None = getattr(ctx.apis, "kube", None)
    if kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return kube


def group_version(params: Mapping[str, Any]) -> tuple[str, str]:
    """(group, version) the step writes: the API its objects were read from (v1 unless the plan says v3)."""
    return api_parts(str(params.get("api") or V1_API))


def get_object(api: KubeApi, params: Mapping[str, Any], plural: str, name: str) -> JSON | None:
    return api.get_custom(*group_version(params), plural, name) if name else None


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def spec_of(obj: JSON) -> JSON:
    spec: JSON = obj.get("spec") or {}
    return spec


def name_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def delete_marked(api: KubeApi, params: Mapping[str, Any], plural: str, obj: JSON) -> None:
    """Delete as Calico deletes blocks and handles: mark spec.deleted (an update, no sequence bump), then
    delete exactly that version (an object already marked, by an interrupted run or by Calico, is just
    deleted). Conflict from either write means someone changed it: decide again."""
    written = obj
    if spec_of(obj).get("deleted") is not True:
        marked = copy.deepcopy(obj)
        marked.setdefault("spec", {})["deleted"] = True
        written = api.replace_custom(*group_version(params), plural, marked)
    api.delete_custom(*group_version(params), plural, name_of(obj), resource_version=resource_version(written))
