"""Compact schemas of Calico's IPAM custom resources, for the fake API server's write checks.

Written from the openAPIV3Schema of the upstream CRDs in projectcalico/calico at commit
87c15906f20c4ca1fda55af92295e7678b0cc0b2 (not copied; every spec field upstream defines is listed so that
nothing legitimate is refused, with the types, required fields and enums upstream declares):
  crd.projectcalico.org/v1: libcalico-go/config/crd/crd.projectcalico.org_{ippools,ipamblocks,
    blockaffinities,ipamhandles,ipamconfigs}.yaml
  projectcalico.org/v3:     api/config/crd/projectcalico.org_{ippools,ipamblocks,blockaffinities,
    ipamhandles,ipamconfigurations}.yaml
The two differ where it matters to a writer: v1 BlockAffinity `deleted` is a string ("true"/"false"), v3
a boolean; v3 BlockAffinity `state` is an enum; v3 IPAMBlock `affinity` has a pattern (not checked here).
"""

from __future__ import annotations

from typing import Any

from tests.support.fakes.crd_schemas import register
from tests.support.fakes.crd_schemas.structural import Schema, object_schema

V1, V3 = ("crd.projectcalico.org", "v1"), ("projectcalico.org", "v3")

_STR: Schema = {"type": "string"}
_BOOL: Schema = {"type": "boolean"}
_INT: Schema = {"type": "integer"}
_STR_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
_MODES: Schema = {"type": "string", "enum": ["Never", "Always", "CrossSubnet"]}


def _obj(props: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out


IPPOOL_SPEC = _obj(
    {
        "allowedUses": {"type": "array", "items": {"type": "string", "enum": ["Workload", "Tunnel", "LoadBalancer"]}},
        "assignmentMode": {"type": "string", "enum": ["Automatic", "Manual"]},
        "blockSize": {"type": "integer", "minimum": 0, "maximum": 128},
        "cidr": _STR,
        "disableBGPExport": _BOOL,
        "disabled": _BOOL,
        "ipipMode": _MODES,
        "namespaceSelector": _STR,
        "natOutgoing": _BOOL,
        "nodeSelector": _STR,
        "vxlanMode": _MODES,
    },
    ("cidr",),
)
# IPPool status (conditions, allocatable...) is written by Calico only; cidrx never sends one.
IPPOOL_STATUS: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

ATTRIBUTE = _obj(
    {
        "alternateOwnerAttrs": _STR_MAP,
        "handle_id": _STR,
        "releasedAt": _STR,  # format: date-time
        "secondary": _STR_MAP,
    }
)
IPAMBLOCK_SPEC = _obj(
    {
        "affinity": _STR,
        "affinityClaimTime": _STR,  # format: date-time
        "allocations": {"type": "array", "items": {"type": "integer", "nullable": True}},
        "attributes": {"type": "array", "items": ATTRIBUTE},
        "cidr": _STR,
        "deleted": _BOOL,
        "sequenceNumber": {"type": "integer", "format": "int64"},
        "sequenceNumberForAllocation": {
            "type": "object",
            "additionalProperties": {"type": "integer", "format": "int64"},
        },
        "strictAffinity": _BOOL,
        "unallocated": {"type": "array", "items": _INT},
    },
    ("allocations", "attributes", "cidr", "strictAffinity", "unallocated"),
)


def _affinity_spec(deleted: Schema, state: Schema) -> Schema:
    return _obj(
        {"cidr": _STR, "deleted": deleted, "node": _STR, "state": state, "type": _STR},
        ("cidr", "deleted", "node", "state"),
    )


IPAMHANDLE_SPEC = _obj(
    {"block": {"type": "object", "additionalProperties": _INT}, "deleted": _BOOL, "handleID": _STR},
    ("block", "handleID"),
)


def _config_spec(max_blocks: int) -> Schema:
    return _obj(
        {
            "autoAllocateBlocks": _BOOL,
            "ipCooldownSeconds": {"type": "integer", "minimum": 0, "maximum": 1200},
            "kubeVirtVMAddressPersistence": {"type": "string", "enum": ["Enabled", "Disabled"]},
            "maxBlocksPerHost": {"type": "integer", "minimum": 0, "maximum": max_blocks},
            "strictAffinity": _BOOL,
        },
        ("autoAllocateBlocks", "strictAffinity"),
    )


V3_STATES: Schema = {"type": "string", "enum": ["", "confirmed", "pending", "pendingDeletion"]}

SCHEMAS: dict[tuple[str, str, str], Schema] = {
    (*V1, "ippools"): object_schema(IPPOOL_SPEC, status=IPPOOL_STATUS),
    (*V1, "ipamblocks"): object_schema(IPAMBLOCK_SPEC),
    (*V1, "blockaffinities"): object_schema(_affinity_spec(_STR, _STR)),
    (*V1, "ipamhandles"): object_schema(IPAMHANDLE_SPEC),
    (*V1, "ipamconfigs"): object_schema(_config_spec(2147483647)),
    (*V3, "ippools"): object_schema(IPPOOL_SPEC, status=IPPOOL_STATUS),
    (*V3, "ipamblocks"): object_schema(IPAMBLOCK_SPEC),
    (*V3, "blockaffinities"): object_schema(_affinity_spec(_BOOL, V3_STATES)),
    (*V3, "ipamhandles"): object_schema(IPAMHANDLE_SPEC),
    (*V3, "ipamconfigurations"): object_schema(_config_spec(1000000)),
}

register(SCHEMAS)
