"""Tests that need an OS tool (promtool, terraform, a browser): skip without it, or fail when CI says it must be there.

A skipped test is easy to miss, so CI (.ci/run) sets CIDRX_REQUIRE_TOOLS=1 and installs the tools it needs:
there a missing tool fails the test instead of skipping it. On a developer's machine the tests skip and say
which tool is missing. CIDRX_REQUIRE_TOOLS may also name tools, comma-separated (`promtool,terraform`).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

ENV = "CIDRX_REQUIRE_TOOLS"
F = TypeVar("F", bound=Callable[..., Any])


def is_required(tool: str) -> bool:
    """Whether CIDRX_REQUIRE_TOOLS makes `tool` mandatory (`1` or `all`: every tool; else a list of names)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "0", "no", "false"):
        return False
    if value in ("1", "all", "yes", "true"):
        return True
    return tool.lower() in {t.strip() for t in value.split(",")}


def require_tool(tool: str, why: str) -> str:
    """The path of `tool` on PATH; otherwise skip the calling test (saying `why` it is needed), or fail it
    when the tool is required."""
    path = shutil.which(tool)
    if path is None:
        require(tool, False, f"no {tool} on PATH ({why})")
    assert path is not None
    return path


def require(tool: str, available: bool, reason: str) -> None:
    """Nothing when `available`; otherwise skip saying `reason`, or fail when CIDRX_REQUIRE_TOOLS requires `tool`
    (for tools that are not a command on PATH: a browser at a fixed path, a Python package)."""
    if available:
        return
    if is_required(tool):
        pytest.fail(f"{reason}, and {ENV}={os.environ.get(ENV)} requires it")
    pytest.skip(f"{reason}; set {ENV}=1 to make this a failure")


def needs_tool(tool: str, why: str) -> Callable[[F], F]:
    """Decorate a test that needs `tool`: it skips or fails (see require_tool) before running without it."""

    def decorate(test: F) -> F:
        @functools.wraps(test)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            require_tool(tool, why)
            return test(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
