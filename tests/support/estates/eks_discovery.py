"""The EKS estate for VPC CNI subnet discovery, built in moto: the incident a little earlier, on VPC CNI v1.18.1.

Each node has two of its three ENIs attached (the incident's third ENI was never added), so 7 addresses are
still free in each public node subnet: too few for one more node's warm pool without subnet discovery
(1 + 9), enough for 7 new nodes' own addresses with it. No subnet is tagged `kubernetes.io/role/cni` yet, and
the VPC's 10.0.0.0/16 has plenty of free space: `expand` with the default strategy plans one tagged subnet per
zone there. `build_discovery_off` is the same cluster with `ENABLE_SUBNET_DISCOVERY=false` on aws-node.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.support.estates.eks import REGION, World, build_incident

DISCOVERY_CNI_IMAGE = "602401143452.dkr.ecr.ap-southeast-2.amazonaws.com/amazon-k8s-cni:v1.18.1-eksbuild.1"


def build_discovery(ec2: Any, eks: Any, *, region: str = REGION, cluster: str = "demo") -> World:
    world = build_incident(ec2, eks, region=region, cluster=cluster)
    for instance in world.node_instance_ids:
        found = ec2.describe_network_interfaces(Filters=[{"Name": "attachment.instance-id", "Values": [instance]}])
        for eni in found["NetworkInterfaces"]:
            if eni["Attachment"]["DeviceIndex"] == 2:
                ec2.detach_network_interface(AttachmentId=eni["Attachment"]["AttachmentId"])
                ec2.delete_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"])
    return dataclasses.replace(world, cni_image=DISCOVERY_CNI_IMAGE)


def build_discovery_off(ec2: Any, eks: Any, *, region: str = REGION, cluster: str = "demo") -> World:
    world = build_discovery(ec2, eks, region=region, cluster=cluster)
    return dataclasses.replace(world, cni_env=(("ENABLE_SUBNET_DISCOVERY", "false"),))
