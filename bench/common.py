"""Shared plumbing of the bench scripts: running a worker subprocess, medians, request counting, tables."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_worker(mode: str, args: Mapping[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run `bench.worker` in a fresh interpreter; its JSON result (wall, rss_mb, ...)."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.worker", mode, json.dumps(args)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench worker {mode} failed ({proc.returncode}):\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def median_of(results: Sequence[Mapping[str, Any]], key: str = "wall") -> float:
    return float(statistics.median(r[key] for r in results))


def ratio(value: float, base: float) -> float:
    return value / base if base else float("inf")


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """Plain columns two spaces apart, numbers right-aligned (floats to 3 places), the header underlined."""
    values = [list(row) for row in rows]
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row] for row in values]
    widths = [max([len(h)] + [len(r[i]) for r in cells if i < len(r)]) for i, h in enumerate(headers)]
    numeric = [
        bool(values) and all(isinstance(r[i], int | float) for r in values if i < len(r)) for i in range(len(headers))
    ]

    def line(texts: Sequence[str]) -> str:
        parts = [t.rjust(w) if num else t.ljust(w) for t, w, num in zip(texts, widths, numeric, strict=False)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def kube_resource(path: str) -> tuple[str, bool]:
    """(resource, names one object) of a Kubernetes REST path: "pods", "ipamblocks.crd.projectcalico.org";
    ("discovery", False) for /api and /apis."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis") or len(parts) <= (2 if parts[0] == "api" else 3):
        return "discovery", False
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    group = "" if parts[0] == "api" or parts[1] in ("apps",) else f".{parts[1]}"
    return rest[0] + group, len(rest) >= 2


def count_by_kind(records: Iterable[tuple[str, str]]) -> Counter[str]:
    """Requests by 'METHOD resource' (a single-object read is 'GET resource/NAME')."""
    out: Counter[str] = Counter()
    for method, path in records:
        plural, named = kube_resource(path)
        out[f"{method} {plural}{'/NAME' if named else ''}"] += 1
    return out
