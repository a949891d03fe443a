"""Adding one CIDR to a list of ranges someone else owns (a firewall rule's ranges, ip-masq-agent's
nonMasqueradeCIDRs), and taking it out again.

Why a module of its own: both list-widening action families (cidrx.providers.gke.actions.firewall and
.ip_masq) decide the same way whether their step is done, whether the list is still the one the plan saw,
and whether the CIDR in it is the plan's to remove.
"""

from __future__ import annotations

from typing import Any

from cidrx import netmath
from cidrx.errors import CidrxError, StalePlan


def covered(ranges: list[str], cidr: str) -> bool:
    """Some range of `ranges` contains `cidr` (unparsable entries are skipped)."""
    new = netmath.parse_cidr(cidr)
    for text in ranges:
        try:
            if new.subnet_of(netmath.parse_cidr(text)):
                return True
        except (CidrxError, ValueError, TypeError):
            continue
    return False


def already_or_unchanged(now: list[str], params: dict[str, Any], where: str, what: str) -> bool:
    """True when the list `now` covers the planned CIDR already; StalePlan when it is no longer the list the
    plan saw (someone else changed it: deciding again is the user's call); False when the step must add it."""
    if covered(now, params["cidr"]):
        return True
    if set(now) != set(params["seen"]):
        raise StalePlan(
            f"{where} changed since the plan was made: its {what} are now {', '.join(now) or 'empty'}, not "
            f"{', '.join(params['seen'])}; make a new plan"
        )
    return False


# The list-widening steps (a firewall rule's ranges, ip-masq-agent's nonMasqueradeCIDRs) are taken back by
# removing exactly the planned CIDR, and only when it was not in the list the plan saw (`seen`): a range someone
# else had listed stays. Nothing "uses" a list entry; pods in the range hold the secondary range's undo back,
# and every undo is checked before the first one runs.


def added_by_plan(now: list[str], params: dict[str, Any]) -> bool:
    """The planned CIDR is in the list `now` and was not in the list the plan saw."""
    return params["cidr"] in now and params["cidr"] not in params["seen"]
