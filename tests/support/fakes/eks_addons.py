"""A project-owned stand-in for the EKS add-on operations moto 5 does not implement.

DescribeAddon, UpdateAddon, DescribeUpdate (for add-on updates) and DescribeAddonConfiguration are answered
in-process through
botocore's `before-send` event, so the real boto3 client still builds, signs and parses every request:
only the HTTP exchange is replaced. Handlers are registered for the specific operation events, which
botocore runs before moto's catch-all `before-send` hook, so the two coexist under `mock_aws`.

Stateful, like EKS: add-ons per cluster; UpdateAddon stores configurationValues/addonVersion, answers
an update "InProgress", and the next DescribeUpdate of it reports "Successful" (the add-on goes back to
ACTIVE then). Shapes follow the EKS API reference (rest-json; errors carry `x-amzn-ErrorType`).
"""

from __future__ import annotations

import io
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.awsrequest import AWSResponse

ACCOUNT = "123456789012"

# The vpc-cni add-on's configuration schema as DescribeAddonConfiguration returns it (a JSON Schema document,
# as text), written for these tests: its shape follows the add-on's Helm values (aws/amazon-vpc-cni-k8s
# charts/aws-vpc-cni/values.yaml at b52188387f2e2f10bf289ace929d6a63b176a4fa: top-level keys such as `env`,
# `init`, `nodeAgent`, `resources`, `tolerations`, and the `env` map of string values), with unknown keys
# refused as EKS refuses them. Which env keys exist follows the version (ENABLE_SUBNET_DISCOVERY from v1.18.0);
# the value patterns (booleans "true"/"false", integers as digits) are this fake's own.
_BOOLEAN_ENV = (
    "AWS_VPC_CNI_NODE_PORT_SUPPORT",
    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG",
    "AWS_VPC_K8S_CNI_EXTERNALSNAT",
    "DISABLE_INTROSPECTION",
    "DISABLE_METRICS",
    "DISABLE_NETWORK_RESOURCE_PROVISIONING",
    "ENABLE_IPv4",
    "ENABLE_IPv6",
    "ENABLE_POD_ENI",
    "ENABLE_PREFIX_DELEGATION",
)
_INTEGER_ENV = (
    "AWS_VPC_ENI_MTU",
    "MAX_ENI",
    "MINIMUM_IP_TARGET",
    "WARM_ENI_TARGET",
    "WARM_IP_TARGET",
    "WARM_PREFIX_TARGET",
)
_STRING_ENV = (
    "ADDITIONAL_ENI_TAGS",
    "AWS_VPC_K8S_CNI_LOGLEVEL",
    "AWS_VPC_K8S_CNI_LOG_FILE",
    "AWS_VPC_K8S_CNI_RANDOMIZESNAT",
    "AWS_VPC_K8S_CNI_VETHPREFIX",
    "AWS_VPC_K8S_PLUGIN_LOG_FILE",
    "AWS_VPC_K8S_PLUGIN_LOG_LEVEL",
    "CLUSTER_NAME",
    "ENI_CONFIG_ANNOTATION_DEF",
    "ENI_CONFIG_LABEL_DEF",
)


def vpc_cni_schema(version: str) -> dict[str, Any]:
    """The vpc-cni configuration schema this fake serves for add-on `version` (e.g. "v1.18.1-eksbuild.1")."""
    digits = [int(x) for x in version.lstrip("v").split("-")[0].split(".")[:3] if x.isdigit()]
    booleans = _BOOLEAN_ENV + (("ENABLE_SUBNET_DISCOVERY",) if tuple(digits) >= (1, 18, 0) else ())
    env: dict[str, Any] = {k: {"type": "string", "enum": ["true", "false"]} for k in booleans}
    env |= {k: {"type": "string", "pattern": "^[0-9]+$"} for k in _INTEGER_ENV}
    env |= {k: {"type": "string"} for k in _STRING_ENV}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "env": {"type": "object", "additionalProperties": False, "properties": env},
            "init": {"type": "object"},
            "nodeAgent": {"type": "object"},
            "resources": {"type": "object"},
            "tolerations": {"type": "array"},
            "affinity": {"type": "object"},
            "enableNetworkPolicy": {"type": "string", "enum": ["true", "false"]},
        },
    }


class _Raw(io.BytesIO):
    """The raw body botocore reads from (`AWSResponse.content` calls `raw.stream()`)."""

    def stream(self, **_: Any) -> Any:
        yield self.getvalue()


@dataclass
class FakeEksAddons:
    region: str = "ap-southeast-2"
    addons: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)  # operation names, in order
    answered: list[str] = field(default_factory=list)  # the add-on status each DescribeAddon returned
    looks_to_finish: int = 2  # DescribeAddon answers that show an update in progress before it is done
    serve_schema: bool = True  # answer DescribeAddonConfiguration (and validate UpdateAddon with it), as EKS does
    _looks: dict[tuple[str, str], int] = field(default_factory=dict)

    # -- seeding and inspection ------------------------------------------------------------------

    def put_addon(
        self,
        cluster: str,
        name: str = "vpc-cni",
        *,
        version: str = "v1.18.1-eksbuild.1",
        configuration_values: str = "",
        status: str = "ACTIVE",
    ) -> dict[str, Any]:
        now = time.time()
        addon: dict[str, Any] = {
            "addonName": name,
            "clusterName": cluster,
            "status": status,
            "addonVersion": version,
            "health": {"issues": []},
            "addonArn": f"arn:aws:eks:{self.region}:{ACCOUNT}:addon/{cluster}/{name}/{uuid.uuid4()}",
            "createdAt": now,
            "modifiedAt": now,
            "tags": {},
        }
        if configuration_values:
            addon["configurationValues"] = configuration_values
        self.addons[(cluster, name)] = addon
        return addon

    def addon(self, cluster: str, name: str = "vpc-cni") -> dict[str, Any] | None:
        return self.addons.get((cluster, name))

    # -- wiring ------------------------------------------------------------------------------------

    def install(self, session_or_client: Any) -> FakeEksAddons:
        """Hook into a boto3 Session (before its clients are created) or an existing client."""
        meta = getattr(session_or_client, "meta", None)
        events = meta.events if meta is not None and hasattr(meta, "events") else session_or_client.events
        for op, handler in (
            ("DescribeAddon", self._describe_addon),
            ("UpdateAddon", self._update_addon),
            ("DescribeUpdate", self._describe_update),
            ("DescribeAddonConfiguration", self._describe_addon_configuration),
        ):
            events.register_first(f"before-send.eks.{op}", handler, unique_id=f"cidrx-fake-eks-{op}-{id(self)}")
        return self

    # -- handlers ----------------------------------------------------------------------------------

    def _describe_addon(self, request: Any, **_: Any) -> AWSResponse:
        self.calls.append("DescribeAddon")
        cluster, _addons, name = _path(request)[1:4]
        addon = self.addons.get((cluster, name))
        if addon is None:
            return _error(request, 404, "ResourceNotFoundException", f"No addon: {name} found in cluster: {cluster}")
        answer = _ok(request, {"addon": addon})
        self.answered.append(str(addon["status"]))
        if addon["status"] == "UPDATING":
            # Time passes between polls: an update seen in progress a few times has finished by the next
            # look, whether or not anyone asks DescribeUpdate (a rerun after a crash never learned its id).
            self._looks[(cluster, name)] = self._looks.get((cluster, name), 0) + 1
            if self._looks[(cluster, name)] >= self.looks_to_finish:
                self._finish_updates(cluster, name)
        return answer

    def _finish_updates(self, cluster: str, name: str) -> None:
        for entry in self.updates.values():
            if (entry["cluster"], entry["addon"]) == (cluster, name) and entry["update"]["status"] == "InProgress":
                entry["update"]["status"] = "Successful"
        self.addons[(cluster, name)]["status"] = "ACTIVE"
        self._looks.pop((cluster, name), None)

    def _update_addon(self, request: Any, **_: Any) -> AWSResponse:
        self.calls.append("UpdateAddon")
        cluster, _addons, name = _path(request)[1:4]
        addon = self.addons.get((cluster, name))
        if addon is None:
            return _error(request, 404, "ResourceNotFoundException", f"No addon: {name} found in cluster: {cluster}")
        body = json.loads(request.body or b"{}")
        params = []
        values = body.get("configurationValues")
        if values is not None:
            # EKS validates against the add-on's schema (JSON or YAML); the fake accepts JSON only.
            try:
                parsed = json.loads(values)
            except ValueError:
                return _error(request, 400, "InvalidParameterException", "configurationValues is not valid JSON")
            problem = self._schema_problem(str(addon["addonVersion"]), parsed)
            if problem:
                return _error(request, 400, "InvalidParameterException", f"ConfigurationValue is not valid: {problem}")
            addon["configurationValues"] = values
            params.append({"type": "ConfigurationValues", "value": values})
        if body.get("addonVersion"):
            addon["addonVersion"] = body["addonVersion"]
            params.append({"type": "AddonVersion", "value": body["addonVersion"]})
        if body.get("resolveConflicts"):
            params.append({"type": "ResolveConflicts", "value": body["resolveConflicts"]})
        addon["status"] = "UPDATING"
        addon["modifiedAt"] = time.time()
        update: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "AddonUpdate",
            "params": params,
            "createdAt": time.time(),
            "errors": [],
        }
        self.updates[update["id"]] = {"update": update, "cluster": cluster, "addon": name}
        return _ok(request, {"update": update})

    def _describe_update(self, request: Any, **_: Any) -> AWSResponse:
        self.calls.append("DescribeUpdate")
        parts = _path(request)
        cluster, update_id = parts[1], parts[3]
        addon_name = (parse_qs(urlsplit(request.url).query).get("addonName") or [None])[0]
        entry = self.updates.get(update_id)
        if entry is None or entry["cluster"] != cluster or (addon_name and entry["addon"] != addon_name):
            return _error(request, 404, "ResourceNotFoundException", f"No update found for ID: {update_id}")
        update = entry["update"]
        if update["status"] == "InProgress":
            update["status"] = "Successful"
            addon = self.addons.get((cluster, entry["addon"]))
            if addon is not None:
                addon["status"] = "ACTIVE"
                self._looks.pop((cluster, entry["addon"]), None)
        return _ok(request, {"update": update})

    def _schema_problem(self, version: str, values: Any) -> str | None:
        if not self.serve_schema:
            return None
        from jsonschema import Draft7Validator

        errors = sorted(Draft7Validator(vpc_cni_schema(version)).iter_errors(values), key=lambda e: list(e.path))
        return errors[0].message if errors else None

    def _describe_addon_configuration(self, request: Any, **_: Any) -> AWSResponse:
        self.calls.append("DescribeAddonConfiguration")
        query = parse_qs(urlsplit(request.url).query)
        name, version = (query.get("addonName") or [""])[0], (query.get("addonVersion") or [""])[0]
        if not self.serve_schema:
            return _error(request, 404, "ResourceNotFoundException", "not served by this fake")
        if name != "vpc-cni" or not version:
            return _error(request, 400, "InvalidParameterException", f"no configuration for {name} {version}")
        schema = json.dumps(vpc_cni_schema(version))
        return _ok(request, {"addonName": name, "addonVersion": version, "configurationSchema": schema})


class BuiltinHandlers:
    """Stands in for a botocore session when installing the fake: what the fake registers goes into
    botocore's BUILTIN_HANDLERS instead (add `specs` there), which every new session starts with, the
    sessions cidrx makes for itself included (the same door moto's own interception uses)."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, Any, object]] = []

    @property
    def events(self) -> BuiltinHandlers:
        return self

    def register_first(self, event_name: str, handler: Any, unique_id: str | None = None) -> None:
        from botocore.handlers import REGISTER_FIRST

        self.specs.append((event_name, handler, REGISTER_FIRST))


def install(session_or_client: Any, fake: FakeEksAddons | None = None) -> FakeEksAddons:
    """Answer the EKS add-on operations of `session_or_client` from `fake` (a new one by default)."""
    return (fake or FakeEksAddons()).install(session_or_client)


def _path(request: Any) -> list[str]:
    """URL path segments after the leading slash: ["clusters", name, "addons"|"updates", id, ...]."""
    return [unquote(p) for p in urlsplit(request.url).path.split("/")[1:]]


def raw_response(url: str, status: int, body: bytes, headers: dict[str, str]) -> AWSResponse:
    """An HTTP answer a `before-send` handler can return; also used by tests to replay AWS errors."""
    all_headers: Any = {"x-amzn-RequestId": str(uuid.uuid4()), **headers}  # AWSResponse wraps it in HTTPHeaders
    return AWSResponse(url, status, all_headers, _Raw(body))


def _response(request: Any, status: int, headers: dict[str, str], body: dict[str, Any]) -> AWSResponse:
    return raw_response(request.url, status, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})


def _ok(request: Any, body: dict[str, Any]) -> AWSResponse:
    return _response(request, 200, {}, body)


def _error(request: Any, status: int, code: str, message: str) -> AWSResponse:
    return _response(request, status, {"x-amzn-ErrorType": f"{code}:"}, {"message": message})
