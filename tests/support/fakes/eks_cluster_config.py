"""A project-owned stand-in, in front of moto's stub, for the EKS cluster operations moto 5 gets wrong or lacks.

moto's UpdateClusterConfig replaces the cluster's whole `resourcesVpcConfig` with what was sent, answers with
the cluster instead of an update, checks nothing, and moto has no DescribeUpdate for cluster updates nor
`health.issues` on clusters. This fake (installed with `eks_estate(wrap_moto=...)`, so botocore still builds,
signs and parses every request) answers:

- UpdateClusterConfig with `resourcesVpcConfig.subnetIds` / `securityGroupIds`: validated as EKS does (EKS API
  reference, UpdateClusterConfig and InvalidParameterException; Amazon EKS User Guide, "View Amazon EKS networking
  requirements for VPC and subnets": every subnet exists in the cluster's VPC, in the Availability Zones the
  cluster was created with, in at least two zones; one update at a time, else ResourceInUseException), merged
  into moto's cluster (the other fields stay), answered as an update of type `VpcConfigUpdate` with params
  `Subnets` / `SecurityGroups` (JSON lists as strings), status `InProgress`;
- DescribeUpdate of those updates: `Successful` from the first look on (or once DescribeCluster was asked);
- DescribeCluster: moto's answer plus `health.issues` as seeded with `put_issue` (shape: `ClusterIssue`, code,
  message, resourceIds).
Anything else goes to moto.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.support.fakes.eks_addons import raw_response

ACCOUNT = "123456789012"


@dataclass
class FakeClusterConfig:
    region: str
    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> {"cluster", "update"}
    created_zones: dict[str, set[str]] = field(default_factory=dict)  # cluster -> zones of its first subnets
    calls: list[str] = field(default_factory=list)

    def put_issue(self, cluster: str, code: str, message: str, resource_ids: list[str]) -> None:
        self.issues.setdefault(cluster, []).append({"code": code, "message": message, "resourceIds": resource_ids})

    def wrap(self, stub: Callable[..., Any]) -> Callable[..., Any]:
        def handler(event_name: str, request: Any, **kwargs: Any) -> Any:
            if event_name.endswith("eks.UpdateClusterConfig"):
                return self._update_cluster_config(request)
            if event_name.endswith("eks.DescribeUpdate"):
                parts = _path(request)
                if len(parts) >= 4 and parts[3] in self.updates:
                    return self._describe_update(request, parts[3])
            answer = stub(event_name=event_name, request=request, **kwargs)
            if event_name.endswith("eks.DescribeCluster") and answer is not None:
                self._settle(_path(request)[1])
                return self._with_health(request, answer)
            return answer

        handler.moto_stub = getattr(stub, "moto_stub", stub)  # type: ignore[attr-defined]
        return handler

    # -- moto's state ------------------------------------------------------------------------------

    def _cluster(self, name: str) -> Any:
        from moto.eks.models import eks_backends

        return eks_backends[ACCOUNT][self.region].clusters.get(name)

    def _subnets(self) -> dict[str, Any]:
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[ACCOUNT][self.region]
        return {s.id: s for s in backend.describe_subnets()}

    # -- handlers ----------------------------------------------------------------------------------

    def _update_cluster_config(self, request: Any) -> Any:
        self.calls.append("UpdateClusterConfig")
        name = _path(request)[1]
        cluster = self._cluster(name)
        if cluster is None:
            return _error(request, 404, "ResourceNotFoundException", f"No cluster found for name: {name}.")
        body = json.loads(request.body or b"{}")
        vpc = body.get("resourcesVpcConfig") or {}
        cfg = cluster.resources_vpc_config
        subnets = self._subnets()
        current = [subnets[s] for s in cfg.get("subnetIds") or () if s in subnets]
        zones = self.created_zones.setdefault(name, {s.availability_zone for s in current})
        if any(u["cluster"] == name and u["update"]["status"] == "InProgress" for u in self.updates.values()):
            return _error(request, 409, "ResourceInUseException", f"Cluster {name} has an update in progress.")
        params = []
        if "subnetIds" in vpc:
            wanted = [str(s) for s in vpc["subnetIds"]]
            vpc_id = current[0].vpc_id if current else ""
            for sid in wanted:
                s = subnets.get(sid)
                if s is None:
                    return _error(request, 400, "InvalidParameterException", f"The subnet ID '{sid}' does not exist")
                if s.vpc_id != vpc_id:
                    return _error(request, 400, "InvalidParameterException", f"Subnet {sid} is not in VPC {vpc_id}")
                if s.availability_zone not in zones:
                    return _error(
                        request,
                        400,
                        "InvalidParameterException",
                        f"Provided subnet {sid} is in {s.availability_zone}, which is not one of the cluster's "
                        f"Availability Zones {sorted(zones)}",
                    )
            if len({subnets[s].availability_zone for s in wanted}) < 2:
                return _error(
                    request, 400, "InvalidParameterException", "Subnets specified must be in at least two different AZs"
                )
            cfg["subnetIds"] = wanted
            params.append({"type": "Subnets", "value": json.dumps(wanted)})
        if "securityGroupIds" in vpc:
            cfg["securityGroupIds"] = [str(g) for g in vpc["securityGroupIds"]]
            params.append({"type": "SecurityGroups", "value": json.dumps(cfg["securityGroupIds"])})
        update = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "VpcConfigUpdate",
            "params": params,
            "createdAt": time.time(),
            "errors": [],
        }
        self.updates[update["id"]] = {"cluster": name, "update": update}
        return _ok(request, {"update": update})

    def _settle(self, cluster: str) -> None:
        """Time passes between looks: an update of `cluster` seen in progress has finished by the next one."""
        for entry in self.updates.values():
            if entry["cluster"] == cluster:
                entry["update"]["status"] = "Successful"

    def _describe_update(self, request: Any, update_id: str) -> Any:
        self.calls.append("DescribeUpdate")
        entry = self.updates[update_id]
        if entry["cluster"] != _path(request)[1]:
            return _error(request, 404, "ResourceNotFoundException", f"No update found for ID: {update_id}")
        entry["update"]["status"] = "Successful"
        return _ok(request, {"update": entry["update"]})

    def _with_health(self, request: Any, answer: Any) -> Any:
        name = _path(request)[1]
        if not self.issues.get(name) or getattr(answer, "status_code", 200) != 200:
            return answer
        body = json.loads(answer.content or b"{}")
        body.setdefault("cluster", {})["health"] = {"issues": self.issues[name]}
        return _ok(request, body)


def _path(request: Any) -> list[str]:
    return [unquote(p) for p in urlsplit(request.url).path.split("/")[1:]]


def _ok(request: Any, body: dict[str, Any]) -> Any:
    return raw_response(request.url, 200, json.dumps(body).encode(), {"Content-Type": "application/json"})


def _error(request: Any, status: int, code: str, message: str) -> Any:
    headers = {"Content-Type": "application/json", "x-amzn-ErrorType": f"{code}:"}
    return raw_response(request.url, status, json.dumps({"message": message}).encode(), headers)
