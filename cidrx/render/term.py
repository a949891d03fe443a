"""How text for a person should look where it goes: how wide it may be and whether it may be coloured.

Renderers stay pure (they take a `Term` and return text); `detect` is the one place that looks at the
stream and the environment: `COLUMNS` wins, else the terminal's own width, else 80 (a pipe, a file, a CI
log), so output is stable wherever it is not read on a terminal. Colour only when the stream is a
terminal and neither `NO_COLOR` (https://no-color.org: any non-empty value) nor `--no-color` says no.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

DEFAULT_WIDTH = 80
WIDE_WIDTH = 1000  # the width `--wide` lays text out to: wide enough that nothing wraps
MIN_WIDTH = 40  # narrower than this and no table is readable; lines may then exceed the width


@dataclass(frozen=True)
class Term:
    width: int = DEFAULT_WIDTH
    color: bool = False
    # `--wide`: every column and every line of evidence, lines as long as they need (like `kubectl -o wide`).
    wide: bool = False


PLAIN = Term()

# Set by the CLI's global `--no-color` and `--wide`; read by `detect`.
_no_color_flag = False
_wide_flag = False


def set_wide(value: bool) -> None:
    global _wide_flag
    _wide_flag = value


def set_no_color(value: bool) -> None:
    global _no_color_flag
    _no_color_flag = value


def is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed, or file-like without isatty
        return False


def width_of(stream: TextIO | None, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    if is_terminal(stream):
        assert stream is not None
        try:
            return max(MIN_WIDTH, os.get_terminal_size(stream.fileno()).columns)
        except (AttributeError, OSError, ValueError):
            pass
    return DEFAULT_WIDTH


def detect(stream: TextIO | None, *, no_color: bool = False, environ: Mapping[str, str] | None = None) -> Term:
    """The Term for text written to `stream`."""
    env = os.environ if environ is None else environ
    off = no_color or _no_color_flag or bool(env.get("NO_COLOR")) or env.get("TERM") == "dumb"
    color = is_terminal(stream) and not off
    # --wide: lines as long as their content (a table row, a finding) instead of wrapped to the terminal.
    width = max(width_of(stream, env), WIDE_WIDTH) if _wide_flag else width_of(stream, env)
    return Term(width=width, color=color, wide=_wide_flag)


def stdout_term() -> Term:
    """The Term for what the CLI prints on stdout (the `--no-color` flag included)."""
    import sys

    return detect(sys.stdout)


def stderr_term() -> Term:
    import sys

    return detect(sys.stderr)
