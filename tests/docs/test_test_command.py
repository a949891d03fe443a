"""One test command: CI (.ci/run) runs exactly the pytest command README.md gives, CONTRIBUTING.md shows the same,
and what it needs (pytest-xdist for `-n`) comes with `pip install '.[test]'`, so it works on a fresh machine."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_test_command() -> str:
    """The pytest part of README's second command at its top (the one under "Run the tests:")."""
    text = (ROOT / "README.md").read_text()
    top = text.split("\n## ", 1)[0]
    commands = [line.strip() for line in top.splitlines() if line.startswith("    ")]
    assert len(commands) == 2, commands
    last = commands[1].split("&&")[-1].strip()
    assert last.startswith("python -m pytest"), commands[1]
    return last


def pytest_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip().startswith("python -m pytest")]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    assert pytest_lines(ROOT / ".ci" / "run") == [readme_test_command()]


def test_contributing_shows_the_same_test_command() -> None:
    assert pytest_lines(ROOT / "CONTRIBUTING.md") == [readme_test_command()]


def test_the_test_extra_brings_what_the_command_uses() -> None:
    args = shlex.split(readme_test_command())
    assert "-q" in args  # and no `-p no:terminal`-like option: pytest's summary line ("N passed") still shows
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    names = {re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower() for requirement in extra}
    if "-n" in args or any(a.startswith("--numprocesses") for a in args):
        assert "pytest-xdist" in names
