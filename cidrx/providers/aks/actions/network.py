"""Step actions on the VNet: `aks.add-address-space` (a new address space, synced to every peering) and
`aks.create-subnet` (the new node or pod subnet), each with its executor, undo and Terraform.

ARM subnets carry no tags (the Subnet schema has none, docs/cloud-facts.md "AKS"), so a subnet is known as the
plan's by its name and address prefix, both fixed by the plan; a create sends `If-None-Match: *`, so it never
replaces a subnet someone else made in between, and a delete sends the subnet's ETag (`If-Match`). An address
space is added with the VNet's ETag, so a concurrent change of the VNet makes the write fail (412) instead of
being overwritten.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.aks.actions.common import NETWORK_TIMEOUT, aks_api, wait
from cidrx.registry import Action
from cidrx.render.hcl import Block, Comment, Expr, import_block, snippet, tf_name
from cidrx.render.terraform import Emitter

CREATE_SUBNET_NAME = "aks.create-subnet"  # the action of CREATE_SUBNET below, whose subnets an undo skips


def _space(vnet: dict[str, Any]) -> list[str]:
    return list(((vnet.get("properties") or {}).get("addressSpace") or {}).get("addressPrefixes") or [])


def _prefix(subnet: dict[str, Any]) -> IPv4Network:
    return IPv4Network(str((subnet.get("properties") or {}).get("addressPrefix") or "0.0.0.0/32"), strict=False)


def _peerings(vnet: dict[str, Any]) -> list[dict[str, Any]]:
    return list((vnet.get("properties") or {}).get("virtualNetworkPeerings") or [])


def _vnet_body(vnet: dict[str, Any], prefixes: list[str]) -> dict[str, Any]:
    """The VNet as read, with `prefixes` as its address space (a PUT replaces the whole resource)."""
    props = dict(vnet.get("properties") or {})
    props["addressSpace"] = {**(props.get("addressSpace") or {}), "addressPrefixes": prefixes}
    for readonly in ("provisioningState", "resourceGuid"):
        props.pop(readonly, None)
    body = {"location": vnet.get("location"), "properties": props}
    if vnet.get("tags"):
        body["tags"] = vnet["tags"]
    return body


def _sync_peerings(ctx: StepContext, params: dict[str, Any]) -> list[str]:
    """Re-put every peering that is not in sync, so the peered VNets learn the new space."""
    api = aks_api(ctx)
    vnet = api.get_vnet(params["resource_group"], params["vnet"])
    synced = []
    for peering in _peerings(vnet):
        level = str((peering.get("properties") or {}).get("peeringSyncLevel") or "FullyInSync")
        if level != "FullyInSync":
            poller = api.sync_peering(params["resource_group"], params["vnet"], peering)
            wait(ctx, poller, f"sync of peering {peering['name']}", NETWORK_TIMEOUT)
            synced.append(str(peering["name"]))
    return synced


class AddAddressSpace:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        vnet = aks_api(ctx).get_vnet(params["resource_group"], params["vnet"])
        if params["cidr"] not in _space(vnet):
            return None
        _sync_peerings(ctx, params)  # an earlier run may have stopped between the space and the sync
        return {"cidr": params["cidr"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        api = aks_api(ctx)
        vnet = api.get_vnet(params["resource_group"], params["vnet"])
        new = IPv4Network(params["cidr"])
        for prefix in _space(vnet):
            if IPv4Network(prefix, strict=False).overlaps(new):
                raise StalePlan(f"virtual network {params['vnet']} now has address space {prefix}, overlapping {new}")
        body = _vnet_body(vnet, [*_space(vnet), params["cidr"]])
        poller = api.update_vnet(params["resource_group"], params["vnet"], body, str(vnet.get("etag") or ""))
        wait(ctx, poller, f"address space {new} of {params['vnet']}", NETWORK_TIMEOUT)
        synced = _sync_peerings(ctx, params)
        return {"cidr": params["cidr"], "synced_peerings": synced}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        vnet = aks_api(ctx).get_vnet(params["resource_group"], params["vnet"])
        if params["cidr"] not in _space(vnet):
            raise CloudError(f"virtual network {params['vnet']} lacks address space {params['cidr']} after the update")


class UndoAddressSpace:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        vnet = aks_api(ctx).get_vnet(params["resource_group"], params["vnet"])
        return {"cidr": params["cidr"]} if params["cidr"] in _space(vnet) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        vnet = aks_api(ctx).get_vnet(params["resource_group"], params["vnet"])
        space = IPv4Network(params["cidr"])
        # The plan's own subnet is undone first (rollback goes newest first); anyone else's keeps the space.
        own = {s.params.get("subnet") for s in ctx.plan.steps if s.action == CREATE_SUBNET_NAME}
        inside = [
            str(s.get("name"))
            for s in (vnet.get("properties") or {}).get("subnets") or []
            if s.get("name") not in own and _prefix(s).subnet_of(space)
        ]
        return f"address space {space} still holds subnet(s) {', '.join(inside)}" if inside else None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove address space {params['cidr']} from virtual network {params['vnet']} and sync its peerings"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        api = aks_api(ctx)
        vnet = api.get_vnet(params["resource_group"], params["vnet"])
        body = _vnet_body(vnet, [p for p in _space(vnet) if p != params["cidr"]])
        poller = api.update_vnet(params["resource_group"], params["vnet"], body, str(vnet.get("etag") or ""))
        wait(ctx, poller, f"removal of address space {params['cidr']}", NETWORK_TIMEOUT)
        _sync_peerings(ctx, params)
        return {"cidr": params["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


def address_space_hcl(e: Emitter, step: Step) -> None:
    """A snippet for the team's azurerm_virtual_network (Terraform manages its address_space as one list)."""
    p = step.params
    e.items.append(
        Comment(
            f"step {step.id}: {step.description}.\n"
            f'Add {p["cidr"]} to address_space of your resource "azurerm_virtual_network" for {p["vnet"]} '
            f"(resource group {p['resource_group']}), next to {', '.join(p.get('seen') or [])}; peerings of "
            "azurerm_virtual_network_peering sync it when their triggers include the address space."
        )
    )
    block = Block("address_space_entry").attr("cidr", p["cidr"])
    e.items.append(snippet(f'address_space for azurerm_virtual_network "{p["vnet"]}"', [block]))


ADD_ADDRESS_SPACE = Action(
    "aks.add-address-space",
    (
        "Microsoft.Network/virtualNetworks/read",
        "Microsoft.Network/virtualNetworks/write",
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings/read",
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings/write",
        "Microsoft.Network/virtualNetworks/peer/action",
    ),
    AddAddressSpace,
    undo=UndoAddressSpace,
    undo_permissions=(
        "Microsoft.Network/virtualNetworks/read",
        "Microsoft.Network/virtualNetworks/write",
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings/write",
        "Microsoft.Network/virtualNetworks/peer/action",
    ),
    hcl=address_space_hcl,
)


class CreateSubnet:
    def _get(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        return aks_api(ctx).get_subnet(params["resource_group"], params["vnet"], params["subnet"])

    def _ours(self, subnet: dict[str, Any], params: dict[str, Any]) -> None:
        have = (subnet.get("properties") or {}).get("addressPrefix")
        if have != params["body"]["properties"]["addressPrefix"]:
            raise StalePlan(
                f"a subnet named {params['subnet']} ({have}) was created by someone else in {params['vnet']}; "
                "make a new plan"
            )

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        subnet = self._get(params, ctx)
        if subnet is None:
            return None
        self._ours(subnet, params)
        return {"subnet_id": str(subnet.get("id") or "")}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        poller = aks_api(ctx).create_subnet(params["resource_group"], params["vnet"], params["subnet"], params["body"])
        wait(ctx, poller, f"creation of subnet {params['subnet']}", NETWORK_TIMEOUT)
        subnet = self._get(params, ctx) or {}
        return {"subnet_id": str(subnet.get("id") or "")}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        subnet = self._get(params, ctx)
        if subnet is None:
            raise CloudError(f"subnet {params['subnet']} is not in {params['vnet']} after its creation")
        self._ours(subnet, params)
        state = (subnet.get("properties") or {}).get("provisioningState")
        if state not in (None, "Succeeded"):
            raise CloudError(f"subnet {params['subnet']} is {state}")


class UndoSubnet:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        subnet = CreateSubnet()._get(params, ctx)
        if subnet is None:
            return None
        if (subnet.get("properties") or {}).get("addressPrefix") != params["body"]["properties"]["addressPrefix"]:
            return None  # not the plan's subnet: never removed
        return {"subnet": params["subnet"], "etag": str(subnet.get("etag") or "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        subnet = CreateSubnet()._get(params, ctx) or {}
        configs = (subnet.get("properties") or {}).get("ipConfigurations") or []
        if configs:
            return f"subnet {params['subnet']} still has {len(configs)} IP configuration(s) (NICs of nodes or pods)"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete subnet {params['subnet']} ({params['body']['properties']['addressPrefix']}) of {params['vnet']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        poller = aks_api(ctx).delete_subnet(params["resource_group"], params["vnet"], params["subnet"], found["etag"])
        wait(ctx, poller, f"deletion of subnet {params['subnet']}", NETWORK_TIMEOUT)
        return {"subnet": params["subnet"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


def subnet_hcl(e: Emitter, step: Step) -> None:
    """An azurerm_subnet (with its route table and NSG associations), and its import block once created."""
    p = step.params
    props = p["body"]["properties"]
    name = tf_name(p["subnet"])
    b = Block("resource", ("azurerm_subnet", name))
    b.attr("name", p["subnet"]).attr("resource_group_name", p["resource_group"])
    b.attr("virtual_network_name", p["vnet"]).attr("address_prefixes", [props["addressPrefix"]])
    for d in props.get("delegations") or []:
        db = b.block("delegation").attr("name", d["name"])
        db.block("service_delegation").attr("name", d["properties"]["serviceName"])
    e.depends(b, step)
    address = e.add(step, b)
    for key, resource, attr in (
        ("routeTable", "azurerm_subnet_route_table_association", "route_table_id"),
        ("networkSecurityGroup", "azurerm_subnet_network_security_group_association", "network_security_group_id"),
    ):
        if props.get(key):
            assoc = Block("resource", (resource, name))
            assoc.attr("subnet_id", Expr(f"{address}.id")).attr(attr, props[key]["id"])
            e.items.append(assoc)
    subnet_id = e.out(step.id, "subnet_id")
    if subnet_id:
        e.imports.append(import_block(address, subnet_id))


CREATE_SUBNET = Action(
    CREATE_SUBNET_NAME,
    (
        "Microsoft.Network/virtualNetworks/subnets/read",
        "Microsoft.Network/virtualNetworks/subnets/write",
        "Microsoft.Network/routeTables/join/action",
        "Microsoft.Network/networkSecurityGroups/join/action",
    ),
    CreateSubnet,
    undo=UndoSubnet,
    undo_permissions=(
        "Microsoft.Network/virtualNetworks/subnets/read",
        "Microsoft.Network/virtualNetworks/subnets/delete",
    ),
    hcl=subnet_hcl,
)
