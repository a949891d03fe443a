"""Canonical JSON for every document cidrx writes, and typed decoding of what it reads back.

msgspec turns frozen dataclasses into JSON and back with type checks, so a corrupt or hand-edited file
fails with one clear message instead of a traceback deep in analysis code.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from cidrx.errors import InvalidInput

T = TypeVar("T")


def to_builtins(obj: Any) -> Any:
    """Plain dicts/lists/str/int of a model object (dataclasses, tuples, enums)."""
    return msgspec.to_builtins(obj)


def _pruned(value: Any) -> Any:
    """`value` without dict entries that are None or empty, so that a model field added later with an
    empty default leaves the fingerprints and digests of existing documents unchanged."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def canonical_bytes(obj: Any) -> bytes:
    """Sorted keys, no whitespace, empty fields left out, UTF-8: the bytes every fingerprint and digest is
    taken over. (msgspec's encoder: a 60,000-pod snapshot in a tenth of the time of `json.dumps`.)"""
    return msgspec.json.encode(_pruned(to_builtins(obj)), order="sorted")


def canonical_json(obj: Any) -> str:
    return canonical_bytes(obj).decode()


# A tuple/list field at least this long is written element by element (see `write_canonical`).
_STREAMED = 256


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _holds_long(value: Any) -> bool:
    """Whether `value` is a dataclass with a long tuple/list field, directly or in a dataclass field."""
    kind = type(value)
    names = _FIELD_NAMES.get(kind)
    if names is None:  # the field names of a dataclass type; () for any other type (a class object's is `type`)
        plain = not dataclasses.is_dataclass(value) or isinstance(value, type)
        names = _FIELD_NAMES[kind] = () if plain else tuple(f.name for f in dataclasses.fields(value))
    for name in names:
        v = getattr(value, name)
        if (isinstance(v, tuple | list) and len(v) >= _STREAMED) or _holds_long(v):
            return True
    return False


def write_canonical(obj: Any, write: Callable[[bytes], object]) -> None:
    """Hand `canonical_bytes(obj)` to `write` in pieces, without holding all of it nor all of its builtins
    at once: in a dataclass holding long sequences (60,000 pods), each long field is swapped for a marker
    string in a shallow copy, the copy is encoded as usual (so which fields `msgspec.to_builtins` keeps and
    how the rest is pruned stay exactly as in `canonical_bytes`), and each marker's place is filled by its
    sequence, one element at a time. `to_builtins` keeps tuples as tuples, which `_pruned` neither drops
    nor enters, so a tuple's items are encoded unpruned and a list's pruned, as in one piece."""
    if not _holds_long(obj):
        write(canonical_bytes(obj))
        return
    shallow = copy.copy(obj)
    held: dict[bytes, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if (isinstance(value, tuple | list) and len(value) >= _STREAMED) or _holds_long(value):
            placeholder = f"\x00cidrx-streamed:{f.name}"
            object.__setattr__(shallow, f.name, placeholder)  # a copy made here: frozen only against callers
            held[msgspec.json.encode(placeholder)] = value
    text = canonical_bytes(shallow)
    places = sorted((text.index(marker), marker) for marker in held)
    done = 0
    for at, marker in places:
        write(text[done:at])
        value = held[marker]
        if isinstance(value, tuple | list):
            write(b"[")
            for i, item in enumerate(value):
                plain = to_builtins(item)
                encoded = msgspec.json.encode(_pruned(plain) if isinstance(value, list) else plain, order="sorted")
                write(b"," + encoded if i else encoded)
            write(b"]")
        else:
            write_canonical(value, write)
        done = at + len(marker)
    write(text[done:])


def sha256_of(obj: Any) -> str:
    digest = hashlib.sha256()
    write_canonical(obj, digest.update)
    return digest.hexdigest()


def read_document(path: Path, what: str) -> bytes:
    """The bytes of a document the user named; an unreadable file is their input error, not a bug."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def dumps(obj: Any) -> str:
    """Human-readable JSON for files a person may review (plans in pull requests, snapshots)."""
    return json.dumps(to_builtins(obj), indent=2, sort_keys=False) + "\n"


def _shallow_builtins(obj: Any) -> Any:
    """`to_builtins(obj)`, except that a dataclass's long sequences (as in `write_canonical`) are left as the
    model objects they are, for the encoder of `dump_chunks` to turn into builtins one element at a time."""
    if not _holds_long(obj):
        return to_builtins(obj)
    shallow = copy.copy(obj)
    held: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if (isinstance(value, tuple | list) and len(value) >= _STREAMED) or _holds_long(value):
            placeholder = f"\x00cidrx-streamed:{f.name}"
            object.__setattr__(shallow, f.name, placeholder)  # a copy made here: frozen only against callers
            held[placeholder] = value if isinstance(value, tuple | list) else _shallow_builtins(value)
    plain = to_builtins(shallow)
    return {k: held[v] if isinstance(v, str) and v in held else v for k, v in plain.items()}


def dump_chunks(obj: Any) -> Iterator[str]:
    """The text of `dumps(obj)` in pieces, without holding all of it nor all of its builtins at once (a
    snapshot of 60,000 pods): the same encoder (with an indent, `json` encodes in Python, piece by piece,
    whether asked for the whole text or not) is handed the long sequences' model objects, and turns each
    into builtins only when it reaches it; msgspec's `to_builtins` of a tuple or list is the list of its
    elements' builtins, so the text is the same."""
    encoder = json.JSONEncoder(indent=2, sort_keys=False, default=to_builtins)
    yield from encoder.iterencode(_shallow_builtins(obj))
    yield "\n"


def loads(data: str | bytes, kind: type[T], *, what: str) -> T:
    """Decode `data` as `kind`; any syntax or type problem becomes InvalidInput naming `what`."""
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"{what} does not match the expected format: {exc}") from None
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"{what} is not valid JSON ({exc}); is the file truncated?") from None
    except RecursionError:
        raise _too_deep(what) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} holds text that is not UTF-8 ({exc.reason})") from None


def _too_deep(what: str) -> InvalidInput:
    return InvalidInput(f"{what} is nested too deeply to be a cidrx document (no cidrx document nests that far)")


def convert(data: Any, kind: type[T], *, what: str) -> T:
    """Like `loads` but from already-parsed builtins."""
    try:
        return msgspec.convert(data, type=kind)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"{what} does not match the expected format: {exc}") from None
    except RecursionError:
        raise _too_deep(what) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} holds text that is not UTF-8 ({exc.reason})") from None


class _Versioned(msgspec.Struct):
    schema: object = None


def check_schema(data: str | bytes, expected: str, kind: str, what: str) -> None:
    """Refuse a document of another `schema` version before any field is validated: a newer or older
    format is best named as such, not as the first field it happens to lack. Data that is not a JSON
    object, or has no schema, is left to the full decode to report."""
    try:
        found = msgspec.json.decode(data, type=_Versioned).schema
    except (msgspec.ValidationError, msgspec.DecodeError):
        return
    except RecursionError:
        raise _too_deep(what) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} holds text that is not UTF-8 ({exc.reason})") from None
    if found is not None and found != expected:
        shown = found if isinstance(found, str) else json.dumps(found)
        family = expected.partition("/")[0]
        if isinstance(found, str) and found.startswith("cidrx.") and found.partition("/")[0] != family:
            other = found.partition("/")[0].removeprefix("cidrx.")
            raise InvalidInput(f"{what} is a cidrx {other} ({found}), not a {kind}")
        raise InvalidInput(
            f"{what}: unsupported {kind} schema {shown} (this cidrx reads {expected})",
            hint=f"use the cidrx version that wrote it, or make a new {kind} with this one",
        )
