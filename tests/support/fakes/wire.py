"""How the loopback fakes put an answer on the wire, or lose the connection on purpose.

Both HTTP fakes (GCP REST, Kubernetes API) answer the same way and drop connections the same way for
`inject_reset`, so the clients' connection-error paths are exercised identically against either.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler

# How ``inject_reset`` loses a connection: "close" ends it without an answer (FIN), "rst" aborts it
# (RST: the client reads "connection reset by peer"), both before the request is carried out; "partial"
# carries the request out and sends the status line, the headers and half the body, then closes.
RESET_MODES = ("close", "rst", "partial")


def check_reset_mode(mode: str) -> None:
    if mode not in RESET_MODES:
        raise ValueError(f"reset mode {mode!r} is not one of {RESET_MODES}")


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    content_type: str,
    body: bytes,
    headers: Mapping[str, str],
    reset: str | None = None,
) -> None:
    """Answer the handler's request, or (with `reset`, one of RESET_MODES) break the connection instead."""
    if reset in ("close", "rst"):
        drop(handler, reset)
        return
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    if reset == "partial":
        handler.wfile.write(body[: len(body) // 2])
        handler.close_connection = True
        return
    handler.wfile.write(body)


def drop(handler: BaseHTTPRequestHandler, mode: str) -> None:
    """End the connection without an answer: a FIN ("close") or, with a zero linger, a RST ("rst")."""
    handler.close_connection = True
    if mode == "rst":
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.rfile.close()  # the socket closes (and resets) once no file object refers to it
        handler.connection.close()
