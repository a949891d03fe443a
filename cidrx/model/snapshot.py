"""Snapshot: everything diagnosis and planning read, frozen at one moment.

Collect produces it, analyze and plan consume it, and `cidrx snapshot` writes it so the same diagnosis
can be run offline or attached to a bug report. The fingerprint covers the content, not the time taken,
so two snapshots of an unchanged estate match.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.model import codec, files
from cidrx.model.target import Target
from cidrx.model.validation import check_values

if TYPE_CHECKING:
    from cidrx.model.kube import KubeSection

SNAPSHOT_SCHEMA = "cidrx.snapshot/v1"


@dataclass(frozen=True)
class Snapshot:
    """The fields every snapshot has. Each provider that declares a snapshot section (`ProviderSpec.section`)
    adds a field named after it (`snapshot.<provider name>`), and the kube section gets the plugins' fields: the class
    `Snapshot(...)` really makes is composed from the declarations (`cidrx.registry.snapshot_type`), so this
    layer names no plugin and the JSON keys stay the plugins' names."""

    target: Target
    taken_at: str
    if TYPE_CHECKING:
        kube: KubeSection
        fingerprint: str = ""
        schema: str = SNAPSHOT_SCHEMA

        def __getattr__(self, name: str) -> Any: ...  # a provider's section, by its name

    # Written after the sections, last (a truncated file lacks them): (name, type, default).
    TAIL_FIELDS: ClassVar[tuple[tuple[str, type, str], ...]] = (
        ("fingerprint", str, ""),
        ("schema", str, SNAPSHOT_SCHEMA),
    )

    def __new__(cls, *args: Any, **kwargs: Any) -> Snapshot:
        # `Snapshot(...)` makes the composed class, which has the plugins' fields.
        real = registry.snapshot_type() if cls is Snapshot else cls
        return super().__new__(real)  # type: ignore[no-any-return]


def snapshot_type() -> type[Snapshot]:
    """The snapshot class with every plugin's fields (for decoding, validation, schemas)."""
    result: type[Snapshot] = registry.snapshot_type()
    return result


def with_sections(snap: Snapshot, **sections: Any) -> Snapshot:
    """`snap` with provider sections set by name (`<provider name>=...`): the fields the plugins add are not known to
    type checkers, so providers set them through here."""
    return dataclasses.replace(snap, **sections)


def fingerprint_of(snap: Snapshot) -> str:
    content = dataclasses.replace(snap, taken_at="", fingerprint="")
    return codec.sha256_of(content)


def seal(snap: Snapshot) -> Snapshot:
    """The same snapshot with its fingerprint filled in."""
    return dataclasses.replace(snap, fingerprint=fingerprint_of(snap))


def load_snapshot(path: str | Path) -> Snapshot:
    p = Path(path)
    data = codec.read_document(p, "snapshot")
    return parse_snapshot(data, f"snapshot {p}")


def parse_snapshot(data: bytes, what: str) -> Snapshot:
    """The snapshot in `data` (`what` names it in errors, e.g. "snapshot on stdin"), refused with one
    InvalidInput line when it is not one, was edited after it was taken, or holds a value that is not
    what its field says (a CIDR that is not one): analysis and planning trust what passes here."""
    head = data[:4096]
    if b"cidrx.snapshot/" not in head and b'"schema"' not in data:
        if data.lstrip()[:1] == b"{":
            # `schema` is written last, so a truncated snapshot lacks it too: report the truncation.
            codec.loads(data, dict[str, object], what=what)
        raise InvalidInput(f"{what} has no schema field: it is not a cidrx snapshot; make one with `cidrx snapshot`")
    codec.check_schema(data, SNAPSHOT_SCHEMA, "snapshot", what)
    snap = codec.loads(data, snapshot_type(), what=what)
    if snap.schema != SNAPSHOT_SCHEMA:
        raise InvalidInput(f"{what} has schema {snap.schema!r}; this cidrx reads {SNAPSHOT_SCHEMA}")
    if not snap.fingerprint:
        raise InvalidInput(f"{what} has no fingerprint; make it with `cidrx snapshot`")
    if snap.fingerprint != fingerprint_of(snap):
        raise InvalidInput(f"{what} was edited after it was taken (fingerprint mismatch)")
    check_values(snap, what, hint="take a new one with `cidrx snapshot`")
    return snap


def save_snapshot(snap: Snapshot, path: str | Path) -> None:
    files.write_file(path, codec.dump_chunks(snap))
