"""Terraform (HCL) equivalent of a plan, for teams whose VPCs and clusters are managed by Terraform.

A change made with `cidrx expand --apply` is drift to such a team until their configuration describes it;
`--emit terraform` writes the same change with the providers' standard resources, plus `import` blocks
(Terraform >= 1.5) for what an apply already created, so `terraform plan` adopts it instead of creating it
twice. Pure: plan (and the ids a journal recorded per step) in, text out; the CLI reads the journal.

Resources that exist before the plan and that Terraform manages as a whole (a GCE subnetwork's list of
secondary ranges, a GKE cluster's additional pod ranges) are not emitted as resources: a partial copy
would undo everything it does not list. They come as commented snippets to merge into the team's own
resource, between `# >>> snippet` and `# <<< snippet` lines.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.ipam.calico.plan import ippool_object
from cidrx.model.plan import DIGEST_TAG, Plan, Step

GKE_PLAN_LABEL = "cidrx-plan"  # as cidrx.providers.gke.plan.PLAN_LABEL: GCE label keys allow no dots or slashes
ENICONFIG_API = "crd.k8s.amazonaws.com/v1alpha1"
CALICO_API = "crd.projectcalico.org/v1"
SNIPPET_START = ">>> snippet"
SNIPPET_END = "<<< snippet"
COMMENT_WIDTH = 110

StepOutputs = Mapping[str, Mapping[str, Any]]


# --------------------------------------------------------------------------------------------------
# A small HCL writer that produces what `terraform fmt` would (so emitted files pass `fmt -check`).
# --------------------------------------------------------------------------------------------------


class Expr(str):
    """An HCL expression written as is (a reference, a function call), not quoted."""


@dataclass
class Block:
    type: str
    labels: tuple[str, ...] = ()
    body: list[Attr | Block | Comment] = field(default_factory=list)

    def attr(self, name: str, value: Any) -> Block:
        self.body.append(Attr(name, value))
        return self

    def block(self, type_: str, *labels: str) -> Block:
        child = Block(type_, labels)
        self.body.append(child)
        return child

    def comment(self, text: str) -> Block:
        self.body.append(Comment(text))
        return self


@dataclass(frozen=True)
class Attr:
    name: str
    value: Any


@dataclass(frozen=True)
class Comment:
    """Comment lines; each line of `text` is wrapped at COMMENT_WIDTH unless `wrap` is off."""

    text: str
    wrap: bool = True

    def lines(self, indent: str) -> list[str]:
        out: list[str] = []
        for line in self.text.splitlines() or [""]:
            # Indented lines (commands, code) are kept whole; list items wrap under their text.
            keep = not self.wrap or not line.strip() or line.startswith("  ")
            pieces = (
                [line]
                if keep
                else textwrap.wrap(
                    line,
                    COMMENT_WIDTH,
                    subsequent_indent="  " if line.startswith("- ") else "",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
            out += [f"{indent}# {piece}".rstrip() for piece in pieces or [""]]
        return out


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def quote(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    # Template sequences would be interpolated inside a quoted string: escape them by doubling.
    return '"' + out.replace("${", "$${").replace("%{", "%%{") + '"'


def _key(name: str) -> str:
    return name if _IDENT.match(name) else quote(name)


def _scalar(value: Any) -> str | None:
    if isinstance(value, Expr):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return quote(value)
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        parts = [_scalar(v) for v in value]
        if all(p is not None and "\n" not in p for p in parts):
            return "[" + ", ".join(p for p in parts if p is not None) + "]"
        return None
    if isinstance(value, Mapping) and not value:
        return "{}"
    return None


def _aligned(pairs: list[tuple[str, str]], indent: str) -> list[str]:
    width = max(len(k) for k, _ in pairs)
    return [f"{indent}{k.ljust(width)} = {v}" for k, v in pairs]


def _value_lines(value: Any, indent: str) -> list[str]:
    """A multi-line value (object or list of objects); the first line continues `name = `."""
    inner = indent + "  "
    if isinstance(value, Mapping):
        lines = ["{"]
        lines += _entries([(_key(str(k)), v) for k, v in value.items()], inner)
        return [*lines, indent + "}"]
    lines = ["["]
    for item in value:
        sub = _value_lines(item, inner) if _scalar(item) is None else [_scalar(item) or ""]
        sub[-1] += ","
        lines.append(inner + sub[0])
        lines += sub[1:]
    return [*lines, indent + "]"]


def _entries(items: list[tuple[str, Any]], indent: str) -> list[str]:
    """Attribute lines with `=` aligned over runs of single-line values, as `terraform fmt` does."""
    out: list[str] = []
    run: list[tuple[str, str]] = []
    for name, value in items:
        text = _scalar(value)
        if text is not None:
            run.append((name, text))
            continue
        if run:
            out += _aligned(run, indent)
            run = []
        lines = _value_lines(value, indent)
        out.append(f"{indent}{name} = {lines[0]}")
        out += lines[1:]
    if run:
        out += _aligned(run, indent)
    return out


def _block_lines(block: Block, indent: str) -> list[str]:
    head = " ".join([block.type, *(quote(label) for label in block.labels)])
    if not block.body:
        return [f"{indent}{head} {{}}"] if block.labels else [f"{indent}{head} {{", f"{indent}}}"]
    inner = indent + "  "
    lines = [f"{indent}{head} {{"]
    pending: list[tuple[str, Any]] = []
    previous = ""

    def flush() -> None:
        nonlocal previous
        if pending:
            lines.extend(_entries(pending, inner))
            pending.clear()
            previous = "attr"

    for item in block.body:
        if isinstance(item, Attr):
            if previous == "block":
                lines.append("")
            pending.append((item.name, item.value))
        elif isinstance(item, Comment):
            flush()
            lines += item.lines(inner)
            previous = "comment"
        else:
            flush()
            if previous in ("attr", "block"):
                lines.append("")
            lines += _block_lines(item, inner)
            previous = "block"
    flush()
    return [*lines, f"{indent}}}"]


def render_blocks(items: Iterable[Block | Comment]) -> str:
    """Top-level items separated by blank lines; a comment sticks to the block right after it."""
    out: list[str] = []
    previous: Block | Comment | None = None
    for item in items:
        if out and not (isinstance(previous, Comment) and isinstance(item, Block)):
            out.append("")
        out += item.lines("") if isinstance(item, Comment) else _block_lines(item, "")
        previous = item
    return "\n".join(out) + "\n"


def snippet(title: str, blocks: list[Block]) -> Comment:
    """HCL to merge by hand, commented out: `# ` before each line, between the snippet markers."""
    text = render_blocks(blocks).rstrip("\n")
    body = "\n".join(("  " + line) if line else "" for line in text.splitlines())
    return Comment(f"{SNIPPET_START} {title}\n{body}\n{SNIPPET_END}", wrap=False)


def extract_snippets(hcl: str) -> list[str]:
    """The HCL inside each snippet of an emitted file, uncommented (what a reader would paste)."""
    found: list[str] = []
    current: list[str] | None = None
    for line in hcl.splitlines():
        if line.startswith(f"# {SNIPPET_START}"):
            current = []
        elif line.startswith(f"# {SNIPPET_END}") and current is not None:
            found.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line[4:] if line.startswith("#   ") else line.lstrip("#").strip())
    return found


# --------------------------------------------------------------------------------------------------
# Plan -> blocks
# --------------------------------------------------------------------------------------------------


def tf_name(text: str) -> str:
    """A Terraform resource name from an AZ, subnet id or pool name: letters, digits and underscores."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "x"
    return name if name[0].isalpha() or name[0] == "_" else f"r_{name}"


def _import(to: str, id_: str) -> Block:
    return Block("import").attr("to", Expr(to)).attr("id", id_)


_REF = re.compile(r"^\$\{([^.{}]+)\.([^{}]+)\}$")


@dataclass
class _Emitter:
    plan: Plan
    outputs: StepOutputs
    items: list[Block | Comment] = field(default_factory=list)
    imports: list[Block] = field(default_factory=list)
    addresses: dict[str, str] = field(default_factory=dict)  # step id -> resource address

    def out(self, step_id: str, key: str) -> str | None:
        value = (self.outputs.get(step_id) or {}).get(key)
        return str(value) if value else None

    def ref(self, value: str) -> Any:
        """A plan parameter: `${step.key}` becomes a reference to the resource that step maps to."""
        m = _REF.match(value)
        if not m:
            return value
        address = self.addresses.get(m.group(1))
        if address is None:
            raise InvalidInput(f"plan step {m.group(1)} has no Terraform equivalent to reference")
        attr = {"subnet_id": "id", "association_id": "id"}.get(m.group(2), m.group(2))
        return Expr(f"{address}.{attr}")

    def add(self, step: Step, block: Block, comment: str = "") -> str:
        address = f"{block.labels[0]}.{block.labels[1]}"
        self.addresses[step.id] = address
        self.items.append(Comment(f"step {step.id}: {comment or step.description}"))
        self.items.append(block)
        return address

    def depends(self, block: Block, step: Step) -> None:
        refs = [self.addresses[d] for d in step.depends_on if d in self.addresses]
        if refs:
            block.attr("depends_on", [Expr(r) for r in refs])


def _header(plan: Plan, generated_by: str) -> Comment:
    lines = [
        f"cidrx plan {plan.plan_id} ({plan.strategy}) for {plan.target.label()}",
        f"Generated by `{generated_by}` from plan digest {plan.digest}.",
        "The same change `cidrx expand --apply` makes, with the providers' standard resources; review it like any "
        "other change. import blocks (Terraform >= 1.5) adopt what an apply of this plan already created, as "
        "recorded in the journal beside the plan file.",
    ]
    if plan.notes:
        lines += ["", "Notes from the plan:", *(f"- {n}" for n in plan.notes)]
    return Comment("\n".join(lines))


# --- EKS ------------------------------------------------------------------------------------------


def _env_blocks(e: _Emitter, step: Step) -> None:
    p = step.params
    env = dict(p["env"])
    if step.action == "eks.update-addon-env":
        b = Block("resource", ("aws_eks_addon", tf_name(p["addon"])))
        b.attr("cluster_name", p["cluster"]).attr("addon_name", p["addon"])
        b.attr("configuration_values", Expr(f"jsonencode({_hcl_object({'env': env})})"))
        b.attr("resolve_conflicts_on_update", "PRESERVE")
        e.depends(b, step)
        address = e.add(
            step,
            b,
            f"{step.description}.\nThe add-on already exists, so it is imported. configuration_values replaces the "
            "add-on's whole configuration: if it already carries settings (or your configuration already has this "
            "aws_eks_addon), merge the env keys into that instead of using this resource.",
        )
        e.imports.append(_import(address, f"{p['cluster']}:{p['addon']}"))
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


def _hcl_object(value: Mapping[str, Any]) -> str:
    """An inline HCL object for use inside a function call (single line)."""
    parts = []
    for k, v in value.items():
        text = _hcl_object(v) if isinstance(v, Mapping) else _scalar(v)
        parts.append(f"{_key(str(k))} = {text}")
    return "{ " + ", ".join(parts) + " }" if parts else "{}"


def _eks_custom_networking(e: _Emitter) -> None:
    for step in e.plan.steps:
        p = step.params
        if step.action == "eks.associate-vpc-cidr":
            b = Block("resource", ("aws_vpc_ipv4_cidr_block_association", "pods"))
            b.attr("vpc_id", p["vpc_id"]).attr("cidr_block", p["cidr"])
            address = e.add(step, b)
            if assoc := e.out(step.id, "association_id"):
                e.imports.append(_import(address, assoc))
        elif step.action == "eks.create-subnet":
            b = Block("resource", ("aws_subnet", f"pods_{tf_name(p['az'])}"))
            assoc = next((e.addresses[d] for d in step.depends_on if d in e.addresses), None)
            # Referencing the association orders the subnet after it (its CIDR must be associated first).
            b.attr("vpc_id", Expr(f"{assoc}.vpc_id") if assoc else p["vpc_id"])
            b.attr("availability_zone", p["az"]).attr("cidr_block", p["cidr"])
            b.attr("tags", {**p.get("tags", {}), DIGEST_TAG: e.plan.plan_id})
            address = e.add(step, b)
            if sid := e.out(step.id, "subnet_id"):
                e.imports.append(_import(address, sid))
        elif step.action == "eks.associate-route-table":
            subnet_step = _ref_step(p["subnet_id"])
            b = Block("resource", ("aws_route_table_association", f"pods_{_suffix(subnet_step or step.id)}"))
            b.attr("subnet_id", e.ref(p["subnet_id"])).attr("route_table_id", p["route_table_id"])
            address = e.add(step, b)
            sid = e.out(subnet_step, "subnet_id") if subnet_step else p["subnet_id"]
            if sid and e.out(step.id, "association_id"):
                e.imports.append(_import(address, f"{sid}/{p['route_table_id']}"))
        elif step.action == "kube.apply-eniconfig":
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
                e.imports.append(_import(address, f"apiVersion={ENICONFIG_API},kind=ENIConfig,name={p['name']}"))
        elif step.action in ("eks.update-addon-env", "kube.set-daemonset-env"):
            _env_blocks(e, step)
        elif step.action == "eks.create-nodegroup":
            _nodegroup(e, step)
        elif step.action == "eks.reserve-subnet-cidr":
            b = Block("resource", ("aws_ec2_subnet_cidr_reservation", f"prefixes_{tf_name(p['subnet_id'])}"))
            b.attr("subnet_id", p["subnet_id"]).attr("cidr_block", p["cidr"])
            b.attr("reservation_type", p.get("type", "prefix"))
            b.attr("description", f"cidrx plan {e.plan.plan_id}: keep for /28 prefixes")
            address = e.add(step, b)
            if rid := e.out(step.id, "reservation_id"):
                e.imports.append(_import(address, f"{p['subnet_id']}:{rid}"))
        else:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")


def _ref_step(value: str) -> str | None:
    m = _REF.match(value)
    return m.group(1) if m else None


def _suffix(step_id: str) -> str:
    return tf_name(step_id.removeprefix("create-subnet-"))


def _nodegroup(e: _Emitter, step: Step) -> None:
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
        e.imports.append(_import(address, f"{p['cluster']}:{p['name']}"))


# --- GKE ------------------------------------------------------------------------------------------

_NODE_CONFIG_SCALARS = {
    "machineType": "machine_type",
    "diskSizeGb": "disk_size_gb",
    "diskType": "disk_type",
    "imageType": "image_type",
    "serviceAccount": "service_account",
    "oauthScopes": "oauth_scopes",
    "metadata": "metadata",
    "labels": "labels",
    "resourceLabels": "resource_labels",
    "tags": "tags",
    "preemptible": "preemptible",
    "spot": "spot",
    "localSsdCount": "local_ssd_count",
    "minCpuPlatform": "min_cpu_platform",
    "bootDiskKmsKey": "boot_disk_kms_key",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _node_config(b: Block, config: Mapping[str, Any], plan_id: str) -> list[str]:
    nc = b.block("node_config")
    labels = {**(config.get("resourceLabels") or {}), GKE_PLAN_LABEL: plan_id}
    skipped: list[str] = []
    for key, value in config.items():
        if key == "resourceLabels":
            continue
        if key in _NODE_CONFIG_SCALARS:
            nc.attr(_NODE_CONFIG_SCALARS[key], value)
        elif key in ("shieldedInstanceConfig", "workloadMetadataConfig") and isinstance(value, Mapping):
            sub = nc.block(_snake(key))
            for k, v in value.items():
                sub.attr(_snake(k), v)
        elif key == "taints" and isinstance(value, list):
            for t in value:
                nc.block("taint").attr("key", t.get("key", "")).attr("value", t.get("value", "")).attr(
                    "effect", t.get("effect", "")
                )
        else:
            skipped.append(key)
    nc.attr("resource_labels", labels)
    return skipped


def _node_pool(e: _Emitter, step: Step) -> None:
    p = step.params
    pool = p["node_pool"]
    b = Block("resource", ("google_container_node_pool", tf_name(pool["name"])))
    b.attr("project", p["project"]).attr("location", p["location"]).attr("cluster", p["cluster"])
    b.attr("name", pool["name"])
    if pool.get("locations"):
        b.attr("node_locations", list(pool["locations"]))
    b.attr("initial_node_count", pool.get("initialNodeCount", 1))
    if pool.get("maxPodsConstraint"):
        b.attr("max_pods_per_node", int(pool["maxPodsConstraint"]["maxPodsPerNode"]))
    skipped = _node_config(b, pool.get("config") or {}, e.plan.plan_id)
    b.block("network_config").attr("pod_range", pool["networkConfig"]["podRange"])
    auto = pool.get("autoscaling") or {}
    if auto.get("enabled"):
        ab = b.block("autoscaling")
        for k in ("minNodeCount", "maxNodeCount", "totalMinNodeCount", "totalMaxNodeCount", "locationPolicy"):
            if k in auto:
                ab.attr(_snake(k), auto[k])
    if pool.get("management"):
        mb = b.block("management")
        for k, v in pool["management"].items():
            mb.attr(_snake(k), v)
    # GKE changes the node count as it autoscales; initial_node_count only matters at creation.
    b.block("lifecycle").attr("ignore_changes", [Expr("initial_node_count")])
    comment = step.description
    if skipped:
        comment += f"\nNot translated from the template's config (set them by hand): {', '.join(skipped)}"
    comment += "\nIts pod range must exist on the subnet first: merge the snippet above before applying."
    address = e.add(step, b, comment)
    if e.out(step.id, "node_pool"):
        path = f"projects/{p['project']}/locations/{p['location']}/clusters/{p['cluster']}/nodePools/{pool['name']}"
        e.imports.append(_import(address, path))


def _gke(e: _Emitter) -> None:
    for step in e.plan.steps:
        p = step.params
        if step.action == "gke.add-secondary-range":
            block = Block("secondary_ip_range").attr("range_name", p["range_name"]).attr("ip_cidr_range", p["cidr"])
            existing = e.plan.basis.get("subnet_ranges") or {}
            listed = ", ".join(f"{n} {c}" for n, c in existing.items()) or "none"
            e.items.append(
                Comment(
                    f"step {step.id}: {step.description}.\n"
                    f"Terraform manages a subnetwork's secondary ranges as one list: add this block to your existing "
                    f'resource "google_compute_subnetwork" for {p["region"]}/{p["subnet"]} (project {p["project"]}), '
                    f"next to the ranges it already lists ({listed}). Until you do, `terraform apply` on that "
                    "resource removes the range, and with it the pod addresses of every node that uses it. "
                    "If the subnet is not in Terraform yet:\n"
                    f"  terraform import google_compute_subnetwork.<name> "
                    f"projects/{p['project']}/regions/{p['region']}/subnetworks/{p['subnet']}"
                )
            )
            e.items.append(snippet(f'secondary_ip_range for google_compute_subnetwork "{p["subnet"]}"', [block]))
        elif step.action == "gke.create-node-pool":
            _node_pool(e, step)
        elif step.action == "gke.add-cluster-pod-ranges":
            names = list(p["range_names"])
            existing = list(e.plan.basis.get("cluster_pod_ranges") or [])
            policy = Block("ip_allocation_policy")
            policy.comment("keep the attributes your ip_allocation_policy block already has")
            policy.block("additional_pod_ranges_config").attr("pod_range_names", [*existing, *names])
            e.items.append(
                Comment(
                    f"step {step.id}: {step.description}.\n"
                    "Terraform manages the cluster as one resource: add this to your existing resource "
                    f'"google_container_cluster" for {p["cluster"]} ({p["location"]}, project {p["project"]}); a '
                    "partial copy of the cluster here could replace it. Until you do, `terraform apply` on the "
                    "cluster removes the range from it."
                )
            )
            e.items.append(snippet(f'ip_allocation_policy for google_container_cluster "{p["cluster"]}"', [policy]))
        else:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")


# --- Calico ---------------------------------------------------------------------------------------


def _calico_pool(e: _Emitter) -> None:
    for step in e.plan.steps:
        if step.action != "calico.create-ippool":
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
            e.imports.append(_import(address, f"apiVersion={api},kind=IPPool,name={p['name']}"))


# --------------------------------------------------------------------------------------------------


def render_terraform(plan: Plan, outputs: StepOutputs | None = None, *, generated_by: str = "") -> str:
    """HCL for `plan`. `outputs` (step id -> ids the apply recorded, from the journal) adds import blocks."""
    if plan.strategy in registry.reclaim_strategies():
        raise InvalidInput(
            f"a {plan.strategy} plan releases addresses inside the cluster's IPAM; there is nothing in it for "
            "Terraform to manage",
            hint="--emit terraform works with expand plans (custom-networking, prefix-delegation, node-pool, "
            "cluster-range, calico-pool)",
        )
    e = _Emitter(plan, outputs or {})
    if plan.strategy in ("custom-networking", "prefix-delegation"):
        _eks_custom_networking(e)
    elif plan.strategy in ("node-pool", "cluster-range"):
        _gke(e)
    elif plan.strategy == "calico-pool":
        _calico_pool(e)
    else:
        raise InvalidInput(f"plan strategy {plan.strategy!r} has no Terraform equivalent in cidrx")
    items: list[Block | Comment] = [_header(plan, generated_by or "cidrx expand --plan --emit terraform"), *e.items]
    if e.imports:
        items.append(
            Comment(
                "Adopt what already exists: what an apply of this plan created (ids from its journal) and what the "
                "plan changes in place."
            )
        )
        items += e.imports
    return render_blocks(items)
