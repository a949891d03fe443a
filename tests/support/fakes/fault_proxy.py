"""A seeded fault proxy: an HTTP reverse proxy on the loopback interface in front of any server of the suite.

Why it exists: the fakes' own fault switches (loopback.py `inject`, `inject_reset`) fail requests from inside
the fake, in the fake's error format. What lies between a client and a real cloud fails differently: a load
balancer answers 502/503 or 429 with Retry-After in its own words, a connection is reset, an answer never
comes before the client's timeout, a 2xx answer arrives cut short or garbled. This proxy does those things
to the requests passing through it, whatever is behind it (moto's server, FakeGcp, FakeKubeServer), so
cidrx's real clients meet them over a real socket, also from a child process.

Which request fails, and how, is a pure function of the seed, the request (method, path and query, with
the ids that differ between two builds of the same world masked) and how many times the proxy has seen that
request, so two runs over the same world inject the same faults whatever the order of concurrent requests.
At most `max_run` faults in a row hit the same request, so a call whose retry budget allows more attempts
cannot lose every one of them by bad luck.

Fault kinds (`KINDS`):
- "5xx": 502 or 503 with a short HTML body (a load balancer's answer), the request not forwarded;
- "429": 429 with `Retry-After: <retry_after>`, not forwarded;
- "reset": the connection is reset (RST) before the request is forwarded;
- "cut": the request is forwarded and carried out; its answer stops halfway (the connection closes before
  Content-Length bytes came);
- "delay": the proxy waits `delay` seconds (set it past the client's timeout) before forwarding;
- "truncate": forwarded; a 2xx answer is cut to half its body, with a Content-Length that matches what is
  sent (a complete HTTP message holding a broken document);
- "garble": forwarded; bytes no JSON or XML document may contain (NUL, 0xFF) are written into the middle of
  a 2xx answer's body.
"truncate" and "garble" leave non-2xx answers alone (they fault what looks like success).

`script` adds faults chosen by hand: (method, path fragment, kind) triples, each used by the first request
that matches it (before the seeded draw), for tests of one fault at one place; a script's kind may also be
a 5xx status ("500", "503", ...): that status, not forwarded (a scripted "503" carries Retry-After).

`hooks` are called for every request at two points, `("request", seen)` before it is forwarded and
`("answer", seen)` after the upstream answered and before the answer is relayed: a test kills the client
there (see KillSwitch in tests/app/test_faults_proxy.py). A hook returning True makes the proxy drop the
connection without answering.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from tests.support.fakes.loopback import serve_in_thread, stop_serving

KINDS = ("5xx", "429", "reset", "cut", "delay", "truncate", "garble")
# Kinds that never reach the server: the request certainly did not take effect.
NOT_FORWARDED = ("5xx", "429", "reset")

# What differs between two builds of the same world: uuids, moto's resource ids, plan ids, tokens.
_VOLATILE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{8,}\b")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "upgrade"}
GARBAGE = b"\x00\xff<garbled>\xff\x00"


@dataclass
class Seen:
    """One request as the proxy saw it: its number (1-based, per proxy), and the fault it got (or None)."""

    n: int
    method: str
    path: str
    fault: str | None = None
    status: int | None = None  # the upstream's status, once it answered
    at: float = field(default_factory=time.monotonic)  # when it arrived (orders the logs of several proxies)
    action: str = ""  # the Action of a query-protocol request (AWS EC2, STS, Auto Scaling: every call is a POST)


Hook = Callable[[str, "FaultProxy", Seen], bool | None]


class FaultProxy:
    """The proxy (see the module doc). Use as a context manager; `url` is what clients are pointed at."""

    def __init__(
        self,
        upstream: str,
        *,
        name: str = "proxy",
        seed: int = 0,
        rate: float = 0.0,
        kinds: Sequence[str] = KINDS,
        max_run: int = 2,
        delay: float = 1.0,
        retry_after: int = 0,
        methods: Sequence[str] | None = None,
    ) -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {KINDS}")
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.name, self.seed, self.rate, self.kinds = name, seed, rate, tuple(kinds)
        self.max_run, self.delay, self.retry_after = max_run, delay, retry_after
        self.methods = tuple(m.upper() for m in methods) if methods is not None else None
        self.active = True  # False: pass everything through (still counted and hooked)
        self.hooks: list[Hook] = []
        self.script: list[tuple[str, str, str]] = []
        self.log: list[Seen] = []
        self.injected: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self._streak: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.proxy = self
        self._httpd = httpd
        self._thread = serve_in_thread(httpd, f"fault-{self.name}")
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        stop_serving(self._httpd, self._thread)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the fault proxy is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def requests(self) -> int:
        return len(self.log)

    # ---- deciding -------------------------------------------------------------------------------

    def _decide(self, method: str, path: str, body: bytes = b"") -> Seen:
        with self._lock:
            seen = Seen(len(self.log) + 1, method, path, action=_query_action(body))
            self.log.append(seen)
            for entry in self.script:
                if entry[0] == method and entry[1] in path:
                    self.script.remove(entry)
                    seen.fault = entry[2]
                    self.injected[seen.fault] += 1
                    return seen
            if not self.active or self.rate <= 0 or (self.methods is not None and method not in self.methods):
                return seen
            stable = _VOLATILE.sub("#", f"{method} {path}")
            self._seen[stable] += 1
            digest = hashlib.blake2b(
                f"{self.seed}|{self.name}|{stable}|{self._seen[stable]}".encode(), digest_size=16
            ).digest()
            fail, pick = (int.from_bytes(digest[i : i + 8], "big") / 2**64 for i in (0, 8))
            if self._streak[stable] >= self.max_run or fail >= self.rate:
                self._streak.pop(stable, None)
                return seen
            self._streak[stable] += 1
            seen.fault = self.kinds[int(pick * len(self.kinds))]
            self.injected[seen.fault] += 1
            return seen

    def _hook(self, phase: str, seen: Seen) -> bool:
        return any([bool(hook(phase, self, seen)) for hook in list(self.hooks)])


def _query_action(body: bytes) -> str:
    """`Action=...` of a form-encoded request body, or ""."""
    match = re.match(rb"(?:.*&)?Action=([A-Za-z0-9]+)", body[:512])
    return match.group(1).decode() if match else ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (timed out, killed, reset on purpose) is not a failure of the proxy."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read `FaultProxy.log`."""

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _serve(self) -> None:
        assert isinstance(self.server, _Server)
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = proxy._decide(self.command, self.path, body)
        if proxy._hook("request", seen):
            self._drop()
            return
        fault = seen.fault
        if fault == "reset":
            self._drop()
            return
        if fault is not None and (fault == "5xx" or (fault.isdigit() and fault.startswith("5"))):
            status = int(fault) if fault.isdigit() else 502 if len(self.path) % 2 else 503
            page = f"<html><body><h1>{status} {http.client.responses[status]}</h1></body></html>".encode()
            extra = {"Retry-After": str(proxy.retry_after)} if status == 503 and fault.isdigit() else {}
            self._answer(status, {"Content-Type": "text/html", **extra}, page)
            return
        if fault == "429":
            page = b"<html><body><h1>429 Too Many Requests</h1></body></html>"
            self._answer(429, {"Content-Type": "text/html", "Retry-After": str(proxy.retry_after)}, page)
            return
        if fault == "delay":
            time.sleep(proxy.delay)
        try:
            status, headers, answer = self._forward(proxy, body)
        except OSError:
            self._drop()  # the upstream went away (stopped between tests): as a reset
            return
        seen.status = status
        if proxy._hook("answer", seen):
            self._drop()
            return
        ok = 200 <= status < 300 and len(answer) > 1
        if fault == "truncate" and ok:
            answer = answer[: len(answer) // 2]
        elif fault == "garble" and ok:
            middle = len(answer) // 2
            answer = answer[:middle] + GARBAGE + answer[middle + len(GARBAGE) :]
        if fault == "cut":
            self._answer(status, headers, answer, cut=True)
            return
        self._answer(status, headers, answer)

    def _forward(self, proxy: FaultProxy, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Host"] = f"{proxy.upstream_host}:{proxy.upstream_port}"
            if body or self.command in ("POST", "PUT", "PATCH"):
                headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            answer = resp.read()
            kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP_BY_HOP]
            return resp.status, kept, answer
        finally:
            conn.close()

    def _answer(
        self, status: int, headers: dict[str, str] | list[tuple[str, str]], body: bytes, cut: bool = False
    ) -> None:
        try:
            self.send_response_only(status)
            for key, value in headers.items() if isinstance(headers, dict) else headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if cut:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def _drop(self) -> None:
        """End the connection with a RST, unanswered."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()
            self.connection.close()
        except OSError:
            pass
