"""Fuzzing the loaders of the files users hand to cidrx (plans, snapshots): whatever the bytes, the only
exception that may come out is InvalidInput (exit 2, one line), never a crash deep in analysis code.

Three kinds of input: arbitrary bytes, arbitrary JSON, and valid documents (the bundled examples and a
real plan made from one) with a field deleted, its value swapped for another type, or the text cut short.
Example counts are kept small so the file runs in a few seconds.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx.cli import cli
from cidrx.cli.expand import STRATEGIES
from cidrx.errors import InvalidInput
from cidrx.model import codec
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot, fingerprint_of, load_snapshot, snapshot_type
from cidrx.render import FORMATS

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.snapshot.json"))
SNAPSHOTS = [json.loads(p.read_text()) for p in EXAMPLES]

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _plan_doc() -> dict[str, Any]:
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


@pytest.mark.parametrize("loader", LOADERS)
@FAST
@given(which=st.sampled_from([*SNAPSHOTS, PLAN]), depth=st.integers(min_value=2_000, max_value=60_000))
def test_deeply_nested_documents_are_invalid_input(loader: Any, which: Any, depth: int, tmp_path: Path) -> None:
    """A document nested past the decoder's recursion limit is input, not a bug (RecursionError was exit 1)."""
    nested = b"[" * depth + b"]" * depth
    text = json.dumps({**which, "target": "@@"}).encode()
    _load(tmp_path / "doc.json", text.replace(b'"@@"', nested), loader)


@pytest.mark.parametrize("loader", LOADERS)
@FAST
@given(
    which=st.sampled_from([*SNAPSHOTS, PLAN]),
    at=st.floats(min_value=0.0, max_value=0.999),
    junk=st.binary(min_size=1, max_size=3).filter(lambda b: not _is_utf8(b)),
)
def test_bytes_that_are_not_utf8_are_invalid_input(
    loader: Any, which: Any, at: float, junk: bytes, tmp_path: Path
) -> None:
    """Bytes that are not UTF-8 spliced into a string of a valid document: one line, exit 2."""
    text = json.dumps(which).encode()
    quotes = [m.start() for m in re.finditer(rb'"[a-z]', text)]
    i = quotes[int(len(quotes) * at)] + 1
    _load(tmp_path / "doc.json", text[:i] + junk + text[i:], loader)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_the_unmutated_documents_load(tmp_path: Path) -> None:
    """The control: the seeds themselves are valid, so every refusal above came from the mutation."""
    for path in EXAMPLES:
        assert load_snapshot(path).fingerprint
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    assert load_plan(tmp_path / "plan.json").digest == PLAN["digest"]


# --- past the loader: re-fingerprinted snapshots through the whole CLI ----------------------------------
#
# A snapshot whose fingerprint is recomputed after an edit passes the tamper check, so whatever it holds
# reaches analysis and planning. Mutated, re-sealed copies of each seed go through diagnose (a random
# output format, from a file or from stdin) and every plan command that works on the unmutated seed; the
# outcome must be one a CI job can rely on: exit 0, 2 or 3, never a crash, and on 2 one error line.

# Put where addresses live. Malformed ones must be refused at load; well-formed odd ones must get through
# analysis and planning: the whole space, a /32, IPv6 where IPv6 is allowed, ranges already in use.
MALFORMED_ADDRESSES = (
    "",
    "x",
    "10.0.0.0/33",
    "10.0.0.1/24",
    "300.1.2.3",
    " 10.0.0.0/16",
    "10.0.0.0/16\n",
    "10..0.0/8",
    "\u0661\u0660.0.0.0/8",
    "fd00::1/64",
)
ODD_ADDRESSES = (
    "10.0.0.0",
    "10.0.0.5",
    "10.0.0.0/255.255.0.0",
    "fd00::/64",
    "fd00::1",
    "::/0",
    "0.0.0.0/0",
    "255.255.255.255/32",
    "10.10.0.0/28",
    "10.10.0.15",
    "10.244.0.0/16",
    "10.0.208.0/27",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "172.16.0.0/12",
)
_ADDRESS_LIKE = re.compile(r"[0-9a-fA-F:.]*[.:][0-9a-fA-F:.]*(/[0-9]+)?")
PLACEHOLDER = "@SNAPSHOT@"
RESEALED = settings(
    max_examples=100,
    derandomize=True,  # the same examples on every run: a CI failure reproduces locally
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _seeds() -> dict[str, dict[str, Any]]:
    """The bundled examples plus the EKS incident with /24 node subnets, where prefix delegation plans (so
    its reading of the subnets' used addresses is exercised too)."""
    from tests.support.cases import eks as eks_cases

    seeds = {p.name.removesuffix(".snapshot.json"): doc for p, doc in zip(EXAMPLES, SNAPSHOTS, strict=True)}
    seeds["eks-roomy"] = json.loads(codec.dumps(eks_cases.roomy()))
    return seeds


SEEDS = _seeds()


def _invoke(args: list[str], stdin: bytes | None = None) -> Result:
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("CIDRX_")}
    return CliRunner().invoke(cli, args, input=stdin, env=env)


def _with_path(command: tuple[str, ...], path: Path) -> list[str]:
    return [str(path) if a == PLACEHOLDER else a for a in command]


@functools.cache
def _plannable(seed: str) -> tuple[tuple[str, ...], ...]:
    """The plan commands that succeed on the unmutated seed: the ones worth running on its mutations."""
    common = ("--snapshot", PLACEHOLDER, "--plan", "--out", "-")
    commands = [("expand", *common)]
    commands += [("expand", *common, "--strategy", s) for s in STRATEGIES]
    commands += [("reclaim", *common, "--ipam", ipam) for ipam in ("whereabouts", "calico")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seed.json"
        path.write_text(json.dumps(SEEDS[seed]))
        return tuple(c for c in commands if _invoke(_with_path(c, path)).exit_code == 0)


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _retyped(value: Any) -> Any:
    """The same information in another JSON type."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return int(value) if value.isdigit() else [value]
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, dict):
        return list(value.values())
    return ""


def _same_type(draw: st.DrawFn, value: Any, strings: list[str]) -> Any:
    """Another value of the type `value` has, so that the document still decodes and the change reaches
    analysis: strings swapped for others of the document (names then point at the wrong things), odd
    numbers, flipped flags, emptied or repeated lists."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return draw(st.sampled_from([0, -1, 1, 2, 17, 28, 33, 65535, 2**32, 2**40]) | st.integers(-5, 300))
    if isinstance(value, float):
        return draw(st.sampled_from([0.0, -1.0, 0.5, 1.0, 1.5, 1e300]))
    if isinstance(value, str):
        return draw(st.sampled_from(strings) | st.sampled_from(["", "x", "host:", "a/b", "Running", "Pending"]))
    if isinstance(value, list) and value:
        return draw(st.sampled_from([[], value[::-1], [*value, value[0]], value[1:]]))
    if isinstance(value, dict) and value:
        return {k: v for k, v in value.items() if k != draw(st.sampled_from(sorted(value)))}
    return value


# Weighted towards edits that keep the document decodable: those are the ones that reach analysis.
EDITS = ["address"] * 4 + ["same-type"] * 4 + ["drop-item"] * 2 + ["retype", "any", "delete"]


def _pick(draw: st.DrawFn, paths: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """One of `paths`, field first: every field of the model is as likely as any other, however often list
    items repeat it (a Calico snapshot has thousands of allocation slots and one IPPool block size)."""
    fields: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for p in paths:
        fields.setdefault(tuple("[]" if isinstance(k, int) else k for k in p), []).append(p)
    field = draw(st.sampled_from(sorted(fields, key=repr)))
    return draw(st.sampled_from(fields[field]))


@st.composite
def _edited(draw: st.DrawFn, seed: dict[str, Any]) -> dict[str, Any]:
    """`seed` with one to three edits, most of them keeping the document decodable so that they reach
    analysis: an odd or malformed address, another value of the same type, a list item dropped; and now
    and then a value retyped, replaced by any JSON, or removed (refused at load, which must say so)."""
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(doc)
        leaves = [(p, _get(doc, p)) for p in paths]
        strings = sorted({v for _, v in leaves if isinstance(v, str)})
        addresses = [p for p, v in leaves if isinstance(v, str) and _ADDRESS_LIKE.fullmatch(v)]
        items = [p for p in paths if isinstance(p[-1], int)]
        kind = draw(st.sampled_from(EDITS))
        if kind == "address" and addresses:
            path = _pick(draw, addresses)
            value = draw(
                st.sampled_from(ODD_ADDRESSES)
                | st.sampled_from(ODD_ADDRESSES + MALFORMED_ADDRESSES)
                | st.text(alphabet="0123456789abcdef.:/", max_size=20)
            )
        elif kind in ("drop-item", "delete"):
            path = _pick(draw, items if kind == "drop-item" and items else paths)
            del _get(doc, path[:-1])[path[-1]]
            continue
        else:
            path = _pick(draw, paths)
            old = _get(doc, path)
            if kind == "retype":
                value = _retyped(old)
            else:
                value = draw(JSON_VALUES) if kind == "any" else _same_type(draw, old, strings)
        _get(doc, path[:-1])[path[-1]] = value
    return doc


def _resealed(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with the fingerprint of its content, as `cidrx snapshot` would have written it; unchanged when
    it does not even decode (then the loader refuses it, which the tests above cover)."""
    try:
        snap = codec.loads(json.dumps(doc).encode(), snapshot_type(), what="fuzz")
    except InvalidInput:
        return doc
    return {**doc, "fingerprint": fingerprint_of(snap)}


def _outcome(result: Result, args: list[str]) -> None:
    """Exit 0, 2 or 3, no traceback, and on exit 2 a single error line (and at most a hint)."""
    where = " ".join(args)
    assert result.exit_code in (0, 2, 3), f"{where} exited {result.exit_code}: {result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr, where
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert lines and lines[0].startswith("cidrx: error: "), f"{where}: {result.stderr}"
        assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), f"{where}: {lines}"


@pytest.mark.parametrize("seed", sorted(SEEDS))
@RESEALED
@given(data=st.data())
def test_resealed_mutations_never_crash_a_command(seed: str, data: st.DataObject, tmp_path: Path) -> None:
    doc = _resealed(data.draw(_edited(SEEDS[seed]), label="snapshot"))
    text = json.dumps(doc)
    path = tmp_path / "snap.json"
    path.write_text(text)
    fmt = data.draw(st.sampled_from(FORMATS), label="format")
    stdin = data.draw(st.booleans(), label="stdin")
    args = ["diagnose", "--snapshot", "-" if stdin else str(path), "-o", fmt]
    _outcome(_invoke(args, text.encode() if stdin else None), args)
    for command in _plannable(seed):
        args = _with_path(command, path)
        result = _invoke(args)
        _outcome(result, args)
        if result.exit_code == 0:  # the plan it printed is one apply would accept
            (tmp_path / "plan.json").write_text(result.stdout)
            assert load_plan(tmp_path / "plan.json").snapshot_fingerprint == doc["fingerprint"]


def _list_fields(doc: Any) -> list[tuple[Any, ...]]:
    """One path per list field of `doc` that has items (the first list of its kind)."""
    found: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for path in _paths(doc):
        if isinstance(value := _get(doc, path), list) and value:
            found.setdefault(tuple("[]" if isinstance(k, int) else k for k in path), path)
    return list(found.values())


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_every_list_with_an_item_repeated(seed: str, tmp_path: Path) -> None:
    """Exhaustive where hypothesis samples: each list of the seed with its last item repeated. A list API
    returns each object once, and a repeated subnet or pool would give two plan steps one id (a plan apply
    refuses), so such a snapshot is refused at load; a repeated value (a route, an address) is harmless."""
    path = tmp_path / "snap.json"
    refused = 0
    for field in _list_fields(SEEDS[seed]):
        doc = copy.deepcopy(SEEDS[seed])
        items = _get(doc, field)
        items.append(copy.deepcopy(items[-1]))
        path.write_text(json.dumps(_resealed(doc)))
        for command in [("diagnose", "--snapshot", PLACEHOLDER), *_plannable(seed)]:
            args = _with_path(command, path)
            result = _invoke(args)
            _outcome(result, args)
            refused += result.exit_code == 2
            if result.exit_code == 0 and command[0] != "diagnose":
                (tmp_path / "plan.json").write_text(result.stdout)
                load_plan(tmp_path / "plan.json")
    assert refused, "no repeated object was refused: the identity checks are not reached"


def test_every_seed_has_plans_to_fuzz() -> None:
    """The control for the test above: each seed plans, so its mutations reach planning code."""
    made = {seed: {c[0] + (f" {c[-1]}" if len(c) > 6 else "") for c in _plannable(seed)} for seed in SEEDS}
    assert made == {
        "aks-cni-node-subnet": {"expand", "expand aks-node-pool"},
        "aks-dynamic-pod-subnet": {"expand", "expand aks-pod-subnet"},
        "aks-overlay-pod-cidr": set(),  # an Overlay pod CIDR cannot be expanded: every plan is refused
        "calico-borrowing": {"expand", "expand calico-pool", "reclaim calico"},
        "calico-kubevirt": {"expand", "expand calico-pool", "reclaim calico"},
        "cilium-cluster-pool": {"expand cilium-pool"},
        "cilium-multi-pool": {"expand cilium-pool"},
        "eks-demo-ip": {"expand", "expand custom-networking"},
        "eks-karpenter": {"expand", "expand custom-networking", "expand karpenter-subnets"},
        "eks-roomy": {"expand", "expand custom-networking", "expand prefix-delegation"},
        "eks-subnet-discovery": {
            "expand",
            "expand control-plane-subnets",
            "expand custom-networking",
            "expand subnet-discovery",
        },
        "gke-demo-ip": {"expand", "expand node-pool", "expand cluster-range"},
        "gke-shared-vpc": {"expand", "expand node-pool", "expand cluster-range"},
        "gke-node-subnet-full": {"expand", "expand node-pool", "expand cluster-range", "expand subnet-expand"},
        "whereabouts-named-network": {"reclaim whereabouts"},
        "whereabouts-stale": {"reclaim whereabouts"},
    }


def _resealed_edit(seed: str, path: tuple[Any, ...], value: Any, tmp_path: Path) -> Path:
    doc = copy.deepcopy(SEEDS[seed])
    _get(doc, path[:-1])[path[-1]] = value
    out = tmp_path / f"{seed}.json"
    out.write_text(json.dumps(_resealed(doc)))
    return out


BAD_FIELDS = [
    # The two the audit found (exit 1 before), then one per kind of address field.
    ("whereabouts-stale", ("kube", "whereabouts", "pools", 0, "allocations", 1, "ip"), "x", "diagnose"),
    ("whereabouts-stale", ("kube", "whereabouts", "pools", 0, "allocations", 1, "ip"), "x", "reclaim"),
    ("eks-demo-ip", ("eks", "route_tables", 2, "destinations", 1), "", "expand"),
    ("eks-demo-ip", ("eks", "route_tables", 2, "destinations", 1), "x", "expand"),
    ("eks-demo-ip", ("eks", "subnets", 0, "used", 0), "10.0.208.300", "diagnose"),
    ("eks-demo-ip", ("eks", "vpc", "primary_cidr"), "fd00::/56", "diagnose"),
    ("gke-demo-ip", ("gke", "subnet", "secondary_ranges", 0, "ip_cidr_range"), "10.4.0.0/40", "expand"),
    ("calico-borrowing", ("kube", "calico", "blocks", 0, "cidr"), "10.244.0.1/26", "diagnose"),
    ("whereabouts-stale", ("kube", "whereabouts", "ranges", 0, "range_end"), "10.10.0.99/28", "diagnose"),
]


@pytest.mark.parametrize(("seed", "path", "value", "command"), BAD_FIELDS, ids=lambda v: str(v)[:24])
def test_a_bad_address_is_one_line_naming_field_and_value(
    seed: str, path: tuple[Any, ...], value: str, command: str, tmp_path: Path
) -> None:
    snap = _resealed_edit(seed, path, value, tmp_path)
    args = {
        "diagnose": ["diagnose", "--snapshot", str(snap)],
        "expand": ["expand", "--snapshot", str(snap), "--plan", "--out", "-"],
        "reclaim": ["reclaim", "--snapshot", str(snap), "--plan", "--ipam", "whereabouts", "--out", "-"],
    }[command]
    result = _invoke(args)
    assert result.exit_code == 2, result.stderr
    _outcome(result, args)
    field = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
    assert f"`{field}` is {value!r}, which " in result.stderr, result.stderr


def test_host_bits_are_named_as_such(tmp_path: Path) -> None:
    snap = _resealed_edit("calico-borrowing", ("kube", "calico", "blocks", 0, "cidr"), "10.244.0.1/26", tmp_path)
    with pytest.raises(InvalidInput) as refused:
        load_snapshot(snap)
    assert refused.value.message.endswith(
        "`$.kube.calico.blocks[0].cidr` is '10.244.0.1/26', which has host bits set (the network is 10.244.0.0/26)"
    )


def test_a_dict_key_that_is_no_cidr_is_named(tmp_path: Path) -> None:
    doc = copy.deepcopy(SEEDS["calico-borrowing"])
    doc["kube"]["calico"]["handles"][0]["blocks"] = {"not-a-block": 1}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(_resealed(doc)))
    with pytest.raises(InvalidInput, match=r"`\$\.kube\.calico\.handles\[0\]\.blocks` has key 'not-a-block'"):
        load_snapshot(path)


@pytest.mark.parametrize("fingerprint", ["", None])
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_a_snapshot_without_fingerprint_is_refused(fingerprint: str | None, stdin: bool, tmp_path: Path) -> None:
    """A blank fingerprint used to skip the tamper check, so any edit passed by also blanking it."""
    doc = {k: v for k, v in SEEDS["eks-demo-ip"].items() if k != "fingerprint"}
    if fingerprint is not None:
        doc["fingerprint"] = fingerprint
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    args = ["diagnose", "--snapshot", "-" if stdin else str(path)]
    result = _invoke(args, path.read_bytes() if stdin else None)
    assert result.exit_code == 2
    _outcome(result, args)
    assert "has no fingerprint; make it with `cidrx snapshot`" in result.stderr


def test_a_plan_without_digest_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**PLAN, "digest": ""}))
    with pytest.raises(InvalidInput, match="has no digest"):
        load_plan(path)


def test_a_corrupt_whereabouts_key_is_a_finding_not_a_refusal(tmp_path: Path) -> None:
    """Keys that decode to no address (`ip` "") are the cluster's state, reported, not a bad file."""
    doc = copy.deepcopy(SEEDS["whereabouts-stale"])
    allocation = doc["kube"]["whereabouts"]["pools"][0]["allocations"][1]
    allocation.update(offset="-3", ip="")
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(_resealed(doc)))
    result = _invoke(["diagnose", "--snapshot", str(path), "-o", "json", "--fail-on", "warning"])
    assert result.exit_code == 3, result.stderr
    assert "WHEREABOUTS-CORRUPT-KEY" in {f["id"] for f in json.loads(result.stdout)["findings"]}


def test_dual_stack_whereabouts_pools_are_diagnosed(tmp_path: Path) -> None:
    """Found by the fuzzer: an IPv4 and an IPv6 pool in one snapshot (dual-stack Whereabouts, a valid
    setup) crashed the duplicate-address check, which sorted addresses of both families together."""
    doc = copy.deepcopy(SEEDS["whereabouts-stale"])
    pool = doc["kube"]["whereabouts"]["pools"][0]
    v6 = {**pool, "name": "fd00--120", "range": "fd00::/120", "resource_version": "9"}
    v6["allocations"] = [{"offset": "1", "ip": "fd00::1", "podref": "nstest/web-1", "ifname": "net1"}]
    doc["kube"]["whereabouts"]["pools"].append(v6)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(_resealed(doc)))
    result = _invoke(["diagnose", "--snapshot", str(path), "-o", "json"])
    assert result.exit_code == 3, result.stderr
    capacity = {c["name"]: c for c in json.loads(result.stdout)["capacity"]}
    assert capacity["kube-system/fd00--120"]["used"] == 1


def test_collected_records_keep_to_what_loading_checks() -> None:
    """`cidrx snapshot` must never write what `diagnose --snapshot` refuses: node addresses and the Multus
    network-status annotation are free text to the API server, so the collector keeps only addresses."""
    from cidrx.kube.collect import node_from, pod_state_from
    from cidrx.kube.records import NETWORK_STATUS
    from cidrx.model.kube import KubeSection
    from cidrx.model.validation import check_values

    node = node_from(
        {"metadata": {"name": "n1"}, "status": {"addresses": [{"type": "InternalIP", "address": "n1.internal"}]}}
    )
    status = json.dumps([{"name": "net1", "ips": ["10.10.0.3", "10.10.0.3/28", "junk"]}, {"ips": "10.10.0.4"}])
    pod = pod_state_from(
        {
            "metadata": {"namespace": "ns", "name": "p", "annotations": {NETWORK_STATUS: status}},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}]},
        }
    )
    assert node.internal_ip == ""
    assert pod.ips == ("10.0.0.7", "10.10.0.3") and pod.has_network_status
    check_values(KubeSection(available=True, nodes=(node,), ipam_pods=(pod,)), "collected")
