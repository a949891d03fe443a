"""The one check that holds a loaded snapshot to what its models promise, and the field types it reads.

Why it exists: analysis and planning trust the models: they parse address fields with `ipaddress` and key
steps by object names. Files are the untrusted way in (a hand-edited snapshot can be re-fingerprinted), so
`check_values` walks a decoded document once and turns the first bad value into one InvalidInput line
naming its path, instead of a crash deep in analysis or a plan that apply refuses. Two kinds of rule:

- address fields are typed with the aliases below: plain `str` for mypy and msgspec (the JSON and the
  fingerprints are unchanged), with the rule riding along as msgspec `Meta` (it also describes the field
  in the JSON schema);
- a model class may define `invariant_problem(self) -> str | None` for a rule across its fields (an
  IPAMBlock has one allocation slot per address; a section lists each cloud object once); the walk calls
  it once the fields themselves are valid.

Live collection does not go through this check: the collectors are the boundary for cloud and cluster
data and derive or filter what they copy (e.g. an IPAM allocation key becomes `ip` "" when it
decodes to no address); what they keep as raw evidence (a pool's configured range) is typed plain `str`.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from msgspec import Meta

from cidrx.errors import InvalidInput

_RULE_KEY = "cidrx.address"
_MAX_SHOWN = 60  # characters of a bad value quoted in the error


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# Dotted quad without leading zeros, optionally with a prefix length 0-32: always valid for ipaddress too.
CANONICAL_V4 = re.compile(rf"({_OCTET}(?:\.{_OCTET}){{3}})(?:/(3[0-2]|[12]?[0-9]))?")


def v4_int(quad: str) -> int:
    a, b, c, d = quad.split(".")
    return (int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d)


@dataclass(frozen=True)
class AddressRule:
    """What an address field may hold. Networks must have their host bits zero (the form the clouds and
    Kubernetes write, and what `netmath.parse_cidr` demands)."""

    what: str  # for messages and the schema: "an IPv4 CIDR", ...
    network: bool = False  # "A.B.C.D/N" (or IPv6) accepted
    address: bool = False  # a bare address accepted
    v4_only: bool = False
    empty: bool = False  # "" accepted (the field is optional)

    def accepts(self, text: str) -> bool:
        if not text:
            return self.empty
        canonical = CANONICAL_V4.fullmatch(text)
        if canonical is not None:  # the common case, without ipaddress (a 60,000-pod snapshot has many)
            bits = canonical[2]
            if bits is None:
                return self.address
            host = (1 << (32 - int(bits))) - 1
            return self.network and v4_int(canonical[1]) & host == 0
        try:
            if "/" in text:
                version = ipaddress.ip_network(text).version if self.network else 0
            else:
                version = ipaddress.ip_address(text).version if self.address else 0
        except ValueError:
            return False
        return version == 4 or (version == 6 and not self.v4_only)

    def refusal(self, text: str) -> str:
        """Why `text` is refused, for the error line."""
        shown = text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."
        if self.network and "/" in text:
            try:
                loose = ipaddress.ip_network(text, strict=False)
            except ValueError:
                loose = None
            if loose is not None and str(loose) != text and (loose.version == 4 or not self.v4_only):
                return f"{shown!r}, which has host bits set (the network is {loose})"
        return f"{shown!r}, which is not {self.what}"


def _alias(rule: AddressRule) -> Meta:
    description = rule.what + (' (or "" when unset)' if rule.empty else "")
    return Meta(description=description, extra={_RULE_KEY: rule})


_IPV4_CIDR = AddressRule("an IPv4 CIDR such as 10.0.0.0/16", network=True, v4_only=True)
_IP_CIDR = AddressRule("an IPv4 or IPv6 CIDR", network=True)
_IP_ADDR = AddressRule("an IPv4 or IPv6 address", address=True)
_IPV4_ADDR_OR_CIDR = AddressRule("an IPv4 address or CIDR", network=True, address=True, v4_only=True)

Ipv4Cidr = Annotated[str, _alias(_IPV4_CIDR)]
Ipv4CidrOrEmpty = Annotated[str, _alias(dataclasses.replace(_IPV4_CIDR, empty=True))]
Ipv4AddrOrCidr = Annotated[str, _alias(_IPV4_ADDR_OR_CIDR)]
Ipv4AddrOrCidrOrEmpty = Annotated[str, _alias(dataclasses.replace(_IPV4_ADDR_OR_CIDR, empty=True))]
IpCidr = Annotated[str, _alias(_IP_CIDR)]
IpCidrOrEmpty = Annotated[str, _alias(dataclasses.replace(_IP_CIDR, empty=True))]
IpAddr = Annotated[str, _alias(_IP_ADDR)]
IpAddrOrEmpty = Annotated[str, _alias(dataclasses.replace(_IP_ADDR, empty=True))]


def is_ip_address(text: str) -> bool:
    """Whether `text` is an IPv4 or IPv6 address as an `IpAddr` field accepts it (for collectors that
    filter free-text values so that every snapshot they write loads again)."""
    return _IP_ADDR.accepts(text)


T = TypeVar("T")


def repeated(field: str, items: Iterable[T], key: Callable[[T], Hashable], what: str) -> str | None:
    """For an `invariant_problem`: the first item of `field` whose `key` an earlier item has, as text;
    None when every key is distinct. A list API returns each object once, so a repeat was made by hand
    (and would give two plan steps one id)."""
    first: dict[Hashable, int] = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in first:
            return f"lists {what} {k!r} twice ({field}[{first[k]}] and {field}[{i}])"
        first[k] = i
    return None


def first_problem(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


@dataclass(frozen=True)
class Problem:
    path: str  # e.g. $.kube.<ipam>.pools[0].allocations[1].ip
    text: str  # what is wrong there, e.g. "is 'x', which is not an IPv4 or IPv6 address"


Checker = Callable[[Any, str], Iterator[Problem]]


def _rule_of(hint: Any) -> AddressRule | None:
    if typing.get_origin(hint) is not Annotated:
        return None
    for meta in hint.__metadata__:
        if isinstance(meta, Meta) and meta.extra and _RULE_KEY in meta.extra:
            rule: AddressRule = meta.extra[_RULE_KEY]
            return rule
    return None


def _checker(hint: Any) -> Checker | None:
    """A function yielding the problems in a value of type `hint`; None when the type can have none."""
    rule = _rule_of(hint)
    if rule is not None:

        def scalar(value: Any, path: str) -> Iterator[Problem]:
            if isinstance(value, str) and not rule.accepts(value):
                yield Problem(path, "is " + rule.refusal(value))

        return scalar
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_checker(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [c for a in args if a is not type(None) and (c := _checker(a)) is not None]
        if not inner:
            return None

        def either(value: Any, path: str) -> Iterator[Problem]:
            if value is not None:
                for check in inner:  # the model's unions pair at most one checked type with None
                    yield from check(value, path)

        return either
    if origin in (tuple, list) and args:
        item, item_rule = _checker(args[0]), _rule_of(args[0])
        if item is None:
            return None

        def items(value: Any, path: str) -> Iterator[Problem]:
            for i, v in enumerate(value):
                # A list of addresses is checked in place: no generator or path per item unless one is bad.
                if item_rule is None or (isinstance(v, str) and not item_rule.accepts(v)):
                    yield from item(v, f"{path}[{i}]")

        return items
    if origin is dict and len(args) == 2:
        key_rule, val = _rule_of(args[0]), _checker(args[1])
        if key_rule is None and val is None:
            return None

        def entries(value: Any, path: str) -> Iterator[Problem]:
            for k, v in value.items():
                if key_rule is not None and isinstance(k, str) and not key_rule.accepts(k):
                    yield Problem(path, "has key " + key_rule.refusal(k))
                if val is not None:
                    yield from val(v, f"{path}[{k!r}]")

        return entries
    return None


_CHECKERS: dict[type, Checker | None] = {}  # per model class, built on first use


def _dataclass_checker(cls: type) -> Checker | None:
    if cls not in _CHECKERS:
        _CHECKERS[cls] = _build_dataclass_checker(cls)
    return _CHECKERS[cls]


def _build_dataclass_checker(cls: type) -> Checker | None:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = [(f.name, c) for f in dataclasses.fields(cls) if (c := _checker(hints[f.name])) is not None]
    invariant: Callable[[Any], str | None] | None = getattr(cls, "invariant_problem", None)
    if not fields and invariant is None:
        return None

    def walk(value: Any, path: str) -> Iterator[Problem]:
        clean = True
        for name, check in fields:
            for problem in check(getattr(value, name), f"{path}.{name}"):
                clean = False
                yield problem
        if clean and invariant is not None and (text := invariant(value)):
            yield Problem(path, text)

    return walk


def problems(doc: Any) -> Iterator[Problem]:
    """Every address field of the model object `doc` (e.g. a decoded snapshot) that breaks its rule, and
    every object whose fields break an invariant across them."""
    check = _dataclass_checker(type(doc))
    if check is not None:
        yield from check(doc, "$")


def check_values(doc: Any, what: str, *, hint: str | None = None) -> None:
    """Raise InvalidInput naming the first problem of `doc`; `what` names the document, `hint` says how to
    get a good one."""
    for problem in problems(doc):
        raise InvalidInput(f"{what}: `{problem.path}` {problem.text}", hint=hint)
