"""The running part of `cidrx exporter`: one collector thread, the last good figures, and an HTTP server.

Why it exists: a scheduled `diagnose -o prometheus` needs a textfile collector or a Pushgateway; a platform
team would rather have Prometheus scrape a Deployment. The exporter collects and analyses the target every
interval (jittered, so a fleet of exporters does not hit one API in step) in a single thread, so a slow
collection delays the next one instead of overlapping it. Scrapes never collect: they read the families
of the last good collection, computed by the same pure function as `-o prometheus`
(cidrx.render.prometheus.metric_families), plus the exporter's own health series. A failed collection keeps
those values, sets `cidrx_up` to 0 and logs one line.

Target-agnostic: the loop runs a `collect` callable, made here for one target (`target_collect`), a snapshot
file read again every time (`snapshot_collect`) or a fleet (`fleet_collect`), from the same use cases
`cidrx diagnose` calls. prometheus_client is imported here, and this module only by the command, so
`cidrx --help` does not load it.
"""

from __future__ import annotations

import gc
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from cidrx.errors import CidrxError, InvalidInput
from cidrx.model.findings import Diagnosis
from cidrx.render.prometheus import MetricFamily, metric_families

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

    from cidrx.model.fleet import Job
    from cidrx.model.options import Access
    from cidrx.model.snapshot import Snapshot
    from cidrx.model.target import Target

JITTER = 0.1  # each wait is the interval ± 10 %
MAX_INTERVAL = 86_400.0
DEFAULT_PORT = 9877

# The exporter's own series (docs/metrics.md), beside the capacity and finding families.
UP = "cidrx_up"
TARGET_UP = "cidrx_target_up"
LAST_SUCCESS = "cidrx_last_success_timestamp_seconds"
DURATION = "cidrx_collection_duration_seconds"
COLLECTIONS_TOTAL = "cidrx_collections_total"
FAILURES_TOTAL = "cidrx_collection_failures_total"
# Deprecated gauge names of the two counters above, served beside them for one release (docs/metrics.md).
COLLECTIONS = "cidrx_collections"
FAILURES = "cidrx_collection_failures"
STATUS_HELP = {
    UP: "1 if the last collection succeeded (every cluster read), 0 if it failed or none has finished yet.",
    TARGET_UP: "1 if the cluster was read by the last collection; its figures are the last good ones otherwise.",
    LAST_SUCCESS: "Unix time at which the last successful collection finished.",
    DURATION: "Seconds the last collection took, successful or not.",
    COLLECTIONS_TOTAL: "Collections finished since the exporter started.",
    FAILURES_TOTAL: "Collections that failed since the exporter started.",
    COLLECTIONS: "Deprecated (removed in the next release): use cidrx_collections_total.",
    FAILURES: "Deprecated (removed in the next release): use cidrx_collection_failures_total.",
}


@dataclass(frozen=True)
class Outcome:
    """One collection: the clusters read, and (target label, message) for those that were not. `targets`
    lists every cluster the collection covered, read or not, in order."""

    diagnoses: tuple[Diagnosis, ...]
    failures: tuple[tuple[str, str], ...] = ()
    targets: tuple[str, ...] = ()


Collect = Callable[[], Outcome]


def target_collect(
    target: Target,
    access: Access,
    reading: Callable[[str], AbstractContextManager[Any]] = lambda title: nullcontext(),
) -> Collect:
    """One cluster: its diagnosis, or the error it raises. `reading(title)` wraps each collection (the
    command's progress on stderr)."""
    from cidrx.app.diagnose import analyze, collect_target

    def collect() -> Outcome:
        with reading(f"reading {target.label()}"):
            snap = collect_target(target, access)
        d = analyze(snap)
        return Outcome((d,), (), (d.target.label(),))

    return collect


def snapshot_collect(path: str, check: Callable[[Snapshot], None] = lambda snap: None) -> Collect:
    """A snapshot file, read again each time (`check` refuses one that names another target)."""
    from cidrx.app.diagnose import analyze
    from cidrx.model.snapshot import load_snapshot

    def collect() -> Outcome:
        snap = load_snapshot(path)
        check(snap)
        d = analyze(snap)
        return Outcome((d,), (), (d.target.label(),))

    return collect


def fleet_collect(access: Access, listing: Callable[[], tuple[list[Job], list[str], int]], parallel: int) -> Collect:
    """Every cluster of the fleet, listed again each time by `listing` (clusters come and go); one that
    cannot be read is a failure of this collection but not of the others."""
    from cidrx.app.fleet import diagnose_fleet, diagnose_members
    from cidrx.errors import ExitStatus

    def collect() -> Outcome:
        jobs, notes, floor = listing()
        result = diagnose_fleet(
            jobs,
            diagnose_members(access),
            lambda d: ExitStatus.OK,
            parallel=parallel,
            notes=notes,
            floor=floor,
        )
        failures = [(m.target.label(), m.error or "") for m in result.clusters if m.diagnosis is None]
        if floor != ExitStatus.OK:
            failures += [("", note) for note in notes]
        return Outcome(
            tuple(m.diagnosis for m in result.clusters if m.diagnosis is not None),
            tuple(failures),
            tuple(m.target.label() for m in result.clusters),
        )

    return collect


# -- options ---------------------------------------------------------------------------------------------


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT` or `:PORT` (every IPv4 interface); port 0 picks a free one."""
    raw = text.strip()
    host, sep, port_text = raw.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise InvalidInput(
            f"--listen wants HOST:PORT (e.g. 0.0.0.0:{DEFAULT_PORT} or [::]:{DEFAULT_PORT}), not {text!r}"
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host or host.startswith("[") or host.endswith("]"):
        raise InvalidInput(f"--listen: put an IPv6 address in brackets, e.g. [::1]:{DEFAULT_PORT}, not {text!r}")
    return host or "0.0.0.0", int(port_text)


def parse_interval(text: str) -> float:
    """Seconds between collections: a number above 0 and at most a day."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value <= MAX_INTERVAL):
        raise InvalidInput(f"--interval wants seconds, a number above 0 and at most {MAX_INTERVAL:.0f}, not {text!r}")
    return value


# -- state -----------------------------------------------------------------------------------------------


def status_families(
    up: bool,
    targets_up: Sequence[tuple[str, bool]],
    last_success: float | None,
    duration: float | None,
    collections: int,
    failures: int,
) -> list[MetricFamily]:
    """The exporter's own series; a figure not known yet (no collection finished) is left out."""
    out = [
        MetricFamily(UP, STATUS_HELP[UP], (((), 1.0 if up else 0.0),)),
        MetricFamily(TARGET_UP, STATUS_HELP[TARGET_UP], tuple(((("target", t),), float(ok)) for t, ok in targets_up)),
        MetricFamily(LAST_SUCCESS, STATUS_HELP[LAST_SUCCESS], (((), last_success),) if last_success else ()),
        MetricFamily(DURATION, STATUS_HELP[DURATION], (((), duration),) if duration is not None else ()),
        MetricFamily(COLLECTIONS_TOTAL, STATUS_HELP[COLLECTIONS_TOTAL], (((), float(collections)),), "counter"),
        MetricFamily(FAILURES_TOTAL, STATUS_HELP[FAILURES_TOTAL], (((), float(failures)),), "counter"),
        MetricFamily(COLLECTIONS, STATUS_HELP[COLLECTIONS], (((), float(collections)),)),
        MetricFamily(FAILURES, STATUS_HELP[FAILURES], (((), float(failures)),)),
    ]
    return [f for f in out if f.samples or f.name in (UP, COLLECTIONS_TOTAL, FAILURES_TOTAL, COLLECTIONS, FAILURES)]


class State:
    """The last good diagnoses (by target label) and the collector's health; shared by the collector
    thread, which writes, and scrapes, which read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._good: dict[str, Diagnosis] = {}
        self._targets_up: dict[str, bool] = {}
        self._data: list[MetricFamily] = []
        self._up = False
        self._last_success: float | None = None
        self._duration: float | None = None
        self._collections = 0
        self._failures = 0

    def record(self, outcome: Outcome, duration: float, now: float) -> bool:
        """Keep what `outcome` read; a cluster it could not read keeps its last good figures, a cluster it
        no longer lists is dropped. True when the collection succeeded (every cluster read)."""
        read = {d.target.label(): d for d in outcome.diagnoses}
        covered = list(dict.fromkeys([*outcome.targets, *read]))
        ok = not outcome.failures
        with self._lock:
            good = {t: read.get(t) or self._good.get(t) for t in covered}
            self._good = {t: d for t, d in good.items() if d is not None}
            self._targets_up = {t: t in read for t in covered}
            self._data = metric_families(list(self._good.values()))
            self._finish(ok, duration, now)
        return ok

    def record_failure(self, duration: float) -> None:
        """A collection that read nothing: every figure stays as it was, `cidrx_up` goes to 0."""
        with self._lock:
            self._targets_up = dict.fromkeys(self._targets_up, False)
            self._finish(False, duration, 0.0)

    def _finish(self, ok: bool, duration: float, now: float) -> None:
        self._up = ok
        self._duration = duration
        self._collections += 1
        if ok:
            self._last_success = now
        else:
            self._failures += 1

    def families(self) -> list[MetricFamily]:
        with self._lock:
            status = status_families(
                self._up,
                list(self._targets_up.items()),
                self._last_success,
                self._duration,
                self._collections,
                self._failures,
            )
            return status + self._data

    @property
    def collections(self) -> int:
        with self._lock:
            return self._collections


class StateCollector:
    """A prometheus_client collector that serves a State's families as gauges."""

    def __init__(self, state: State) -> None:
        self.state = state

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        for family in self.state.families():
            names = [k for k, _ in family.samples[0][0]] if family.samples else []
            metric: Any = (
                CounterMetricFamily(family.name.removesuffix("_total"), family.help, labels=names)
                if family.type == "counter"
                else GaugeMetricFamily(family.name, family.help, labels=names)
            )
            for labels, value in family.samples:
                metric.add_metric([v for _, v in labels], value)
            yield metric


def make_registry(state: State) -> CollectorRegistry:
    """A registry holding only cidrx's series (no process or platform collectors: docs/metrics.md lists all)."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(StateCollector(state))
    return registry


# -- the collector thread --------------------------------------------------------------------------------


def one_line(text: str) -> str:
    return " ".join(text.split())


def collect_once(collect: Collect, state: State, log: Callable[[str], None], was_up: bool) -> bool:
    """Run one collection into `state`; one stderr line when it fails (or when it works again)."""
    started = time.monotonic()
    try:
        outcome = collect()
    except CidrxError as exc:
        state.record_failure(time.monotonic() - started)
        log(f"collection failed: {one_line(exc.message) or type(exc).__name__}")
        return False
    except Exception as exc:  # a bug must not stop the exporter; it is reported and retried next interval
        state.record_failure(time.monotonic() - started)
        log(f"collection failed: internal error: {type(exc).__name__}: {one_line(str(exc))} (a bug: please report it)")
        return False
    ok = state.record(outcome, time.monotonic() - started, time.time())
    if not ok:
        shown = "; ".join(f"{t}: {one_line(m)}" for t, m in outcome.failures[:3])
        more = f" (and {len(outcome.failures) - 3} more)" if len(outcome.failures) > 3 else ""
        log(f"collection failed for {len(outcome.failures)} cluster(s): {shown}{more}")
    elif not was_up and state.collections > 1:
        log("collection succeeded again")
    return ok


def next_wait(interval: float, started: float, now: float, rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait before the next collection: the jittered interval counted from when this one
    started, 0 when this one overran it (the next starts at once; they never overlap)."""
    period = interval * (1 + JITTER * (2 * rng() - 1))
    return max(0.0, started + period - now)


def collector_loop(
    collect: Collect, state: State, interval: float, stop: threading.Event, log: Callable[[str], None]
) -> None:
    up = True
    while not stop.is_set():
        started = time.monotonic()
        up = collect_once(collect, state, log, up)
        # A cycle's snapshot is garbage now; collect it here, while the live heap is small, rather than let
        # cidrx's raised GC thresholds (cidrx.cli.GC_THRESHOLDS) defer it across many cycles.
        gc.collect()
        stop.wait(next_wait(interval, started, time.monotonic()))


# -- HTTP ------------------------------------------------------------------------------------------------


def make_app(registry: CollectorRegistry, healthy: Callable[[], bool]) -> Callable[..., Iterable[bytes]]:
    """/metrics (prometheus_client's WSGI app: text or OpenMetrics, gzip), /healthz, 404 elsewhere."""
    from prometheus_client import make_wsgi_app

    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            # The text format only: while the deprecated gauges cidrx_collections and
            # cidrx_collection_failures are served, OpenMetrics would see two families named
            # cidrx_collections (its counter family drops the _total suffix). Prometheus reads both formats.
            plain = {k: v for k, v in environ.items() if k != "HTTP_ACCEPT"}
            result: Iterable[bytes] = metrics(plain, start_response)
            return result
        if path == "/healthz":
            alive = healthy()
            start_response("200 OK" if alive else "503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"ok\n" if alive else b"collector stopped\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found: try /metrics or /healthz\n"]

    return app


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one line per scrape would drown the failures
        pass


def serve(host: str, port: int, app: Callable[..., Iterable[bytes]]) -> WSGIServer:
    """A threading WSGI server bound to host:port (IPv4 or IPv6); InvalidInput when it cannot bind."""
    import socketserver

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise InvalidInput(f"--listen: cannot resolve {host!r}: {exc.strerror}") from exc

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = family

    try:
        server = Server((host, port), _QuietHandler)
    except OSError as exc:
        raise InvalidInput(f"--listen: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    server.set_app(app)
    return server


def bound_url(server: WSGIServer) -> str:
    address = server.server_address
    host = address[0] if isinstance(address[0], str) else address[0].decode()
    port = address[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


# -- the whole exporter ------------------------------------------------------------------------------------


def run_exporter(collect: Collect, host: str, port: int, interval: float, log: Callable[[str], None]) -> int:
    """Serve until SIGTERM or SIGINT (then exit 0): the collector thread, the HTTP server thread, and this
    (main) thread waiting for a signal. Binding happens first, so a bad address fails before collecting."""
    import signal

    state = State()
    stop = threading.Event()
    collector = threading.Thread(
        target=collector_loop, args=(collect, state, interval, stop, log), name="cidrx-collector", daemon=True
    )
    server = serve(host, port, make_app(make_registry(state), collector.is_alive))
    http = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="cidrx-http", daemon=True)

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        collector.start()
        http.start()
        log(f"serving {bound_url(server)}/metrics, collecting every {interval:g} s")
        while not stop.wait(3600):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop.set()
        server.shutdown()
        server.server_close()
    # A collection in flight is abandoned (the thread is a daemon): waiting for a slow cloud call would
    # outlast the termination grace period.
    collector.join(timeout=1.0)
    log("stopped")
    return 0
