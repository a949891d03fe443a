"""VPC firewall rules in the loopback GCP fake (compute v1 `firewalls.list/get/patch`).

Kept apart from gcp_server.py so the firewall part reads on its own: FakeGcp mixes this class in and
routes the three methods here. Shapes follow real `compute#firewall` objects (GoogleCloudPlatform/gcpdiag
test-data/gke1/json-dumps/compute-effective-firewalls-default.json at 06ec8584ec5919df53a4e6841ad2ad74a5f045b2:
GKE's own `gke-<cluster>-<hash>-all` rule allows every protocol from the cluster's pod range to the node
tag, `-vms` from the node ranges, `-master` from the control plane /28). Requests and answers are checked
against the discovery document like every other method of the fake. The Firewall resource carries no
`fingerprint` (compute v1 discovery document, schema Firewall), so a patch is last-writer-wins: the fake,
like GCE, replaces the lists it is sent (JSON merge patch).
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]
COMPUTE_LINK = "https://www.googleapis.com/compute/v1/"
_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
# Fields a patch may change (the rest is identity or output only).
_PATCHABLE = (
    "allowed",
    "denied",
    "description",
    "destinationRanges",
    "disabled",
    "logConfig",
    "priority",
    "sourceRanges",
    "sourceServiceAccounts",
    "sourceTags",
    "targetServiceAccounts",
    "targetTags",
)


class FirewallsMixin:
    """Firewall rules of FakeGcp: `add_firewall`, `firewall`, and the handlers of the three methods."""

    _firewalls: dict[tuple[str, str], JSON]
    _lock: Any
    _new_compute_op: Callable[..., JSON]
    _list_body: Callable[..., JSON]
    _filtered: Callable[..., list[JSON]]

    def firewall_handlers(self) -> dict[str, Callable[[dict[str, str], dict[str, str], Any], JSON]]:
        return {
            "compute.firewalls.list": self._firewalls_list,
            "compute.firewalls.get": self._firewall_get,
            "compute.firewalls.patch": self._firewall_patch,
        }

    def add_firewall(self, project: str, rule: JSON) -> JSON:
        """Store a firewall rule; fills kind, id, creationTimestamp, selfLink, the network URL, defaults."""
        data = dict(rule)
        name = data["name"]
        network = str(data.get("network") or "default")
        if not network.startswith("https://"):
            short = network.rsplit("/", 1)[-1]
            data["network"] = f"{COMPUTE_LINK}projects/{project}/global/networks/{short}"
        data.setdefault("kind", "compute#firewall")
        data.setdefault("id", str(secrets.randbits(63)))
        data.setdefault("creationTimestamp", "2023-05-08T09:00:21.498-07:00")
        data.setdefault("description", "")
        data.setdefault("priority", 1000)
        data.setdefault("direction", "INGRESS")
        data.setdefault("disabled", False)
        data.setdefault("logConfig", {"enable": False})
        data["selfLink"] = f"{COMPUTE_LINK}projects/{project}/global/firewalls/{name}"
        with self._lock:
            self._firewalls[(project, name)] = data
        return dict(data)

    def firewall(self, project: str, name: str) -> JSON | None:
        with self._lock:
            rule = self._firewalls.get((project, name))
            return dict(rule) if rule is not None else None

    def _firewall_or_404(self, project: str, name: str) -> JSON:
        from tests.support.fakes.gcp_server import GcpError

        rule = self._firewalls.get((project, name))
        if rule is None:
            raise GcpError(404, f"The resource 'projects/{project}/global/firewalls/{name}' was not found")
        return rule

    def _firewalls_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        from tests.support.fakes.gcp_server import _page

        project = params["project"]
        objs = [r for (p, _), r in sorted(self._firewalls.items()) if p == project]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body("compute#firewallList", f"projects/{project}/global/firewalls", items, token)

    def _firewall_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        return self._firewall_or_404(params["project"], params["firewall"])

    def _firewall_patch(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        from tests.support.fakes.gcp_server import GcpError

        project, name = params["project"], params["firewall"]
        rule = self._firewall_or_404(project, name)
        change: JSON = dict(body or {})
        if change.get("name", name) != name or not _NAME_RE.match(name):
            raise GcpError(400, f"Invalid value for field 'resource.name': '{change.get('name')}'.")
        for key in ("sourceRanges", "destinationRanges"):
            for cidr in change.get(key) or []:
                try:
                    ipaddress.ip_network(cidr, strict=False)
                except ValueError:
                    raise GcpError(400, f"Invalid value for field 'resource.{key}': '{cidr}'.") from None
        if "direction" in change and change["direction"] != rule.get("direction", "INGRESS"):
            raise GcpError(400, "Invalid value for field 'resource.direction': the direction cannot be changed.")
        updated = {**rule, **{k: v for k, v in change.items() if k in _PATCHABLE}}
        if updated.get("allowed") and updated.get("denied"):
            raise GcpError(400, "A firewall rule has either allowed or denied entries, not both.")

        def effect() -> None:
            self._firewalls[(project, name)] = updated

        return self._new_compute_op((project, None), "patch", rule, effect, (project, "firewall", name))
