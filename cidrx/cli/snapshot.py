"""`cidrx snapshot`: write everything diagnose reads to a file, for offline diagnosis and bug reports.

The file is `cidrx.snapshot/v1` with a fingerprint, so an edited snapshot is refused on load.
"""

from __future__ import annotations

import click

from cidrx.cli.options import TargetOptions, resolve_target, target_options
from cidrx.model import files


def write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` the safe way (cidrx.model.files: atomic, symlinks written through, devices, FIFOs
    and directories refused); `-` or a path that is stdout already prints it."""
    if files.is_stdout(path):
        click.echo(text, nl=False)
    else:
        files.write_file(path, text)


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
    files.check_writable(out)
    with reading_status(f"reading {t.label()}"):
        snap = collect_live(target)
    # Written as it is encoded: the whole text of a large estate's snapshot would be hundreds of MB.
    if files.is_stdout(out):
        for piece in files.buffered(codec.dump_chunks(snap)):
            click.echo(piece, nl=False)
    else:
        files.write_file(out, codec.dump_chunks(snap))
    if not files.is_stdout(out):
        click.echo(f"cidrx: snapshot of {t.label()} written to {out} (fingerprint {snap.fingerprint[:12]})", err=True)
    return 0
