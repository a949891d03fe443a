"""Which pods a node drain moves, as `kubectl drain --ignore-daemonsets` chooses them.

Why it exists: a migration off full address space cordons a node and evicts its pods with the Eviction API.
Pods a DaemonSet owns are left (the DaemonSet controller ignores unschedulable and would put them back), and
so are mirror pods (the kubelet's static pods, annotated `kubernetes.io/config.mirror`: the API server cannot
delete what the kubelet runs from a file). Finished pods (Succeeded/Failed) hold no address and need no move.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
FINISHED = ("Succeeded", "Failed")


def why_left(pod: dict[str, Any]) -> str | None:
    """Why a drain leaves `pod` where it is (a DaemonSet pod, a mirror pod, finished), or None to evict it."""
    meta = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return "mirror pod"
    if any(o.get("kind") == "DaemonSet" and o.get("controller") for o in meta.get("ownerReferences") or ()):
        return "DaemonSet pod"
    if (pod.get("status") or {}).get("phase") in FINISHED:
        return "finished"
    return None


def to_evict(pods: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(namespace, name) of the pods a drain evicts, in a stable order."""
    return sorted(
        ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", ""))
        for p in pods
        if why_left(p) is None
    )
