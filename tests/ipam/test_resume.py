"""An in-cluster IPAM apply (Whereabouts reclaim, Calico reclaim, Calico pool) that dies right after the
cluster accepted a write still converges when the same command is run again, with the journal kept or lost.

Two granularities of crash, each with the journal kept and with it deleted:

* after step k: the real executor's `act` returned (every write of the step reached the API server), then
  Ctrl-C before the engine journaled it;
* after write n: inside a step, right after the n-th write request the API server accepted (e.g. a Calico
  block already rewritten but its IPAMHandle not yet settled, or a block deleted but its BlockAffinity not).

The interrupted run goes through the engine with the real executors and a real KubeApi (wrapped to die at
the chosen point), inside the CLI's error boundary, so its exit code is what a user sees (5). The resumed
run is the real CLI (`reclaim --apply` / `expand --apply PLAN --yes`). The end state is compared with that
of an uninterrupted apply of the same plan in an identical cluster: every object the IPAM keeps (pools,
reservations, blocks, affinities, handles), normalised, so a duplicate pool, a second release or a handle
count that disagrees with its blocks shows up as a difference. The writes of the crashed and the resumed run
together must be exactly the writes of the uninterrupted one: nothing written (released, deleted) twice.

Step ids are read from plans of the pure test cases, so a step added to a planner is covered here too.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cidrx.app import apply as app_apply
from cidrx.cli import boundary, cli
from cidrx.engine.apply import run_plan
from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.engine.journal import Journal, journal_path
from cidrx.engine.waiting import Waiter
from cidrx.ipam.calico.strategies import pool as calico_pool
from cidrx.ipam.calico.strategies import reclaim as calico_reclaim
from cidrx.ipam.whereabouts.strategies import reclaim as whereabouts_reclaim
from cidrx.kube.api import KubeApi, KubeApis
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, load_plan, save_plan
from cidrx.render.progress import NullProgress
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc
from tests.support.fakes.kube_server import FakeKubeServer, is_lock

JSON = dict[str, Any]
CREATED = "2024-12-09T03:45:00Z"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
KUBE_WRITES = ("create_custom", "replace_custom", "replace_daemonset", "json_patch", "delete_custom")
WHEREABOUTS = "whereabouts.cni.cncf.io"
CALICO = "crd.projectcalico.org"


@dataclass(frozen=True)
class Kind:
    """One plan kind: how its cluster is seeded, how its plan is made (CLI words after the target), which
    objects make up its end state, and how many writes an uninterrupted apply makes (checked below)."""

    name: str
    seed: Callable[[], list[JSON]]
    plan_args: tuple[str, ...]
    state: tuple[tuple[str, str], ...]  # (API group, kind)
    step_ids: tuple[str, ...]
    writes: int

    @property
    def command(self) -> str:
        return self.plan_args[0]


def _ids(plan: Plan) -> tuple[str, ...]:
    return tuple(s.id for s in plan.steps)


_CALICO_STATE = ((CALICO, "IPPool"), (CALICO, "IPAMBlock"), (CALICO, "BlockAffinity"), (CALICO, "IPAMHandle"))
KINDS = {
    k.name: k
    for k in (
        Kind(
            "whereabouts-reclaim",
            wc.crashed_node_objects,
            ("reclaim", "--ipam", "whereabouts", "--plan"),
            ((WHEREABOUTS, "IPPool"), (WHEREABOUTS, "OverlappingRangeIPReservation")),
            _ids(whereabouts_reclaim.make_plan(wc.example_snapshot(), PlanOptions(), CREATED)),
            writes=7,  # one guarded pool patch, six reservation deletes
        ),
        Kind(
            "calico-reclaim",
            lambda: calico_cases.incident().objects(),
            ("reclaim", "--ipam", "calico", "--plan"),
            _CALICO_STATE,
            _ids(calico_reclaim.make_plan(calico_cases.incident().snapshot(), PlanOptions(), CREATED)),
            # two block rewrites + two handle deletes (mark deleted, delete) + an empty block's release
            # (affinity pendingDeletion, block marked deleted, block delete, affinity delete)
            writes=10,
        ),
        Kind(
            "calico-pool",
            lambda: calico_cases.incident().objects(),
            ("expand", "--plan", "--strategy", "calico-pool"),
            _CALICO_STATE,
            _ids(calico_pool.make_plan(calico_cases.incident().snapshot(), PlanOptions(), CREATED)),
            writes=1,
        ),
    )
}


# --- crashing wrappers -------------------------------------------------------------------------------


class CrashAfterAct:
    """The real executor, except that step `crash_at`'s act raises Ctrl-C once the real act returned."""

    def __init__(self, inner: Executor, crash_at: str, acted: list[str]) -> None:
        self.inner, self.crash_at, self.acted = inner, crash_at, acted

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self.inner.check(step, params, ctx)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        outputs = self.inner.act(step, params, ctx)
        if step.id == self.crash_at:
            self.acted.append(step.id)
            raise KeyboardInterrupt
        return outputs

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.wait(step, params, ctx, outputs)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.verify(step, params, ctx, outputs)


class Tracking:
    """The real executor; tells `kube` which step is acting, so a crash can say where it happened."""

    def __init__(self, inner: Executor, kube: CrashAfterWrite) -> None:
        self.inner, self.kube = inner, kube

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        self.kube.step = step.id
        return self.inner.check(step, params, ctx)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        self.kube.step = step.id
        return self.inner.act(step, params, ctx)

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.wait(step, params, ctx, outputs)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.verify(step, params, ctx, outputs)


class CrashAfterWrite:
    """A real KubeApi, except that the process 'dies' (Ctrl-C) right after the `crash_at`-th write the API
    server accepted: the write is in the cluster, nothing after it happened."""

    def __init__(self, inner: KubeApi, crash_at: int) -> None:
        self.inner, self.crash_at = inner, crash_at
        self.writes = 0
        self.step = ""
        self.crashed_in: str | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in KUBE_WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            self.writes += 1
            if self.writes == self.crash_at:
                self.crashed_in = self.step
                raise KeyboardInterrupt
            return result

        return write


# --- the cluster, the CLI, the end state ---------------------------------------------------------------


def cli_run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def cli_apply(kind: Kind, plan_path: Path, kubeconfig: str) -> Result:
    return cli_run(kind.command, "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)


def engine_apply(
    plan_path: Path, kubeconfig: str, wrap: Callable[[KubeApi], Any], executors: Callable[[Any], dict[str, Executor]]
) -> int:
    """What `targets.apply_plan` does (without the drift check: the plan fits this identical cluster), with
    the KubeApi and executors wrapped, through the CLI's error boundary: returns the exit code."""
    plan = load_plan(plan_path)

    def apply() -> None:
        journal = Journal.open(plan_path, plan)
        with KubeApi(kubeconfig, None) as real:
            kube = wrap(real)
            ctx = StepContext(
                plan=plan,
                apis=KubeApis(kube=kube),
                waiter=Waiter(sleep=lambda _: None, monotonic=lambda: 0.0),
                progress=NullProgress(),
            )
            with boundary.applying():
                run_plan(plan, executors(kube), ctx, journal)

    return boundary.run(apply)


def writes(server: FakeKubeServer) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in server.requests() if r.method in WRITE_METHODS and not is_lock(r)]


_VOLATILE = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields")


def end_state(server: FakeKubeServer, kind: Kind) -> dict[str, list[JSON]]:
    """Every object of the kind's state, without server-assigned metadata, sorted by name (a list, so a
    duplicate would show)."""
    out: dict[str, list[JSON]] = {}
    for group, k in kind.state:
        objs = []
        for obj in server.objects_of(k, group=group):
            meta = {key: v for key, v in obj["metadata"].items() if key not in _VOLATILE}
            objs.append({**obj, "metadata": meta})
        out[f"{group}/{k}"] = sorted(objs, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    return out


def assert_calico_consistent(server: FakeKubeServer) -> None:
    """Every block keeps Calico's invariants and every IPAMHandle's per-block counts are what the blocks hold."""
    actual: dict[str, dict[str, int]] = {}
    for block in server.objects_of("IPAMBlock", group=CALICO):
        spec = block["spec"]
        allocations, attributes = spec["allocations"], spec["attributes"]
        assert sorted(spec["unallocated"]) == [o for o, a in enumerate(allocations) if a is None]
        assert {a for a in allocations if a is not None} == set(range(len(attributes)))
        for a in allocations:
            if a is not None:
                per = actual.setdefault(attributes[a]["handle_id"], {})
                per[spec["cidr"]] = per.get(spec["cidr"], 0) + 1
    handles = {h["spec"]["handleID"]: h["spec"]["block"] for h in server.objects_of("IPAMHandle", group=CALICO)}
    assert handles == actual


@dataclass(frozen=True)
class Baseline:
    plan: Plan
    end_state: dict[str, list[JSON]]
    writes: list[tuple[str, str]]


def _clean_env(mp: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            mp.delenv(name)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Baseline]:
    """Per kind: the plan `--plan` makes for the seeded cluster and what an uninterrupted `--apply` leaves."""
    out: dict[str, Baseline] = {}
    with pytest.MonkeyPatch.context() as mp:
        _clean_env(mp)
        for kind in KINDS.values():
            tmp = tmp_path_factory.mktemp(kind.name)
            with FakeKubeServer() as server:
                server.put_many(kind.seed())
                kubeconfig = str(server.kubeconfig(tmp / "kubeconfig"))
                plan_path = tmp / "plan.json"
                made = cli_run(
                    *kind.plan_args[:1],
                    "--k8s",
                    "--kubeconfig",
                    kubeconfig,
                    *kind.plan_args[1:],
                    "--out",
                    str(plan_path),
                )
                assert made.exit_code == 0, made.output
                server.reset_log()
                applied = cli_apply(kind, plan_path, kubeconfig)
                assert applied.exit_code == 0, applied.output
                out[kind.name] = Baseline(load_plan(plan_path), end_state(server, kind), writes(server))
            assert not server.errors
    return out


@dataclass
class Cluster:
    server: FakeKubeServer
    kubeconfig: str
    plan_path: Path


@pytest.fixture
def cluster(kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path) -> Callable[[str, Plan], Cluster]:
    """A fresh cluster seeded for a kind, with the baseline's plan saved beside it."""

    def make(kind_name: str, plan: Plan) -> Cluster:
        kube_server.put_many(KINDS[kind_name].seed())
        path = tmp_path / "plan.json"
        save_plan(plan, path)
        kube_server.reset_log()
        return Cluster(kube_server, str(kubeconfig_path), path)

    return make


# --- tests ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_the_uninterrupted_apply_is_the_reference(kind_name: str, baselines: dict[str, Baseline]) -> None:
    kind, base = KINDS[kind_name], baselines[kind_name]
    assert _ids(base.plan) == kind.step_ids  # the parametrisation covers the steps of the plan the CLI makes
    assert len(base.writes) == kind.writes == len(set(base.writes))  # the write crash points cover every write
    if kind_name == "whereabouts-reclaim":
        (pool,) = base.end_state[f"{WHEREABOUTS}/IPPool"]
        assert sorted(pool["spec"]["allocations"], key=int) == [str(i) for i in wc.LIVE_OFFSETS]
        names = [r["metadata"]["name"] for r in base.end_state[f"{WHEREABOUTS}/OverlappingRangeIPReservation"]]
        assert sorted(names) == sorted(wc.ip_of(i) for i in wc.LIVE_OFFSETS)
    elif kind_name == "calico-reclaim":
        blocks = [b["spec"]["cidr"] for b in base.end_state[f"{CALICO}/IPAMBlock"]]
        assert calico_cases.BLOCK_D not in blocks and len(blocks) == 3
        handles = {h["spec"]["handleID"] for h in base.end_state[f"{CALICO}/IPAMHandle"]}
        assert "k8s-pod-network.default.web-gone" not in handles
    else:
        pools = [p["metadata"]["name"] for p in base.end_state[f"{CALICO}/IPPool"]]
        assert pools == ["cidrx-10-0-2-0-23", "default-ipv4-ippool"]


def _step_points() -> list[Any]:
    return [pytest.param(k.name, sid, id=f"{k.name}-{sid}") for k in KINDS.values() for sid in k.step_ids]


def _write_points() -> list[Any]:
    return [pytest.param(k.name, n, id=f"{k.name}-write{n}") for k in KINDS.values() for n in range(1, k.writes + 1)]


def _resume_and_compare(
    kind: Kind, base: Baseline, c: Cluster, journal: str, crashed_step: str, *, whole_step: bool
) -> None:
    if journal == "lost":
        journal_path(c.plan_path).unlink()
    else:
        events = [(e.event, e.error) for e in Journal.open(c.plan_path, base.plan).events if e.step == crashed_step]
        assert events == [("started", None), ("failed", "interrupted")]  # the write never reached the journal

    result = cli_apply(kind, c.plan_path, c.kubeconfig)
    assert result.exit_code == 0, result.output
    ids = list(kind.step_ids)
    crashed = ids.index(crashed_step)
    statuses = {
        row[0]: row[1] for row in (line.split() for line in result.stdout.splitlines()) if row and row[0] in ids
    }
    assert len(statuses) == len(ids), result.stdout
    for i, sid in enumerate(ids):
        if i < crashed:
            assert statuses[sid] == "skipped", sid
        elif i > crashed:
            assert statuses[sid] == "done", sid
    if whole_step:
        assert statuses[crashed_step] == "skipped"  # found done in the cluster, not in the journal

    assert end_state(c.server, kind) == base.end_state
    # Crashed run + resumed run wrote exactly what one uninterrupted run writes: nothing twice.
    assert Counter(writes(c.server)) == Counter(base.writes)
    if kind.name.startswith("calico"):
        assert_calico_consistent(c.server)

    c.server.reset_log()  # and a third run finds nothing left to do
    again = cli_apply(kind, c.plan_path, c.kubeconfig)
    assert again.exit_code == 0, again.output
    assert writes(c.server) == []


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize(("kind_name", "step_id"), _step_points())
def test_crash_right_after_a_step_wrote_then_the_same_command_converges(
    kind_name: str, step_id: str, journal: str, baselines: dict[str, Baseline], cluster: Callable[..., Cluster]
) -> None:
    kind, base = KINDS[kind_name], baselines[kind_name]
    c = cluster(kind_name, base.plan)
    acted: list[str] = []

    def crashing(_kube: Any) -> dict[str, Executor]:
        return {a: CrashAfterAct(ex, step_id, acted) for a, ex in app_apply.executors(base.plan).items()}

    assert engine_apply(c.plan_path, c.kubeconfig, lambda k: k, crashing) == 5
    assert acted == [step_id]
    assert writes(c.server)  # the cluster took the step's write(s)
    _resume_and_compare(kind, base, c, journal, step_id, whole_step=True)


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize(("kind_name", "write"), _write_points())
def test_crash_right_after_any_single_write_then_the_same_command_converges(
    kind_name: str, write: int, journal: str, baselines: dict[str, Baseline], cluster: Callable[..., Cluster]
) -> None:
    kind, base = KINDS[kind_name], baselines[kind_name]
    c = cluster(kind_name, base.plan)
    kubes: list[CrashAfterWrite] = []

    def wrap(real: KubeApi) -> CrashAfterWrite:
        kubes.append(CrashAfterWrite(real, write))
        return kubes[-1]

    def tracked(kube: Any) -> dict[str, Executor]:
        return {a: Tracking(ex, kube) for a, ex in app_apply.executors(base.plan).items()}

    assert engine_apply(c.plan_path, c.kubeconfig, wrap, tracked) == 5
    (kube,) = kubes
    assert kube.writes == write and kube.crashed_in is not None
    assert writes(c.server) == base.writes[:write]  # the same writes as the reference, up to the crash
    _resume_and_compare(kind, base, c, journal, kube.crashed_in, whole_step=False)


# --- our own progress, then someone else's: what the resumed drift check makes of it -----------------


def _whereabouts_reuses_offset_9(server: FakeKubeServer) -> str:
    """Whereabouts hands db-0's released address to a new pod (allocation and reservation)."""
    entry = {"id": wc.cid(77), "podref": f"{wc.APP_NS}/api-0", "ifname": "net1"}
    server.patch(WHEREABOUTS, "v1alpha1", "ippools", wc.POOL, {"spec": {"allocations": {"9": entry}}}, wc.POOL_NS)
    server.put(wc.orip(wc.ip_of(9), f"{wc.APP_NS}/api-0", 77))
    server.put(wc.pod("api-0", "Running", wc.LIVE_NODES[0], ips=[wc.ip_of(9)]))
    return f"{wc.APP_NS}/api-0"


def _calico_reuses_ordinal_44(server: FakeKubeServer) -> str:
    """calico-ipam hands web-gone's released 10.0.0.44 to a new pod."""
    block = server.get(CALICO, "v1", "ipamblocks", "10-0-0-0-26")
    assert block is not None and block["spec"]["allocations"][44] is None  # released by the crashed run
    spec = block["spec"]
    spec["attributes"].append(calico_cases.pod_attr("default", "api-new", "node-1"))
    spec["allocations"][44] = len(spec["attributes"]) - 1
    spec["unallocated"].remove(44)
    server.put(block)
    server.put(calico_cases.pod("default", "api-new", "node-1", "10.0.0.44"))
    return "default/api-new"


REUSE = {
    "whereabouts-reclaim": (_whereabouts_reuses_offset_9, wc.ip_of(9)),
    "calico-reclaim": (_calico_reuses_ordinal_44, "10.0.0.44"),
}


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize("kind_name", list(REUSE))
def test_an_address_this_plan_released_then_handed_to_a_new_pod_is_progress_when_the_journal_says_so(
    kind_name: str, journal: str, baselines: dict[str, Baseline], cluster: Callable[..., Cluster]
) -> None:
    """Crash right after the first step released its addresses; the IPAM then gives one of them to a new
    pod before the rerun. With the journal, the drift check knows the release step was begun by this plan
    and leaves that address to the step (kept, never released again). Without it, the same picture is
    indistinguishable from someone else re-using the address before any apply: refused, nothing written."""
    kind, base = KINDS[kind_name], baselines[kind_name]
    c = cluster(kind_name, base.plan)
    first = kind.step_ids[0]
    acted: list[str] = []

    def crashing(_kube: Any) -> dict[str, Executor]:
        return {a: CrashAfterAct(ex, first, acted) for a, ex in app_apply.executors(base.plan).items()}

    assert engine_apply(c.plan_path, c.kubeconfig, lambda k: k, crashing) == 5
    assert acted == [first]
    reuse, ip = REUSE[kind_name]
    holder = reuse(c.server)
    if journal == "lost":
        journal_path(c.plan_path).unlink()
    c.server.reset_log()

    result = cli_apply(kind, c.plan_path, c.kubeconfig)
    if journal == "lost":
        assert result.exit_code == 4, result.output
        assert ip in result.output and holder in result.output and "the plan is stale" in result.output
        assert "Traceback" not in result.output
        assert writes(c.server) == []
        return
    assert result.exit_code == 0, result.output
    if kind_name == "whereabouts-reclaim":
        pool = c.server.get(WHEREABOUTS, "v1alpha1", "ippools", wc.POOL, wc.POOL_NS)
        assert pool is not None
        held = pool["spec"]["allocations"]
        assert sorted(held, key=int) == [str(i) for i in (*wc.LIVE_OFFSETS, 9)]
        assert held["9"]["podref"] == holder
        orip = c.server.get(WHEREABOUTS, "v1alpha1", "overlappingrangeipreservations", ip, wc.POOL_NS)
        assert orip is not None and orip["spec"]["podref"] == holder  # the new pod's reservation kept
    else:
        block = c.server.get(CALICO, "v1", "ipamblocks", "10-0-0-0-26")
        assert block is not None
        spec = block["spec"]
        assert spec["attributes"][spec["allocations"][44]]["handle_id"] == "k8s-pod-network.default.api-new"
        other = c.server.get(CALICO, "v1", "ipamblocks", "10-0-0-64-26")
        assert other is not None and other["spec"]["allocations"][10] is None  # the rest of the plan, done
