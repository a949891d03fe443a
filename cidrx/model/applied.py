"""A plan cidrx applied, as the estate shows it: recognised by the plan tag/label on what it created.

Why it exists: after an expansion, the full node subnets and ranges are still full until the workloads move;
an hourly `expand --plan` must not stack a second expansion while the first one's new space is empty. Each
provider finds its applied plans in a snapshot (`ProviderSpec.applied_plans`) and says how much room their
new space has left.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AppliedPlan:
    """Plan `plan_id` (the tag/label value) created `space` (e.g. "subnets subnet-a, subnet-b"), of `size`
    addresses of which `free` are still free, at `applied_at` (RFC 3339; "" when the estate does not show it)."""

    plan_id: str
    space: str
    size: int
    free: int
    applied_at: str = ""

    @property
    def when(self) -> str:
        """ " applied <time>" or "", to follow the plan id in a sentence."""
        return f" applied {self.applied_at}" if self.applied_at else ""
