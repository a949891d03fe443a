"""Terraform for the calico-pool plan: the IPPool as a kubernetes_manifest.

Why it exists: the Terraform equivalent of a plan is written by the package that makes the plan, so a new
provider brings its own; cidrx.render.terraform calls `emit` through the registry and cidrx.render.hcl
writes the HCL.
"""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.ipam.calico.plan import CREATE_IPPOOL, ippool_object
from cidrx.render.hcl import Block, import_block, tf_name
from cidrx.render.terraform import Emitter

CALICO_API = "crd.projectcalico.org/v1"


def emit(e: Emitter) -> None:
    for step in e.plan.steps:
        if step.action != CREATE_IPPOOL.name:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
        p = step.params
        api = str(p.get("api") or CALICO_API)  # the API the cluster's Calico objects were read from
        manifest = {"apiVersion": api, "kind": "IPPool", **ippool_object(p, e.plan.plan_id)}
        b = Block("resource", ("kubernetes_manifest", f"ippool_{tf_name(p['name'])}"))
        b.attr("manifest", manifest)
        address = e.add(
            step,
            b,
            f"{step.description}.\nCalico's Kubernetes datastore CRD, as cidrx writes it; with the Calico API server "
            "installed you may prefer projectcalico.org/v3 (same spec).",
        )
        if e.out(step.id, "name"):
            e.imports.append(import_block(address, f"apiVersion={api},kind=IPPool,name={p['name']}"))
