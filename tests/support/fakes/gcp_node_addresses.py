"""What holds addresses of a subnet's primary range, in the loopback GCP fake: VM instances
(`instances.list` per zone and `instances.aggregatedList`), regional addresses (`addresses.list`) and regional
forwarding rules (`forwardingRules.list`).

Kept apart from gcp_server.py so this part reads on its own: FakeGcp mixes this class in and routes the four
methods here. Every request and answer is checked against the compute v1 discovery document like the rest of
the fake. Shapes follow real dumps of GoogleCloudPlatform/gcpdiag: test-data/gke1/json-dumps/
compute-instances-europe-west4-a.json (commit 16a12c7f13a73f69441e2896dcefe8d370f7fef9: a GKE node with the
`goog-gke-node` label, metadata `cluster-name`, and its `networkIP` on the cluster subnet),
compute-addresses.json (commit e88e0a12f276df72ffd58c62d2d70eacf2dd6278: INTERNAL addresses with a
`subnetwork`) and forwardingRules.json (commit 26c5cb2e3c3ce30e44c2967e7606e0974f7ebe0b: an internal rule's
`IPAddress` and `subnetwork`). Aggregated lists name every known zone, as a warning-only scope when it holds
no instance on the page, like the subnet aggregated list of the fake.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]
COMPUTE_LINK = "https://www.googleapis.com/compute/v1/"


def _subnet_url(project: str, region: str, subnet: str) -> str:
    if subnet.startswith("https://"):
        return subnet
    if subnet.startswith("projects/"):
        return f"{COMPUTE_LINK}{subnet}"
    return f"{COMPUTE_LINK}projects/{project}/regions/{region}/subnetworks/{subnet}"


def _network_url(project: str, network: str) -> str:
    if network.startswith("https://"):
        return network
    if network.startswith("projects/"):
        return f"{COMPUTE_LINK}{network}"
    return f"{COMPUTE_LINK}projects/{project}/global/networks/{network}"


class NodeAddressesMixin:
    """Instances, regional addresses and forwarding rules of FakeGcp: `add_instance`, `add_address`,
    `add_forwarding_rule`, and the handlers of their list methods."""

    _instances: dict[tuple[str, str, str], JSON]
    _regional_addresses: dict[tuple[str, str, str], JSON]
    _forwarding_rules: dict[tuple[str, str, str], JSON]
    _lock: Any
    regions: set[str]
    _list_body: Callable[..., JSON]
    _filtered: Callable[..., list[JSON]]

    def node_address_handlers(self) -> dict[str, Callable[[dict[str, str], dict[str, str], Any], JSON]]:
        return {
            "compute.instances.list": self._instances_list,
            "compute.instances.aggregatedList": self._instances_aggregated,
            "compute.addresses.list": self._regional_addresses_list,
            "compute.forwardingRules.list": self._forwarding_rules_list,
        }

    # ---- seeding ----------------------------------------------------------------------------------

    def add_instance(
        self, project: str, zone: str, name: str, network_ip: str, *, subnet: str, network: str, **extra: Any
    ) -> JSON:
        """Store a VM whose nic0 takes `network_ip` from `subnet` (a name in the zone's region, or a URL /
        `projects/...` path for a Shared VPC host's subnet). `gke_cluster` makes it a GKE node of that cluster."""
        region = zone.rsplit("-", 1)[0]
        cluster = extra.pop("gke_cluster", "")
        data: JSON = {
            "kind": "compute#instance",
            "id": str(secrets.randbits(63)),
            "creationTimestamp": "2023-11-03T06:00:00.000-07:00",
            "name": name,
            "machineType": f"{COMPUTE_LINK}projects/{project}/zones/{zone}/machineTypes/e2-standard-4",
            "status": "RUNNING",
            "zone": f"{COMPUTE_LINK}projects/{project}/zones/{zone}",
            "networkInterfaces": [
                {
                    "kind": "compute#networkInterface",
                    "name": "nic0",
                    "network": _network_url(project, network),
                    "subnetwork": _subnet_url(project, region, subnet),
                    "networkIP": network_ip,
                    "stackType": "IPV4_ONLY",
                }
            ],
            "selfLink": f"{COMPUTE_LINK}projects/{project}/zones/{zone}/instances/{name}",
            **extra,
        }
        if cluster:
            data["labels"] = {**data.get("labels", {}), "goog-gke-node": ""}
            data["metadata"] = {
                "kind": "compute#metadata",
                "items": [{"key": "cluster-name", "value": cluster}, {"key": "cluster-location", "value": region}],
            }
        with self._lock:
            self._instances[(project, zone, name)] = data
        return dict(data)

    def add_address(self, project: str, region: str, address: JSON) -> JSON:
        """Store a regional address (INTERNAL when it names a subnetwork, else EXTERNAL)."""
        data = dict(address)
        name = data["name"]
        if data.get("subnetwork"):
            data["subnetwork"] = _subnet_url(project, region, str(data["subnetwork"]))
            data.setdefault("addressType", "INTERNAL")
            data.setdefault("purpose", "GCE_ENDPOINT")
        data.setdefault("addressType", "EXTERNAL")
        data.setdefault("kind", "compute#address")
        data.setdefault("id", str(secrets.randbits(63)))
        data.setdefault("creationTimestamp", "2023-11-03T06:00:00.000-07:00")
        data.setdefault("status", "IN_USE" if data.get("users") else "RESERVED")
        data.setdefault("networkTier", "PREMIUM")
        data["region"] = f"{COMPUTE_LINK}projects/{project}/regions/{region}"
        data["selfLink"] = f"{COMPUTE_LINK}projects/{project}/regions/{region}/addresses/{name}"
        with self._lock:
            self._regional_addresses[(project, region, name)] = data
        return dict(data)

    def add_forwarding_rule(self, project: str, region: str, rule: JSON) -> JSON:
        """Store a regional forwarding rule (an internal passthrough load balancer's unless told)."""
        data = dict(rule)
        name = data["name"]
        if data.get("subnetwork"):
            data["subnetwork"] = _subnet_url(project, region, str(data["subnetwork"]))
        if data.get("network"):
            data["network"] = _network_url(project, str(data["network"]))
        data.setdefault("kind", "compute#forwardingRule")
        data.setdefault("id", str(secrets.randbits(63)))
        data.setdefault("creationTimestamp", "2023-11-03T06:00:00.000-07:00")
        data.setdefault("IPProtocol", "TCP")
        data.setdefault("loadBalancingScheme", "INTERNAL")
        data.setdefault("networkTier", "PREMIUM")
        data.setdefault("fingerprint", "zUL2wdvikcQ=")
        data["region"] = f"{COMPUTE_LINK}projects/{project}/regions/{region}"
        data["selfLink"] = f"{COMPUTE_LINK}projects/{project}/regions/{region}/forwardingRules/{name}"
        with self._lock:
            self._forwarding_rules[(project, region, name)] = data
        return dict(data)

    # ---- handlers (lock held) ---------------------------------------------------------------------

    def _instances_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        from tests.support.fakes.gcp_server import _page

        project, zone = params["project"], params["zone"]
        objs = [o for k, o in sorted(self._instances.items()) if k[:2] == (project, zone)]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body("compute#instanceList", f"projects/{project}/zones/{zone}/instances", items, token)

    def _instances_aggregated(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        from tests.support.fakes.gcp_server import _page

        project = params["project"]
        objs = [(k[1], o) for k, o in sorted(self._instances.items()) if k[0] == project]
        kept = {id(o) for o in self._filtered([o for _, o in objs], query)}
        items, token = _page([((zone, o["name"]), (zone, o)) for zone, o in objs if id(o) in kept], query)
        zones = sorted({f"{r}-{z}" for r in self.regions for z in "abc"} | {k[1] for k in self._instances})
        scopes: JSON = {}
        for zone in zones:
            scope = f"zones/{zone}"
            found = [o for z, o in items if z == zone]
            if found:
                scopes[scope] = {"instances": found}
            else:
                scopes[scope] = {
                    "warning": {
                        "code": "NO_RESULTS_ON_PAGE",
                        "message": f"There are no results for scope '{scope}' on this page.",
                        "data": [{"key": "scope", "value": scope}],
                    }
                }
        out = self._list_body("compute#instanceAggregatedList", f"projects/{project}/aggregated/instances", [], token)
        out["items"] = scopes
        return out

    def _regional_addresses_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        from tests.support.fakes.gcp_server import _page

        project, region = params["project"], params["region"]
        objs = [o for k, o in sorted(self._regional_addresses.items()) if k[:2] == (project, region)]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body("compute#addressList", f"projects/{project}/regions/{region}/addresses", items, token)

    def _forwarding_rules_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        from tests.support.fakes.gcp_server import _page

        project, region = params["project"], params["region"]
        objs = [o for k, o in sorted(self._forwarding_rules.items()) if k[:2] == (project, region)]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body(
            "compute#forwardingRuleList", f"projects/{project}/regions/{region}/forwardingRules", items, token
        )
