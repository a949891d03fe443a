"""Renderers from hand-built Diagnosis and Plan objects: table, cidrx.diagnosis/v1 JSON, Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cidrx.model.findings import Capacity, Finding, Severity, make_diagnosis
from cidrx.model.plan import Plan, Step, load_plan, save_plan, seal
from cidrx.model.target import Target
from cidrx.render import render_diagnosis, render_plan
from cidrx.render.table import render_results
from cidrx.render.term import Term

TARGET = Target("eks", "demo-ip", region="ap-southeast-2")
EVENT = (
    "default/mydeploy-6bdbfc484d-2frv4: Failed to create pod sandbox: rpc error: code = Unknown desc = failed "
    'to setup network for sandbox <id>: plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to '
    "assign an IP address to container"
)


def subnet(name: str, cidr: str, zone: str, free: int) -> Capacity:
    used = 27 - free
    return Capacity("subnet", name, cidr, 27, used, free, round(used / 27, 4), zone=zone, note="nodes, pods")


DIAGNOSIS = make_diagnosis(
    TARGET,
    "26c1d739f0c0b0c64204a2141dd9d31e2ee62dac1aad614ea8840e968d70167e",
    [
        subnet("subnet-0cd55c38980375d58", "10.0.208.0/27", "ap-southeast-2a", 0),
        subnet("subnet-0a0bce6a1c1f38c54", "10.0.224.0/27", "ap-southeast-2b", 0),
        subnet("subnet-0bae4d2bf017995b8", "10.0.186.0/27", "ap-southeast-2a", 26),
        Capacity("nodegroup", "managed-ng", None, 58, 48, 10, 0.8276, max_nodes=4, nodes=2, note="29 pods/node"),
    ],
    [
        Finding("EKS-WARM-POOL-WASTE", Severity.WARNING, "aws-node", "WARM_ENI_TARGET=1 keeps idle addresses"),
        Finding("KUBE-UNREACHABLE", Severity.INFO, "kubernetes", "in-cluster checks were skipped", ("--no-kube",)),
        Finding(
            "EKS-SUBNET-EXHAUSTED",
            Severity.CRITICAL,
            "subnet-0cd55c38980375d58",
            "subnet 10.0.208.0/27 in ap-southeast-2a is out of addresses",
            ("10.0.208.0/27: 0 of 27 usable addresses free", "a | pipe"),
            "Add pod address space: `cidrx expand --eks ... --plan`.",
        ),
        Finding(
            "EKS-POD-IP-ASSIGN-FAILED",
            Severity.CRITICAL,
            "cluster demo-ip",
            "the VPC CNI failed to assign pod IPs",
            (EVENT,),
        ),
    ],
)


def make_plan() -> Plan:
    return seal(
        Plan(
            target=TARGET,
            created_at="2023-11-04T01:15:00Z",
            snapshot_fingerprint=DIAGNOSIS.snapshot_fingerprint,
            strategy="custom-networking",
            basis={"vpc_id": "vpc-0f3a9ca141c0acd04", "vpc_cidrs": ["10.0.0.0/16"], "cidr": "100.64.0.0/20"},
            steps=(
                Step(
                    "associate-vpc-cidr",
                    "eks.associate-vpc-cidr",
                    {"vpc_id": "vpc-0f3a9ca141c0acd04", "cidr": "100.64.0.0/20"},
                    "associate secondary CIDR 100.64.0.0/20 with vpc-0f3a9ca141c0acd04",
                ),
                Step(
                    "create-subnet-ap-southeast-2a",
                    "eks.create-subnet",
                    {"cidr": "100.64.0.0/21", "az": "ap-southeast-2a"},
                    "create pod subnet 100.64.0.0/21 in ap-southeast-2a",
                    depends_on=("associate-vpc-cidr",),
                ),
            ),
            notes=("Drain the old nodes once the new node group is ready.",),
            summary={"pods_per_node": 20},
        )
    )


# --- table ---------------------------------------------------------------------------------------------


def test_table_shows_the_full_subnets_in_the_capacity_table() -> None:
    text = render_diagnosis(DIAGNOSIS, "table", Term(width=160))
    lines = text.splitlines()
    full = [line for line in lines if "100.0%" in line]
    assert len(full) == 2
    assert any("10.0.208.0/27" in line and "subnet-0cd55c38980375d58" in line for line in full)
    assert any("10.0.224.0/27" in line and "ap-southeast-2b" in line for line in full)
    header = next(line for line in lines if line.startswith("kind"))
    for column in ("name", "zone", "cidr", "size", "used", "free", "util%"):
        assert column in header
    assert any("managed-ng" in line and "2/4" in line for line in lines)


def test_table_puts_the_verdict_first_then_findings_worst_first_and_ends_with_counts() -> None:
    text = render_diagnosis(DIAGNOSIS, "table")
    lines = text.splitlines()
    assert lines[0] == "CRITICAL: 2 subnets full in ap-southeast-2a, ap-southeast-2b"
    assert lines[1] == "note: in-cluster checks did not run: --no-kube"  # its KUBE-UNREACHABLE, said at the top
    assert "eks:ap-southeast-2/demo-ip" in lines[2]
    starts = [i for i, line in enumerate(lines) if line.split(" ")[0] in ("CRITICAL", "WARNING", "INFO")]
    assert [lines[i].split(" ")[0] for i in starts] == ["CRITICAL", "CRITICAL", "WARNING", "INFO"]
    assert text.index("Findings") < text.index("Capacity")
    assert lines[-2:] == ["2 critical, 1 warning, 1 info", lines[0]]  # counts, then the verdict again
    # evidence is indented under its finding, the fix follows it with its command on a line of its own
    block = text[text.index("EKS-SUBNET-EXHAUSTED") :]
    assert "    - 10.0.208.0/27: 0 of 27 usable addresses free" in block
    assert "    fix: Add pod address space:" in block
    assert "      cidrx expand --eks ... --plan" in block.splitlines()


def test_table_never_breaks_a_cidr_or_id_across_lines() -> None:
    text = render_diagnosis(DIAGNOSIS, "table")
    for token in ("aws-cni", "6bdbfc484d-2frv4", "10.0.208.0/27"):
        assert token in text


def test_table_of_an_empty_diagnosis() -> None:
    d = make_diagnosis(TARGET, "", [], [])
    text = render_diagnosis(d, "table")
    assert "no address spaces found" in text
    assert "none" in text
    assert text.rstrip().endswith("0 critical, 0 warning, 0 info\nOK: no problems found")


# --- json ----------------------------------------------------------------------------------------------


def test_json_is_diagnosis_v1() -> None:
    doc = json.loads(render_diagnosis(DIAGNOSIS, "json"))
    assert doc["schema"] == "cidrx.diagnosis/v1"
    assert set(doc) >= {"target", "capacity", "findings", "counts"}
    assert doc["target"]["provider"] == "eks"
    assert doc["target"]["cluster"] == "demo-ip"
    assert doc["target"]["region"] == "ap-southeast-2"
    assert doc["counts"] == {"info": 1, "warning": 1, "critical": 2}
    for cap in doc["capacity"]:
        assert {"kind", "name", "cidr", "size", "used", "free", "utilization", "max_nodes", "nodes"} <= set(cap)
        assert 0 <= cap["utilization"] <= 1
    full = [c for c in doc["capacity"] if c["utilization"] == 1.0]
    assert {c["cidr"] for c in full} == {"10.0.208.0/27", "10.0.224.0/27"}
    ng = next(c for c in doc["capacity"] if c["kind"] == "nodegroup")
    assert (ng["max_nodes"], ng["nodes"], ng["cidr"]) == (4, 2, None)
    for f in doc["findings"]:
        assert set(f) == {"id", "severity", "subject", "summary", "evidence", "remediation"}
        assert isinstance(f["evidence"], list)
    assert [f["severity"] for f in doc["findings"]] == ["critical", "critical", "warning", "info"]


# --- markdown ------------------------------------------------------------------------------------------


def test_markdown_is_a_ci_summary() -> None:
    text = render_diagnosis(DIAGNOSIS, "markdown")
    first = text.splitlines()[0]
    assert first.startswith("#") and "eks:ap-southeast-2/demo-ip" in first
    assert "| kind | name | zone | CIDR |" in text
    assert "| subnet | subnet-0cd55c38980375d58 | ap-southeast-2a | 10.0.208.0/27 | 27 | 27 | 0 | 100.0% |" in text
    assert "- **CRITICAL** `EKS-SUBNET-EXHAUSTED`" in text
    assert "- **WARNING** `EKS-WARM-POOL-WASTE`" in text
    # the event's placeholder would vanish as an HTML tag if not escaped
    assert "sandbox &lt;id&gt;" in text and "<id>" not in text
    # a fix's commands are a fenced block, one per line: copied as they are, never literal backticks
    assert "  ```sh\n  cidrx expand --eks ... --plan\n  ```" in text
    assert "**2 critical, 1 warning, 1 info**" in text


# --- plans ---------------------------------------------------------------------------------------------


def test_plan_table_numbers_steps_and_shows_basis_and_notes() -> None:
    plan = make_plan()
    text = render_plan(plan, "table", Term(width=200))
    assert plan.plan_id in text.splitlines()[0]
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "(eks.create-subnet)" in line)
    assert lines[at].startswith("2  create-subnet-ap-southeast-2a")
    assert lines[at + 2] == "   after: associate-vpc-cidr"  # what it depends on, under its description
    assert "vpc_id: vpc-0f3a9ca141c0acd04" in text
    assert 'vpc_cidrs: ["10.0.0.0/16"]' in text
    assert "Drain the old nodes" in text
    assert "pods_per_node: 20" in text


def test_plan_json_is_the_plan_file(tmp_path: Path) -> None:
    plan = make_plan()
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    assert render_plan(plan, "json") == path.read_text()
    out = tmp_path / "from-stdout.json"
    out.write_text(render_plan(plan, "json"))
    assert load_plan(out) == plan


def test_plan_markdown() -> None:
    plan = make_plan()
    text = render_plan(plan, "markdown")
    assert text.startswith("### cidrx plan")
    assert "| 2 | `create-subnet-ap-southeast-2a` | `eks.create-subnet` |" in text
    assert "- `cidr`: 100.64.0.0/20" in text
    assert "#### Notes" in text


def test_results_table_lists_steps_and_next_steps() -> None:
    text = render_results(
        [
            ("associate-vpc-cidr", "skipped", {"association_id": "vpc-cidr-assoc-1"}),
            ("create-subnet-ap-southeast-2a", "done", {"subnet_id": "subnet-1", "cidr": "100.64.0.0/21"}),
        ],
        ["Drain the old nodes."],
    )
    assert "association_id=vpc-cidr-assoc-1" in text
    assert "subnet_id=subnet-1, cidr=100.64.0.0/21" in text
    assert "1 step(s) changed something, 1 were already done" in text
    assert "Drain the old nodes." in text.split("Next steps")[1]


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError):
        render_diagnosis(DIAGNOSIS, "yaml")
    with pytest.raises(ValueError):
        render_plan(make_plan(), "yaml")


def test_nodes_without_an_address_space_limit_show_no_dangling_slash() -> None:
    """A node group's autoscaling maximum is not `max_nodes`: its row shows "2", never "2/"."""
    from cidrx.render.html import render_html

    group = Capacity(kind="nodegroup", name="ng", cidr=None, size=58, used=48, free=10, utilization=0.83, nodes=2)
    pool = Capacity(
        kind="pod-range",
        name="pods",
        cidr="10.4.0.0/22",
        size=1024,
        used=1024,
        free=0,
        utilization=1.0,
        nodes=4,
        max_nodes=4,
    )
    d = make_diagnosis(Target(provider="eks", cluster="c", region="r"), "f" * 64, [group, pool], [])
    html = render_html(d, [])
    markdown = render_diagnosis(d, "markdown")
    for text in (html, markdown):
        assert "2/" not in text.replace("4/4", "")
        assert "4/4" in text
