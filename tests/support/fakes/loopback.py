"""The loopback HTTP server both fakes are: lifecycle, address and fault injection, written once.

The fake Kubernetes API server (kube_server.py) and the fake GCP server (gcp_server.py) differ only in what
they answer. Serving on a free loopback port in a daemon thread, stopping and starting again on the same
port, and failing or dropping the next matching requests on demand are the same for both, so a client's
retry and connection-error paths are exercised identically against either.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self

from tests.support.fakes import wire


@dataclass
class Fault:
    """A pending injected failure (see ``LoopbackServer.inject_reset`` and each fake's ``inject``)."""

    status: int
    method: str | None = None
    path_contains: str | None = None
    times: int | None = 1  # None: until cleared
    retry_after: int | None = None
    reason: str | None = None  # Kubernetes: the Status reason
    message: str | None = None  # Kubernetes: the Status message
    body: Any = None  # GCP: the answer's body (None: the API's error shape for the status)
    hits: int = 0
    reset: str | None = None  # one of wire.RESET_MODES: the connection is dropped instead of answered

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method.upper() != method:
            return False
        return self.path_contains is None or self.path_contains in path


def take_fault(faults: list[Fault], method: str, path: str) -> Fault | None:
    """The first fault in `faults` matching the request, counted as hit (and removed once used up)."""
    for fault in faults:
        if fault.matches(method, path):
            fault.hits += 1
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    faults.remove(fault)
            return fault
    return None


class WireAnswer(Protocol):
    """What a fake hands the HTTP handler to put on the wire."""

    @property
    def status(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def headers(self) -> dict[str, str]: ...
    @property
    def reset(self) -> str | None: ...


def serve_in_thread(httpd: ThreadingHTTPServer, name: str) -> threading.Thread:
    """Serve `httpd` from a started daemon thread (checking for shutdown every 50 ms)."""
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    return thread


def stop_serving(httpd: ThreadingHTTPServer, thread: threading.Thread | None) -> None:
    """Stop what `serve_in_thread` started: no new requests, the socket closed, the thread gone."""
    httpd.shutdown()
    httpd.server_close()
    if thread is not None:
        thread.join(timeout=5)


class LoopbackServer:
    """An HTTP fake on the loopback interface. Use as a context manager, or call ``start()``/``stop()``."""

    label: ClassVar[str] = "loopback fake"  # for errors: "the <label> is not started"
    thread_name: ClassVar[str] = "fake"
    server_version: ClassVar[str] = "cidrx-fake/1"
    content_type: ClassVar[str] = "application/json"

    def __init__(self, *, host: str = "127.0.0.1") -> None:
        self._lock = threading.RLock()
        self._faults: list[Fault] = []
        self._host = host
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        # The headers of the request being answered on this thread (lower-case names), for fakes whose API
        # reads them (ARM's If-Match / If-None-Match).
        self.request_headers = threading.local()

    def answer(self, method: str, path: str, content_type: str, body: bytes) -> WireAnswer:
        """Serve one request; the HTTP handler only moves bytes."""
        raise NotImplementedError

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self, port: int = 0) -> Self:
        """Serve on `port` (0: a free one). A stopped server can start again on its old port, keeping its
        state: a server that went away and came back."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self._host, port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = serve_in_thread(httpd, self.thread_name)
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        stop_serving(self._httpd, self._thread)
        self._httpd, self._thread = None, None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"the {self.label} is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the endpoint every client is pointed at."""
        return f"http://{self._host}:{self.port}"

    # ---- faults ---------------------------------------------------------------------------------

    def _add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def inject_reset(
        self,
        mode: str = "close",
        *,
        method: str | None = None,
        path_contains: str | None = None,
        times: int | None = 1,
    ) -> Fault:
        """Make the next ``times`` matching requests lose their connection (``mode``: wire.RESET_MODES).

        "close" and "rst" drop the request unanswered and undone; "partial" carries it out and cuts its
        answer off halfway (so a write with a partial answer has happened).
        """
        wire.check_reset_mode(mode)
        return self._add_fault(Fault(0, method, path_contains, times, reset=mode))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            return take_fault(self._faults, method, path)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up before it reads its answer (a test's Ctrl-C right after sending, a reset
        # fault) is not a failure of the fake; socketserver would print a traceback into whatever captures
        # stderr at that moment (the CLI runner of the test). Anything else is reported as usual.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients page through many lists on one connection
    disable_nagle_algorithm = True  # headers and body are two writes; avoid the 40 ms delayed-ACK stall

    def version_string(self) -> str:
        assert isinstance(self.server, _HTTPServer)
        return f"{self.server.fake.server_version} {self.sys_version}"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        assert isinstance(self.server, _HTTPServer)
        fake = self.server.fake
        fake.request_headers.value = {k.lower(): v for k, v in self.headers.items()}
        resp = fake.answer(method, self.path, self.headers.get("Content-Type", ""), body)
        wire.send(self, resp.status, fake.content_type, resp.body, resp.headers, resp.reset)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log (tests read the fake's ``request_log`` instead)."""
