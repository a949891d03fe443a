"""The streamed canonical encoding (used for fingerprints) gives the very bytes of the one-piece one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pytest

from cidrx.model import codec, files
from cidrx.model.snapshot import load_snapshot, save_snapshot, snapshot_type

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.snapshot.json"))


@pytest.mark.parametrize("threshold", [1, 2, 256])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_streamed_bytes_equal_one_piece(path: Path, threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_STREAMED", threshold)  # 1: every non-empty sequence goes the streamed way
    snap = msgspec.json.decode(path.read_bytes(), type=snapshot_type())
    pieces: list[bytes] = []
    codec.write_canonical(dataclasses.replace(snap, taken_at="", fingerprint=""), pieces.append)
    assert b"".join(pieces) == codec.canonical_bytes(dataclasses.replace(snap, taken_at="", fingerprint=""))
    assert load_snapshot(path).fingerprint == snap.fingerprint  # the sealed fingerprint still verifies


@dataclasses.dataclass(frozen=True)
class _Item:
    name: str
    empty: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class _Holder:
    tuple_items: tuple[_Item, ...]
    list_items: list[_Item]
    gone: list[int] = dataclasses.field(default_factory=list)
    kept: tuple[int, ...] = ()


def test_tuples_are_not_pruned_and_lists_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_STREAMED", 2)
    items = tuple(_Item(f"i{n}") for n in range(3))
    holder = _Holder(items, list(items))
    pieces: list[bytes] = []
    codec.write_canonical(holder, pieces.append)
    assert len(pieces) > 3
    assert b"".join(pieces) == codec.canonical_bytes(holder)
    assert b'"empty":{}' in b"".join(pieces)  # inside a tuple: kept, as to_builtins keeps tuples


@pytest.mark.parametrize("threshold", [1, 256])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_document_in_pieces_is_the_one_piece_text(
    path: Path, threshold: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codec, "_STREAMED", threshold)
    snap = load_snapshot(path)
    pieces = list(codec.dump_chunks(snap))
    assert "".join(pieces) == codec.dumps(snap)
    save_snapshot(snap, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == codec.dumps(snap)
    if threshold == 1:
        assert len(pieces) > 10


def test_document_pieces_keep_tuples_and_lists_as_dumps_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_STREAMED", 2)
    items = tuple(_Item(f"i{n}") for n in range(3))
    holder = _Holder(items, list(items), kept=(1, 2, 3))
    assert "".join(codec.dump_chunks(holder)) == codec.dumps(holder)
    assert "".join(files.buffered(codec.dump_chunks(holder), size=7)) == codec.dumps(holder)
