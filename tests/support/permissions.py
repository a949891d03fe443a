"""Reading what `cidrx permissions` prints, and how the Kubernetes authorizer names a request: shared by the
tests that check the printed grants against the calls cidrx really makes (test_permissions*.py)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.cli import run
from tests.support.fakes.kube_server import FakeKubeServer


def printed(provider: str, purpose: str = "all") -> dict[str, Any]:
    result = run("permissions", f"--{provider}", "--for", purpose, "-o", "json")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def iam_actions(policy: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for st in policy["Statement"]:
        actions = st["Action"]
        out |= {actions} if isinstance(actions, str) else set(actions)
    return out


def request_to_rbac(server: FakeKubeServer, method: str, path: str) -> tuple[str, str, str, str | None] | None:
    """(verb, group, resource, name) of a request path the way the API server's authorizer sees it; None for
    a non-resource path."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else None)
    verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, "delete")
    assert server.plural_of(path) == resource
    return verb, group, resource, name
