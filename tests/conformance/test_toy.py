"""A toy IPAM and its toy strategy (tests/conformance/toy/) prove that adding a plugin is one package plus one
line: registered with one `registry.register(...)` call, and named nowhere else, it shows up in everything
derived from the declarations: `cidrx expand --help`, the ClusterRole `cidrx permissions` writes (its
collector's `kube_reads`, its steps' permissions), the HTML report's address maps (its `maps` hook) and the
findings catalogue `python -m tools.docgen` writes (its finding kinds, grouped under its title).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cidrx import registry
from tests.conformance import toy
from tests.conformance.test_architecture import declaration_problems
from tests.conformance.toy.model import GROUP, PLURAL, VERSION, ToyPool, ToySection
from tests.support.cases import MissingCase, case_for
from tests.support.cli import run
from tests.support.fakes.kube_server import FakeKubeServer

STRATEGY = toy.STRATEGIES[0]


@pytest.fixture
def registered() -> Iterator[None]:
    """The toy, registered the way a plugin is (one call), and gone again after the test."""
    registry.register(toy.SPEC, *toy.STRATEGIES)
    try:
        yield
    finally:
        registry.unregister(toy.SPEC.name)
    assert registry.strategy(STRATEGY.name) is None and registry.ipam_spec(toy.SPEC.name) is None


def test_the_toy_is_shaped_like_a_plugin() -> None:
    """Its `__init__` declares SPEC and STRATEGIES and imports nothing but the registry, like the real ones."""
    assert declaration_problems("tests.conformance.toy") == []
    assert STRATEGY.owner == toy.SPEC.name and STRATEGY.plan and STRATEGY.drift and STRATEGY.actions


def test_registered_the_toy_strategy_is_everywhere_the_registry_answers(registered: None) -> None:
    assert registry.owner_of(STRATEGY.name) == toy.SPEC
    assert STRATEGY.name in registry.expand_strategies() and STRATEGY.name in registry.ipam_strategies()
    (action,) = registry.strategy_actions(STRATEGY)
    assert registry.step_permissions()[action.name] == action.permissions
    executor = registry.executors([action])[action.name]
    assert all(callable(getattr(executor, m)) for m in ("check", "act", "wait", "verify"))


def test_a_registered_strategy_without_a_case_fails_the_conformance_suite(registered: None) -> None:
    assert STRATEGY in registry.strategies()
    with pytest.raises(
        MissingCase, match="strategy toy-pool declares no conformance case: add one in tests/support/cases/"
    ):
        case_for(STRATEGY.name)


def test_its_plan_and_drift_are_the_strategys_own(registered: None) -> None:
    from cidrx.errors import StalePlan

    snapshot: Any = type("Snap", (), {"target": None, "fingerprint": "f" * 64, "kube": None})()
    plan = registry.load(STRATEGY.plan)(snapshot, None, "2026-11-28T00:00:00Z")
    assert [s.action for s in plan.steps] == [a.name for a in registry.strategy_actions(STRATEGY)]
    registry.load(STRATEGY.drift)(plan, snapshot)  # nothing there yet: holds
    snapshot.kube = type("Kube", (), {"toy": ToySection((ToyPool(plan.basis["name"], "10.99.0.0/24"),))})()
    with pytest.raises(StalePlan, match="created by someone else"):
        registry.load(STRATEGY.drift)(plan, snapshot)


def test_its_step_permissions_are_in_every_cluster_role(registered: None) -> None:
    for provider in registry.provider_names():
        result = run("permissions", f"--{provider}", "--for", "apply", "-o", "json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        rules = [r for r in doc["cluster_role"]["rules"] if GROUP in r.get("apiGroups", ())]
        assert any(PLURAL in r["resources"] and "create" in r["verbs"] for r in rules), (provider, rules)
        assert any(s["strategy"] == STRATEGY.name for s in doc["steps"])


def test_its_strategy_shows_in_expand_help(registered: None) -> None:
    result = run("expand", "--help")
    assert result.exit_code == 0, result.output
    assert STRATEGY.name in result.output


def test_its_kube_reads_are_in_the_cluster_role(registered: None) -> None:
    result = run("permissions", "--k8s", "--for", "diagnose", "-o", "json")
    assert result.exit_code == 0, result.output
    rules = json.loads(result.stdout)["cluster_role"]["rules"]
    assert any(GROUP in r.get("apiGroups", ()) and PLURAL in r["resources"] and "list" in r["verbs"] for r in rules)


def test_its_maps_hook_gives_address_maps(registered: None) -> None:
    """What can be asserted without the snapshot carrying a toy section: the declared hook gives the maps the
    HTML report draws."""
    from cidrx.model.kube import KubeSection
    from cidrx.model.netmap import NetworkMap

    section = ToySection((ToyPool("blue", "10.99.0.0/24", used=7),))
    maps = registry.load(toy.SPEC.maps)(section, KubeSection(available=True))
    assert [type(m) for m in maps] == [NetworkMap] and maps[0].title == "Toy pool blue 10.99.0.0/24"


def test_its_address_map_is_in_the_html_report(registered: None, tmp_path: Path) -> None:
    with FakeKubeServer() as server, pytest.MonkeyPatch.context() as mp:
        mp.delenv("KUBECONFIG", raising=False)
        server.register(GROUP, VERSION, PLURAL, "ToyPool", namespaced=False)
        server.put({"apiVersion": f"{GROUP}/{VERSION}", "kind": "ToyPool", "metadata": {"name": "blue"},
                    "spec": {"cidr": "10.99.0.0/24", "used": 7}})  # fmt: skip
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        snapshot = tmp_path / "toy.snapshot.json"
        taken = run("snapshot", "--k8s", "--kubeconfig", kubeconfig, "--out", str(snapshot))
        assert taken.exit_code == 0, taken.output
    assert json.loads(snapshot.read_text())["kube"][toy.SPEC.field] is not None
    page = run("diagnose", "--snapshot", str(snapshot), "-o", "html")
    assert page.exit_code in (0, 3), page.output
    assert "Toy pool blue 10.99.0.0/24" in page.stdout


def test_its_findings_are_grouped_under_its_title_in_the_findings_docs(registered: None) -> None:
    from tools.docgen import render_findings_md

    page = render_findings_md()
    assert f"## {toy.SPEC.title}" in page
    section = page.split(f"## {toy.SPEC.title}", 1)[1]
    assert "### TOY-POOL-FULL" in section
