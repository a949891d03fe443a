"""Diagnose of a large estate against the plain-HTTP floor (docs/performance.md), in one run.

    python -m bench.bench_diagnose [--scale 1] [--repeat 3] [--growth] [--profile FILE]

Builds the estate of bench/estate.py in the loopback fakes, then, alternating, N times each in a fresh
process: the floor (every list page cidrx reads, fetched with http.client on one keep-alive connection
and json.loads'ed) and cidrx (collect + analyze + JSON output). Prints wall time (median), the floor, the
ratio, peak RSS of each process (getrusage ru_maxrss), and the API requests by kind, and checks that
requests are O(pages): every list uses limit=500, no list takes more than ceil(objects/500)+1 pages, and
no node/pod/event/IPAM object is read one by one. Exit 1 when a check fails (timing budgets are reported,
never asserted: CI runs this in a reduced size as a smoke test). With --growth, the Kubernetes estate is
also measured at 0.5x and 2x the scale, each size against its own floor, and the growth of time and peak RSS
per 10,000 pods between sizes is printed, so a reader sees whether it is linear.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import count_by_kind, kube_resource, median_of, ratio, run_worker, table
from bench.estate import (
    AWS_CLUSTER,
    AWS_REGION,
    GCP_LOCATION,
    GCP_PROJECT,
    GKE_CLUSTER,
    Sizes,
    aws_env,
    serve_aws,
    serve_gcp,
    serve_kube,
)

PAGE = 500
RSS_BUDGET_MB = 150.0
RATIO_BUDGET = 1.3
GROWTH_FACTORS = (0.5, 1.0, 2.0)
# Kinds that must only ever be listed (a GET per object would be O(objects)).
WB, NAD, CAL = ".whereabouts.cni.cncf.io", ".k8s.cni.cncf.io", ".crd.projectcalico.org"
PLURAL_KIND = {
    "nodes": "Node",
    "pods": "Pod",
    "events": "Event",
    f"ippools{WB}": "IPPool",
    f"overlappingrangeipreservations{WB}": "OverlappingRangeIPReservation",
    f"network-attachment-definitions{NAD}": "NetworkAttachmentDefinition",
    f"ippools{CAL}": "IPPool",
    f"ipamblocks{CAL}": "IPAMBlock",
    f"blockaffinities{CAL}": "BlockAffinity",
    f"ipamhandles{CAL}": "IPAMHandle",
    f"ipamconfigs{CAL}": "IPAMConfig",
}
LIST_ONLY = set(PLURAL_KIND) - {f"ipamconfigs{CAL}"}


def _list_calls(records: list[Any], continue_key: str) -> list[tuple[str, dict[str, str]]]:
    """The distinct calls (path, query without the page token) in first-seen order."""
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], None] = {}
    for r in records:
        query = tuple(sorted((k, v) for k, v in r.query.items() if k != continue_key))
        seen.setdefault((r.path, query), None)
    return [(path, dict(query)) for path, query in seen]


def check_pages(records: list[Any], counts: dict[str, int]) -> list[str]:
    """Problems with the request pattern (empty when it is O(pages))."""
    problems: list[str] = []
    per_call: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
    for r in records:
        plural, named = kube_resource(r.path)
        if named and plural in LIST_ONLY:
            problems.append(f"per-object read: {r.method} {r.path}")
        if plural in PLURAL_KIND and not named:
            if r.query.get("limit") != str(PAGE):
                problems.append(f"list without limit={PAGE}: {r.path} {r.query}")
            per_call[(r.path, tuple(sorted((k, v) for k, v in r.query.items() if k != "continue")))] += 1
    for (path, _query), pages in per_call.items():
        plural, _ = kube_resource(path)
        most = math.ceil(counts.get(PLURAL_KIND[plural], 0) / PAGE) + 1
        if pages > most:
            problems.append(f"{path}: {pages} pages for {counts.get(PLURAL_KIND[plural], 0)} objects (at most {most})")
    return problems


def pair_rows(
    labels: tuple[str, str], floors: list[Any], runs: list[Any], requests: int, notes: tuple[str, str]
) -> list[list[Any]]:
    """The table rows of one measurement: its floor, then cidrx with the ratio to that floor."""
    floor, wall = median_of(floors), median_of(runs)
    timing = f"collect {median_of(runs, 'collect'):.2f} s, analyze {median_of(runs, 'analyze'):.2f} s"
    return [
        [labels[0], floor, "", "", max(x["rss_mb"] for x in floors), floors[0]["requests"], notes[0]],
        [labels[1], wall, floor, ratio(wall, floor), max(x["rss_mb"] for x in runs), requests, timing + notes[1]],
    ]


def bench_kube(
    sizes: Sizes, repeat: int, workdir: Path
) -> tuple[list[list[Any]], list[list[Any]], list[str], dict[str, Any]]:
    with serve_kube(sizes, workdir) as (server, kubeconfig, counts):
        server.request_log.clear()
        warm = run_worker("kube-cidrx", {"kubeconfig": str(kubeconfig)})  # also learns which lists cidrx reads
        records = list(server.request_log)
        problems = check_pages(records, counts)
        by_kind = count_by_kind((r.method, r.path) for r in records)
        calls = _list_calls([r for r in records if r.method == "GET"], "continue")
        floors, runs = [], []
        for _ in range(repeat):
            floors.append(run_worker("kube-floor", {"url": server.url, "calls": calls}))
            runs.append(run_worker("kube-cidrx", {"kubeconfig": str(kubeconfig)}))
    r, rss = ratio(median_of(runs), median_of(floors)), max(x["rss_mb"] for x in runs)
    if floors[0]["requests"] != len(records):
        problems.append(f"floor made {floors[0]['requests']} requests, cidrx {len(records)}")
    # CPU time of the client process (all its threads) over the same span: on a busy machine it moves
    # less than wall time, and the fake server's own work (in this process) is in neither figure.
    cpu, floor_cpu = median_of(runs, "cpu"), median_of(floors, "cpu")
    verdict = (
        f"; ratio {'ok' if r <= RATIO_BUDGET else 'OVER'} (≤{RATIO_BUDGET}), "
        f"RSS {'ok' if rss < RSS_BUDGET_MB else 'OVER'} (<{RSS_BUDGET_MB:.0f} MB); "
        f"client CPU {cpu:.2f} s vs floor {floor_cpu:.2f} s ({ratio(cpu, floor_cpu):.2f}×)"
    )
    rows = pair_rows(
        ("kube floor: pages + json.loads", "kube: cidrx diagnose (collect+analyze+json)"),
        floors,
        runs,
        len(records),
        (f"{floors[0]['bytes'] / 1e6:.0f} MB, {floors[0]['items']} items", verdict),
    )
    kinds = [[k, n] for k, n in sorted(by_kind.items())]
    info = {"counts": counts, "findings": warm["findings"], "ipam_pods": warm["ipam_pods"], "nodes": warm["nodes"]}
    return rows, kinds, problems, info


def bench_gcp(sizes: Sizes, repeat: int) -> tuple[list[list[Any]], list[list[Any]], list[str], dict[str, Any]]:
    from tests.support.estates.gke import gcp_env

    with serve_gcp(sizes) as fake:
        env = gcp_env(fake)
        args = {"project": GCP_PROJECT, "location": GCP_LOCATION, "cluster": GKE_CLUSTER}
        fake.request_log.clear()
        warm = run_worker("gcp-cidrx", args, env)
        records = list(fake.request_log)
        kinds_c = Counter(r.method_id or f"{r.method} {r.path}" for r in records)
        problems = [f"per-subnet read: {r.path}" for r in records if r.method_id == "compute.subnetworks.get"]
        pages = kinds_c.get("compute.subnetworks.aggregatedList", 0)
        if pages > math.ceil(sizes.subnets / PAGE) + 1:
            problems.append(f"subnetworks.aggregatedList: {pages} pages for {sizes.subnets} subnets")
        calls = _list_calls([r for r in records if r.method == "GET"], "pageToken")
        floors, runs = [], []
        for _ in range(repeat):
            floors.append(run_worker("gcp-floor", {"url": fake.url, "calls": calls}))
            runs.append(run_worker("gcp-cidrx", args, env))
        fake.check()
    cpu, floor_cpu = median_of(runs, "cpu"), median_of(floors, "cpu")
    rows = pair_rows(
        ("gcp floor: pages + json.loads", "gke: cidrx collect+analyze+json"),
        floors,
        runs,
        len(records),
        (
            f"{floors[0]['bytes'] / 1e6:.1f} MB",
            f"; {warm['subnets']} subnets, {warm['routes']} routes kept; client CPU {cpu:.2f} s vs floor "
            f"{floor_cpu:.2f} s ({ratio(cpu, floor_cpu):.2f}×)",
        ),
    )
    kinds = [[k, n] for k, n in sorted(kinds_c.items())]
    return rows, kinds, problems, {"findings": warm["findings"]}


def bench_aws(sizes: Sizes, repeat: int) -> tuple[list[list[Any]], list[list[Any]], list[str], dict[str, Any]]:
    with serve_aws(sizes) as url:
        env = aws_env(url)
        args = {"region": AWS_REGION, "cluster": AWS_CLUSTER}
        warm = run_worker("aws-cidrx", {**args, "record": True}, env)
        sent = warm["sent"]
        kinds_c = Counter(str(r["action"]) for r in sent)
        # DescribeSubnets: one list of the VPC plus one for the cluster's first subnet; reservations have no
        # VPC-wide read, so they are read for the cluster's and node groups' own subnets (4 here), never all.
        problems = [
            f"{k} made {kinds_c[k]} times: per-subnet reads"
            for k, most in (("ec2:DescribeSubnets", 2), ("ec2:GetSubnetCidrReservations", 4))
            if kinds_c[k] > most
        ]
        floors, runs = [], []
        for _ in range(repeat):
            floors.append(run_worker("aws-floor", {"url": url, "requests": sent}, env))
            runs.append(run_worker("aws-cidrx", args, env))
    rows = pair_rows(
        ("aws floor: requests + XML/JSON parse", "eks: cidrx collect+analyze+json (moto)"),
        floors,
        runs,
        len(sent),
        (f"{floors[0]['bytes'] / 1e6:.1f} MB", f"; {warm['subnets']} subnets"),
    )
    return rows, [[k, n] for k, n in sorted(kinds_c.items())], problems, {"findings": warm["findings"]}


def growth_rows(scale: float, repeat: int) -> tuple[list[list[Any]], list[str]]:
    """The large Kubernetes diagnose at 0.5x, 1x and 2x `scale`, each against the floor of its own run:
    time, CPU and peak RSS per size, and the growth per 10,000 pods from the size before."""
    rows: list[list[Any]] = []
    problems: list[str] = []
    before: tuple[int, float, float] | None = None
    for factor in GROWTH_FACTORS:
        sizes = Sizes.at(scale * factor)
        with tempfile.TemporaryDirectory() as tmp:
            k_rows, _kinds, k_problems, _info = bench_kube(sizes, repeat, Path(tmp))
        problems += k_problems
        floor_row, cidrx_row = k_rows
        wall, floor, rss = float(cidrx_row[1]), float(floor_row[1]), float(cidrx_row[4])
        cpu_note = str(cidrx_row[6]).rpartition("client CPU ")[2]
        if before is None:
            per_10k = ""
        else:
            pods = (sizes.pods - before[0]) / 10_000
            per_10k = f"{(wall - before[1]) / pods:+.2f} s, {(rss - before[2]) / pods:+.1f} MB"
        rows.append(
            [f"{factor:g}x", sizes.pods, floor, wall, ratio(wall, floor), cpu_note, float(floor_row[4]), rss, per_10k]
        )
        before = (sizes.pods, wall, rss)
    return rows, problems


GROWTH_HEADERS = [
    "size",
    "pods",
    "floor s",
    "cidrx s",
    "ratio",
    "client CPU vs floor",
    "floor RSS MB",
    "cidrx RSS MB",
    "per 10,000 pods",
]
HEADERS = ["measurement", "wall s (median)", "baseline s", "ratio", "peak RSS MB", "requests", "notes"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every count (0.01: smoke test)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (median)")
    parser.add_argument("--skip-gcp", action="store_true", help="leave out the GKE estate (fake GCP)")
    parser.add_argument("--skip-aws", action="store_true", help="leave out the EKS estate (moto)")
    parser.add_argument("--skip-kube", action="store_true", help="leave out the large Kubernetes estate")
    parser.add_argument(
        "--growth", action="store_true", help="also the Kubernetes estate at 0.5x and 2x the scale (time, RSS)"
    )
    opts = parser.parse_args(argv)
    sizes = Sizes.at(opts.scale)
    print(f"estate: {sizes}", file=sys.stderr)
    rows: list[list[Any]] = []
    kinds: list[list[Any]] = []
    problems: list[str] = []
    if not opts.skip_kube:
        with tempfile.TemporaryDirectory() as tmp:
            rows, kinds, problems, info = bench_kube(sizes, opts.repeat, Path(tmp))
        print(f"kube objects: {info['counts']}\nfindings: {info['findings']}; ipam pods kept: {info['ipam_pods']}")
    if not opts.skip_gcp:
        g_rows, g_kinds, g_problems, g_info = bench_gcp(sizes, opts.repeat)
        rows += g_rows
        problems += g_problems
        print(f"gke findings: {g_info['findings']}")
    if not opts.skip_aws:
        a_rows, a_kinds, a_problems, a_info = bench_aws(sizes, opts.repeat)
        rows += a_rows
        problems += a_problems
        print(f"eks findings: {a_info['findings']}")
    growth: list[list[Any]] = []
    if opts.growth:
        growth, g_problems = growth_rows(opts.scale, opts.repeat)
        problems += g_problems
    print()
    print(table(rows, HEADERS))
    if growth:
        print(
            "\nThe large Kubernetes diagnose at three sizes (each against its own floor; growth from the size before):"
        )
        print(table(growth, GROWTH_HEADERS))
    if not opts.skip_kube:
        print("\nKubernetes API requests of one cidrx diagnose, by kind:")
        print(table(kinds, ["request", "count"]))
    if not opts.skip_gcp:
        print("\nGCP API requests of one cidrx GKE collect, by method:")
        print(table(g_kinds, ["method", "count"]))
    if not opts.skip_aws:
        print("\nAWS API requests of one cidrx EKS collect, by action:")
        print(table(a_kinds, ["action", "count"]))
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
