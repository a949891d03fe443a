"""What every AKS step executor and undo shares: the clients a plan is applied with, and waiting on ARM's
long-running operations.

Why a module of its own: each action family (cidrx.providers.aks.actions.<family>) holds its own executor and
undo; these are the few helpers all of them use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import StepContext

if TYPE_CHECKING:
    from cidrx.providers.aks.api import AksApi

# Creating an agent pool takes minutes (VM scale set, node bootstrap); subnets and address spaces seconds.
POOL_TIMEOUT = 30 * 60.0
NETWORK_TIMEOUT = 10 * 60.0


def aks_api(ctx: StepContext) -> AksApi:
    api: AksApi = ctx.apis.aks
    return api


def cluster_api(ctx: StepContext) -> Any:
    """The cluster's Kubernetes API (KubeApi), None when the apply could not reach it (undos then refuse)."""
    return ctx.apis.kube


def no_cluster(what: str) -> str:
    return f"cannot see whether {what} is in use without cluster access (drop --no-kube, or pass --kubeconfig)"


def wait(ctx: StepContext, poller: Any, what: str, timeout: float) -> None:
    """Wait for an ARM long-running operation (azure-core polls its Azure-AsyncOperation URL), with progress."""
    from cidrx.providers.aks.api import wait_poller

    ctx.progress.note(f"waiting for {what}")
    wait_poller(poller, what, timeout)
