"""The terminal layout people read during an incident, pinned at 80, 100, 120 and 200 columns.

Each example's diagnosis is compared with a golden file (tests/render/golden/, regenerate with
CIDRX_UPDATE_GOLDEN=1 after an intended change and read the diff), and checked for what matters whatever the
wording: the verdict is the first line, findings come before capacity, the capacity table keeps one line per
row at every width, no line is longer than the terminal, and no token is broken across lines.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from cidrx.app.diagnose import analyze
from cidrx.cli import cli
from cidrx.model.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
WIDTHS = (80, 100, 120, 200)
EXAMPLES = ("eks-demo-ip", "gke-shared-vpc", "calico-borrowing", "whereabouts-stale")
_AGE = re.compile(r"\b\d+ (?:year|month|day|hour|minute)s? ago\b|\bjust now\b")


def _diagnose(example: str, width: int, *extra: str) -> str:
    path = f"examples/{example}.snapshot.json"
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(cli, ["diagnose", "--snapshot", path, *extra], env={"COLUMNS": str(width)})
    finally:
        os.chdir(old)
    assert result.exit_code in (0, 3), result.output
    return _AGE.sub("<age>", result.stdout)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_diagnosis_matches_its_golden_layout(example: str, width: int) -> None:
    text = _diagnose(example, width)
    golden = GOLDEN / f"{example}.{width}.txt"
    if os.environ.get("CIDRX_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), f"{golden.name} differs (CIDRX_UPDATE_GOLDEN=1 regenerates it)"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_verdict_first_findings_before_capacity_and_one_line_per_row(example: str, width: int) -> None:
    text = _diagnose(example, width)
    lines = text.splitlines()
    assert re.match(r"^(CRITICAL|WARNING|OK): \S", lines[0]), lines[0]
    assert len(lines[0]) <= width
    assert text.index("\nFindings\n") < text.index("\nCapacity\n")
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    capacity = analyze(load_snapshot(ROOT / f"examples/{example}.snapshot.json")).capacity
    table = lines[lines.index("Capacity") + 1 :]
    assert table[0].startswith("kind ") and set(table[1]) <= {"-", " "}
    rows = table[2 : table.index("")]
    assert len(rows) == len(capacity)  # a real table: never a row stacked over several lines
    assert lines[-1] == lines[0]  # the verdict again, the line left on screen after a long report
    assert " info" in lines[-1] or lines[-2].endswith(" info")  # the counts: in the verdict or just above it


def test_the_80_column_verdict_names_what_is_full_and_where() -> None:
    first = _diagnose("eks-demo-ip", 80).splitlines()[0]
    assert first == "CRITICAL: 2 subnets, 2 zones full in ap-southeast-2a, ap-southeast-2b"


def test_every_fix_command_is_on_lines_of_its_own_and_runs_as_printed() -> None:
    """The fix commands of the Calico example (several per fix): each a line (or `\\`-continued lines) that
    a shell reads as exactly one command, never two joined by `;`."""
    text = _diagnose("calico-borrowing", 80)
    commands: list[list[str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^ {6}(cidrx|calicoctl|kubectl) ", line) and not lines[i - 1].endswith("\\"):
            parts = [line]
            j = i
            while parts[-1].endswith("\\"):
                j += 1
                parts.append(lines[j])
            commands.append(shlex.split("\n".join(parts)))
    assert len(commands) >= 10
    for words in commands:
        assert ";" not in words and not any(w.endswith(";") for w in words), words
        assert words[0] in ("cidrx", "calicoctl", "kubectl")
    assert ["calicoctl", "ipam", "configure", "--strictaffinity=true"] in commands
    assert ["cidrx", "reclaim", "--apply", "reclaim.json"] in commands


def test_wide_shows_every_column_and_all_evidence() -> None:
    text = _diagnose("eks-demo-ip", 80, "--wide")
    assert "nodes/max  fit  note" in text
    assert "subnet-0cd55c38980375d58 (eks-demo-ip-vpc-stack-PublicSubnet01)   ap-southeast-2a" in text
    assert "--wide shows all" not in text


@pytest.mark.parametrize("width", (80, 100, 120))
def test_plan_steps_never_break_a_token(width: int, tmp_path: Path) -> None:
    args = ["expand", "--snapshot", str(ROOT / "examples/eks-demo-ip.snapshot.json"), "--plan"]
    result = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "p.json")], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    words = result.stdout.split()
    assert any("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true" in w for w in words)


def test_skipped_in_cluster_checks_are_said_at_the_top_not_only_in_an_info_finding() -> None:
    import dataclasses

    from cidrx.model.findings import kube_unreachable, make_diagnosis
    from cidrx.render.table import render_diagnosis
    from cidrx.render.term import Term

    d = analyze(load_snapshot(ROOT / "examples/eks-demo-ip.snapshot.json"))
    reason = "connection refused (tried $KUBECONFIG=/home/me/.kube/prod, context prod)"
    skipped = kube_unreachable("in-cluster checks were skipped", "Pass --kubeconfig/--context.", reason=reason)
    d = dataclasses.replace(make_diagnosis(d.target, "", list(d.capacity), [*d.findings, skipped]))
    lines = render_diagnosis(d, Term(width=120)).splitlines()
    assert lines[1] == f"note: in-cluster checks did not run: {reason}"
    assert "KUBECONFIG is set and was used" in "\n".join(lines) and "Pass --kubeconfig" not in "\n".join(lines)
