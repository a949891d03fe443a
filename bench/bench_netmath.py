"""Free-range search among 20,000 occupied ranges: cidrx.netmath against a naive search (docs/performance.md).

    python -m bench.bench_netmath [--scale 1] [--repeat 7]

The naive search is what one writes with the stdlib alone: walk the candidate blocks of the wanted size
in order and test each against every occupied range with `IPv4Network.overlaps`. The estate: 20,000
occupied ranges (mostly /24, some /20 and /28, shuffled) in 10.0.0.0/8, laid out so that the first free
/22 comes after 1,000 candidates that each hold exactly one small occupied range, i.e. the naive search
has to work for its answer. Both answer the same question for /22, /24 and /20 and must agree (exit 1
otherwise). Peak memory: tracemalloc (Python allocations of the search, in this process).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from ipaddress import IPv4Network
from typing import Any

from bench.common import ratio, table
from cidrx import netmath

WITHIN = IPv4Network("10.0.0.0/8")
BUDGET_S = 0.050
SPEEDUP_BUDGET = 100.0


def occupied_ranges(count: int, crowded: int, seed: int = 7) -> list[IPv4Network]:
    """`crowded` leading /22 candidates each hold one small range; the rest lie beyond the first free /22."""
    rng = random.Random(seed)
    base = int(WITHIN.network_address)
    out: list[IPv4Network] = []
    for i in range(crowded):  # one /24 or /28 somewhere inside /22 number i
        prefix = rng.choice((24, 28))
        offset = rng.randrange(0, 1 << 10, 1 << (32 - prefix))
        out.append(IPv4Network((base + (i << 10) + offset, prefix)))
    cursor = base + ((crowded + 1) << 10)  # candidate `crowded` stays free
    while len(out) < count:
        prefix = rng.choices((24, 20, 28), weights=(90, 5, 5))[0]
        size = 1 << (32 - prefix)
        cursor = (cursor + size - 1) // size * size
        out.append(IPv4Network((cursor, prefix)))
        cursor += size * rng.choice((1, 1, 1, 2))  # mostly packed, some gaps of one block
    rng.shuffle(out)
    return out


def naive_first_free(prefixlen: int, within: IPv4Network, occupied: Sequence[IPv4Network]) -> IPv4Network | None:
    for candidate in within.subnets(new_prefix=prefixlen):
        if not any(candidate.overlaps(o) for o in occupied):
            return candidate
    return None


def _timed(fn: Callable[[], Any], repeat: int, *, trace: bool = True) -> tuple[float, Any, float | None]:
    """(median seconds, result, peak traced MB of one more call when `trace`)."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    if not trace:
        return statistics.median(times), result, None
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return statistics.median(times), result, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=7, help="runs of the cidrx search (median)")
    parser.add_argument("--naive-repeat", type=int, default=1, help="runs of the naive search (slow)")
    opts = parser.parse_args(argv)
    count, crowded = max(10, round(20000 * opts.scale)), max(2, round(1000 * opts.scale))
    occupied = occupied_ranges(count, crowded)
    rows, problems = [], []
    # /22 is the budgeted query (the layout makes the naive search walk 1,000 candidates); /24 and /20
    # only check exactness on other answers (a /24 is free at once, so no speed-up is expected there).
    for prefix in (22, 24, 20):
        fast_s, fast, fast_mb = _timed(lambda p=prefix: netmath.first_free_block(p, [WITHIN], occupied), opts.repeat)
        slow_s, slow, _ = _timed(lambda p=prefix: naive_first_free(p, WITHIN, occupied), opts.naive_repeat, trace=False)
        speedup = ratio(slow_s, fast_s)
        exact = fast == slow
        if not exact:
            problems.append(f"/{prefix}: cidrx found {fast}, the naive search {slow}")
        if prefix == 22:
            verdict = f"{'ok' if fast_s < BUDGET_S else 'OVER'} (<{BUDGET_S * 1000:.0f} ms); " + (
                f"speed-up {'ok' if speedup >= SPEEDUP_BUDGET else 'UNDER'} (≥{SPEEDUP_BUDGET:.0f}x)"
            )
        else:
            verdict = "exactness check"
        rows.append(
            [
                f"first free /{prefix} among {len(occupied)} ranges",
                fast_s,
                slow_s,
                ratio(fast_s, slow_s),
                f"{speedup:.0f}x",
                f"{fast_mb or 0:.2f}",
                str(fast),
                "yes" if exact else "NO",
                verdict,
            ]
        )
    print(
        table(
            rows,
            [
                "search",
                "cidrx s (median)",
                "naive s",
                "ratio",
                "speed-up",
                "cidrx peak MB (tracemalloc)",
                "answer",
                "exact",
                "budget",
            ],
        )
    )
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
