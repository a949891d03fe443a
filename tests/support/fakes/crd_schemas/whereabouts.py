"""Compact structural schemas of Whereabouts' custom resources (whereabouts.cni.cncf.io/v1alpha1).

Written from the openAPIV3Schema of the upstream CRDs, k8snetworkplumbingwg/whereabouts at commit
3a262bd0cd873e13d9b379342f8251b852a89b8f:
- doc/crds/whereabouts.cni.cncf.io_ippools.yaml: spec requires `range` (string) and `allocations` (a map
  of offset -> {id, podref required; ifname}, all strings).
- doc/crds/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml: the object requires `spec`, spec
  requires `podref`; `containerid` and `ifname` are optional strings. No field carries the address: it is
  in the object's name only (NormalizeIP, pkg/storage/kubernetes/ipam.go).
Every field upstream defines is here, so nothing Whereabouts itself writes is refused by the fake.
"""

from __future__ import annotations

from tests.support.fakes.crd_schemas import register
from tests.support.fakes.crd_schemas.structural import Schema, object_schema

GROUP, VERSION = "whereabouts.cni.cncf.io", "v1alpha1"

_STRING: Schema = {"type": "string"}

IP_ALLOCATION: Schema = {
    "type": "object",
    "properties": {"id": _STRING, "ifname": _STRING, "podref": _STRING},
    "required": ["id", "podref"],
}

IPPOOL: Schema = object_schema(
    {
        "type": "object",
        "properties": {
            "allocations": {"type": "object", "additionalProperties": IP_ALLOCATION},
            "range": _STRING,
        },
        "required": ["allocations", "range"],
    }
)

OVERLAPPING_RESERVATION: Schema = {
    **object_schema(
        {
            "type": "object",
            "properties": {"containerid": _STRING, "ifname": _STRING, "podref": _STRING},
            "required": ["podref"],
        }
    ),
    "required": ["spec"],
}

register(
    {
        (GROUP, VERSION, "ippools"): IPPOOL,
        (GROUP, VERSION, "overlappingrangeipreservations"): OVERLAPPING_RESERVATION,
    }
)
