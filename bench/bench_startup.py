"""Start-up budgets of docs/performance.md: `cidrx --help` under 0.15 s, `cidrx diagnose --snapshot` of the bundled
example under 0.5 s; median of several fresh processes.

    python -m bench.bench_startup [--repeat 7]

"Cold" here means a fresh interpreter each run (no warm process, no cached imports in memory); the OS
file cache stays warm, as on a CI runner after checkout. The baseline is the bare interpreter
(`python -c pass`), which no CLI can beat. Peak RSS comes from one more run under a tiny wrapper that
reads VmHWM from /proc/self/status at exit (getrusage's ru_maxrss would report the parent's size for a
vfork'ed child).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, ratio, table

EXAMPLE = ROOT / "examples" / "eks-demo-ip.snapshot.json"
CASES = (  # name, cidrx arguments, budget in seconds, accepted exit codes
    ("cidrx --help", ["--help"], 0.15, (0,)),
    (
        "cidrx diagnose --snapshot examples/eks-demo-ip.snapshot.json",
        ["diagnose", "--snapshot", str(EXAMPLE)],
        0.5,
        (0, 3),
    ),
)
_RSS_WRAPPER = """
import atexit, sys
OUT = sys.argv[1]
def _hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                open(OUT, "w").write(line.split()[1])
atexit.register(_hwm)
sys.argv = ["cidrx", *sys.argv[2:]]
from cidrx.cli import main
main()
"""


def cidrx_command() -> list[str]:
    script = Path(sys.executable).with_name("cidrx")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cidrx"]


def timed_runs(cmd: list[str], repeat: int, ok: tuple[int, ...]) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode not in ok:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return times


def peak_rss_mb(args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hwm"
        subprocess.run(
            [sys.executable, "-c", _RSS_WRAPPER, str(out), *args], cwd=ROOT, capture_output=True, check=False
        )
        return int(out.read_text()) / 1024 if out.exists() else float("nan")


def imported_heavy(args: list[str]) -> list[str]:
    """Heavy SDK modules the command imported (should be none for these two)."""
    code = (
        "import sys, json; sys.argv=['cidrx', *json.loads(sys.argv[1])]\nfrom cidrx.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('boto3', 'botocore', 'lightkube', 'google.cloud', 'httpx2')\n"
        "print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    try:
        return list(json.loads(proc.stderr.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return ["?"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args(argv)
    # With PYTHONDONTWRITEBYTECODE (set in some dev shells) nothing is cached, so every run would compile
    # cidrx from source; an installed cidrx always has its .pyc files. Compile them once, as pip does.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "cidrx")],
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    base = statistics.median(timed_runs([sys.executable, "-c", "pass"], opts.repeat, (0,)))
    rows: list[list[object]] = [["python -c pass (interpreter floor)", base, "", "", peak_rss_mb_floor(), "", ""]]
    problems = []
    for name, args, budget, ok in CASES:
        wall = statistics.median(timed_runs([*cidrx_command(), *args], opts.repeat, ok))
        heavy = imported_heavy(args)
        if heavy:
            problems.append(f"{name} imports {', '.join(heavy)}")
        rows.append(
            [
                name,
                wall,
                base,
                ratio(wall, base),
                peak_rss_mb(args),
                f"{'ok' if wall < budget else 'OVER'} (<{budget} s)",
                ", ".join(heavy) or "none",
            ]
        )
    print(
        table(
            rows,
            ["command", "wall s (median)", "baseline s", "ratio", "peak RSS MB (VmHWM)", "budget", "SDKs imported"],
        )
    )
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


def peak_rss_mb_floor() -> float:
    code = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return int(proc.stdout.strip()) / 1024


if __name__ == "__main__":
    sys.exit(main())
