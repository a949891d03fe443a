"""A real Prometheus server for the forecast tests: history written as OpenMetrics, backfilled into TSDB blocks
with `promtool tsdb create-blocks-from openmetrics`, then served by `/usr/bin/prometheus` on a loopback port.

Debian's `prometheus` package (2.42 on bookworm) ships both binaries; .ci/run installs it. Blocks made by
promtool from samples in the past are loaded at start-up like any other block (docs: "Backfilling from
OpenMetrics format", https://prometheus.io/docs/prometheus/2.42/storage/#backfilling-from-openmetrics-format).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CONFIG = "global:\n  scrape_interval: 1m\n  evaluation_interval: 1m\n"
READY_WITHIN = 60.0


@dataclass(frozen=True)
class History:
    """One series: its metric name, labels and (unix seconds, value) samples, oldest first."""

    metric: str
    labels: Mapping[str, str]
    samples: Sequence[tuple[float, float]]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_text(labels: Mapping[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def openmetrics(history: Sequence[History]) -> str:
    """The series as one OpenMetrics text: each metric family once, its series one after the other."""
    families: dict[str, list[History]] = {}
    for h in history:
        families.setdefault(h.metric, []).append(h)
    lines = []
    for metric, series in families.items():
        lines.append(f"# TYPE {metric} gauge")
        for h in series:
            labels = _label_text(h.labels)
            lines += [f"{metric}{labels} {v:g} {t:.3f}" for t, v in h.samples]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfill(promtool: str, history: Sequence[History], data: Path) -> None:
    source = data.parent / "history.om"
    source.write_text(openmetrics(history))
    subprocess.run(
        # A block per 2h by default: hundreds of blocks for weeks of history and as many fsyncs. The flag is
        # hidden from --help in 2.42 but parsed (cmd/promtool/main.go, `max-block-duration`).
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--quiet",
            "--max-block-duration=720h",
            str(source),
            str(data),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _start(prometheus: str, config: Path, data: Path, port: int, log: Path) -> subprocess.Popen[bytes] | None:
    """Prometheus on `port`, once it answers ready; None when the port was taken before it could bind it."""
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                prometheus,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                # The backfilled history is weeks old: keep it all.
                "--storage.tsdb.retention.time=3650d",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + READY_WITHIN
    while not _ready(url):
        if proc.poll() is not None:
            if "address already in use" in log.read_text():
                return None
            raise RuntimeError(f"prometheus exited with {proc.returncode}; its log:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError(f"prometheus did not get ready; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return proc


@contextlib.contextmanager
def serve(prometheus: str, data: Path, log: Path) -> Iterator[str]:
    """Prometheus over `data` on a free loopback port until the block ends; yields its base URL.

    Prometheus cannot report a port it picked itself, so the port is picked here, and another process (another
    pytest-xdist worker's server) may bind it in between: then Prometheus exits saying so, and a new port is
    picked."""
    config = data.parent / "prometheus.yml"
    config.write_text(CONFIG)
    proc = None
    for _ in range(5):
        port = free_port()
        proc = _start(prometheus, config, data, port, log)
        if proc is not None:
            break
    if proc is None:
        raise RuntimeError(f"prometheus found every port it was given taken; its log:\n{log.read_text()[-3000:]}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


def series_count(url: str, selector: str) -> int:
    """How many series match `selector` now (a check that the backfill loaded)."""
    query = urllib.parse.urlencode({"match[]": selector})
    with urllib.request.urlopen(f"{url}/api/v1/series?{query}", timeout=10) as response:
        return len(json.loads(response.read())["data"])
