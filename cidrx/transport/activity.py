"""What cidrx is reading from the cloud or the cluster right now, and the retry in progress, for people.

A collection can take many seconds and a retried request many more (cidrx.transport.retry backs off for up
to a minute); silence then looks like a hang. The api.py choke points say what each request reads
(`reading`), the retry policy says when it waits to try again (`retrying`), and whoever listens (a
spinner on a terminal, log lines with -v; see cidrx.render.progress) shows it on stderr. Nobody listening
costs nothing. The text of the current request is kept per thread, so a retry names its own request even
when several clusters are read at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Listener(Protocol):
    def reading(self, what: str) -> None: ...

    def retrying(self, what: str, attempt: int, max_attempts: int, delay: float, error: str) -> None: ...


_listener: Listener | None = None
_current = threading.local()


def reading(what: str) -> None:
    """A request for `what` is about to be made (e.g. "ec2:DescribeSubnets VPC vpc-0f3a...")."""
    _current.what = what
    listener = _listener
    if listener is not None:
        listener.reading(what)


def retrying(attempt: int, max_attempts: int, delay: float, error: BaseException) -> None:
    """Attempt `attempt` of the current request failed with a transient `error`; retrying in `delay` s."""
    listener = _listener
    if listener is None:
        return
    text = " ".join(str(error).split()) or type(error).__name__
    if len(text) > 120:
        text = text[:119] + "…"
    listener.retrying(getattr(_current, "what", "a request"), attempt, max_attempts, delay, text)


def carried(fn: Callable[[], T]) -> Callable[[], T]:
    """`fn` to run in another thread (a page fetched ahead) as part of this thread's current request."""
    what = getattr(_current, "what", None)

    def run() -> T:
        if what is not None:
            _current.what = what
        return fn()

    return run


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send activity to `listener` while the block runs (one listener at a time; the previous comes back)."""
    global _listener
    previous = _listener
    _listener = listener
    try:
        yield
    finally:
        _listener = previous
