"""The apply journal: durable lines beside the plan, torn tails tolerated, other plans' journals refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cidrx.engine.journal import Journal, journal_path
from cidrx.errors import InvalidInput
from cidrx.model.plan import Plan, Step, save_plan
from tests.support.engine import sealed_eks_plan


def make_plan(cidr: str = "100.64.0.0/20") -> Plan:
    return sealed_eks_plan(
        (
            Step("vpc-cidr", "associate-cidr", {"vpc_id": "vpc-0a1b2c", "cidr": cidr}, f"Associate {cidr}"),
            Step("subnet-a", "create-subnet", {"az": "ap-southeast-2a"}, "Subnet in ap-southeast-2a"),
        )
    )


@pytest.fixture
def plan_path(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    save_plan(make_plan(), path)
    return path


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_journal_lives_beside_the_plan(tmp_path: Path) -> None:
    assert journal_path(tmp_path / "plan.json") == tmp_path / "plan.json.journal.jsonl"


def test_open_writes_nothing_and_records_are_durable_lines(plan_path: Path) -> None:
    plan = make_plan()
    journal = Journal.open(plan_path, plan)
    assert journal.events == ()
    assert not journal_path(plan_path).exists()

    journal.record("vpc-cidr", "started")
    journal.record("vpc-cidr", "acted", {"association_id": "vpc-cidr-assoc-0001"})

    lines = lines_of(journal_path(plan_path))
    assert [(x["step"], x["event"]) for x in lines] == [("vpc-cidr", "started"), ("vpc-cidr", "acted")]
    assert all(set(x) == {"ts", "plan_digest", "step", "event", "outputs", "error"} for x in lines)
    assert all(x["plan_digest"] == plan.digest for x in lines)
    assert lines[1]["outputs"] == {"association_id": "vpc-cidr-assoc-0001"}

    reopened = Journal.open(plan_path, plan)
    assert reopened.events == journal.events


def test_outputs_of_and_is_done_follow_the_latest_event(plan_path: Path) -> None:
    plan = make_plan()
    journal = Journal.open(plan_path, plan)
    assert journal.outputs_of("vpc-cidr") is None
    journal.record("vpc-cidr", "started")
    assert journal.outputs_of("vpc-cidr") is None
    assert not journal.is_done("vpc-cidr")
    journal.record("vpc-cidr", "acted", {"association_id": "a-1"})
    journal.record("vpc-cidr", "failed", error="timed out")
    assert journal.outputs_of("vpc-cidr") == {"association_id": "a-1"}
    assert not journal.is_done("vpc-cidr")
    journal.record("vpc-cidr", "skipped", {"association_id": "a-1", "state": "associated"})
    assert journal.is_done("vpc-cidr")
    assert journal.outputs_of("vpc-cidr") == {"association_id": "a-1", "state": "associated"}
    assert not journal.is_done("subnet-a")

    reopened = Journal.open(plan_path, plan)
    assert reopened.is_done("vpc-cidr")
    assert reopened.outputs_of("vpc-cidr") == {"association_id": "a-1", "state": "associated"}
    assert reopened.events[2].error == "timed out"


@pytest.mark.parametrize(
    "tail",
    [b'{"ts":"2024-05-01T10:0', b"\x00\x00\x00\x00\n", b'{"ts":"x","plan_digest":"d","step":"s","event":"done"}'],
    ids=["half-a-line", "zeros-after-power-loss", "whole-record-without-newline"],
)
def test_torn_last_line_is_ignored_and_cut_before_the_next_append(plan_path: Path, tail: bytes) -> None:
    plan = make_plan()
    journal = Journal.open(plan_path, plan)
    journal.record("vpc-cidr", "started")
    journal.record("vpc-cidr", "acted", {"association_id": "a-1"})
    with journal_path(plan_path).open("ab") as f:
        f.write(tail)

    resumed = Journal.open(plan_path, plan)
    assert [e.event for e in resumed.events] == ["started", "acted"]
    assert resumed.outputs_of("vpc-cidr") == {"association_id": "a-1"}

    resumed.record("vpc-cidr", "skipped", {"association_id": "a-1"})
    lines = lines_of(journal_path(plan_path))  # every line parses again
    assert [x["event"] for x in lines] == ["started", "acted", "skipped"]
    assert [e.event for e in Journal.open(plan_path, plan).events] == ["started", "acted", "skipped"]


def test_blank_lines_and_an_empty_file_are_fine(plan_path: Path) -> None:
    plan = make_plan()
    journal_path(plan_path).write_text("")
    assert Journal.open(plan_path, plan).events == ()
    Journal.open(plan_path, plan).record("vpc-cidr", "started")
    with journal_path(plan_path).open("a") as f:
        f.write("\n\n")
    journal = Journal.open(plan_path, plan)
    journal.record("vpc-cidr", "failed", error="boom")
    assert [e.event for e in Journal.open(plan_path, plan).events] == ["started", "failed"]


def test_corrupt_line_in_the_middle_is_refused(plan_path: Path) -> None:
    plan = make_plan()
    journal = Journal.open(plan_path, plan)
    journal.record("vpc-cidr", "started")
    with journal_path(plan_path).open("a") as f:
        f.write("this is not json\n")
    journal.record("vpc-cidr", "acted", {"association_id": "a-1"})

    with pytest.raises(InvalidInput) as err:
        Journal.open(plan_path, plan)
    assert err.value.exit_code == 2
    assert "corrupt at line 2" in str(err.value)
    assert "move it away" in str(err.value)


def test_entry_that_is_not_a_journal_event_is_refused(plan_path: Path) -> None:
    plan = make_plan()
    entry = {"ts": "t", "plan_digest": plan.digest, "step": "vpc-cidr", "event": "exploded", "outputs": {}}
    journal_path(plan_path).write_text(json.dumps(entry) + "\n")
    with pytest.raises(InvalidInput) as err:
        Journal.open(plan_path, plan)
    assert err.value.exit_code == 2
    assert "not a cidrx journal entry" in str(err.value)


def test_journal_of_another_plan_is_refused(plan_path: Path) -> None:
    Journal.open(plan_path, make_plan()).record("vpc-cidr", "done", {"association_id": "a-1"})
    other = make_plan("100.64.16.0/20")
    save_plan(other, plan_path)  # re-planned into the same file, old journal left behind

    with pytest.raises(InvalidInput) as err:
        Journal.open(plan_path, other)
    assert err.value.exit_code == 2
    assert str(err.value) == f"journal {journal_path(plan_path)} belongs to another plan; move it away or re-plan"


def test_unreadable_journal_is_invalid_input(plan_path: Path) -> None:
    journal_path(plan_path).mkdir()
    with pytest.raises(InvalidInput) as err:
        Journal.open(plan_path, make_plan())
    assert err.value.exit_code == 2
    assert "refusing to write" in str(err.value) and "it is a directory" in str(err.value)
