"""Every file cidrx writes (plans, snapshots, Terraform, HTML, journals, review notes) goes through here.

Why it exists: cidrx runs as root in CI containers, where `--out` may name a symlink, a device or a FIFO,
and an interrupted write must never leave half a plan behind. One module decides, for every writer:

- a regular file (or a new path) is replaced atomically: a temporary file in the same directory, fsync,
  rename over the old one, fsync of the directory; the old file's mode (and, as root, its owner) is kept,
  a new file gets the mode `open()` would give it (0666 minus the umask);
- a symlink is written through: the file it points to is replaced and the link itself survives;
- a directory, FIFO, socket or device (also behind a symlink) is refused with `InvalidInput` (exit 2) and
  left untouched: a device such as /dev/full or a terminal is not a place to keep a plan;
- a failed write (a full disk, a quota, a file size limit, a read-only file system) is `InvalidInput` with
  one line naming the path, and leaves the old file as it was.

Writing to standard output (`-`, or a path such as /dev/stdout that is the process's stdout) is the CLI's job
(it prints); `is_stdout` says when a path means it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from cidrx.errors import InvalidInput

STDOUT = "-"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def is_stdout(path: str | Path) -> bool:
    """`-`, or a path that is this process's standard output already (`/dev/stdout`, `/proc/self/fd/1` or the
    file stdout is redirected to): writing it means printing, not replacing the file behind the reader."""
    if str(path) == STDOUT:
        return True
    try:
        mine, there = os.fstat(1), os.stat(path)
    except (OSError, ValueError):
        return False
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _kind(mode: int) -> str | None:
    """What a non-regular file is, for the refusal; None for a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _refuse(path: str | Path, what: str) -> InvalidInput:
    return InvalidInput(
        f"refusing to write {path}: it is {what}; cidrx writes only regular files",
        hint="give the path of a regular file, or - for standard output",
    )


def resolve_target(path: str | Path) -> tuple[Path, os.stat_result | None]:
    """The file a write to `path` replaces (symlinks followed) and its current status (None: it does not
    exist yet). Raises InvalidInput for anything but a regular file or a new path."""
    given = Path(path)
    try:
        st = os.stat(given)  # follows symlinks: /dev/stdout is the pipe or terminal it stands for
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
    if st is not None and (what := _kind(st.st_mode)) is not None:
        raise _refuse(path, what)
    real = Path(os.path.realpath(given)) if given.is_symlink() else given
    if st is None:
        return real, None
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real, None
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
    what = _kind(st.st_mode)
    if what is not None:
        raise _refuse(path, what)
    return real, st


def check_writable(path: str | Path) -> None:
    """Refuse `path` before any work is done when it could never be written (a directory, FIFO, device)."""
    if not is_stdout(path):
        resolve_target(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(directory: Path) -> None:
    """Make a new or renamed directory entry durable (POSIX); best effort where unsupported."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def buffered(chunks: Iterable[str], size: int = 1 << 20) -> Iterator[str]:
    """`chunks` joined into pieces of about `size` characters (an encoder's pieces are a few bytes each)."""
    held: list[str] = []
    count = 0
    for chunk in chunks:
        held.append(chunk)
        count += len(chunk)
        if count >= size:
            yield "".join(held)
            held, count = [], 0
    if held:
        yield "".join(held)


def write_file(path: str | Path, data: str | bytes | Iterable[str]) -> None:
    """Replace the file at `path` with `data` as the module doc says (never `-`: the CLI prints that); `data`
    may come in pieces (a large snapshot is written as it is encoded)."""
    if is_stdout(path):
        raise ValueError("write_file does not write standard output; the CLI prints it")
    real, st = resolve_target(path)
    directory = real.parent
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=directory)
        try:
            if isinstance(data, str | bytes):
                _write_all(fd, data.encode() if isinstance(data, str) else data)
            else:
                for piece in buffered(data):
                    _write_all(fd, piece.encode())
            os.fsync(fd)
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            if st is not None and os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)
        finally:
            os.close(fd)
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        raise InvalidInput(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="free some space (or write elsewhere), then run the command again" if full else None,
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    fsync_dir(directory)
