"""While cidrx reads a cluster, stderr says what it is reading and which retry is in progress: a spinner
line on a terminal (a real pseudo-terminal here), plain lines with -v elsewhere, nothing without -v in CI,
and never a word of it on stdout."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cidrx.cli import cli
from tests.support.cases import whereabouts as wc
from tests.support.fakes.kube_server import FakeKubeServer


@pytest.fixture
def cluster(kube_server: FakeKubeServer, kubeconfig_path: Path) -> list[str]:
    kube_server.put_many(wc.crashed_node_objects())
    # The first node list answers 503: the retry policy tries again (its sleep is not real in tests).
    kube_server.inject(503, method="GET", path_contains="/nodes", message="the server is busy")
    return ["diagnose", "--k8s", "--kubeconfig", str(kubeconfig_path)]


def test_with_v_each_request_and_the_retry_are_plain_lines_on_stderr(cluster: list[str]) -> None:
    result = CliRunner().invoke(cli, ["-v", *cluster, "-o", "json"])
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    assert "cidrx: reading Kubernetes list nodes at cluster scope" in lines
    retry = [line for line in lines if line.startswith("cidrx: retrying Kubernetes list nodes at cluster scope")]
    assert len(retry) == 1 and "(attempt 2 of 6)" in retry[0] and "the server is busy" in retry[0]
    assert "reading" not in result.stdout and result.stdout.startswith("{")


def test_without_v_and_without_a_terminal_nothing_is_said(cluster: list[str]) -> None:
    result = CliRunner().invoke(cli, [*cluster, "-o", "json"])
    assert result.exit_code == 3, result.output
    assert "reading" not in result.stderr and "retry" not in result.stderr


def test_on_a_terminal_a_spinner_line_names_the_request_and_the_retry(
    cluster: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, secondary = os.openpty()
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal's other end is closed
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    terminal = open(secondary, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (closed below)
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setenv("COLUMNS", "200")
    try:
        code = cli.main([*cluster, "-o", "json"], standalone_mode=False)
    finally:
        terminal.flush()
        terminal.close()
        os.close(secondary)
        reader.join(timeout=10)
        os.close(primary)
    assert code == 3
    text = seen.decode("utf-8", "replace")
    assert re.search(r"reading k8s:\S+: Kubernetes list nodes at cluster scope", text)
    assert "Kubernetes list nodes at cluster scope: retry 2/6 in" in text and "the server is busy" in text
    assert "\x1b[2K" in text or "\r" in text  # drawn in place, then erased (transient)
    assert "reading" not in stdout.getvalue() and stdout.getvalue().startswith("{")
