"""Terraform for EKS plans (custom-networking, prefix-delegation): aws_* and kubernetes_* resources.

Why it exists: the Terraform equivalent of a plan is written by the package that makes the plan, so a new
provider brings its own; cidrx.render.terraform calls `emit` through the registry and cidrx.render.hcl
writes the HCL.
"""

from __future__ import annotations

from typing import Any

from cidrx.errors import InvalidInput
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks import provisioner_terraform
from cidrx.providers.eks.facts.ipam_pools import ASSOCIATE_VPC_CIDR_FROM_POOL
from cidrx.providers.eks.plan import (
    APPLY_ENICONFIG,
    ASSOCIATE_ROUTE_TABLE,
    ASSOCIATE_VPC_CIDR,
    CREATE_NODEGROUP,
    CREATE_SUBNET,
    RESERVE_SUBNET_CIDR,
    SET_DAEMONSET_ENV,
    UPDATE_ADDON_ENV,
)
from cidrx.render.hcl import Block, Expr, hcl_object, import_block, tf_name
from cidrx.render.terraform import REF, Emitter

ENICONFIG_API = "crd.k8s.amazonaws.com/v1alpha1"


def _env_blocks(e: Emitter, step: Step) -> None:
    p = step.params
    env = dict(p["env"])
    if step.action == UPDATE_ADDON_ENV.name:
        b = Block("resource", ("aws_eks_addon", tf_name(p["addon"])))
        b.attr("cluster_name", p["cluster"]).attr("addon_name", p["addon"])
        b.attr("configuration_values", Expr(f"jsonencode({hcl_object({'env': env})})"))
        b.attr("resolve_conflicts_on_update", "PRESERVE")
        e.depends(b, step)
        address = e.add(
            step,
            b,
            f"{step.description}.\nThe add-on already exists, so it is imported. configuration_values replaces the "
            "add-on's whole configuration: if it already carries settings (or your configuration already has this "
            "aws_eks_addon), merge the env keys into that instead of using this resource.",
        )
        e.imports.append(import_block(address, f"{p['cluster']}:{p['addon']}"))
        return
    # kubernetes_env (hashicorp/kubernetes >= 2.10) owns only these variables of one container; `force`
    # takes them over from the field manager that set them before (kubectl, EKS, a Helm chart).
    b = Block("resource", ("kubernetes_env", tf_name(p["name"])))
    b.attr("api_version", "apps/v1").attr("kind", "DaemonSet").attr("container", p["container"]).attr("force", True)
    b.block("metadata").attr("name", p["name"]).attr("namespace", p["namespace"])
    for name, value in env.items():
        b.block("env").attr("name", name).attr("value", str(value))
    e.depends(b, step)
    e.add(
        step,
        b,
        f"{step.description}.\nThe VPC CNI is self-managed here (no EKS add-on); kubernetes_env sets just these "
        "variables on the aws-node container and leaves the rest of the DaemonSet alone. Its rollout restarts "
        "aws-node pods.",
    )


def emit(e: Emitter) -> None:
    for step in e.plan.steps:
        p = step.params
        if step.action == ASSOCIATE_VPC_CIDR.name:
            b = Block("resource", ("aws_vpc_ipv4_cidr_block_association", "pods"))
            b.attr("vpc_id", p["vpc_id"]).attr("cidr_block", p["cidr"])
            address = e.add(step, b)
            if assoc := e.out(step.id, "association_id"):
                e.imports.append(import_block(address, assoc))
        elif step.action == ASSOCIATE_VPC_CIDR_FROM_POOL.name:
            # IPAM picks the block; the subnets below carve theirs from the association's cidr_block.
            b = Block("resource", ("aws_vpc_ipv4_cidr_block_association", "pods"))
            b.attr("vpc_id", p["vpc_id"]).attr("ipv4_ipam_pool_id", p["ipam_pool_id"])
            b.attr("ipv4_netmask_length", int(p["netmask_length"]))
            address = e.add(step, b)
            if assoc := e.out(step.id, "association_id"):
                e.imports.append(import_block(address, assoc))
        elif step.action == CREATE_SUBNET.name:
            b = Block("resource", ("aws_subnet", f"pods_{tf_name(p['az'])}"))
            assoc = next((e.addresses[d] for d in step.depends_on if d in e.addresses), None)
            # Referencing the association orders the subnet after it (its CIDR must be associated first).
            b.attr("vpc_id", Expr(f"{assoc}.vpc_id") if assoc else p["vpc_id"])
            b.attr("availability_zone", p["az"]).attr("cidr_block", _subnet_cidr(e, p))
            b.attr("tags", {**p.get("tags", {}), DIGEST_TAG: e.plan.plan_id})
            address = e.add(step, b)
            if sid := e.out(step.id, "subnet_id"):
                e.imports.append(import_block(address, sid))
        elif step.action == ASSOCIATE_ROUTE_TABLE.name:
            subnet_step = _ref_step(p["subnet_id"])
            b = Block("resource", ("aws_route_table_association", f"pods_{_suffix(subnet_step or step.id)}"))
            b.attr("subnet_id", e.ref(p["subnet_id"])).attr("route_table_id", p["route_table_id"])
            address = e.add(step, b)
            sid = e.out(subnet_step, "subnet_id") if subnet_step else p["subnet_id"]
            if sid and e.out(step.id, "association_id"):
                e.imports.append(import_block(address, f"{sid}/{p['route_table_id']}"))
        elif step.action == APPLY_ENICONFIG.name:
            manifest = {
                "apiVersion": ENICONFIG_API,
                "kind": "ENIConfig",
                "metadata": {"name": p["name"], "labels": {DIGEST_TAG: e.plan.plan_id}},
                "spec": {"subnet": e.ref(p["subnet"]), "securityGroups": list(p["security_groups"])},
            }
            b = Block("resource", ("kubernetes_manifest", f"eniconfig_{tf_name(p['name'])}"))
            b.attr("manifest", manifest)
            address = e.add(step, b)
            if e.out(step.id, "name"):
                e.imports.append(import_block(address, f"apiVersion={ENICONFIG_API},kind=ENIConfig,name={p['name']}"))
        elif step.action in (UPDATE_ADDON_ENV.name, SET_DAEMONSET_ENV.name):
            _env_blocks(e, step)
        elif step.action == CREATE_NODEGROUP.name:
            _nodegroup(e, step)
        elif step.action == RESERVE_SUBNET_CIDR.name:
            b = Block("resource", ("aws_ec2_subnet_cidr_reservation", f"prefixes_{tf_name(p['subnet_id'])}"))
            b.attr("subnet_id", p["subnet_id"]).attr("cidr_block", p["cidr"])
            b.attr("reservation_type", p.get("type", "prefix"))
            b.attr("description", f"cidrx plan {e.plan.plan_id}: keep for /28 prefixes")
            address = e.add(step, b)
            if rid := e.out(step.id, "reservation_id"):
                e.imports.append(import_block(address, f"{p['subnet_id']}:{rid}"))
        elif step.action in provisioner_terraform.NAMES:
            provisioner_terraform.emit_step(e, step)
        else:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")


def _subnet_cidr(e: Emitter, p: dict[str, Any]) -> Any:
    """The planned CIDR, or cidrsubnet() of the CIDR an IPAM pool gave (split_equal's pieces: newbits is the
    log2 of the part count rounded up to a power of two, the piece number is the index)."""
    if p.get("cidr"):
        return p["cidr"]
    carve = p["carve"]
    newbits = (int(carve["parts"]) - 1).bit_length()
    ref = e.ref(str(carve["from"]).replace(".cidr}", ".cidr_block}"))
    return Expr(f"cidrsubnet({ref}, {newbits}, {int(carve['index'])})")


def _ref_step(value: str) -> str | None:
    m = REF.match(value)
    return m.group(1) if m else None


def _suffix(step_id: str) -> str:
    return tf_name(step_id.removeprefix("create-subnet-"))


def _nodegroup(e: Emitter, step: Step) -> None:
    p = step.params
    b = Block("resource", ("aws_eks_node_group", tf_name(p["name"])))
    b.attr("cluster_name", p["cluster"]).attr("node_group_name", p["name"]).attr("node_role_arn", p["node_role"])
    b.attr("subnet_ids", [e.ref(s) for s in p["subnets"]])
    for key in ("ami_type", "capacity_type"):
        if p.get(key):
            b.attr(key, p[key])
    if "launch_template" not in p:
        b.attr("instance_types", list(p.get("instance_types", [])))
        if p.get("disk_size"):
            b.attr("disk_size", p["disk_size"])
    if p.get("labels"):
        b.attr("labels", dict(p["labels"]))
    b.attr("tags", {**p.get("tags", {}), DIGEST_TAG: e.plan.plan_id})
    s = p["scaling"]
    b.block("scaling_config").attr("desired_size", s["desiredSize"]).attr("max_size", s["maxSize"]).attr(
        "min_size", s["minSize"]
    )
    lt = p.get("launch_template")
    if lt:
        lb = b.block("launch_template")
        if lt.get("id"):
            lb.attr("id", lt["id"])
        else:
            lb.attr("name", lt.get("name", ""))
        lb.attr("version", lt.get("version", "$Latest"))
    # The cluster autoscaler changes the desired size; Terraform should not set it back.
    b.block("lifecycle").attr("ignore_changes", [Expr("scaling_config[0].desired_size")])
    e.depends(b, step)
    address = e.add(step, b)
    if e.out(step.id, "nodegroup"):
        e.imports.append(import_block(address, f"{p['cluster']}:{p['name']}"))
