"""PodDisruptionBudgets and the pod eviction subresource for the fake Kubernetes API server.

Why it exists: a migration must move pods with the Eviction API (policy/v1 `Eviction`, POSTed to a pod's
`eviction` subresource) and honour PodDisruptionBudgets; tests need an API server that answers as a real one
does (https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ and the policy/v1
PodDisruptionBudget reference): the eviction is refused with 429 TooManyRequests while the pod's budget allows
no disruption, 500 when more than one budget selects the pod, and otherwise the pod is deleted (the fake
answers 201 Created with a Success Status, as the API server's create handler does; the concept page speaks
of "200 OK": clients accept any 2xx). A pod no budget selects, or one that has finished (Succeeded/Failed),
is always evicted.

A budget's status is computed from the pods its selector matches, as the disruption controller does:
expectedPods is the number of pods selected (the controller uses the owning workload's scale; the fake has
no controllers), desiredHealthy comes from minAvailable (an int, or a percentage of expectedPods rounded up)
or maxUnavailable (expectedPods minus it, a percentage rounded up), currentHealthy counts Ready pods not being
deleted, and disruptionsAllowed is currentHealthy - desiredHealthy, never below 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

JSON = dict[str, Any]

FINISHED = ("Succeeded", "Failed")


def selects(selector: JSON | None, labels: dict[str, str]) -> bool:
    """policy/v1: a null selector selects no pod, an empty one every pod of the namespace."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _healthy(pod: JSON) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def budget_status(pdb: JSON, pods: Iterable[JSON]) -> JSON:
    """The status the disruption controller would write for `pdb`, given the pods of its namespace."""
    spec = pdb.get("spec") or {}
    selected = [p for p in pods if selects(spec.get("selector"), (p.get("metadata") or {}).get("labels") or {})]
    expected = len(selected)
    healthy = sum(1 for p in selected if _healthy(p))
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected))
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected)
    else:
        raise ValueError("the fake's PodDisruptionBudgets need minAvailable or maxUnavailable")
    return {
        "observedGeneration": (pdb.get("metadata") or {}).get("generation", 1),
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": max(0, healthy - desired),
    }


def budgets_of(pod: JSON, pdbs: Iterable[JSON]) -> list[JSON]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return [b for b in pdbs if selects((b.get("spec") or {}).get("selector"), labels)]
