"""Terminal output fits the terminal: every line of diagnoses, plans and apply results of the bundled examples
within COLUMNS (stdout not a TTY), long cells wrapped rather than cut, colour only on a TTY and never with
NO_COLOR or --no-color, capacity rows ordered by urgency."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cidrx.cli import cli
from cidrx.engine.verify import compare
from cidrx.model.findings import Capacity, Diagnosis, make_diagnosis
from cidrx.model.plan import Plan
from cidrx.model.target import Target
from cidrx.render import render_diagnosis
from cidrx.render.table import by_urgency, render_results
from cidrx.render.term import Term, detect

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

COMMANDS = [
    ["diagnose", "--snapshot", "examples/eks-demo-ip.snapshot.json"],
    ["diagnose", "--snapshot", "examples/gke-demo-ip.snapshot.json"],
    ["diagnose", "--snapshot", "examples/whereabouts-stale.snapshot.json"],
    ["diagnose", "--snapshot", "examples/calico-borrowing.snapshot.json"],
    ["expand", "--snapshot", "examples/eks-demo-ip.snapshot.json", "--plan"],
    ["expand", "--snapshot", "examples/gke-demo-ip.snapshot.json", "--plan"],
    ["expand", "--snapshot", "examples/gke-demo-ip.snapshot.json", "--plan", "--strategy", "cluster-range"],
    ["expand", "--snapshot", "examples/calico-borrowing.snapshot.json", "--plan", "--strategy", "calico-pool"],
    ["reclaim", "--snapshot", "examples/whereabouts-stale.snapshot.json", "--ipam", "whereabouts", "--plan"],
    ["reclaim", "--snapshot", "examples/calico-borrowing.snapshot.json", "--ipam", "calico", "--plan"],
]


def too_long(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2] + a[-2:]))
def test_output_of_the_examples_fits_columns(args: list[str], width: int, tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "plan.json")] if "--plan" in args else []
    args = [a.replace("examples/", f"{EXAMPLES}/") for a in args]
    result = CliRunner().invoke(cli, [*args, *out], env={"COLUMNS": str(width), "NO_COLOR": None})
    assert result.exit_code in (0, 3), result.output
    assert not too_long(result.stdout, width), "\n".join(too_long(result.stdout, width))
    assert not ANSI.search(result.stdout)  # not a terminal: no colour codes
    assert len(result.stdout.splitlines()) > 5


def test_output_widens_with_columns_and_keeps_every_word() -> None:
    """The same diagnosis at 80 and 200 columns: different layouts, the same words (nothing cut off)."""
    args = ["diagnose", "--snapshot", f"{EXAMPLES}/gke-demo-ip.snapshot.json"]
    narrow = CliRunner().invoke(cli, args, env={"COLUMNS": "80"}).stdout
    wide = CliRunner().invoke(cli, args, env={"COLUMNS": "200"}).stdout
    assert narrow != wide
    assert max(len(line) for line in wide.splitlines()) > 120
    for word in ("australia-southeast1-c", "10.4.0.0/22", "GKE-AUTOSCALER-MAX-EXCEEDS-RANGE", "default-pool"):
        assert word in narrow and word in wide


def test_findings_wrap_to_the_width_not_to_a_fixed_100() -> None:
    args = ["diagnose", "--snapshot", f"{EXAMPLES}/gke-demo-ip.snapshot.json"]
    wide = CliRunner().invoke(cli, args, env={"COLUMNS": "200"}).stdout
    summary = (
        "pod range pods (10.4.0.0/22) is full: 4 of 4 node(s); no new node of default-pool can get a /24 pod block"
    )
    assert f"  {summary}" in wide.splitlines()


def test_apply_results_fit_the_width() -> None:
    long_id = "arn:aws:eks:ap-southeast-2:111122223333:nodegroup/demo-ip/managed-ng-cn/" + "0" * 36
    rows = [("create-nodegroup", "done", {"nodegroup_arn": long_id, "subnets": ["subnet-1", "subnet-2"]})]
    before = _eks()
    full = next(c for c in before.capacity if c.utilization == 1.0)
    after = make_diagnosis(
        before.target,
        "",
        [dataclasses.replace(full, used=10, free=17, utilization=0.3704)],
        [f for f in before.findings if f.id != "EKS-AZ-EXHAUSTED"],
    )
    plan = load_plan_of_example()
    v = compare(plan, before, after)
    assert v.resolved and v.still_open and v.changes
    for width in (80, 120):
        text = render_results(rows, ["Drain the old nodes " * 10], Term(width=width), v)
        assert not too_long(text, width), text
        assert "create-nodegroup" in text and "done" in text
        said = " ".join(text.split())
        change = "27/27 used, 0 free (100.0%) -> 10/27 used, 17 free (37.0%)"
        assert f"{full.kind} {full.name} {full.cidr}: {change}" in said
        assert "Findings resolved (2) - EKS-AZ-EXHAUSTED (critical)" in said


def load_plan_of_example() -> Plan:
    from cidrx.app import plan as app_plan
    from cidrx.model.options import PlanOptions
    from cidrx.model.snapshot import load_snapshot

    return app_plan.make_plan(load_snapshot(EXAMPLES / "eks-demo-ip.snapshot.json"), PlanOptions())


def test_capacity_rows_are_ordered_by_urgency() -> None:
    target = Target("eks", "c", region="r")
    rows = [
        Capacity("subnet", "roomy", "10.0.0.0/24", 251, 10, 241, 0.0398),
        Capacity("subnet", "full-a", "10.0.1.0/27", 27, 27, 0, 1.0),
        Capacity("subnet", "tight", "10.0.2.0/27", 27, 25, 2, 0.9259),
        Capacity("vpc-cidr", "vpc", "10.0.0.0/16", 65536, 256, 65280, 0.0039),
        Capacity("subnet", "full-b", "10.0.3.0/27", 27, 27, 0, 1.0),
        Capacity("nodegroup", "ng", None, 100, 50, 50, 0.5),
        Capacity("subnet", "half-small", "10.0.4.0/28", 11, 5, 6, 0.5),
    ]
    names = [c.name for c in by_urgency(rows)]
    # full first (ties in their original order), then fuller, equal utilisation: fewer free first
    assert names == ["full-a", "full-b", "tight", "half-small", "ng", "roomy", "vpc"]
    text = render_diagnosis(make_diagnosis(target, "", rows, []), "table", Term(width=200))
    shown = [line.split()[1] for line in text.splitlines() if line.startswith(("subnet ", "vpc-cidr ", "nodegroup "))]
    assert shown == names


def test_colour_only_when_asked_and_never_with_no_color() -> None:
    coloured = render_diagnosis(_eks(), "table", Term(width=120, color=True))
    assert ANSI.search(coloured)
    assert ANSI.sub("", coloured) == render_diagnosis(_eks(), "table", Term(width=120))


def _eks() -> Diagnosis:
    from cidrx.app import diagnose as app_diagnose
    from cidrx.model.snapshot import load_snapshot

    return app_diagnose.analyze(load_snapshot(EXAMPLES / "eks-demo-ip.snapshot.json"))


def test_detect_colour_on_a_terminal_only(tmp_path: Path) -> None:
    primary, secondary = os.openpty()
    try:
        with open(secondary, "w", closefd=False) as tty, open(tmp_path / "f", "w") as plain:
            assert detect(tty, environ={"COLUMNS": "90"}) == Term(90, True)
            assert detect(tty, environ={"COLUMNS": "90", "NO_COLOR": "1"}) == Term(90, False)
            assert detect(tty, environ={"COLUMNS": "90"}, no_color=True) == Term(90, False)
            assert detect(tty, environ={"COLUMNS": "90", "TERM": "dumb"}).color is False
            assert detect(plain, environ={}) == Term(80, False)  # a file: 80 columns, plain
            assert detect(plain, environ={"COLUMNS": "132"}) == Term(132, False)
    finally:
        os.close(primary)
        os.close(secondary)


def test_no_color_flag_is_accepted(tmp_path: Path) -> None:
    args = ["--no-color", "diagnose", "--snapshot", f"{EXAMPLES}/whereabouts-stale.snapshot.json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 3 and not ANSI.search(result.stdout)


def test_apply_output_other_than_table_or_json_is_refused_before_anything(tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    made = CliRunner().invoke(
        cli, ["expand", "--snapshot", f"{EXAMPLES}/eks-demo-ip.snapshot.json", "--plan", "--out", str(plan)]
    )
    assert made.exit_code == 0, made.output
    for fmt in ("markdown", "html"):
        result = CliRunner().invoke(cli, ["expand", "--apply", str(plan), "--yes", "-o", fmt])
        assert result.exit_code == 2 and "table or json" in result.output
    assert not Path(f"{plan}.journal.jsonl").exists()
