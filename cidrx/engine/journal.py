"""The apply journal: an append-only record, beside the plan file, of what each step did.

`<plan path>.journal.jsonl` gets one JSON line per step event (started, acted, done, skipped, failed) with
the ids of what was created, the values a step is about to overwrite (its "started" event) and whether the
step changed something (`changed` on done and skipped), written and fsynced before the apply moves on. It
makes a partial apply reviewable, gives resumed executors hints and tells rollback which steps this plan's
applies changed; it is not the source of truth for what exists: every step checks the cloud first and
created resources carry the plan tag, so a lost journal costs hints (and rollback falls back to the tags).

A crash can tear the last line mid-write; that line is ignored (and cut off before the next append).
A journal that carries another plan's digest is refused rather than mixed into this plan's history.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from cidrx.errors import InvalidInput
from cidrx.model import files
from cidrx.model.plan import Plan

# `verified`: after the last step, what a fresh snapshot says (cidrx.engine.verify), under VERIFY_STEP.
Event = Literal["started", "acted", "done", "skipped", "failed", "verified"]
VERIFY_STEP = "(after-apply)"
EVENTS: frozenset[str] = frozenset(get_args(Event))
_WITH_OUTPUTS = frozenset({"acted", "done", "skipped"})
_FINISHED = frozenset({"done", "skipped"})


def journal_path(plan_path: str | Path) -> Path:
    return Path(f"{plan_path}.journal.jsonl")


@dataclass(frozen=True)
class JournalEvent:
    ts: str
    plan_digest: str
    step: str
    event: Event
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # On "done" and "skipped": whether this apply changed something in the step (done) or found it already
    # done (skipped); rollback undoes only what an apply changed.
    changed: bool | None = None


def _parse(line: bytes) -> dict[str, Any]:
    """Decoded line, or ValueError when it is not JSON at all (what a torn write looks like)."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return data


def _event(data: dict[str, Any], where: str) -> JournalEvent:
    outputs = data.get("outputs") or {}
    error = data.get("error")
    changed = data.get("changed")
    if (
        not isinstance(data.get("ts"), str)
        or not isinstance(data.get("plan_digest"), str)
        or not isinstance(data.get("step"), str)
        or data.get("event") not in EVENTS
        or not isinstance(outputs, dict)
        or not (error is None or isinstance(error, str))
        or not (changed is None or isinstance(changed, bool))
    ):
        raise InvalidInput(f"{where} is not a cidrx journal entry; move the journal away and run again")
    return JournalEvent(
        ts=data["ts"],
        plan_digest=data["plan_digest"],
        step=data["step"],
        event=data["event"],
        outputs=outputs,
        error=error,
        changed=changed,
    )


class Journal:
    """Events of one plan's applies, oldest first. Create with `Journal.open`."""

    def __init__(self, path: Path, plan: Plan, events: list[JournalEvent], *, torn_from: int | None = None) -> None:
        self.path = path
        self.plan = plan
        self._events = events
        self._torn_from = torn_from  # offset of a torn tail to cut before the first append

    @classmethod
    def open(cls, plan_path: str | Path, plan: Plan) -> Journal:
        """Read the journal beside `plan_path` (none yet is fine). Writes nothing until `record`."""
        path = journal_path(plan_path)
        files.check_writable(path)  # a FIFO or device there would block or swallow the record
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path, plan, [])
        except OSError as exc:
            raise InvalidInput(f"cannot read journal {path}: {exc.strerror or exc}") from None
        events: list[JournalEvent] = []
        offset = 0
        # split() leaves the text after the last newline as the final element: empty when the file ends
        # cleanly, the start of a torn write otherwise.
        lines = data.split(b"\n")
        last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        for i, line in enumerate(lines):
            complete = i < len(lines) - 1
            if not line.strip():
                offset += len(line) + (1 if complete else 0)
                continue
            try:
                raw = _parse(line)
            except ValueError:
                if i == last:
                    break  # torn by a crash mid-write
                raise InvalidInput(
                    f"journal {path} is corrupt at line {i + 1}; move it away and run again "
                    "(resume finds what was created by the plan tag)"
                ) from None
            if not complete:
                break  # a record without its newline was never acknowledged: torn
            event = _event(raw, f"journal {path} line {i + 1}")
            if event.plan_digest != plan.digest:
                raise InvalidInput(f"journal {path} belongs to another plan; move it away or re-plan")
            events.append(event)
            offset += len(line) + 1
        return cls(path, plan, events, torn_from=offset if offset < len(data) else None)

    @property
    def events(self) -> tuple[JournalEvent, ...]:
        return tuple(self._events)

    def _of(self, step_id: str) -> Iterator[JournalEvent]:
        return (e for e in reversed(self._events) if e.step == step_id)

    def outputs_of(self, step_id: str) -> dict[str, Any] | None:
        """Outputs of the latest acted/done/skipped event of the step, None if it never got that far."""
        for e in self._of(step_id):
            if e.event in _WITH_OUTPUTS:
                return dict(e.outputs)
        return None

    def before_of(self, step_id: str) -> dict[str, Any] | None:
        """What the step's executor recorded, before its first act, about the values it would overwrite (the
        earliest "started" event with outputs: a later act of a resumed run would only see its own values)."""
        for e in self._events:
            if e.step == step_id and e.event == "started" and e.outputs:
                return dict(e.outputs)
        return None

    def changed(self, step_id: str) -> bool | None:
        """Whether an apply of this plan may have changed the step's object: True once a run started its act
        (a "started" event comes before every act: what it did is found by the plan tag or the recorded
        before-values), False when runs only found it already done, None when the journal has no event of it."""
        events = [e for e in self._events if e.step == step_id]
        if not events:
            return None
        return any(e.event in ("started", "acted", "done") for e in events)

    def is_done(self, step_id: str) -> bool:
        """True when the step's latest event says it finished (done or skipped)."""
        return next((e.event in _FINISHED for e in self._of(step_id)), False)

    def record(
        self,
        step_id: str,
        event: Event,
        outputs: dict[str, Any] | None = None,
        error: str | None = None,
        *,
        changed: bool | None = None,
    ) -> JournalEvent:
        """Append one event and make it durable (flush + fsync) before returning."""
        entry = JournalEvent(
            ts=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            plan_digest=self.plan.digest,
            step=step_id,
            event=event,
            outputs=dict(outputs or {}),
            error=error,
            changed=changed,
        )
        record: dict[str, Any] = {
            "ts": entry.ts,
            "plan_digest": entry.plan_digest,
            "step": entry.step,
            "event": entry.event,
            "outputs": entry.outputs,
            "error": entry.error,
        }
        if changed is not None:
            record["changed"] = changed
        line = (
            json.dumps(
                record,
                separators=(",", ":"),
                ensure_ascii=False,
            )
            + "\n"
        ).encode()
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if self._torn_from is not None:
                os.ftruncate(fd, self._torn_from)
                self._torn_from = None
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            files.fsync_dir(self.path.parent)
        self._events.append(entry)
        return entry
