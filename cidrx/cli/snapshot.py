"""`cidrx snapshot`: write everything diagnose reads to a file, for offline diagnosis and bug reports.

The file is `cidrx.snapshot/v1` with a fingerprint, so an edited snapshot is refused on load.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from cidrx.cli.options import TargetOptions, resolve_target, target_options
from cidrx.errors import InvalidInput


def write_atomically(path: str, text: str) -> None:
    """Write via a temporary file and rename, so an interrupted write never leaves half a document."""
    dest = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent if str(dest.parent) else ".")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, dest)
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None


@click.command(short_help="Save everything diagnose reads to a file.")
@target_options
@click.option("--out", required=True, metavar="FILE", help="Where to write the snapshot; - for stdout.")
def snapshot(target: TargetOptions, out: str) -> int:
    """Save everything diagnose reads about TARGET to FILE (cidrx.snapshot/v1).

    Diagnose it later, anywhere, with `cidrx diagnose --snapshot FILE`.
    """
    from cidrx.cli.diagnose import collect_live, reading_status
    from cidrx.model import codec

    t = resolve_target(target)
    with reading_status(f"reading {t.label()}"):
        snap = collect_live(target)
    text = codec.dumps(snap)
    if out == "-":
        click.echo(text, nl=False)
    else:
        write_atomically(out, text)
        click.echo(f"cidrx: snapshot of {t.label()} written to {out} (fingerprint {snap.fingerprint[:12]})", err=True)
    return 0
