"""Fuzzing the loaders of the files users hand to cidrx (plans, snapshots): whatever the bytes, the only
exception that may come out is InvalidInput (exit 2, one line), never a crash deep in analysis code.

Three kinds of input: arbitrary bytes, arbitrary JSON, and valid documents (the bundled examples and a
real plan made from one) with a field deleted, its value swapped for another type, or the text cut short.
Example counts are kept small so the file runs in a few seconds.
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx.errors import InvalidInput
from cidrx.model import codec
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot, load_snapshot

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.snapshot.json"))
SNAPSHOTS = [json.loads(p.read_text()) for p in EXAMPLES]

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _plan_doc() -> dict[str, Any]:
    from click.testing import CliRunner

    from cidrx.cli import cli

    result = CliRunner().invoke(
        cli, ["expand", "--plan", "--snapshot", str(REPO / "examples" / "eks-demo-ip.snapshot.json"), "--out", "-"]
    )
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


PLAN = _plan_doc()


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and list indexes) into `doc`."""
    found = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += _paths(v, (*prefix, i))
    return found


def _mutated(doc: Any, path: tuple[Any, ...], replacement: Any, delete: bool) -> Any:
    out = copy.deepcopy(doc)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return out


def _mutations(docs: list[Any]) -> st.SearchStrategy[Any]:
    @st.composite
    def build(draw: st.DrawFn) -> Any:
        doc = draw(st.sampled_from(docs))
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        return _mutated(doc, path, draw(JSON_VALUES), draw(st.booleans()))

    return build()


def _load(path: Path, data: bytes, loader: Any) -> None:
    path.write_bytes(data)
    try:
        loader(path)
    except InvalidInput as exc:
        assert exc.message.strip()


def _decode(data: bytes, kind: type[Any]) -> None:
    with contextlib.suppress(InvalidInput):
        codec.loads(data, kind, what="fuzz")


LOADERS = [pytest.param(load_plan, id="plan"), pytest.param(load_snapshot, id="snapshot")]


@pytest.mark.parametrize("loader", LOADERS)
@FAST
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes(loader: Any, data: bytes, tmp_path: Path) -> None:
    _load(tmp_path / "doc.json", data, loader)
    _decode(data, Plan)
    _decode(data, Snapshot)


@pytest.mark.parametrize("loader", LOADERS)
@FAST
@given(doc=JSON_VALUES)
def test_arbitrary_json(loader: Any, doc: Any, tmp_path: Path) -> None:
    data = json.dumps(doc).encode()
    _load(tmp_path / "doc.json", data, loader)
    _decode(data, Plan)
    _decode(data, Snapshot)


@FAST
@given(doc=_mutations(SNAPSHOTS))
def test_mutated_snapshots(doc: Any, tmp_path: Path) -> None:
    data = json.dumps(doc).encode()
    _load(tmp_path / "snap.json", data, load_snapshot)
    _decode(data, Snapshot)


@FAST
@given(doc=_mutations([PLAN]))
def test_mutated_plans(doc: Any, tmp_path: Path) -> None:
    data = json.dumps(doc).encode()
    _load(tmp_path / "plan.json", data, load_plan)
    _decode(data, Plan)


@FAST
@given(which=st.sampled_from([*SNAPSHOTS, PLAN]), cut=st.floats(min_value=0.0, max_value=0.999))
def test_truncated_documents(which: Any, cut: float, tmp_path: Path) -> None:
    text = json.dumps(which, indent=2).encode()
    data = text[: int(len(text) * cut)]
    loader = load_plan if which is PLAN else load_snapshot
    path = tmp_path / "doc.json"
    path.write_bytes(data)
    with pytest.raises(InvalidInput):
        loader(path)


def test_the_unmutated_documents_load(tmp_path: Path) -> None:
    """The control: the seeds themselves are valid, so every refusal above came from the mutation."""
    for path in EXAMPLES:
        assert load_snapshot(path).fingerprint
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    assert load_plan(tmp_path / "plan.json").digest == PLAN["digest"]
