"""The single place where exceptions become exit codes (docs/cli.md) and one line on stderr.

Every command runs inside `run`: a CidrxError prints `cidrx: error: <message>` (and `hint: ...`) and
exits with its code; click's usage errors keep click's text and exit 2; an unexpected exception is a bug,
reported in one line (the traceback only with -v). Nothing else in cidrx decides an exit code, so a CI job
can trust them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import click

from cidrx.errors import CidrxError, ExitStatus, InvalidInput

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C; used when nothing was being applied
REPORT_HINT = "this is a bug; please report it with the output of `cidrx snapshot`"


class ReaderGone(Exception):
    """stdout's reader went away (EPIPE). Raised in place of the OSError so click's own EPIPE handling,
    which exits 1 (a bug, in cidrx's codes) even in non-standalone mode, does not see it."""


@dataclass
class _State:
    verbose: int = 0
    applying: bool = False
    outcome: int | None = None  # the exit code the command decided on before printing its result


def decided(code: int) -> int:
    """Record the exit code a command has decided on before it prints its result, and return it: when the
    reader of stdout has gone away (`cidrx diagnose ... | true`), the run still exits with it."""
    state.outcome = int(code)
    return code


state = _State()


def set_verbosity(level: int) -> None:
    state.verbose = level


@contextlib.contextmanager
def applying() -> Iterator[None]:
    """Mark the stretch where cloud writes happen: a Ctrl-C here means "stopped partway" (exit 5).

    The mark stays set when an exception leaves the block, so `run` still sees it; `run` clears it.
    """
    state.applying = True
    yield
    state.applying = False


def _err(text: str) -> None:
    click.echo(text, err=True)


def report_error(exc: CidrxError) -> int:
    message = " ".join(exc.message.split("\n")) if exc.message else type(exc).__name__
    _err(f"cidrx: error: {message}")
    if exc.hint:
        _err(f"hint: {exc.hint}")
    return exc.exit_code


def _interrupted() -> int:
    if state.applying:
        _err("cidrx: error: interrupted while applying; run the same command again to resume")
        return ExitStatus.PARTIAL
    _err("cidrx: interrupted")
    return EXIT_INTERRUPTED


def run(invoke: Callable[[], object]) -> int:
    """Call `invoke` (click in non-standalone mode) and turn its outcome into an exit code."""
    state.applying = False
    state.outcome = None
    try:
        rv = invoke()
        # Flushed here, not at exit: a full disk or a closed pipe then gets its one line (or silence)
        # instead of the interpreter's "Exception ignored" and exit 120.
        sys.stdout.flush()
    except CidrxError as exc:
        return report_error(exc)
    except click.exceptions.Abort:
        # click turns Ctrl-C and EOF (e.g. at a confirmation prompt) into Abort.
        return _interrupted()
    except KeyboardInterrupt:
        return _interrupted()
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except ReaderGone:
        return _reader_gone()
    except UnicodeEncodeError as exc:  # e.g. PYTHONIOENCODING=latin-1 and a cluster named in another script
        encoding = exc.encoding or getattr(sys.stdout, "encoding", None) or "its encoding"
        shown = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
        return report_error(
            InvalidInput(
                f"cannot print {shown!r} in the output encoding {encoding} (PYTHONIOENCODING, or the locale)",
                hint="use a UTF-8 locale or PYTHONIOENCODING=utf-8, or -o json",
            )
        )
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            return _reader_gone()
        if exc.errno in DISK_ERRNOS:
            return report_disk_error(exc)
        return report_bug(exc)
    except Exception as exc:
        return report_bug(exc)
    if isinstance(rv, bool) or not isinstance(rv, int):
        return ExitStatus.OK
    return rv


def _reader_gone() -> int:
    # `cidrx diagnose | head`: the reader went away; not an error worth a message. Point stdout at
    # /dev/null so the interpreter's final flush does not complain either. The code the command had
    # decided on (diagnose's 3) still counts: a closed pipe must not turn findings into success.
    with contextlib.suppress(Exception):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return state.outcome if state.outcome is not None else ExitStatus.OK


# A full disk, an exhausted quota or a read-only file system: the machine's trouble, not a bug.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def report_disk_error(exc: OSError) -> int:
    """One line naming what could not be written; exit 2 (5 while applying: the same command resumes)."""
    where = f" {exc.filename}" if exc.filename else " (standard output or a file cidrx was writing)"
    _err(f"cidrx: error: cannot write{where}: {exc.strerror or os.strerror(exc.errno or 0)}")
    if state.applying:
        _err("hint: free some space, then run the same command again to resume")
        return ExitStatus.PARTIAL
    _err("hint: free some space (or write elsewhere), then run the command again")
    return ExitStatus.USAGE


def report_bug(exc: BaseException) -> int:
    detail = " ".join(str(exc).split()) or "(no message)"
    _err(f"cidrx: internal error: {type(exc).__name__}: {detail} — {REPORT_HINT}")
    if state.verbose:
        _err("".join(traceback.format_exception(exc)).rstrip())
    else:
        _err("hint: run again with -v to see the traceback")
    return ExitStatus.INTERNAL
