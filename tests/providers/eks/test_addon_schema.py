"""Add-on configuration is checked against the installed vpc-cni version's schema before any update.

Pure: the schema travels in the snapshot (DescribeAddonConfiguration's configurationSchema, collected with the
add-on). The schemas here are the add-on fake's (tests/support/fakes/eks_addons.py `vpc_cni_schema`, shaped
after the add-on's Helm values; moto does not model DescribeAddonConfiguration).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

import pytest

from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.facts.addon_schema import parse_configuration, schema_problem, with_env
from cidrx.providers.eks.model import Addon
from cidrx.providers.eks.provider import PROVIDER
from tests.support.cases import eks as cases
from tests.support.fakes.eks_addons import vpc_cni_schema


def make_plan(snapshot: Snapshot, opts: PlanOptions | None = None, created_at: str = "") -> Plan:
    """The plan of `opts.strategy` (custom networking when none is given), as its strategy makes it."""
    opts = opts or PlanOptions()
    return PROVIDER.make_plan(snapshot, replace(opts, strategy=opts.strategy or "custom-networking"), created_at)


def with_schema(snap: Snapshot, schema: dict[str, object] | str) -> Snapshot:
    addon = cases.eks_of(snap).vpc_cni_addon
    assert addon is not None
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return cases.with_eks(snap, vpc_cni_addon=dataclasses.replace(addon, configuration_schema=text))


def plan(snap: Snapshot, strategy: str, **opts: str) -> list[str]:
    made = make_plan(snap, PlanOptions(strategy=strategy, **opts), "2024-01-01T00:00:00Z")
    return [s.action for s in made.steps]


def without(schema: dict[str, object], key: str) -> dict[str, object]:
    env = json.loads(json.dumps(schema))
    del env["properties"]["env"]["properties"][key]
    return dict(env)


def test_custom_networking_and_prefix_delegation_pass_the_schema_of_their_version() -> None:
    snap = with_schema(cases.managed_addon(cases.roomy(), '{"env":{"WARM_IP_TARGET":"5"}}'), vpc_cni_schema("v1.15.1"))
    assert "eks.update-addon-env" in plan(snap, "custom-networking")
    assert "eks.update-addon-env" in plan(snap, "prefix-delegation")


def test_a_key_the_schema_does_not_know_is_refused_at_plan_time_with_its_message() -> None:
    schema = without(vpc_cni_schema("v1.15.1"), "ENI_CONFIG_LABEL_DEF")
    snap = with_schema(cases.managed_addon(cases.roomy()), schema)
    with pytest.raises(InvalidInput) as refused:
        plan(snap, "custom-networking")
    text = str(refused.value)
    assert "vpc-cni add-on v1.15.1-eksbuild.1 would reject" in text
    assert "Additional properties are not allowed ('ENI_CONFIG_LABEL_DEF' was unexpected)" in text


def test_subnet_discovery_needs_a_schema_that_knows_the_switch() -> None:
    snap = cases.subnet_discovery_off(managed=True)
    assert plan(with_schema(snap, vpc_cni_schema("v1.19.0")), "subnet-discovery")[-1] == "eks.update-addon-env"
    with pytest.raises(InvalidInput, match="ENABLE_SUBNET_DISCOVERY"):
        plan(with_schema(snap, vpc_cni_schema("v1.17.1")), "subnet-discovery")


def test_what_is_already_configured_is_checked_too_and_yaml_is_read() -> None:
    snap = with_schema(cases.managed_addon(cases.roomy(), "env:\n  WARM_IP_TARGET: five\n"), vpc_cni_schema("v1.15.1"))
    with pytest.raises(InvalidInput, match=r"env/WARM_IP_TARGET: 'five' does not match"):
        plan(snap, "prefix-delegation")
    merged = with_env(
        parse_configuration("env:\n  WARM_IP_TARGET: '5'\ninit: {}\n"), {"ENABLE_PREFIX_DELEGATION": "true"}
    )
    assert merged == {"env": {"WARM_IP_TARGET": "5", "ENABLE_PREFIX_DELEGATION": "true"}, "init": {}}


def test_without_a_collected_schema_nothing_is_refused() -> None:
    snap = cases.managed_addon(cases.roomy(), "env:\n  WARM_IP_TARGET: five\n")
    assert "eks.update-addon-env" in plan(snap, "prefix-delegation")
    assert schema_problem("", {"anything": 1}) is None
    assert "unreadable" in (schema_problem("{not json", {}) or "")


def test_addon_model_keeps_the_schema_out_of_old_snapshots() -> None:
    assert Addon("vpc-cni", "v1.18.1-eksbuild.1", "ACTIVE").configuration_schema == ""
