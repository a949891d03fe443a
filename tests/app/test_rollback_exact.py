"""`cidrx rollback` undoes exactly what this plan's applies changed, on the EKS incident (moto and the fake API
server, through the CLI): after a partial apply it takes back what that apply did; a step the apply found
already done is left as it was while the others are undone (it used to refuse everything); without the
journal's before-values it refuses with a hint about the journal, not about draining nodes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cases import case_for
from tests.support.cases.live import EksLive
from tests.support.cli import run

pytestmark = pytest.mark.usefixtures("shared_botocore")

CUSTOM_NETWORKING = {
    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
    "ENI_CONFIG_LABEL_DEF": "topology.kubernetes.io/zone",
}


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EksLive]:
    with case_for("custom-networking").estate(tmp_path, monkeypatch) as made:
        assert isinstance(made, EksLive) and made.kube is not None
        yield made


def plan_of(live: EksLive) -> Path:
    path = live.tmp / "plan.json"
    made = run("expand", *live.target, "--strategy", "custom-networking", "--plan", "--out", str(path))
    assert made.exit_code == 0, made.output
    return path


def set_env_by_hand(live: EksLive, env: dict[str, str]) -> None:
    assert live.kube is not None
    ds = live.kube.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert ds is not None
    container = ds["spec"]["template"]["spec"]["containers"][0]
    kept = [e for e in container.get("env", []) if e["name"] not in env]
    container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]
    live.kube.put(ds)


def journal(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(f"{path}.journal.jsonl").read_text().splitlines()]


def test_a_step_found_already_done_is_left_and_the_others_are_undone(live: EksLive) -> None:
    path = plan_of(live)
    set_env_by_hand(live, CUSTOM_NETWORKING)  # someone turned custom networking on between plan and apply
    before = live.state()
    applied = run("expand", "--apply", str(path), "--yes", *live.access)
    assert applied.exit_code == 0, applied.output
    events = journal(path)
    skipped = [e for e in events if e["event"] == "skipped"]
    assert [(e["step"], e["changed"]) for e in skipped] == [("enable-custom-networking", False)]
    assert all(e["changed"] is True for e in events if e["event"] == "done")
    live.settle()

    undone = run("rollback", str(path), "--yes", *live.rollback_access)
    assert undone.exit_code == 0, undone.output
    assert "enable-custom-networking  left: found already done when it was applied (skipped)" in undone.stdout
    assert "1 left as they were" in undone.stdout
    live.settle()
    assert live.state() == before  # everything the apply made is gone; the env set by hand stays


def test_rollback_after_a_partial_apply_takes_back_what_it_did(live: EksLive) -> None:
    path = plan_of(live)
    before = live.state()
    live.interrupt_after("aws", "CreateSubnet", "")
    stopped = run("expand", "--apply", str(path), "--yes", *live.access)
    assert stopped.exit_code == 5, stopped.output
    live.settle()
    assert live.state() != before

    undone = run("rollback", str(path), "--yes", *live.rollback_access)
    assert undone.exit_code == 0, undone.output
    assert "Traceback" not in undone.output
    live.settle()
    assert live.state() == before


def test_without_the_journal_a_changed_setting_is_refused_with_a_hint_about_the_journal(live: EksLive) -> None:
    path = plan_of(live)
    before = live.state()
    applied = run("expand", "--apply", str(path), "--yes", *live.access)
    assert applied.exit_code == 0, applied.output
    live.settle()
    kept = live.tmp / "moved.journal.jsonl"
    shutil.move(f"{path}.journal.jsonl", kept)
    after = live.state()
    live.reset_log()

    refused = run("rollback", str(path), "--yes", *live.rollback_access)
    assert refused.exit_code == 4, refused.output
    assert "has no record of" in refused.output and "nothing was changed" in refused.output
    assert "apply journal beside the plan" in refused.output
    assert "drain" not in refused.output
    assert live.writes() == [] and live.state() == after

    shutil.move(kept, f"{path}.journal.jsonl")  # with the journal back, everything is undone
    undone = run("rollback", str(path), "--yes", *live.rollback_access)
    assert undone.exit_code == 0, undone.output
    live.settle()
    assert live.state() == before
