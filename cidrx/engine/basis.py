"""The basis of a plan, re-read: every fact a plan lists under `basis` is compared with what the estate says now.

Why it exists: a plan prints its basis as "apply refuses the plan if any of this changed", so apply must hold
every key of it, not only the facts a strategy's own drift check happens to look at. Each plan kind declares a
reader (`Strategy.basis`) that gives, for every key of its plans' basis, the value a fresh snapshot shows
(with what the plan itself already did discounted: its own CIDR, tagged subnets, labelled objects); this
module compares the two. A key the reader does not give back cannot be enforced, and the apply refuses the
plan rather than print a guarantee it does not keep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_MISSING = object()


def _canonical(value: Any) -> Any:
    """`value` with lists of plain values compared as sets (a basis lists CIDRs, names, groups: their order
    is the API's, not a fact) and everything else as it is."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_canonical(v) for v in value]
        if all(isinstance(v, str | int | float | bool) or v is None for v in items):
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
        return items
    return value


def _show(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _differences(key: str, planned: Any, now: Any) -> list[str]:
    """One line per entry of `key` that differs (a mapping entry by entry, anything else as a whole)."""
    if isinstance(planned, dict) and isinstance(now, dict):
        out = []
        for k in sorted(set(planned) | set(now), key=str):
            was, is_ = planned.get(k, _MISSING), now.get(k, _MISSING)
            if was is _MISSING:
                out.append(f"{key} gained {k} ({_show(is_)})")
            elif is_ is _MISSING:
                out.append(f"{key} lost {k} (was {_show(was)})")
            elif _canonical(was) != _canonical(is_):
                out.append(f"{key} {k} was {_show(was)}, now {_show(is_)}")
        return out
    if _canonical(planned) == _canonical(now):
        return []
    return [f"{key} was {_show(planned)}, now {_show(now)}"]


def basis_problems(basis: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(what changed, keys the reader gave no value for): each key of `basis` against `current`."""
    problems: list[str] = []
    unchecked: list[str] = []
    for key, planned in basis.items():
        if key not in current:
            unchecked.append(key)
            continue
        problems += _differences(key, planned, current[key])
    return problems, unchecked


STALE = "the plan is stale: "
NOTHING = ". Nothing was applied; make a new plan"


def stale_message(problems: list[str]) -> str:
    return STALE + "; ".join(problems) + NOTHING


def merged_message(message: str, problems: list[str]) -> str:
    """A strategy's own StalePlan message with the basis problems it did not already name added."""
    fresh = [p for p in problems if p not in message]
    if not fresh:
        return message
    if message.startswith(STALE) and message.endswith(NOTHING):
        return message[: -len(NOTHING)] + "; " + "; ".join(fresh) + NOTHING
    return message.rstrip(".") + "; also: " + "; ".join(fresh)
