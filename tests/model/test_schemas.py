"""The published JSON schemas (docs/schemas) match what cidrx really writes, and match the models.

Outputs come from real CLI runs over the bundled examples: the diagnosis JSON of every example, a plan for
every strategy `expand` and `reclaim` can make, and the snapshot files themselves. The committed schema files
must equal what `python -m tools.docgen` generates now, so a model change that forgets them fails here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from cidrx import registry
from cidrx.cli import cli
from cidrx.cli.expand import RECLAIM_STRATEGIES, STRATEGIES
from cidrx.model.snapshot import save_snapshot
from tests.support.cases import eks as eks_cases
from tests.support.cases.aks_migrate import after_expansion as aks_after_expansion
from tests.support.cases.eks_migrate import after_expansion
from tests.support.cli import run
from tests.support.ports import refused_port
from tools import docgen

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
EXAMPLES = sorted((ROOT / "examples").glob("*.snapshot.json"))
GENERATORS = {
    "diagnosis": docgen.diagnosis_schema,
    "plan": docgen.plan_schema,
    "snapshot": docgen.snapshot_schema,
    "forecast": docgen.forecast_schema,
}


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return loaded


def validate(name: str, doc: Any) -> None:
    jsonschema.Draft202012Validator(schema(name)).validate(doc)


def cidrx(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env={"CIDRX_FAIL_ON": None})
    return result.exit_code, result.stdout


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_committed_schema_is_what_the_models_generate(name: str) -> None:
    committed = (SCHEMAS / f"{name}.schema.json").read_text()
    assert committed == docgen._json(GENERATORS[name]()), (
        f"docs/schemas/{name}.schema.json is out of date with the models; run: python -m tools.docgen"
    )


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    doc = schema(name)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(doc)


def _keys_match_schema(doc: Any, node: dict[str, Any], defs: dict[str, Any], where: str) -> None:
    """Every object in `doc` has exactly the keys its schema declares (the published schema allows more, for
    forward compatibility; what cidrx itself writes must have no undocumented key)."""
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[1]]
    if isinstance(doc, dict) and "properties" in node:
        assert set(doc) == set(node["properties"]), f"{where}: keys differ from the schema"
        for key, value in doc.items():
            _keys_match_schema(value, node["properties"][key], defs, f"{where}.{key}")
    elif isinstance(doc, list) and "items" in node:
        for i, item in enumerate(doc):
            _keys_match_schema(item, node["items"], defs, f"{where}[{i}]")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_diagnosis_json_of_every_example_validates(example: Path) -> None:
    code, out = cidrx("diagnose", "--snapshot", str(example), "-o", "json", "--fail-on", "never")
    assert code == 0
    doc = json.loads(out)
    validate("diagnosis", doc)
    _keys_match_schema(doc, schema("diagnosis"), schema("diagnosis")["$defs"], "diagnosis")
    assert doc["findings"], "every bundled example shows an incident"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_snapshot_file_validates(example: Path) -> None:
    validate("snapshot", json.loads(example.read_text()))


def test_a_written_snapshot_validates(tmp_path: Path) -> None:
    """A snapshot cidrx itself saves (here: the EKS incident with roomy subnets), not only the bundled ones."""
    path = tmp_path / "roomy.snapshot.json"
    save_snapshot(eks_cases.roomy(), path)
    validate("snapshot", json.loads(path.read_text()))


@pytest.fixture(scope="module")
def plan_inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The bundled examples plus the EKS incident with /24 node subnets, where prefix delegation is plannable
    (in the incident itself no aligned /28 is free, so cidrx refuses that strategy)."""
    extra = tmp_path_factory.mktemp("snaps") / "eks-roomy.snapshot.json"
    save_snapshot(eks_cases.roomy(), extra)
    return [*EXAMPLES, extra]


def test_plans_for_every_strategy_validate(plan_inputs: list[Path]) -> None:
    made: dict[str, int] = {}
    for snap in plan_inputs:
        runs = [("expand", "--strategy", s) for s in STRATEGIES]
        runs += [("reclaim", "--ipam", ipam) for ipam in ("whereabouts", "calico")]
        for command, flag, value in runs:
            code, out = cidrx(command, "--snapshot", str(snap), "--plan", flag, value, "--out", "-")
            if code == 2:  # the strategy does not apply to this snapshot (e.g. node-pool on EKS)
                continue
            assert code == 0, f"{command} {flag} {value} on {snap.name} exited {code}"
            doc = json.loads(out)
            validate("plan", doc)
            _keys_match_schema(doc, schema("plan"), schema("plan")["$defs"], f"plan {doc['strategy']}")
            made[doc["strategy"]] = made.get(doc["strategy"], 0) + 1
    # Migrations need an applied expansion in a live estate: test_a_migration_plan_validates covers them.
    expected = {*STRATEGIES, *RECLAIM_STRATEGIES} - MIGRATIONS
    assert set(made) == expected, f"strategies without a validated plan: {made}"


MIGRATIONS = {s.name for s in registry.strategies() if s.migration}


# Each migration strategy's live estate after an applied expansion.
MIGRATION_ESTATES = {"eks-migrate": after_expansion, "aks-migrate": aks_after_expansion}


@pytest.mark.parametrize("name", sorted(MIGRATION_ESTATES))
def test_a_migration_plan_validates(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every migration strategy's plan, made on the live estate after an applied expansion (moto or the ARM fake,
    and the fake API server), validates against the plan schema."""
    assert set(MIGRATION_ESTATES) == MIGRATIONS, "a new migration strategy needs its live estate here"
    with MIGRATION_ESTATES[name](tmp_path, monkeypatch) as live:
        path = tmp_path / "migrate.json"
        made = run("expand", *live.target, "--strategy", name, "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
        doc = json.loads(path.read_text())
    validate("plan", doc)
    _keys_match_schema(doc, schema("plan"), schema("plan")["$defs"], f"plan {name}")
    assert doc["strategy"] == name and doc["steps"]


def test_the_schemas_reject_what_cidrx_would_refuse() -> None:
    """Not vacuous: a wrong version tag, a missing key or a bad severity fails validation."""
    _, out = cidrx("diagnose", "--snapshot", str(EXAMPLES[0]), "-o", "json", "--fail-on", "never")
    doc = json.loads(out)
    for broken in (
        {**doc, "schema": "cidrx.diagnosis/v2"},
        {k: v for k, v in doc.items() if k != "capacity"},
        {**doc, "findings": [{**doc["findings"][0], "severity": "fatal"}]},
        {**doc, "counts": {"critical": 1}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate("diagnosis", broken)
    snap = json.loads(EXAMPLES[0].read_text())
    with pytest.raises(jsonschema.ValidationError):
        validate("snapshot", {**snap, "target": {**snap["target"], "provider": "azure"}})


def test_schema_files_say_which_document_they_describe() -> None:
    for name, tag in (
        ("diagnosis", "cidrx.diagnosis/v1"),
        ("plan", "cidrx.plan/v1"),
        ("snapshot", "cidrx.snapshot/v1"),
    ):
        doc = schema(name)
        root = doc["$defs"][doc["$ref"].rsplit("/", 1)[1]]
        assert root["properties"]["schema"]["const"] == tag
        assert "schema" in root["required"]


def test_diagnosis_schema_follows_the_renderer_not_just_the_model() -> None:
    """jsonout writes capacity/finding documents by hand; the schema is taken from the models, so the two
    must name the same fields (this fails when a field is added to one and not the other)."""
    from cidrx.model.findings import Capacity, Finding, Severity
    from cidrx.render import jsonout

    defs = schema("diagnosis")["$defs"]
    cap = Capacity("subnet", "s", "10.0.0.0/24", 251, 1, 250, 0.004)
    fnd = Finding("X-Y", Severity.INFO, "s", "summary")
    assert set(jsonout.capacity_doc(cap)) == set(defs["Capacity"]["properties"])
    assert set(jsonout.finding_doc(fnd)) == set(defs["Finding"]["properties"])
    assert {f.name for f in dataclasses.fields(Capacity)} == set(defs["Capacity"]["properties"])


# --- fleet mode (cidrx.fleet/v1) ------------------------------------------------------------------------


def test_committed_fleet_schema_is_what_the_models_generate_and_valid() -> None:
    committed = (SCHEMAS / "fleet.schema.json").read_text()
    assert committed == docgen._json(docgen.fleet_schema()), (
        "docs/schemas/fleet.schema.json is out of date with the models; run: python -m tools.docgen"
    )
    doc = schema("fleet")
    jsonschema.Draft202012Validator.check_schema(doc)
    root = doc["$defs"][doc["$ref"].rsplit("/", 1)[1]]
    assert root["properties"]["schema"]["const"] == "cidrx.fleet/v1" and "schema" in root["required"]


def test_a_real_fleet_json_validates(kube_server: Any, tmp_path: Path) -> None:
    """`diagnose --k8s --all-contexts -o json` over a cluster with a full Whereabouts pool and a context whose
    API server is not there: one member with a diagnosis, one with an error, both as the schema says."""

    import yaml

    from tests.support.cases import whereabouts as whereabouts_cases

    kube_server.put_many(whereabouts_cases.crashed_node_objects())
    down = f"http://127.0.0.1:{refused_port()}"  # connection refused
    config = kube_server.kubeconfig_dict(context="lab")
    config["clusters"].append({"name": "down", "cluster": {"server": down}})
    config["contexts"].append({"name": "down", "context": {"cluster": "down", "user": "fake"}})
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(
        cli,
        ["diagnose", "--k8s", "--kubeconfig", str(path), "--all-contexts", "-o", "json"],
        env={"CIDRX_FAIL_ON": None},
    )
    assert result.exit_code == 6, result.output
    doc = json.loads(result.stdout)
    validate("fleet", doc)
    fleet = schema("fleet")
    _keys_match_schema(doc, fleet, fleet["$defs"], "fleet")
    lab, gone = doc["clusters"]
    assert lab["diagnosis"] is not None and gone["diagnosis"] is None and gone["error"]
    # Each member's diagnosis is the single-cluster document, keys and all.
    validate("diagnosis", lab["diagnosis"])
    _keys_match_schema(lab["diagnosis"], schema("diagnosis"), schema("diagnosis")["$defs"], "clusters[0].diagnosis")
    for broken in (
        {**doc, "schema": "cidrx.fleet/v2"},
        {k: v for k, v in doc.items() if k != "counts"},
        {**doc, "clusters": [{k: v for k, v in lab.items() if k != "error"}]},
        {**doc, "clusters": [{**lab, "diagnosis": {**lab["diagnosis"], "counts": {"critical": 1}}}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate("fleet", broken)
