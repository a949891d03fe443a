"""The version is written once, in cidrx/__init__.py: pyproject.toml reads it, so what pip installed, what
`cidrx --version` prints and what the package says cannot drift apart."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from click.testing import CliRunner

import cidrx
from cidrx.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def test_cli_version_is_the_installed_distributions() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"cidrx {importlib.metadata.version('cidrx')}\n"
    assert importlib.metadata.version("cidrx") == cidrx.__version__


def test_pyproject_takes_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "cidrx.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:[abc]|rc|\.dev|\.post)?\d*", cidrx.__version__)
