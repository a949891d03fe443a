"""Compact JSON schemas of the ARM resources the loopback ARM fake serves, written by the project from
Azure/azure-rest-api-specs (the fields cidrx reads and writes; docs/cloud-facts.md, "AKS"):

- specification/network/resource-manager/Microsoft.Network/stable/2024-05-01/virtualNetwork.json
  (VirtualNetwork, VirtualNetworkPropertiesFormat, AddressSpace, Subnet, SubnetPropertiesFormat, Delegation,
  VirtualNetworkPeering, VirtualNetworkPeeringPropertiesFormat) at commit 4e8108cc8dd608db81c7d08502613e5917032ab7;
- specification/network/resource-manager/Microsoft.Network/stable/2024-05-01/routeTable.json (RouteTable, Route);
- specification/containerservice/resource-manager/Microsoft.ContainerService/aks/stable/2024-09-01/
  managedClusters.json (ManagedCluster, ContainerServiceNetworkProfile, AgentPool,
  ManagedClusterAgentPoolProfileProperties) at commit ea83a2a3e90ca3f0420e9d0ef55a811523541aba.

Requests are checked strictly (an unknown property of a body cidrx sends fails the test: the real service
ignores or refuses it); responses are checked for the fields clients rely on. Read-only properties
(provisioningState, ipConfigurations, etag, ...) must not be sent.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

_ID = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}
_STR_LIST = {"type": "array", "items": {"type": "string"}}
_ADDRESS_SPACE = {
    "type": "object",
    "properties": {"addressPrefixes": _STR_LIST, "ipamPoolPrefixAllocations": {"type": "array"}},
    "additionalProperties": False,
}
_DELEGATION = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "type": {"type": "string"},
        "id": {"type": "string"},
        "properties": {
            "type": "object",
            "properties": {"serviceName": {"type": "string"}},
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

# SubnetPropertiesFormat, writable part.
SUBNET_WRITABLE = {
    "addressPrefix": {"type": "string"},
    "addressPrefixes": _STR_LIST,
    "networkSecurityGroup": _ID,
    "routeTable": _ID,
    "natGateway": _ID,
    "serviceEndpoints": {"type": "array"},
    "serviceEndpointPolicies": {"type": "array"},
    "ipAllocations": {"type": "array"},
    "delegations": {"type": "array", "items": _DELEGATION},
    "privateEndpointNetworkPolicies": {
        "enum": ["Enabled", "Disabled", "NetworkSecurityGroupEnabled", "RouteTableEnabled"]
    },
    "privateLinkServiceNetworkPolicies": {"enum": ["Enabled", "Disabled"]},
    "applicationGatewayIPConfigurations": {"type": "array"},
    "sharingScope": {"enum": ["Tenant", "DelegatedServices"]},
    "defaultOutboundAccess": {"type": "boolean"},
    "ipamPoolPrefixAllocations": {"type": "array"},
}
SUBNET_READONLY = ("ipConfigurations", "privateEndpoints", "provisioningState", "purpose", "resourceNavigationLinks")

SUBNET_REQUEST = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "id": {"type": "string"},
        "type": {"type": "string"},
        "properties": {"type": "object", "properties": SUBNET_WRITABLE, "additionalProperties": False},
    },
    "required": ["properties"],
    "additionalProperties": False,
}

PEERING_WRITABLE = {
    "allowVirtualNetworkAccess": {"type": "boolean"},
    "allowForwardedTraffic": {"type": "boolean"},
    "allowGatewayTransit": {"type": "boolean"},
    "useRemoteGateways": {"type": "boolean"},
    "remoteVirtualNetwork": _ID,
    "localAddressSpace": _ADDRESS_SPACE,
    "localVirtualNetworkAddressSpace": _ADDRESS_SPACE,
    "remoteAddressSpace": _ADDRESS_SPACE,
    "remoteVirtualNetworkAddressSpace": _ADDRESS_SPACE,
    "peeringState": {"enum": ["Initiated", "Connected", "Disconnected"]},
    "peeringSyncLevel": {"enum": ["FullyInSync", "RemoteNotInSync", "LocalNotInSync", "LocalAndRemoteNotInSync"]},
    "doNotVerifyRemoteGateways": {"type": "boolean"},
    "peerCompleteVnets": {"type": "boolean"},
    "enableOnlyIPv6Peering": {"type": "boolean"},
    "localSubnetNames": _STR_LIST,
    "remoteSubnetNames": _STR_LIST,
}

PEERING_REQUEST = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "id": {"type": "string"},
        "type": {"type": "string"},
        "properties": {"type": "object", "properties": PEERING_WRITABLE, "additionalProperties": False},
    },
    "required": ["properties"],
    "additionalProperties": False,
}

# A VNet PUT carries its subnets and peerings (read back from a GET, read-only fields stripped or not: the real
# service ignores read-only fields inside nested subnets, so the nested objects are checked loosely).
VNET_REQUEST = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "id": {"type": "string"},
        "properties": {
            "type": "object",
            "properties": {
                "addressSpace": _ADDRESS_SPACE,
                "dhcpOptions": {"type": "object"},
                "subnets": {"type": "array", "items": {"type": "object"}},
                "virtualNetworkPeerings": {"type": "array", "items": {"type": "object"}},
                "enableDdosProtection": {"type": "boolean"},
                "enableVmProtection": {"type": "boolean"},
                "ddosProtectionPlan": _ID,
                "bgpCommunities": {"type": "object"},
                "encryption": {"type": "object"},
                "flowTimeoutInMinutes": {"type": "integer"},
                "privateEndpointVNetPolicies": {"enum": ["Disabled", "Basic"]},
            },
            "required": ["addressSpace"],
            "additionalProperties": False,
        },
    },
    "required": ["location", "properties"],
    "additionalProperties": False,
}

# ManagedClusterAgentPoolProfileProperties, writable part.
AGENT_POOL_WRITABLE = {
    "count": {"type": "integer", "minimum": 0},
    "vmSize": {"type": "string"},
    "osDiskSizeGB": {"type": "integer", "minimum": 0, "maximum": 2048},
    "osDiskType": {"enum": ["Managed", "Ephemeral"]},
    "kubeletDiskType": {"enum": ["OS", "Temporary"]},
    "workloadRuntime": {"type": "string"},
    "messageOfTheDay": {"type": "string"},
    "vnetSubnetID": {"type": "string"},
    "podSubnetID": {"type": "string"},
    "podIPAllocationMode": {"enum": ["DynamicIndividual", "StaticBlock"]},
    "maxPods": {"type": "integer"},
    "osType": {"enum": ["Linux", "Windows"]},
    "osSKU": {"type": "string"},
    "maxCount": {"type": "integer"},
    "minCount": {"type": "integer"},
    "enableAutoScaling": {"type": "boolean"},
    "scaleDownMode": {"enum": ["Delete", "Deallocate"]},
    "type": {"enum": ["VirtualMachineScaleSets", "AvailabilitySet", "VirtualMachines"]},
    "mode": {"enum": ["System", "User", "Gateway"]},
    "orchestratorVersion": {"type": "string"},
    "upgradeSettings": {"type": "object"},
    "powerState": {"type": "object"},
    "availabilityZones": _STR_LIST,
    "enableNodePublicIP": {"type": "boolean"},
    "nodePublicIPPrefixID": {"type": "string"},
    "scaleSetPriority": {"enum": ["Spot", "Regular"]},
    "scaleSetEvictionPolicy": {"enum": ["Delete", "Deallocate"]},
    "spotMaxPrice": {"type": "number"},
    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    "nodeLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    "nodeTaints": _STR_LIST,
    "proximityPlacementGroupID": {"type": "string"},
    "kubeletConfig": {"type": "object"},
    "linuxOSConfig": {"type": "object"},
    "enableEncryptionAtHost": {"type": "boolean"},
    "enableUltraSSD": {"type": "boolean"},
    "enableFIPS": {"type": "boolean"},
    "gpuInstanceProfile": {"type": "string"},
    "creationData": {"type": "object"},
    "capacityReservationGroupID": {"type": "string"},
    "hostGroupID": {"type": "string"},
    "networkProfile": {"type": "object"},
    "windowsProfile": {"type": "object"},
    "securityProfile": {"type": "object"},
    "gpuProfile": {"type": "object"},
}
AGENT_POOL_READONLY = ("provisioningState", "currentOrchestratorVersion", "nodeImageVersion", "eTag")

AGENT_POOL_REQUEST = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "id": {"type": "string"},
        "type": {"type": "string"},
        "properties": {"type": "object", "properties": AGENT_POOL_WRITABLE, "additionalProperties": False},
    },
    "required": ["properties"],
    "additionalProperties": False,
}

# What every response carries (ARM resource envelope), and per resource what clients read.
_ENVELOPE = {"id": {"type": "string"}, "name": {"type": "string"}, "type": {"type": "string"}}
RESPONSES: dict[str, JSON] = {
    "managedCluster": {
        "type": "object",
        "properties": {
            **_ENVELOPE,
            "location": {"type": "string"},
            "properties": {
                "type": "object",
                "properties": {
                    "networkProfile": {
                        "type": "object",
                        "properties": {
                            "networkPlugin": {"enum": ["azure", "kubenet", "none"]},
                            "networkPluginMode": {"enum": ["overlay"]},
                            "podCidr": {"type": "string"},
                            "serviceCidr": {"type": "string"},
                        },
                    },
                    "agentPoolProfiles": {"type": "array"},
                },
                "required": ["provisioningState", "networkProfile"],
            },
        },
        "required": ["id", "name", "location", "properties"],
    },
    "agentPool": {
        "type": "object",
        "properties": {**_ENVELOPE, "properties": {"type": "object", "required": ["provisioningState", "vmSize"]}},
        "required": ["id", "name", "properties"],
    },
    "virtualNetwork": {
        "type": "object",
        "properties": {
            **_ENVELOPE,
            "etag": {"type": "string"},
            "properties": {"type": "object", "required": ["addressSpace", "subnets"]},
        },
        "required": ["id", "name", "etag", "location", "properties"],
    },
    "subnet": {
        "type": "object",
        "properties": {**_ENVELOPE, "etag": {"type": "string"}, "properties": {"type": "object"}},
        "required": ["id", "name", "etag", "properties"],
        "not": {"required": ["tags"]},  # ARM subnets carry no tags
    },
    "routeTable": {"type": "object", "required": ["id", "name", "properties"]},
    "virtualNetworkPeering": {"type": "object", "required": ["id", "name", "etag", "properties"]},
}
