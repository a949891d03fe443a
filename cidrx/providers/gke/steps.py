"""The GKE plan actions as apply-engine executors: add a secondary range to the cluster's subnet, then
either create a node pool that takes its pod blocks from it or add it to the cluster's pod ranges.

Each step asks the cloud first whether its effect is already there (the range with its CIDR, the node
pool carrying this plan's label, the range name in the cluster's list), so a crashed or repeated apply
converges without duplicates, with or without the journal. Writes that can race use the API's guard:
the subnet is patched with the fingerprint it was read with; when GCE answers 412 the subnet is read
again and the patch retried only if what the plan relied on (its existing ranges, free room for the new
CIDR) still holds. All mutations return operations, polled through `ctx.wait_until` so progress shows.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cidrx import netmath
from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.errors import CidrxError, CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.gke.plan import ACTIONS
from cidrx.providers.gke.pool_copy import PLAN_LABEL
from cidrx.registry import executors

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.providers.gke.api import GkeApi

# GCE label keys allow only [a-z0-9_-] (no '.' or '/'), so created node pools carry the plan id under
# this key instead of DIGEST_TAG.
FINGERPRINT_RETRIES = 3
SUBNET_TIMEOUT = 10 * 60.0
# Node pool creation takes minutes; a cluster operation we queue behind (an upgrade) can take much longer.
NODE_POOL_TIMEOUT = 30 * 60.0
CLUSTER_TIMEOUT = 30 * 60.0
BUSY_TIMEOUT = 60 * 60.0


@dataclass(frozen=True)
class GkeApis:
    gke: GkeApi
    kube: KubeApi | None


def _gke(ctx: StepContext) -> GkeApi:
    apis: GkeApis = ctx.apis
    return apis.gke


def _busy(exc: CloudError) -> bool:
    """The write was refused only because another operation holds the resource: wait and retry.

    GKE serialises mutations of a cluster (400 FAILED_PRECONDITION "Cluster is running incompatible
    operation ..."), GCE those of a subnet (400 reason resourceNotReady "The resource ... is not ready").
    """
    from cidrx.providers.gke.api import ClusterBusy

    return isinstance(exc, ClusterBusy) or "is not ready" in exc.message.lower()


def _when_free(ctx: StepContext, what: str, write: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run `write`, waiting (with progress) while the target is busy with another operation."""

    def attempt() -> dict[str, Any] | None:
        try:
            return write()
        except CloudError as exc:
            if _busy(exc):
                return None
            raise

    return ctx.wait_until(f"{what} (another operation is running)", attempt, timeout=BUSY_TIMEOUT, interval=5.0)


def _wait_operation(ctx: StepContext, op: dict[str, Any], what: str, timeout: float) -> None:
    """Poll an operation handle until DONE; an operation that ended in error raises CloudError."""
    api = _gke(ctx)

    def probe() -> bool | None:
        state = api.get_operation(op)
        if not state.get("done"):
            return None
        if state.get("error"):
            raise CloudError(f"{what} failed: operation {op.get('name')} ended with an error: {state['error']}")
        return True

    ctx.wait_until(what, probe, timeout=timeout, interval=2.0, max_interval=15.0)


def _settle_earlier_operation(ctx: StepContext, step: Step) -> None:
    """Before writing again, let an operation an interrupted run started for this step finish (the
    journal's hint), so the new write neither races it nor is refused as busy. Its outcome does not
    matter: `check` has already looked at the cloud and found the step not done."""
    op = (ctx.journal_outputs.get(step.id) or {}).get("operation")
    if not isinstance(op, dict) or "name" not in op:
        return
    api = _gke(ctx)
    ctx.wait_until(
        f"the operation {op['name']} of an earlier run",
        lambda: True if api.get_operation(op).get("done") else None,
        timeout=BUSY_TIMEOUT,
        interval=2.0,
        max_interval=15.0,
    )


# --- gke.add-secondary-range ------------------------------------------------------------------------


def _ranges(subnet: dict[str, Any]) -> dict[str, str]:
    return {str(r.get("rangeName")): str(r.get("ipCidrRange")) for r in subnet.get("secondaryIpRanges") or []}


def _basis_problem(subnet: dict[str, Any], params: dict[str, Any], ctx: StepContext) -> str | None:
    """Why the plan no longer fits this subnet (None: it still does).

    It does when every secondary range the plan saw is still there with its CIDR and nothing in the
    subnet overlaps the new CIDR now.
    """
    have = _ranges(subnet)
    seen: dict[str, str] = dict(ctx.plan.basis.get("subnet_ranges") or {})
    for name, cidr in seen.items():
        if name not in have:
            return f"secondary range {name} ({cidr}) was removed"
        if have[name] != cidr:
            return f"secondary range {name} changed from {cidr} to {have[name]}"
    new = netmath.parse_cidr(params["cidr"])
    for name, cidr in have.items():
        if name == params["range_name"]:
            continue
        if netmath.overlaps(new, netmath.parse_cidr(cidr)):
            return f"secondary range {name} ({cidr}) now overlaps {params['cidr']}"
    primary = subnet.get("ipCidrRange")
    if primary and netmath.overlaps(new, netmath.parse_cidr(str(primary))):
        return f"the subnet's primary range {primary} overlaps {params['cidr']}"
    return None


class AddSecondaryRange:
    def _subnet(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return _gke(ctx).get_subnetwork(params["region"], params["subnet"], params.get("project"))

    def _found(self, subnet: dict[str, Any], params: dict[str, Any]) -> Outputs | None:
        have = _ranges(subnet).get(params["range_name"])
        if have is None:
            return None
        if have != params["cidr"]:
            raise StalePlan(
                f"subnet {params['region']}/{params['subnet']} already has a secondary range "
                f"{params['range_name']} with {have}, not {params['cidr']}; make a new plan"
            )
        return {"range_name": params["range_name"], "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self._found(self._subnet(params, ctx), params)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.providers.gke.api import StaleFingerprint

        _settle_earlier_operation(ctx, step)
        where = f"subnet {params['region']}/{params['subnet']}"
        for _ in range(FINGERPRINT_RETRIES + 1):
            subnet = self._subnet(params, ctx)
            found = self._found(subnet, params)
            if found is not None:  # written meanwhile (e.g. by an earlier run's operation that finished)
                return found
            problem = _basis_problem(subnet, params, ctx)
            if problem is not None:
                raise StalePlan(f"{where} changed since the plan was made: {problem}; make a new plan")
            ranges = [
                {"rangeName": r["rangeName"], "ipCidrRange": r["ipCidrRange"]}
                for r in subnet.get("secondaryIpRanges") or []
            ]
            ranges.append({"rangeName": params["range_name"], "ipCidrRange": params["cidr"]})
            fingerprint = str(subnet.get("fingerprint") or "")

            def patch(fp: str = fingerprint, full: list[dict[str, Any]] = ranges) -> dict[str, Any]:
                return _gke(ctx).patch_subnetwork_secondary_ranges(
                    params["region"], params["subnet"], fp, full, params.get("project")
                )

            try:
                op = _when_free(ctx, f"{where} to accept a change", patch)
            except StaleFingerprint:
                # Someone else changed the subnet between our read and our patch (GCE 412, docs/cloud-facts.md):
                # read again.
                continue
            return {"range_name": params["range_name"], "cidr": params["cidr"], "operation": op}
        raise CloudError(f"{where} kept changing under us ({FINGERPRINT_RETRIES + 1} stale fingerprints); run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            what = f"secondary range {params['range_name']} on subnet {params['subnet']}"
            _wait_operation(ctx, op, what, SUBNET_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(
                f"subnet {params['region']}/{params['subnet']} has no secondary range "
                f"{params['range_name']} {params['cidr']} after the patch"
            )


# --- gke.create-node-pool ---------------------------------------------------------------------------


def _labels(pool: dict[str, Any]) -> dict[str, str]:
    return dict((pool.get("config") or {}).get("resourceLabels") or {})


class CreateNodePool:
    def _find(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        name = params["node_pool"]["name"]
        for pool in _gke(ctx).list_node_pools(params["cluster"]):
            if pool.get("name") == name:
                return pool
        return None

    def _ours(self, pool: dict[str, Any], params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        label = _labels(pool).get(PLAN_LABEL)
        if label != ctx.plan_id:
            by = f"by plan {label}" if label else "by someone else"
            raise StalePlan(
                f"a node pool named {pool.get('name')} was created {by} in cluster {params['cluster']}; "
                "make a new plan (or pick another name with --pool-name)"
            )
        return pool

    def _outputs(self, params: dict[str, Any]) -> Outputs:
        return {"node_pool": params["node_pool"]["name"]}

    def _wait_running(self, params: dict[str, Any], ctx: StepContext, timeout: float) -> None:
        name = params["node_pool"]["name"]

        def probe() -> bool | None:
            pool = self._find(params, ctx)
            status = str((pool or {}).get("status") or "MISSING")
            if status in ("ERROR", "STOPPING", "MISSING"):
                detail = (pool or {}).get("statusMessage") or "no detail"
                hint = ""
                if status == "ERROR":
                    hint = (
                        f"; delete it (gcloud container node-pools delete {name} --cluster {params['cluster']} "
                        f"--location {params['location']}) and run the same command again"
                    )
                raise CloudError(f"node pool {name} is {status}: {detail}{hint}")
            if status == "RUNNING_WITH_ERROR":  # usable, but GKE reports a problem (e.g. a zone stockout)
                ctx.progress.note(f"node pool {name} runs with an error: {(pool or {}).get('statusMessage')}")
                return True
            return True if status == "RUNNING" else None

        ctx.wait_until(f"node pool {name} to be RUNNING", probe, timeout=timeout, interval=10.0, max_interval=30.0)

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = self._find(params, ctx)
        if pool is None:
            return None
        self._ours(pool, params, ctx)
        if pool.get("status") not in ("RUNNING", "RUNNING_WITH_ERROR"):
            # Ours but still provisioning (an earlier run stopped during the wait): done once it runs.
            self._wait_running(params, ctx, NODE_POOL_TIMEOUT)
        return self._outputs(params)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.providers.gke.api import AlreadyExists

        body = copy.deepcopy(params["node_pool"])
        config = body.setdefault("config", {})
        config["resourceLabels"] = {**(config.get("resourceLabels") or {}), PLAN_LABEL: ctx.plan_id}
        name = body["name"]
        try:
            op = _when_free(
                ctx,
                f"cluster {params['cluster']} to accept node pool {name}",
                lambda: _gke(ctx).create_node_pool(params["cluster"], body),
            )
        except AlreadyExists:
            # Created between our check and our create: ours (a parallel run of this plan) or not.
            pool = self._find(params, ctx)
            if pool is None:
                raise
            self._ours(pool, params, ctx)
            return self._outputs(params)
        return {**self._outputs(params), "operation": op}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        name = params["node_pool"]["name"]
        op = outputs.get("operation")
        if op:
            _wait_operation(ctx, op, f"creation of node pool {name}", NODE_POOL_TIMEOUT)
        self._wait_running(params, ctx, NODE_POOL_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        name = params["node_pool"]["name"]
        pool = self._find(params, ctx)
        if pool is None:
            raise CloudError(f"node pool {name} is not in cluster {params['cluster']} after its creation")
        want = (params["node_pool"].get("networkConfig") or {}).get("podRange")
        have = (pool.get("networkConfig") or {}).get("podRange")
        if want and have != want:
            raise CloudError(f"node pool {name} takes pod IPs from {have or 'the default range'}, not {want}")
        if _labels(pool).get(PLAN_LABEL) != ctx.plan_id:
            raise CloudError(f"node pool {name} lacks the label {PLAN_LABEL}={ctx.plan_id}")


# --- gke.add-cluster-pod-ranges ---------------------------------------------------------------------


def _cluster_pod_ranges(cluster: dict[str, Any]) -> list[str]:
    policy = cluster.get("ipAllocationPolicy") or {}
    return list((policy.get("additionalPodRangesConfig") or {}).get("podRangeNames") or [])


class AddClusterPodRanges:
    def _missing(self, params: dict[str, Any], ctx: StepContext) -> list[str]:
        have = set(_cluster_pod_ranges(_gke(ctx).get_cluster(params["cluster"])))
        return [n for n in params["range_names"] if n not in have]

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return None if self._missing(params, ctx) else {"range_names": list(params["range_names"])}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        _settle_earlier_operation(ctx, step)

        def update() -> dict[str, Any]:
            # Re-read on every attempt: while we waited, the queued operation may have added them.
            missing = self._missing(params, ctx)
            if not missing:
                return {}
            return _gke(ctx).add_cluster_pod_ranges(params["cluster"], missing)

        op = _when_free(ctx, f"cluster {params['cluster']} to accept new pod ranges", update)
        outputs: Outputs = {"range_names": list(params["range_names"])}
        return {**outputs, "operation": op} if op else outputs

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            what = f"adding pod ranges {', '.join(params['range_names'])} to cluster {params['cluster']}"
            _wait_operation(ctx, op, what, CLUSTER_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        missing = self._missing(params, ctx)
        if missing:
            raise CloudError(f"cluster {params['cluster']} does not list pod range(s) {', '.join(missing)}")


# --- gke.add-firewall-range ------------------------------------------------------------------------
# compute v1 Firewall has no fingerprint (discovery document, schema Firewall; unlike Subnetwork), so the
# API offers no guard against a concurrent writer: the rule is re-read right before the patch and patched
# only if its ranges are still the ones the plan saw, and read again after to check nothing was lost.

FIREWALL_TIMEOUT = 5 * 60.0


def _covered(ranges: list[str], cidr: str) -> bool:
    new = netmath.parse_cidr(cidr)
    for text in ranges:
        try:
            if new.subnet_of(netmath.parse_cidr(text)):
                return True
        except (CidrxError, ValueError, TypeError):
            continue
    return False


def _already_or_unchanged(now: list[str], params: dict[str, Any], where: str, what: str) -> bool:
    """True when the list `now` covers the planned CIDR already; StalePlan when it is no longer the list the
    plan saw (someone else changed it: deciding again is the user's call); False when the step must add it."""
    if _covered(now, params["cidr"]):
        return True
    if set(now) != set(params["seen"]):
        raise StalePlan(
            f"{where} changed since the plan was made: its {what} are now {', '.join(now) or 'empty'}, not "
            f"{', '.join(params['seen'])}; make a new plan"
        )
    return False


class AddFirewallRange:
    def _ranges(self, params: dict[str, Any], ctx: StepContext) -> list[str]:
        rule = _gke(ctx).get_firewall(params["firewall"], params["project"])
        return [str(r) for r in rule.get(params["field"]) or []]

    def _done(self, params: dict[str, Any]) -> Outputs:
        return {"firewall": params["firewall"], "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self._done(params) if _covered(self._ranges(params, ctx), params["cidr"]) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        _settle_earlier_operation(ctx, step)
        name = params["firewall"]
        now = self._ranges(params, ctx)
        if _already_or_unchanged(now, params, f"firewall rule {name}", params["field"]):
            return self._done(params)
        op = _gke(ctx).patch_firewall_ranges(name, params["field"], [*now, params["cidr"]], params["project"])
        return {**self._done(params), "operation": op, "before": now}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            _wait_operation(ctx, op, f"firewall rule {params['firewall']} to allow {params['cidr']}", FIREWALL_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        now = self._ranges(params, ctx)
        if not _covered(now, params["cidr"]):
            raise CloudError(f"firewall rule {params['firewall']} does not cover {params['cidr']} after the patch")
        lost = [r for r in outputs.get("before") or [] if r not in now]
        if lost:
            raise CloudError(
                f"firewall rule {params['firewall']} lost {', '.join(lost)} while cidrx patched it (someone else "
                "wrote it at the same time; firewall rules have no fingerprint): add them back by hand"
            )


# --- kube.add-ip-masq-cidr --------------------------------------------------------------------------

IP_MASQ_RETRIES = 3


def _kube(ctx: StepContext) -> KubeApi:
    apis: GkeApis = ctx.apis
    if apis.kube is None:
        raise CloudError(
            "the ip-masq-agent step changes a ConfigMap in the cluster and needs its Kubernetes API: run the "
            "apply with cluster access (without --no-kube)"
        )
    return apis.kube


class AddIpMasqCidr:
    """Append the new range to ip-masq-agent's nonMasqueradeCIDRs with a JSON patch that starts with a `test`
    of the resourceVersion just read, so a concurrent writer makes it fail (422) instead of being overwritten."""

    def _read(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        cm = _kube(ctx).get_custom("", "v1", "configmaps", params["name"], params["namespace"])
        if cm is None:
            raise StalePlan(
                f"ConfigMap {params['namespace']}/{params['name']} was deleted since the plan was made; make a new plan"
            )
        return cm

    def _cidrs(self, cm: dict[str, Any], params: dict[str, Any]) -> tuple[list[str], str]:
        from cidrx.providers.gke.masquerade import DEFAULT_NON_MASQUERADE, parse_config

        text = str((cm.get("data") or {}).get(params["key"]) or "")
        config = parse_config(text)
        if config is None:
            raise StalePlan(f"ConfigMap {params['namespace']}/{params['name']} no longer holds a readable config")
        raw = config.get("nonMasqueradeCIDRs")
        return ([str(c) for c in raw] if isinstance(raw, list) else list(DEFAULT_NON_MASQUERADE)), text

    def _done(self, params: dict[str, Any]) -> Outputs:
        return {"config_map": f"{params['namespace']}/{params['name']}", "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        cidrs, _ = self._cidrs(self._read(params, ctx), params)
        return self._done(params) if _covered(cidrs, params["cidr"]) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        where = f"ConfigMap {params['namespace']}/{params['name']}"
        return self.patch(params, ctx, lambda cidrs: _already_or_unchanged(cidrs, params, where, "nonMasqueradeCIDRs"))

    def patch(self, params: dict[str, Any], ctx: StepContext, done: Callable[[list[str]], bool]) -> Outputs:
        """Add the planned CIDR (or take it out, `remove`) unless `done(cidrs)` says there is nothing to do;
        a JSON patch whose first op tests the resourceVersion just read, read again on 422."""
        from cidrx.kube.errors import PatchTestFailed
        from cidrx.providers.gke.masquerade import updated_config

        where = f"ConfigMap {params['namespace']}/{params['name']}"
        for _ in range(IP_MASQ_RETRIES):
            cm = self._read(params, ctx)
            cidrs, text = self._cidrs(cm, params)
            if done(cidrs):
                return self._done(params)
            version = str((cm.get("metadata") or {}).get("resourceVersion") or "")
            op = "replace" if params["key"] in (cm.get("data") or {}) else "add"
            value = updated_config(text, params["cidr"], remove=bool(params.get("remove")))
            ops = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": op, "path": f"/data/{params['key']}", "value": value},
            ]
            try:
                _kube(ctx).json_patch("", "v1", "configmaps", params["name"], ops, namespace=params["namespace"])
            except PatchTestFailed:
                continue  # written meanwhile: read again and decide again
            return self._done(params)
        raise CloudError(f"{where} kept changing under us ({IP_MASQ_RETRIES} attempts); run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None  # the agent re-reads its config every resyncInterval (60 s by default)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(
                f"ConfigMap {params['namespace']}/{params['name']} does not list {params['cidr']} after the patch"
            )


# Derived from the plan module's declarations: the executor each step action names.
EXECUTORS: dict[str, Executor] = executors(ACTIONS)
