"""Compact schemas of Cilium's IPAM custom resources, for the fake API server's write checks and for
validating the Cilium estates' objects.

Written from the openAPIV3Schema of the upstream CRDs in cilium/cilium (not copied; the fields cidrx and the
operator simulation read and write, with their types, required fields and bounds):
  cilium.io/v2 CiliumNode: pkg/k8s/apis/cilium.io/client/crds/v2/ciliumnodes.yaml at
    026740195c43504fcf9e1fd6b8c92754d45c0f5d (spec.ipam.podCIDRs, spec.ipam.pools.{requested,allocated},
    status.ipam.operator-status.error, status.ipam.used; the cloud-specific parts are kept open)
  cilium.io/v2alpha1 CiliumPodIPPool: pkg/k8s/apis/cilium.io/client/crds/v2alpha1/ciliumpodippools.yaml at
    026740195c43504fcf9e1fd6b8c92754d45c0f5d (spec.ipv4.cidrs: strings, required with maskSize)
  cilium.io/v2 CiliumPodIPPool: pkg/k8s/apis/cilium.io/client/crds/v2/ciliumpodippools.yaml at
    260428832953817864036304a7224f04456463d4 (spec.ipv4.cidrs items become {cidr, reservedRange}; only maskSize
    is required)
"""

from __future__ import annotations

from typing import Any

from tests.support.fakes.crd_schemas import register
from tests.support.fakes.crd_schemas.structural import Schema, object_schema

GROUP = "cilium.io"
_STR: Schema = {"type": "string"}
_OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _obj(props: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out


_ALLOCATION_IP = _obj({"owner": _STR, "resource": _STR})
_ADDRS = {"type": "object", "additionalProperties": _ALLOCATION_IP}
_POOL_NAME: Schema = {"type": "string", "minLength": 1}
_NON_NEGATIVE: Schema = {"type": "integer", "minimum": 0}

NODE_SPEC = _obj(
    {
        "addresses": {"type": "array", "items": _obj({"ip": _STR, "type": _STR})},
        "alibaba-cloud": _OPEN,
        "azure": _OPEN,
        "bootid": _STR,
        "encryption": _OPEN,
        "eni": _OPEN,
        "health": _OPEN,
        "ingress": _OPEN,
        "instance-id": _STR,
        "ipam": _obj(
            {
                "ipv6-pool": _ADDRS,
                "max-above-watermark": _NON_NEGATIVE,
                "max-allocate": _NON_NEGATIVE,
                "min-allocate": _NON_NEGATIVE,
                "podCIDRs": {"type": "array", "items": _STR},
                "pool": _ADDRS,
                "pools": _obj(
                    {
                        "allocated": {
                            "type": "array",
                            "items": _obj({"cidrs": {"type": "array", "items": _STR}, "pool": _POOL_NAME}, ("pool",)),
                        },
                        "requested": {
                            "type": "array",
                            "items": _obj(
                                {
                                    "needed": _obj(
                                        {"ipv4-addrs": {"type": "integer"}, "ipv6-addrs": {"type": "integer"}}
                                    ),
                                    "pool": _POOL_NAME,
                                },
                                ("pool",),
                            ),
                        },
                    }
                ),
                "pre-allocate": _NON_NEGATIVE,
                "static-ip-tags": {"type": "object", "additionalProperties": _STR},
            }
        ),
        "nodeidentity": {"type": "integer", "format": "int64"},
    }
)
NODE_STATUS = _obj(
    {
        "alibaba-cloud": _OPEN,
        "azure": _OPEN,
        "eni": _OPEN,
        "ipam": _obj(
            {
                "assigned-static-ip": _STR,
                "ipv6-used": _ADDRS,
                "operator-status": _obj({"error": _STR}),
                "pod-cidrs": {
                    "type": "object",
                    "additionalProperties": _obj(
                        {"status": {"type": "string", "enum": ["released", "depleted", "in-use"]}}
                    ),
                },
                "release-ips": {"type": "object", "additionalProperties": _STR},
                "release-ipv6s": {"type": "object", "additionalProperties": _STR},
                "used": _ADDRS,
            }
        ),
    }
)


def _family(items: Schema, max_mask: int, required: tuple[str, ...]) -> Schema:
    return _obj(
        {
            "cidrs": {"type": "array", "items": items},
            "maskSize": {"type": "integer", "minimum": 1, "maximum": max_mask},
        },
        required,
    )


_V2_ITEM = _obj({"cidr": _STR, "reservedRange": _STR}, ("cidr",))
_SELECTOR = _OPEN
POOL_SPEC_V2ALPHA1 = _obj(
    {
        "ipv4": _family(_STR, 32, ("cidrs", "maskSize")),
        "ipv6": _family(_STR, 128, ("cidrs", "maskSize")),
        "namespaceSelector": _SELECTOR,
        "podSelector": _SELECTOR,
    }
)
POOL_SPEC_V2 = _obj(
    {
        "ipv4": _family(_V2_ITEM, 32, ("maskSize",)),
        "ipv6": _family(_V2_ITEM, 128, ("maskSize",)),
        "namespaceSelector": _SELECTOR,
        "podSelector": _SELECTOR,
    }
)

SCHEMAS: dict[tuple[str, str, str], Schema] = {
    (GROUP, "v2", "ciliumnodes"): object_schema(NODE_SPEC, status=NODE_STATUS),
    (GROUP, "v2alpha1", "ciliumpodippools"): object_schema(POOL_SPEC_V2ALPHA1),
    (GROUP, "v2", "ciliumpodippools"): object_schema(POOL_SPEC_V2),
}

register(SCHEMAS)
