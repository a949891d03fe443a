"""A loopback port where connections are refused, for tests of an unreachable endpoint.

Binding port 0 and closing the socket again gives a port nobody listens on only until some process binds it:
under pytest-xdist another worker's fake server may get that very port and answer. So the port stays bound by
this process (never listening: the kernel refuses connections to it) until the process ends.
"""

from __future__ import annotations

import socket

_HELD: list[socket.socket] = []  # the sockets holding the ports handed out; closed when the process exits


def refused_port() -> int:
    """A port on 127.0.0.1 where every connection is refused, held for the rest of this process."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    port: int = sock.getsockname()[1]
    return port
