"""Progress of an apply on stderr: one live line on a terminal, timestamped plain lines in CI logs.

An apply can take many minutes (a node group alone takes several), so the user must see which step runs
and what it is waiting for. Results still go to stdout from the CLI; everything here is for humans
watching, and takes the stream it writes to (the CLI passes stderr).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from typing import Any, Protocol, TextIO

from cidrx.model.plan import Step

_OUTPUTS_WIDTH = 100


class Progress(Protocol):
    """What the apply engine tells the user. `report_every` is how often (s) waits are worth a line."""

    report_every: float

    def step_started(self, step: Step, index: int, total: int) -> None: ...

    def step_finished(self, step: Step, status: str, outputs: dict[str, Any]) -> None: ...

    def note(self, text: str) -> None: ...

    def waiting(self, what: str, elapsed: float) -> None: ...


def format_outputs(outputs: dict[str, Any], width: int = _OUTPUTS_WIDTH) -> str:
    """`key=value, …` of what a step created, cut to `width` characters."""
    parts = []
    for key, value in outputs.items():
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
        parts.append(f"{key}={text}")
    joined = ", ".join(parts)
    return joined if len(joined) <= width else joined[: width - 1] + "…"


def _status_text(status: str) -> str:
    return "skipped (already done)" if status == "skipped" else status


class NullProgress:
    """Says nothing (library use, tests)."""

    report_every = 10.0

    def step_started(self, step: Step, index: int, total: int) -> None:
        pass

    def step_finished(self, step: Step, status: str, outputs: dict[str, Any]) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def waiting(self, what: str, elapsed: float) -> None:
        pass


class PlainProgress:
    """One timestamped line per event, never rewritten: readable in CI logs and when piped to a file."""

    report_every = 30.0

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._where = ""

    def _line(self, text: str) -> None:
        ts = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.stream.write(f"{ts} {text}\n")
        self.stream.flush()

    def step_started(self, step: Step, index: int, total: int) -> None:
        self._where = f"[{index}/{total}] {step.id}"
        self._line(f"{self._where}: started: {step.description}")

    def step_finished(self, step: Step, status: str, outputs: dict[str, Any]) -> None:
        detail = format_outputs(outputs)
        self._line(f"{self._where or step.id}: {_status_text(status)}" + (f" ({detail})" if detail else ""))
        self._where = ""

    def note(self, text: str) -> None:
        self._line(text)

    def waiting(self, what: str, elapsed: float) -> None:
        prefix = f"{self._where}: " if self._where else ""
        self._line(f"{prefix}waiting for {what} ({elapsed:.0f}s)")


class LiveProgress:
    """A terminal: the running step is one line redrawn in place (`\\r`), with a final line per step."""

    report_every = 1.0
    _CLEAR = "\r\x1b[K"

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._where = ""
        self._current = ""

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = shutil.get_terminal_size().columns
        return max(20, columns - 1)

    def _draw(self, text: str) -> None:
        self._current = text
        width = self._width()
        shown = text if len(text) <= width else text[: width - 1] + "…"
        self.stream.write(self._CLEAR + shown)
        self.stream.flush()

    def _final(self, text: str) -> None:
        self.stream.write(self._CLEAR + text + "\n")
        self.stream.flush()

    def step_started(self, step: Step, index: int, total: int) -> None:
        self._where = f"[{index}/{total}] {step.id}"
        self._draw(f"{self._where}: {step.description}")

    def step_finished(self, step: Step, status: str, outputs: dict[str, Any]) -> None:
        detail = format_outputs(outputs)
        self._final(f"{self._where or step.id}: {_status_text(status)}" + (f" ({detail})" if detail else ""))
        self._where = ""
        self._current = ""

    def note(self, text: str) -> None:
        self._final(text)
        if self._current:
            self._draw(self._current)

    def waiting(self, what: str, elapsed: float) -> None:
        prefix = f"{self._where}: " if self._where else ""
        self._draw(f"{prefix}waiting for {what} ({elapsed:.0f}s)")


def make_progress(stream: TextIO) -> Progress:
    """LiveProgress when `stream` is a terminal, PlainProgress otherwise (CI, pipes, files)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or file-like without isatty
        tty = False
    return LiveProgress(stream) if tty else PlainProgress(stream)
