"""One measurement in its own process: `python -m bench.worker MODE ARGS_JSON` prints a JSON result.

Every mode runs with the garbage-collection thresholds the `cidrx` command sets (cidrx.cli.tune_gc).

Why a subprocess: the fakes (and the estate they hold) live in the benchmark's process, so a client's
peak RSS (VmHWM in /proc/self/status, the high-water mark of the whole process) is only its own when the
client runs alone in a fresh interpreter. Modules are imported before the clock starts, in both the
baseline and cidrx, so the ratio compares fetching and parsing; import cost is bench_startup.py's.

Modes
  kube-floor / gcp-floor: plain HTTP (http.client, one keep-alive connection) + json.loads over the same
      list calls cidrx made, following continue / pageToken; ARGS: {"url", "calls": [[path, query], ...]}.
  kube-cidrx: collect_with + diagnose.analyze + JSON rendering; ARGS: {"kubeconfig"}.
  gcp-cidrx: GkeApi + collect_gke + diagnose.analyze + JSON rendering; ARGS: {"project", "location",
      "cluster"} (endpoint variables in the environment).
  aws-cidrx: EksApi + collect_eks + diagnose.analyze + JSON rendering against moto; ARGS: {"region",
      "cluster", "record"} (AWS_ENDPOINT_URL in the environment); with "record", the result also holds
      every request botocore sent (method, url, headers, body), for aws-floor to replay.
  aws-floor: those requests again with http.client on one keep-alive connection, each answer parsed
      (ElementTree for EC2's XML, json.loads for EKS); ARGS: {"url", "requests"}.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from http.client import HTTPConnection
from typing import Any
from urllib.parse import urlencode, urlsplit

KUBE_MODULES = (
    "cidrx.ipam.calico.analyze",
    "cidrx.ipam.calico.collect",
    "cidrx.ipam.nodeipam.analyze",
    "cidrx.ipam.nodeipam.collect",
    "cidrx.ipam.whereabouts.analyze",
    "cidrx.ipam.whereabouts.collect",
    "cidrx.providers.k8s.provider",
    "cidrx.app.diagnose",
    "cidrx.render.jsonout",
    "lightkube",
)
AWS_MODULES = (
    "cidrx.providers.eks.analyze.diagnosis",
    "cidrx.providers.eks.collect.vpc",
    "cidrx.providers.eks.provider",
    "cidrx.render.jsonout",
    "boto3",
    "botocore.session",
)
TAKEN_AT = "2024-01-01T00:00:00Z"
GCP_MODULES = (
    "cidrx.providers.gke.analyze.analyze",
    "cidrx.providers.gke.provider",
    "cidrx.render.jsonout",
    "google.api_core.exceptions",
    "google.auth.transport.requests",
)


def _preload(names: tuple[str, ...]) -> None:
    """Import what the measured code imports lazily, before the clock starts."""
    for name in names:
        importlib.import_module(name)


def _floor(url: str, calls: list[tuple[str, dict[str, str]]], token_in: str, token_out: str) -> dict[str, Any]:
    """Fetch each call's pages: `token_out` is where a page names the next one (metadata.continue or
    nextPageToken), `token_in` the query parameter that asks for it."""
    parts = urlsplit(url)
    conn = HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
    headers = {"Accept": "application/json", "Authorization": "Bearer fake-token"}
    items = requests = size = 0
    start, cpu = time.perf_counter(), time.process_time()
    for path, query in calls:
        token = ""
        while True:
            q = {**query, token_in: token} if token else dict(query)
            conn.request("GET", f"{path}?{urlencode(q)}" if q else path, headers=headers)
            body = conn.getresponse().read()
            requests += 1
            size += len(body)
            doc = json.loads(body)
            if token_out == "continue":
                items += len(doc.get("items") or [])
                token = (doc.get("metadata") or {}).get("continue") or ""
            else:
                scoped = doc.get("items")
                items += (
                    sum(len(v.get("subnetworks") or []) for v in scoped.values())
                    if isinstance(scoped, dict)
                    else len(scoped or [])
                )
                token = doc.get("nextPageToken") or ""
            if not token:
                break
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    conn.close()
    return {"wall": wall, "cpu": cpu, "items": items, "requests": requests, "bytes": size}


def _diagnosed(snap: Any, start: float, collected: float) -> dict[str, Any]:
    """Seal, analyze and render `snap` as the CLI does after collecting; the timings of the whole run."""
    from cidrx.app import diagnose
    from cidrx.model.snapshot import seal
    from cidrx.render import render_diagnosis

    diagnosis = diagnose.analyze(seal(snap))
    out = render_diagnosis(diagnosis, "json")
    end = time.perf_counter()
    return {
        "wall": end - start,
        "collect": collected - start,
        "analyze": end - collected,
        "findings": sorted({f.id for f in diagnosis.findings}),
        "output_bytes": len(out),
    }


def _kube_cidrx(kubeconfig: str) -> dict[str, Any]:
    from cidrx.kube.api import KubeApi
    from cidrx.kube.collect import collect_with
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target

    _preload(KUBE_MODULES)

    start, cpu = time.perf_counter(), time.process_time()
    with KubeApi(kubeconfig, None) as api:
        kube = collect_with(api, provider="k8s")
    collected = time.perf_counter()
    target = Target("k8s", "bench", context=kube.context)
    result = _diagnosed(Snapshot(target=target, taken_at=TAKEN_AT, kube=kube), start, collected)
    cpu = time.process_time() - cpu
    return {**result, "cpu": cpu, "nodes": len(kube.nodes), "ipam_pods": len(kube.ipam_pods)}


def _gcp_cidrx(project: str, location: str, cluster: str) -> dict[str, Any]:
    from cidrx.model.kube import KubeSection
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target
    from cidrx.providers.gke.api import GkeApi
    from cidrx.providers.gke.collect.collect import collect_gke

    _preload(GCP_MODULES)

    start, cpu = time.perf_counter(), time.process_time()
    section = collect_gke(GkeApi(project, location), cluster)
    collected = time.perf_counter()
    target = Target("gke", cluster, project=project, location=location)
    snap = Snapshot(target=target, taken_at=TAKEN_AT, kube=KubeSection(available=False), gke=section)
    result = _diagnosed(snap, start, collected)
    cpu = time.process_time() - cpu
    return {**result, "cpu": cpu, "subnets": len(section.subnets), "routes": len(section.routes or ())}


def _aws_floor(url: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    from xml.etree import ElementTree

    parts = urlsplit(url)
    conn = HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
    size = 0
    start = time.perf_counter()
    for r in requests:
        target = urlsplit(r["url"])
        path = target.path + (f"?{target.query}" if target.query else "")
        conn.request(r["method"], path or "/", body=r["body"].encode() if r["body"] else None, headers=r["headers"])
        response = conn.getresponse()
        body = response.read()
        size += len(body)
        if response.status >= 300:  # moto's HTML 404 for the add-on API it lacks: read, nothing to parse
            continue
        if body.lstrip()[:1] == b"<":
            ElementTree.fromstring(body)
        elif body:
            json.loads(body)
    wall = time.perf_counter() - start
    conn.close()
    return {"wall": wall, "requests": len(requests), "bytes": size}


def _aws_cidrx(region: str, cluster: str, record: bool) -> dict[str, Any]:
    import boto3

    from cidrx.model.kube import KubeSection
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target
    from cidrx.providers.eks.api import EksApi
    from cidrx.providers.eks.collect.vpc import collect_eks

    _preload(AWS_MODULES)
    session = boto3.Session(region_name=region)
    sent: list[dict[str, Any]] = []
    calling: list[str] = [""]
    if record:

        def name(model: Any, **_: Any) -> None:
            calling[0] = f"{model.service_model.signing_name}:{model.name}"

        def keep(request: Any, **_: Any) -> None:
            body = request.body
            headers = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in request.headers.items()}
            sent.append(
                {
                    "action": calling[0],
                    "method": request.method,
                    "url": request.url,
                    "headers": headers,
                    "body": body.decode() if isinstance(body, bytes) else (body or ""),
                }
            )

        session.events.register("before-call", name)
        session.events.register("before-send", keep)

    start = time.perf_counter()
    section = collect_eks(EksApi(region, session=session), cluster)
    collected = time.perf_counter()
    target = Target("eks", cluster, region=region)
    snap = Snapshot(target=target, taken_at=TAKEN_AT, kube=KubeSection(available=False), eks=section)
    return {**_diagnosed(snap, start, collected), "subnets": len(section.subnets), "sent": sent}


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux carries that across
    fork+exec, so a child of the benchmark (which holds the whole estate) would report the parent's size."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str]) -> None:
    from cidrx.cli import tune_gc

    mode, args = argv[0], json.loads(argv[1])
    tune_gc()  # what the cidrx command does first; the floors run under the same interpreter settings
    if args.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    if mode == "kube-floor":
        result = _floor(args["url"], args["calls"], "continue", "continue")
    elif mode == "gcp-floor":
        result = _floor(args["url"], args["calls"], "pageToken", "nextPageToken")
    elif mode == "kube-cidrx":
        result = _kube_cidrx(args["kubeconfig"])
    elif mode == "gcp-cidrx":
        result = _gcp_cidrx(args["project"], args["location"], args["cluster"])
    elif mode == "aws-floor":
        result = _aws_floor(args["url"], args["requests"])
    elif mode == "aws-cidrx":
        result = _aws_cidrx(args["region"], args["cluster"], bool(args.get("record")))
    else:
        raise SystemExit(f"unknown mode {mode}")
    if args.get("profile"):
        profiler.disable()
        profiler.dump_stats(args["profile"])
    result["rss_mb"] = peak_rss_mb()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
