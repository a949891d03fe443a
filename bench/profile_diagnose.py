"""Profile one cidrx diagnose of the synthetic estate with cProfile (stdlib) and print what dominates.

    python -m bench.profile_diagnose [--scale 1] [--out diagnose.prof] [--top 25]

The profile covers the client process only (collect + analyze + JSON output); the fake API server runs in
this process and is not in it. Open the saved file with `python -m pstats diagnose.prof` or snakeviz.
"""

from __future__ import annotations

import argparse
import pstats
import sys
import tempfile
from pathlib import Path

from bench.common import run_worker
from bench.estate import Sizes, serve_kube


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", default="diagnose.prof")
    parser.add_argument("--top", type=int, default=25)
    opts = parser.parse_args(argv)
    out = Path(opts.out).resolve()
    with tempfile.TemporaryDirectory() as tmp, serve_kube(Sizes.at(opts.scale), Path(tmp)) as (_s, kubeconfig, _c):
        result = run_worker("kube-cidrx", {"kubeconfig": str(kubeconfig), "profile": str(out)})
    print(
        f"wall {result['wall']:.2f} s (collect {result['collect']:.2f} s, analyze {result['analyze']:.2f} s), "
        f"peak RSS {result['rss_mb']:.0f} MB; profile in {out}\n"
    )
    stats = pstats.Stats(str(out))
    stats.sort_stats("tottime").print_stats(opts.top)
    stats.sort_stats("cumulative").print_stats(opts.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
