"""`cidrx exporter` over many collection cycles: is its memory flat (docs/performance.md)?

    python -m bench.bench_exporter [--scale 0.1] [--cycles 100]

Serves the estate of bench/estate.py (at --scale 0.1: 200 nodes, 6,000 pods, 60 Whereabouts pools, 410
Calico blocks) from the fake Kubernetes API, runs the real exporter against it with a near-zero interval
(cycles run back to back), and reads the process's resident memory (/proc/PID/status VmRSS) after the
first cycles and after the last. Prints RSS at each point, the growth, and the median collection time (from
`cidrx_collection_duration_seconds`). The 10 % budget is reported, not asserted (an allocator's noise at
tiny sizes is not a leak); exit 1 only when the exporter fails a collection or stops.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench.common import table
from bench.estate import Sizes, serve_kube
from tests.support.exporter_harness import Exporter, Scrape

GROWTH_BUDGET = 0.10
WARM_CYCLES = 10  # the first cycles fill caches (imports, botocore/lightkube models, the allocator's arenas)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status (Linux only)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args(argv)
    sizes = Sizes.at(args.scale)
    warm = min(WARM_CYCLES, max(1, args.cycles // 2))
    with tempfile.TemporaryDirectory(prefix="cidrx-bench-exporter-") as tmp, serve_kube(sizes, Path(tmp)) as served:
        _, kubeconfig, _ = served
        e = Exporter(["--k8s", "--kubeconfig", str(kubeconfig), "--interval", "0.01"], Path(tmp) / "exporter.err")
        try:
            durations: list[float] = []
            points: list[tuple[int, float]] = []
            seen = 0.0

            def advanced(s: Scrape) -> bool:
                return s.value("cidrx_collections") > seen

            for target in (warm, args.cycles):
                while seen < target:
                    s = e.wait(f"collection {int(seen) + 1}", advanced)
                    seen = s.value("cidrx_collections")
                    durations.append(s.value("cidrx_collection_duration_seconds"))
                    if s.value("cidrx_collection_failures") > 0:
                        print(f"a collection failed: {e.log.read_text()}", file=sys.stderr)
                        return 1
                points.append((int(seen), rss_mb(e.proc.pid)))
            code = e.terminate()
        finally:
            e.close()
    (first_n, first), (last_n, last) = points
    growth = (last - first) / first
    verdict = "within budget" if growth <= GROWTH_BUDGET else f"OVER the {GROWTH_BUDGET:.0%} budget"
    print(
        f"exporter: {sizes.nodes} nodes, {sizes.pods} pods, {sizes.whereabouts_pools} Whereabouts pools, "
        f"{sizes.calico_blocks} Calico blocks; {last_n} collections"
    )
    rows = [
        [f"RSS after {first_n} collections (MB)", f"{first:.1f}"],
        [f"RSS after {last_n} collections (MB)", f"{last:.1f}"],
        ["growth", f"{growth:+.1%} ({verdict})"],
        ["median collection (s)", f"{statistics.median(durations):.3f}"],
        ["exit code after SIGTERM", code],
    ]
    print(table(rows, ["exporter", "value"]))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
