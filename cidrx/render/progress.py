"""Progress on stderr: of an apply (one live line on a terminal, timestamped plain lines in CI logs) and of
reading the cloud or cluster (a spinner naming the request and any retry; plain lines with -v; off a
terminal without -v, one line for each wait longer than 10 s).

An apply can take many minutes (a node group alone takes several), so the user must see which step runs
and what it is waiting for. Results still go to stdout from the CLI; everything here is for humans
watching, and takes the stream it writes to (the CLI passes stderr).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TextIO

from cidrx.engine.executor import Progress
from cidrx.model.plan import Step

__all__ = ["LiveProgress", "NullProgress", "PlainProgress", "Progress", "make_progress"]

_OUTPUTS_WIDTH = 100


def human_value(value: Any) -> str:
    """A step output as a person reads it, not as JSON: lists as `a, b`, mappings as `k=v k2=v2`, a setting
    that was absent (None) as `unset`."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, dict):
        return " ".join(f"{k}={human_value(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(human_value(v) for v in value) or "none"
    return json.dumps(value, separators=(",", ":"), default=str)


def format_outputs(outputs: dict[str, Any], width: int = _OUTPUTS_WIDTH) -> str:
    """`key=value, …` of what a step created or restored, cut to `width` characters."""
    parts = [f"{key}={human_value(value)}" for key, value in outputs.items()]
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


class _StepLines:
    """What both step displays share: where the run is (`[i/n] step-id`) and the words for each event.
    `_show` puts up a line that the next may replace; `_final` one that stays."""

    _STARTED = ""  # what a step's first line says before its description

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._where = ""
        self._current = ""

    def _show(self, text: str) -> None:
        raise NotImplementedError

    def _final(self, text: str) -> None:
        raise NotImplementedError

    def step_started(self, step: Step, index: int, total: int) -> None:
        self._where = f"[{index}/{total}] {step.id}"
        self._show(f"{self._where}: {self._STARTED}{step.description}")

    def step_finished(self, step: Step, status: str, outputs: dict[str, Any]) -> None:
        detail = format_outputs(outputs)
        self._final(f"{self._where or step.id}: {_status_text(status)}" + (f" ({detail})" if detail else ""))
        self._where = ""

    def waiting(self, what: str, elapsed: float) -> None:
        prefix = f"{self._where}: " if self._where else ""
        self._show(f"{prefix}waiting for {what} ({elapsed:.0f}s)")


class PlainProgress(_StepLines):
    """One timestamped line per event, never rewritten: readable in CI logs and when piped to a file."""

    report_every = 30.0
    _STARTED = "started: "

    def _final(self, text: str) -> None:
        ts = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.stream.write(f"{ts} {text}\n")
        self.stream.flush()

    def _show(self, text: str) -> None:
        self._final(text)  # a log line is never redrawn

    def note(self, text: str) -> None:
        self._final(text)


class LiveProgress(_StepLines):
    """A terminal: the running step is one line redrawn in place (`\\r`), with a final line per step."""

    report_every = 1.0
    _CLEAR = "\r\x1b[K"

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = shutil.get_terminal_size().columns
        return max(20, columns - 1)

    def _show(self, text: str) -> None:
        self._current = text
        width = self._width()
        shown = text if len(text) <= width else text[: width - 1] + "…"
        self.stream.write(self._CLEAR + shown)
        self.stream.flush()

    def _final(self, text: str) -> None:
        self.stream.write(self._CLEAR + text + "\n")
        self.stream.flush()
        self._current = ""

    def note(self, text: str) -> None:
        current = self._current
        self._final(text)
        if current:
            self._show(current)


def make_progress(stream: TextIO) -> Progress:
    """LiveProgress when `stream` is a terminal, PlainProgress otherwise (CI, pipes, files)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or file-like without isatty
        tty = False
    return LiveProgress(stream) if tty else PlainProgress(stream)


# --- what is being read, while a snapshot is taken (cidrx.transport.activity) ----------------------------------


class SpinnerStatus:
    """A terminal: one status line with a spinner, naming the request being made and any retry, erased
    when reading is done (rich's Live display, transient)."""

    def __init__(self, stream: TextIO, title: str) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        from cidrx.render.term import detect

        term = detect(stream)
        self._title = title
        self._spinner = Spinner("dots", text=title)
        self._console = Console(file=stream, width=term.width, no_color=not term.color, highlight=False)
        self._live = Live(
            self._spinner,
            console=self._console,
            transient=True,
            refresh_per_second=8,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._lock = threading.Lock()

    def _show(self, text: str) -> None:
        width = max(10, self._console.width - 3)
        shown = text if len(text) <= width else text[: width - 1] + "…"
        with self._lock:
            self._spinner.update(text=shown)
            self._live.refresh()

    def start(self) -> None:
        self._live.start(refresh=True)

    def stop(self) -> None:
        self._live.stop()

    def reading(self, what: str) -> None:
        self._show(f"{self._title}: {what}")

    def retrying(self, what: str, attempt: int, max_attempts: int, delay: float, error: str) -> None:
        self._show(f"{self._title}: {what}: retry {attempt}/{max_attempts} in {delay:.1f}s after {error}")


class ActivityLines:
    """Not a terminal, with -v: one plain line per request and per retry (CI logs show where time goes)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _line(self, text: str) -> None:
        self.stream.write(f"cidrx: {text}\n")
        self.stream.flush()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def reading(self, what: str) -> None:
        self._line(f"reading {what}")

    def retrying(self, what: str, attempt: int, max_attempts: int, delay: float, error: str) -> None:
        self._line(f"retrying {what} (attempt {attempt} of {max_attempts}) in {delay:.1f}s after: {error}")


class SlowWaitLines:
    """Not a terminal, without -v: silence, except one line for each request (or retry wait) still pending
    after `after` seconds, so a CI log never shows a minute of nothing. `tick()` is what the background
    thread calls every second; `monotonic` is replaceable for tests."""

    def __init__(self, stream: TextIO, after: float = 10.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.after = after
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._what: str | None = None
        self._since = 0.0
        self._told = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cidrx-slow-waits", daemon=True)

    def _begin(self, what: str) -> None:
        with self._lock:
            self._what, self._since, self._told = what, self.monotonic(), False

    def reading(self, what: str) -> None:
        self._begin(what)

    def retrying(self, what: str, attempt: int, max_attempts: int, delay: float, error: str) -> None:
        self._begin(f"{what} (retry {attempt} of {max_attempts} after: {error})")

    def tick(self) -> None:
        with self._lock:
            if self._what is None or self._told:
                return
            waited = self.monotonic() - self._since
            if waited < self.after:
                return
            self._told = True
            what = self._what
        self.stream.write(f"cidrx: still waiting for {what} ({waited:.0f}s so far)\n")
        self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            with contextlib.suppress(Exception):
                self.tick()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()


@contextlib.contextmanager
def showing_activity(title: str, stream: TextIO, verbose: int) -> Iterator[None]:
    """While the block reads the cloud or the cluster: a spinner line on a terminal, plain lines with -v
    elsewhere, otherwise one line per wait longer than 10 s. Never on stdout (the caller passes stderr)."""
    from cidrx.render.term import is_terminal
    from cidrx.transport import activity

    shown: SpinnerStatus | ActivityLines | SlowWaitLines
    if is_terminal(stream):
        shown = SpinnerStatus(stream, title)
    elif verbose:
        shown = ActivityLines(stream)
    else:
        shown = SlowWaitLines(stream)
    shown.start()
    try:
        with activity.listening(shown):
            yield
    finally:
        shown.stop()
