"""The in-process CLI runner every test that drives `cidrx` through click uses (one copy, not one per file)."""

from __future__ import annotations

from collections.abc import Mapping

from click.testing import CliRunner, Result

from cidrx.cli import cli


def run(*args: str, env: Mapping[str, str | None] | None = None, input: str | None = None) -> Result:
    """`cidrx ARGS...` in process; `env` entries set (None: unset) variables for the run only."""
    return CliRunner().invoke(cli, list(args), env=env, input=input)


def one_line_error(result: Result) -> str:
    """The error output ends with `cidrx: error: ...` (+ optional `hint:`), never a traceback; only apply
    progress lines may come before it."""
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("cidrx: error: ")), None)
    assert start is not None, result.stderr
    lines = lines[start:]
    assert len(lines) <= 2 and all(line.startswith(("cidrx: error: ", "hint: ")) for line in lines), lines
    return lines[0]
