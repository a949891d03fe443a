"""Every registered strategy, through the public CLI against a live estate: plan, drift, apply, resume,
rollback and permissions.

Why it exists: the strategies come from `cidrx.registry.strategies()`, never from a table kept here, so a
strategy added to a plugin is run through every phase (or fails, asking for its case in
tests/support/cases/, which says how to build an estate it has work in and how to make its plan stale).
Everything goes through `cidrx` in process (tests/support/cli.py) and the fakes, so these tests hold
whatever module the code lives in.

Phases:
- plan: `expand --plan` (`reclaim --plan` for a reclaim strategy) exits 0 with steps, each step's action one
  the strategy declares.
- drift: someone changes the estate after the plan; `--apply` exits 4 naming the change, writes nothing.
- apply: `--apply` exits 0 and changes the estate; applied again it exits 0 and writes nothing.
- resume: the run is interrupted (Ctrl-C) right after the estate took one write, before the run heard back
  (exit 5); the same command finishes (exit 0) and a third run writes nothing.
- rollback: an expand plan's `rollback PLAN --yes` brings the estate back to what it was before the apply;
  a reclaim plan, or an applied plan with a step whose action declares `no_undo` (it cannot be undone by
  design), is refused (exit 2) naming why, with nothing written.
- permissions: every permission a step declares is granted by `cidrx permissions --<provider> --for apply`,
  and every undo permission of its actions by `--for rollback`.
A phase a case cannot run says why (`Case.skip`), reported as a skip with that reason.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from cidrx import registry
from tests.support.cases import Case, MissingCase, PlanDoc, case_for
from tests.support.cases.live import Live
from tests.support.cli import run

pytestmark = pytest.mark.usefixtures("shared_botocore")  # the EKS estates' sessions share one botocore loader

STRATEGIES = [s.name for s in registry.strategies()]


def strategy_of(name: str) -> registry.Strategy:
    found = registry.strategy(name)
    assert found is not None
    return found


def case(name: str, phase: str = "") -> Case:
    try:
        found = case_for(name)
    except MissingCase as exc:
        pytest.fail(str(exc))
    if phase in found.skip:
        pytest.skip(f"{name} {phase}: {found.skip[phase]}")
    return found


def make_plan(name: str, live: Live, path: Path) -> tuple[Result, PlanDoc | None]:
    s, c = strategy_of(name), case_for(name)
    if s.reclaim:
        args = ["reclaim", *live.target, *(c.plan_args or ("--ipam", s.owner)), "--plan", "--out", str(path)]
    else:
        args = ["expand", *live.target, *(c.plan_args or ("--strategy", name)), "--plan", "--out", str(path)]
    made = run(*args)
    if made.exit_code != 0:
        return made, None
    return made, PlanDoc(path, json.loads(path.read_text()))


def planned(name: str, live: Live) -> PlanDoc:
    made, plan = make_plan(name, live, live.tmp / "plan.json")
    assert made.exit_code == 0 and plan is not None, made.output
    return plan


def apply(name: str, live: Live, plan: PlanDoc) -> Result:
    command = "reclaim" if strategy_of(name).reclaim else "expand"
    return run(command, "--apply", str(plan.path), "--yes", *live.access)


def statuses(result: Result, plan: PlanDoc) -> dict[str, str]:
    """step id -> status, from the table `--apply` prints."""
    ids = {s["id"] for s in plan.steps}
    return {row[0]: row[1] for row in (line.split() for line in result.stdout.splitlines()) if row and row[0] in ids}


@contextlib.contextmanager
def estate(name: str, tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
    with case_for(name).estate(tmp, mp) as live:
        yield live


# --- every strategy has a case ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_registered_strategy_declares_a_case(name: str) -> None:
    assert case(name).strategy == name


def test_a_strategy_without_a_case_fails_naming_where_to_add_it() -> None:
    with pytest.raises(
        MissingCase, match=r"strategy no-such-thing declares no conformance case: add one in tests/support/cases/"
    ):
        case_for("no-such-thing")


# --- plan -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], PlanDoc]:
    """Per strategy (made on first use): the plan `--plan` makes against a fresh estate of its case."""
    made: dict[str, PlanDoc] = {}

    def get(name: str) -> PlanDoc:
        if name not in made:
            tmp = tmp_path_factory.mktemp(name)
            with pytest.MonkeyPatch.context() as mp, estate(name, tmp, mp) as live:
                made[name] = planned(name, live)
        return made[name]

    return get


@pytest.mark.parametrize("name", STRATEGIES)
def test_plan(name: str, plans: Callable[[str], PlanDoc]) -> None:
    case(name, "plan")
    plan = plans(name)
    assert plan.doc["strategy"] == name
    assert plan.steps, f"{name}: the plan has no steps"
    declared = {a.name for a in registry.strategy_actions(strategy_of(name))}
    for step in plan.steps:
        assert step["action"] in declared, (
            f"{name} step {step['id']}: {step['action']} is not one of {sorted(declared)}"
        )


# --- drift ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRATEGIES)
def test_drift(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = case(name, "drift")
    with estate(name, tmp_path, monkeypatch) as live:
        plan = planned(name, live)
        fragments = c.stale(live, plan)
        live.reset_log()
        result = apply(name, live, plan)
        assert result.exit_code == 4, result.output
        assert "the plan is stale" in result.output and "Traceback" not in result.output
        for fragment in fragments:
            assert fragment in result.output
        assert live.writes() == []
        assert not Path(f"{plan.path}.journal.jsonl").exists()


# --- apply, and again -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRATEGIES)
def test_apply_then_apply_again_changes_nothing(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case(name, "apply")
    with estate(name, tmp_path, monkeypatch) as live:
        plan = planned(name, live)
        before = live.state()
        result = apply(name, live, plan)
        assert result.exit_code == 0, result.output
        assert set(statuses(result, plan).values()) == {"done"}, result.output
        live.settle()
        after = live.state()
        assert after != before
        live.reset_log()
        again = apply(name, live, plan)
        assert again.exit_code == 0, again.output
        assert set(statuses(again, plan).values()) == {"skipped"}, again.output
        assert live.writes() == []
        assert live.state() == after


# --- resume after an interrupted apply ------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRATEGIES)
def test_an_interrupted_apply_is_finished_by_the_same_command(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = case(name, "resume")
    with estate(name, tmp_path, monkeypatch) as live:
        plan = planned(name, live)
        live.reset_log()
        live.interrupt_after(c.interrupt.where, c.interrupt.method, c.interrupt.path_contains)
        stopped = apply(name, live, plan)
        assert stopped.exit_code == 5, stopped.output
        assert "Traceback" not in stopped.output
        assert live.writes(), "the interrupted run wrote nothing"
        done_before = [sid for sid, status in statuses(stopped, plan).items() if status == "done"]
        assert len(done_before) < len(plan.steps)
        live.settle()

        resumed = apply(name, live, plan)
        assert resumed.exit_code == 0, resumed.output
        assert set(statuses(resumed, plan).values()) <= {"done", "skipped"}, resumed.output
        live.settle()
        live.reset_log()
        again = apply(name, live, plan)
        assert again.exit_code == 0, again.output
        assert set(statuses(again, plan).values()) == {"skipped"}, again.output
        assert live.writes() == []


# --- rollback -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRATEGIES)
def test_rollback(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case(name, "rollback")
    with estate(name, tmp_path, monkeypatch) as live:
        plan = planned(name, live)
        if strategy_of(name).reclaim:
            live.reset_log()
            refused = run("rollback", str(plan.path), "--yes", *live.rollback_access)
            assert refused.exit_code == 2, refused.output
            assert "reclaim plans cannot be rolled back" in refused.output
            assert live.writes() == []
            return
        before = live.state()
        applied = apply(name, live, plan)
        assert applied.exit_code == 0, applied.output
        live.settle()
        assert live.state() != before
        actions = {a.name: a for a in registry.strategy_actions(strategy_of(name))}
        no_undo = [actions[s["action"]].no_undo for s in plan.steps if actions[s["action"]].no_undo]
        if no_undo:
            after = live.state()
            live.reset_log()
            refused = run("rollback", str(plan.path), "--yes", *live.rollback_access)
            assert refused.exit_code == 2, refused.output
            assert "cannot roll back plan" in refused.output and no_undo[0] in " ".join(refused.output.split())
            assert live.writes() == [] and live.state() == after
            return
        undone = run("rollback", str(plan.path), "--yes", *live.rollback_access)
        assert undone.exit_code == 0, undone.output
        live.settle()
        assert live.state() == before
        live.reset_log()
        again = run("rollback", str(plan.path), "--yes", *live.rollback_access)
        assert again.exit_code == 0, again.output
        assert "nothing to roll back" in again.stdout
        assert live.writes() == []


# --- permissions ----------------------------------------------------------------------------------------------

KUBE = re.compile(
    r"^kubernetes:\s*(?P<res>[a-z0-9-]+(/[a-z]+)?(\.[a-z0-9.-]+)?)\s+(?P<verbs>[a-z]+(,[a-z]+)*)"
    r"(\s+in\s+(?P<ns>[a-z0-9-]+))?(\s+named\s+[a-z0-9.-]+(,[a-z0-9.-]+)*)?$"
)
# Plurals the step notation writes without their API group (the core and apps groups).
UNGROUPED = {"pods": "", "nodes": "", "events": "", "configmaps": "", "namespaces": "", "daemonsets": "apps"}


def kube_grant(permission: str) -> tuple[str, str, list[str]]:
    """(API group, resource, verbs) of "kubernetes: <plural>[/<subresource>][.<group>] <verbs> [in <namespace>]
    [named <names>]"."""
    m = KUBE.match(permission.strip())
    assert m is not None, f"cannot read {permission!r}"
    plural, _, group = m["res"].partition(".")
    return (group or UNGROUPED[plural.split("/")[0]]), plural, m["verbs"].split(",")


def role_allows(rules: list[dict[str, Any]], verb: str, group: str, resource: str) -> bool:
    return any(
        group in r.get("apiGroups", ()) and resource in r.get("resources", ()) and verb in r["verbs"] for r in rules
    )


def printed(provider: str, purpose: str) -> dict[str, Any]:
    result = run("permissions", f"--{provider}", "--for", purpose, "-o", "json")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def cloud_grants(doc: dict[str, Any]) -> set[str]:
    """The cloud permissions a `cidrx permissions -o json` document grants (AWS policy actions, GCP permissions,
    Azure role actions)."""
    out = set(doc.get("gcp_permissions", ())) | set(doc.get("azure_role", {}).get("Actions", ()))
    for statement in doc.get("iam_policy", {}).get("Statement", ()):
        actions = statement["Action"]
        out |= {actions} if isinstance(actions, str) else set(actions)
    return out


def assert_granted(doc: dict[str, Any], permission: str, what: str) -> None:
    where = f"`cidrx permissions --{doc['provider']} --for {doc['for']}`"
    if permission.startswith("kubernetes:"):
        group, resource, verbs = kube_grant(permission)
        for verb in verbs:
            assert role_allows(doc["cluster_role"]["rules"], verb, group, resource), (
                f"{what}: {permission} is not in the ClusterRole of {where}"
            )
    else:
        assert permission in cloud_grants(doc), f"{what}: {permission} is not in {where}"


def providers_of(s: registry.Strategy) -> list[str]:
    """The providers whose targets a strategy's plans run on: its owner, or for an IPAM's every provider it
    is collected for."""
    if registry.provider_spec(s.owner) is not None:
        return [s.owner]
    spec = registry.ipam_spec(s.owner)
    assert spec is not None
    return [p for p in registry.provider_names() if not spec.providers or p in spec.providers]


@pytest.mark.parametrize("name", STRATEGIES)
def test_permissions(name: str, plans: Callable[[str], PlanDoc]) -> None:
    case(name, "permissions")
    s = strategy_of(name)
    plan = plans(name)
    actions = {a.name: a for a in registry.strategy_actions(s)}
    for provider in providers_of(s):
        for_apply, for_rollback = printed(provider, "apply"), printed(provider, "rollback")
        for step in plan.steps:
            assert step["permissions"], f"{name} step {step['id']} declares no permissions"
            for permission in step["permissions"]:
                assert_granted(for_apply, permission, f"{name} step {step['id']}")
            if not s.reclaim:
                for permission in actions[step["action"]].undo_permissions:
                    assert_granted(for_rollback, permission, f"{name} undo of {step['id']} ({step['action']})")
