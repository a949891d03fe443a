"""Compact structural schemas of the node classes and node pools cidrx reads and writes: Karpenter's
EC2NodeClass (karpenter.k8s.aws/v1) and NodePool (karpenter.sh/v1), and EKS Auto Mode's NodeClass
(eks.amazonaws.com/v1).

Written from the openAPIV3Schema of the upstream CRDs, aws/karpenter-provider-aws at commit
1d927085dd81a9df9301e613f371dac5b4d16bfe:
- pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml: spec requires amiSelectorTerms,
  securityGroupSelectorTerms and subnetSelectorTerms; a subnet term has `id` (pattern subnet-...) and
  `tags` (string map), a security group term `id`, `name`, `tags`; `tags` is a string map; `kubelet` keeps
  unknown fields (maxPods among them); status.subnets[] requires id and zone.
- pkg/apis/crds/karpenter.sh_nodepools.yaml: spec requires template; template requires spec; template.spec
  requires nodeClassRef (group, kind, name, all required) and requirements.
Auto Mode's NodeClass CRD is not published as source; its fields are those of the EKS user guide ("Create a
Node Class for Amazon EKS"): subnetSelectorTerms, securityGroupSelectorTerms, podSubnetSelectorTerms,
podSecurityGroupSelectorTerms (terms of id or tags), role, tags and the other settings kept as unknown here.
Only the fields named here are checked; other spec fields upstream defines are let through whole.
"""

from __future__ import annotations

from tests.support.fakes.crd_schemas import register
from tests.support.fakes.crd_schemas.structural import Schema, object_schema

_STRING: Schema = {"type": "string"}
_STRING_MAP: Schema = {"type": "object", "additionalProperties": _STRING}
_ANY: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_ANY_LIST: Schema = {"type": "array", "items": _ANY}

SUBNET_TERMS: Schema = {
    "type": "array",
    "items": {"type": "object", "properties": {"id": _STRING, "tags": _STRING_MAP}},
}
SECURITY_GROUP_TERMS: Schema = {
    "type": "array",
    "items": {"type": "object", "properties": {"id": _STRING, "name": _STRING, "tags": _STRING_MAP}},
}

EC2_NODE_CLASS: Schema = object_schema(
    {
        "type": "object",
        "properties": {
            "amiSelectorTerms": _ANY_LIST,
            "amiFamily": _STRING,
            "subnetSelectorTerms": SUBNET_TERMS,
            "securityGroupSelectorTerms": SECURITY_GROUP_TERMS,
            "capacityReservationSelectorTerms": _ANY_LIST,
            "role": _STRING,
            "instanceProfile": _STRING,
            "tags": _STRING_MAP,
            "kubelet": _ANY,
            "userData": _STRING,
            "blockDeviceMappings": _ANY_LIST,
            "metadataOptions": _ANY,
            "associatePublicIPAddress": {"type": "boolean"},
            "detailedMonitoring": {"type": "boolean"},
        },
        "required": ["amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"],
    },
    status={
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "subnets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": _STRING, "zone": _STRING, "zoneID": _STRING},
                    "required": ["id", "zone"],
                },
            },
        },
    },
)

NODE_POOL: Schema = {
    **object_schema(
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "spec": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                            "properties": {
                                "nodeClassRef": {
                                    "type": "object",
                                    "properties": {"group": _STRING, "kind": _STRING, "name": _STRING},
                                    "required": ["group", "kind", "name"],
                                },
                                "requirements": _ANY_LIST,
                            },
                            "required": ["nodeClassRef", "requirements"],
                        },
                    },
                    "required": ["spec"],
                },
            },
            "required": ["template"],
        }
    ),
    "required": ["spec"],
}

AUTO_NODE_CLASS: Schema = object_schema(
    {
        "type": "object",
        "properties": {
            "subnetSelectorTerms": SUBNET_TERMS,
            "securityGroupSelectorTerms": SECURITY_GROUP_TERMS,
            "podSubnetSelectorTerms": SUBNET_TERMS,
            "podSecurityGroupSelectorTerms": SECURITY_GROUP_TERMS,
            "role": _STRING,
            "tags": _STRING_MAP,
            "ephemeralStorage": _ANY,
            "networkPolicy": _STRING,
            "snatPolicy": _STRING,
        },
    },
    status={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
)

register(
    {
        ("karpenter.k8s.aws", "v1", "ec2nodeclasses"): EC2_NODE_CLASS,
        ("karpenter.sh", "v1", "nodepools"): NODE_POOL,
        ("eks.amazonaws.com", "v1", "nodeclasses"): AUTO_NODE_CLASS,
    }
)
