"""What every GKE step executor and undo shares: the clients a plan is applied with, waiting while GKE or GCE
is busy with another operation, polling the operations writes return, and the cluster checks undos make.

Why a module of its own: each action family (cidrx.providers.gke.actions.<family>) holds its own executor and
undo; these are the few helpers all of them use. All mutations return operations, polled through
`ctx.wait_until` so progress shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import Step

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.providers.gke.api import GkeApi


BUSY_TIMEOUT = 60 * 60.0


@dataclass(frozen=True)
class GkeApis:
    """The clients a GKE plan is applied with: GKE/GCE, and the cluster's Kubernetes API (None: not reached)."""

    gke: GkeApi
    kube: KubeApi | None


def gke_api(ctx: StepContext) -> GkeApi:
    """The GKE/GCE client of the apply."""
    apis: GkeApis = ctx.apis
    return apis.gke


def is_busy(exc: CloudError) -> bool:
    """The write was refused only because another operation holds the resource: wait and retry.

    GKE serialises mutations of a cluster (400 FAILED_PRECONDITION "Cluster is running incompatible
    operation ..."), GCE those of a subnet (400 reason resourceNotReady "The resource ... is not ready").
    """
    from cidrx.providers.gke.api import ClusterBusy

    return isinstance(exc, ClusterBusy) or "is not ready" in exc.message.lower()


def when_free(ctx: StepContext, what: str, write: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run `write`, waiting (with progress) while the target is busy with another operation."""

    def attempt() -> dict[str, Any] | None:
        try:
            return write()
        except CloudError as exc:
            if is_busy(exc):
                return None
            raise

    return ctx.wait_until(f"{what} (another operation is running)", attempt, timeout=BUSY_TIMEOUT, interval=5.0)


def wait_operation(ctx: StepContext, op: dict[str, Any], what: str, timeout: float) -> None:
    """Poll an operation handle until DONE; an operation that ended in error raises CloudError."""
    api = gke_api(ctx)

    def probe() -> bool | None:
        state = api.get_operation(op)
        if not state.get("done"):
            return None
        if state.get("error"):
            raise CloudError(f"{what} failed: operation {op.get('name')} ended with an error: {state['error']}")
        return True

    ctx.wait_until(what, probe, timeout=timeout, interval=2.0, max_interval=15.0)


def settle_earlier_operation(ctx: StepContext, step: Step) -> None:
    """Before writing again, let an operation an interrupted run started for this step finish (the
    journal's hint), so the new write neither races it nor is refused as busy. Its outcome does not
    matter: `check` has already looked at the cloud and found the step not done."""
    op = (ctx.journal_outputs.get(step.id) or {}).get("operation")
    if not isinstance(op, dict) or "name" not in op:
        return
    api = gke_api(ctx)
    ctx.wait_until(
        f"the operation {op['name']} of an earlier run",
        lambda: True if api.get_operation(op).get("done") else None,
        timeout=BUSY_TIMEOUT,
        interval=2.0,
        max_interval=15.0,
    )


def cluster_api(ctx: StepContext) -> Any:
    """The cluster's Kubernetes API (KubeApi), None when the apply could not reach it (undos then refuse)."""
    return ctx.apis.kube


def no_cluster(what: str) -> str:
    """Why an undo cannot decide whether `what` is in use."""
    return f"cannot see whether {what} is in use without cluster access (drop --no-kube, or pass --kubeconfig)"


def pods_in(ctx: StepContext, cidr: str) -> list[str]:
    """The pods with an address in `cidr` (the caller has checked the cluster was reached)."""
    pods: list[str] = cluster_api(ctx).pods_in(cidr)
    return pods


def until_gone(
    undo: Any, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext, what: str, timeout: float
) -> None:
    """Wait for the operation the undo started, then until its `find` sees nothing left."""
    if outputs.get("operation"):
        wait_operation(ctx, outputs["operation"], what, timeout)
    ctx.wait_until(
        what,
        lambda: True if undo.find(step, params, ctx) is None else None,
        timeout=timeout,
        interval=2.0,
        max_interval=15.0,
    )
