"""Plan identity: `content_digest` covers target, basis and steps only, so two plans of the same estate compare
equal whatever their time or notes, while the digest still seals the whole document; review notes live beside
the plan (PLAN.json.notes) and never change either digest."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cidrx.errors import InvalidInput
from cidrx.model import codec
from cidrx.model.plan import content_digest, digest_of, load_plan, notes_path, save_plan, seal
from tests.support.cli import run

REPO = Path(__file__).resolve().parents[2]
EKS_EX = str(REPO / "examples" / "eks-demo-ip.snapshot.json")
GKE_EX = str(REPO / "examples" / "gke-demo-ip.snapshot.json")


def _plan(tmp: Path, name: str, snapshot: str = EKS_EX) -> dict[str, object]:
    path = tmp / name
    result = run("expand", "--plan", "--snapshot", snapshot, "--out", str(path))
    assert result.exit_code == 0, result.output
    return dict(json.loads(path.read_text()))


def test_two_plans_of_the_same_estate_share_the_content_digest(tmp_path: Path) -> None:
    first = _plan(tmp_path, "a.json")
    second = load_plan(tmp_path / "a.json")
    later = dataclasses.replace(second, created_at="2099-01-01T00:00:00Z", notes=("reviewed",))
    save_plan(later, tmp_path / "b.json")
    b = json.loads((tmp_path / "b.json").read_text())
    assert first["content_digest"] == b["content_digest"] == content_digest(second)
    assert len(str(first["content_digest"])) == 64


def test_a_different_estate_or_step_changes_it(tmp_path: Path) -> None:
    _plan(tmp_path, "a.json")
    plan = load_plan(tmp_path / "a.json")
    steps = (dataclasses.replace(plan.steps[0], params={**plan.steps[0].params, "cidr": "100.64.16.0/20"}),)
    other = seal(dataclasses.replace(plan, steps=steps + plan.steps[1:]))
    assert other.content_digest != plan.content_digest
    gke = _plan(tmp_path, "g.json", GKE_EX)
    assert gke["content_digest"] != plan.content_digest


def test_the_content_digest_is_sealed(tmp_path: Path) -> None:
    doc = _plan(tmp_path, "a.json")
    doc["content_digest"] = "0" * 64
    doc.pop("digest")
    doc["digest"] = codec.sha256_of(doc)  # re-signed by hand
    (tmp_path / "a.json").write_text(json.dumps(doc))
    with pytest.raises(InvalidInput, match="content digest mismatch"):
        load_plan(tmp_path / "a.json")


def test_a_plan_written_before_the_field_loads_and_gets_one_computed(tmp_path: Path) -> None:
    doc = _plan(tmp_path, "a.json")
    expected = doc.pop("content_digest")
    doc.pop("digest")
    doc["digest"] = codec.sha256_of(doc)
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = load_plan(tmp_path / "old.json")
    assert old.content_digest == "" and content_digest(old) == expected
    assert digest_of(old) == old.digest


def test_review_notes_beside_the_plan_break_nothing(tmp_path: Path) -> None:
    doc = _plan(tmp_path, "a.json")
    notes_path(tmp_path / "a.json").write_text("LGTM, apply after 18:00 -- alice\n")
    plan = load_plan(tmp_path / "a.json")
    assert (plan.digest, plan.content_digest) == (doc["digest"], doc["content_digest"])


@pytest.mark.parametrize("output", ["table", "markdown"])
def test_expand_plan_shows_it(tmp_path: Path, output: str) -> None:
    path = tmp_path / "p.json"
    result = run("expand", "--plan", "--snapshot", GKE_EX, "--out", str(path), "-o", output)
    assert result.exit_code == 0, result.output
    digest = json.loads(path.read_text())["content_digest"]
    assert "content digest" in result.stdout and digest[:16] in result.stdout
