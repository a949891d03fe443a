"""Every basis fact of every plan kind is enforced: changed, the apply refuses with exit 4 and writes nothing.

Why it exists: a plan prints its basis as what "apply refuses the plan if any of this changed". For each
strategy with a basis reader (every expand strategy must have one), a plan is made against its conformance
estate, then each key of its basis is perturbed in turn (a value changed, an entry dropped or added) and the
plan re-sealed, as if the estate had moved on since the plan was made (the estate is the same; the plan's
record of it differs). `--apply` must exit 4 naming that key, with no write on the fakes and no journal.
The comparison itself is checked over arbitrary JSON with hypothesis.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx import registry
from cidrx.engine.basis import basis_problems
from cidrx.model import codec
from cidrx.model.plan import Plan, save_plan, seal
from tests.support.cases import case_for
from tests.support.cases.live import EksLive
from tests.support.cli import run

pytestmark = pytest.mark.usefixtures("shared_botocore")

EXPAND = [s.name for s in registry.strategies() if not s.reclaim]
WITH_READER = [s.name for s in registry.strategies() if s.basis]


def _other_cidr(value: str) -> str:
    return "198.51.100.0/24" if value == "192.0.2.0/24" else "192.0.2.0/24"


def changed(value: Any) -> Any:
    """A different value of the same shape (a CIDR stays a CIDR, so only the basis check can object)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return _other_cidr(value) if "/" in value and value[:1].isdigit() else f"{value}-x" if value else "x"
    if isinstance(value, list):
        return [*value[:-1], changed(value[-1])] if value else ["x"]
    if isinstance(value, dict):
        if not value:
            return {"cidrx-test": "x"}
        first = next(iter(value))
        return {**value, first: changed(value[first])}
    return "x"


def variants(value: Any) -> Iterator[tuple[str, Any]]:
    """(how, perturbed value) for one basis value: changed, and for a container an entry dropped and added."""
    yield "changed", changed(value)
    if isinstance(value, list) and value:
        yield "dropped", value[:-1]
        yield "added", [*value, changed(value[-1])]
    if isinstance(value, dict) and value:
        first = next(iter(value))
        yield "dropped", {k: v for k, v in value.items() if k != first}
        yield "added", {**value, "cidrx-test": value[first]}


def resealed(path: Path, key: str, value: Any, out: Path) -> Path:
    plan = codec.loads(path.read_text(), Plan, what="plan")
    save_plan(seal(replace(plan, basis={**plan.basis, key: value}, digest="")), out)
    return out


@pytest.mark.parametrize("name", EXPAND)
def test_every_expand_strategy_declares_a_basis_reader(name: str) -> None:
    s = registry.strategy(name)
    assert s is not None and s.basis, f"{name} declares no basis reader (Strategy.basis): apply cannot hold its basis"


@pytest.mark.parametrize("name", WITH_READER)
def test_each_basis_fact_changed_refuses_the_apply(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = registry.strategy(name)
    assert s is not None
    c = case_for(name)
    with c.estate(tmp_path, monkeypatch) as live:
        path = tmp_path / "plan.json"
        made = run("expand", *live.target, *(c.plan_args or ("--strategy", name)), "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
        basis = json.loads(path.read_text())["basis"]
        assert basis, f"{name}: the plan has no basis"
        tried = 0
        for index, (key, value) in enumerate(basis.items()):
            # One perturbation per key, taking turns through the kinds (changed, dropped, added) across keys.
            kinds = list(variants(value))
            for how, other in [kinds[index % len(kinds)]]:
                edited = resealed(path, key, other, tmp_path / f"{key}-{how}.json")
                live.reset_log()
                result = run("expand", "--apply", str(edited), "--yes", *live.access)
                where = f"{name}: basis {key} {how} ({other!r})"
                assert result.exit_code == 4, f"{where}: {result.output}"
                assert "the plan is stale" in result.output and key in result.output, f"{where}: {result.output}"
                assert live.writes() == [], where
                assert not Path(f"{edited}.journal.jsonl").exists(), where
                tried += 1
        assert tried >= len(basis)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a shared, busy machine
@given(st.dictionaries(st.text(min_size=1, max_size=6), JSON, min_size=1, max_size=5), st.data())
def test_the_comparison_finds_every_perturbation(basis: dict[str, Any], data: st.DataObject) -> None:
    assert basis_problems(basis, dict(basis)) == ([], [])
    key = data.draw(st.sampled_from(sorted(basis)))
    how, other = data.draw(st.sampled_from(list(variants(basis[key]))))
    problems, unchecked = basis_problems(basis, {**basis, key: other})
    assert unchecked == []
    assert problems and all(p.startswith(key) for p in problems), (how, basis[key], other)
    missing = {k: v for k, v in basis.items() if k != key}
    assert basis_problems(basis, missing)[1] == [key]


def test_a_step_parameter_that_cannot_be_carried_out_refuses_before_the_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan re-sealed by hand with `"cidr": "300.0.0.0/8"` in its second subnet step: exit 2, nothing written
    (it used to half-apply and stop with exit 5, "run the same command again", which could never succeed)."""
    c = case_for("custom-networking")
    with c.estate(tmp_path, monkeypatch) as live:
        path = tmp_path / "plan.json"
        made = run("expand", *live.target, "--strategy", "custom-networking", "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
        plan = codec.loads(path.read_text(), Plan, what="plan")
        subnets = [s for s in plan.steps if s.action == "eks.create-subnet"]
        assert len(subnets) >= 2
        second = subnets[1]
        edited = tuple(
            replace(s, params={**s.params, "cidr": "300.0.0.0/8"}) if s.id == second.id else s for s in plan.steps
        )
        bad = tmp_path / "edited.json"
        save_plan(seal(replace(plan, steps=edited, digest="")), bad)
        live.reset_log()
        result = run("expand", "--apply", str(bad), "--yes", *live.access)
        assert result.exit_code == 2, result.output
        assert f"step {second.id} parameter cidr is '300.0.0.0/8', not a CIDR" in result.output
        assert "Traceback" not in result.output
        assert live.writes() == []
        assert not Path(f"{bad}.journal.jsonl").exists()


def test_a_vpc_cidr_removed_and_an_eniconfig_deleted_since_the_plan_refuse_the_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estate itself moves on (not the plan's record of it): a VPC CIDR and an ENIConfig the plan's basis
    lists are gone at apply time. Only a new overlapping CIDR used to be caught; this applied every step."""
    c = case_for("custom-networking")
    with c.estate(tmp_path, monkeypatch) as live:
        assert isinstance(live, EksLive) and live.estate is not None and live.kube is not None
        ec2, vpc = live.estate.ec2, live.world.vpc_id
        extra = ec2.associate_vpc_cidr_block(VpcId=vpc, CidrBlock="10.77.0.0/16")["CidrBlockAssociation"]
        eniconfig = ("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs", "legacy")
        live.kube.put(
            {
                "apiVersion": "/".join(eniconfig[:2]),
                "kind": "ENIConfig",
                "metadata": {"name": eniconfig[3]},
                "spec": {"subnet": live.world.private_subnet_a, "securityGroups": []},
            }
        )
        path = tmp_path / "plan.json"
        made = run("expand", *live.target, "--strategy", "custom-networking", "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
        basis = json.loads(path.read_text())["basis"]
        assert "10.77.0.0/16" in basis["vpc_cidrs"] and "legacy" in basis["eniconfigs"]
        ec2.disassociate_vpc_cidr_block(AssociationId=extra["AssociationId"])
        assert live.kube.delete(*eniconfig)
        live.reset_log()
        result = run("expand", "--apply", str(path), "--yes", *live.access)
        assert result.exit_code == 4, result.output
        assert "vpc_cidrs was" in result.output and "10.77.0.0/16" in result.output
        assert "eniconfigs was" in result.output and "legacy" in result.output
        assert live.writes() == []
