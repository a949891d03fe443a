"""The steps the VPC-space strategies build alike: associate the new VPC CIDR (planned, or from the VPC's IPAM
pool), a subnet per zone routed like that zone's node subnet, and a change of the VPC CNI's env (on the
managed add-on, else on the aws-node DaemonSet).
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from cidrx.model.plan import Step
from cidrx.providers.eks.actions.cni_env import SET_DAEMONSET_ENV, UPDATE_ADDON_ENV
from cidrx.providers.eks.actions.subnets import ASSOCIATE_ROUTE_TABLE, CREATE_SUBNET
from cidrx.providers.eks.actions.vpc_cidr import ASSOCIATE_VPC_CIDR, ASSOCIATE_VPC_CIDR_FROM_POOL
from cidrx.providers.eks.facts.cni import CniConfig
from cidrx.providers.eks.model import EksSection, IpamPool


def env_step(eks: EksSection, cni: CniConfig, env: dict[str, str], step_id: str, what: str) -> Step:
    if eks.vpc_cni_addon is not None:
        from cidrx.providers.eks.facts.addon_schema import check_env_update

        check_env_update(eks.vpc_cni_addon, env)
        return Step(
            id=step_id,
            action=UPDATE_ADDON_ENV.name,
            params={"cluster": eks.cluster.name, "addon": eks.vpc_cni_addon.name, "env": env},
            description=f"set {what} on the vpc-cni managed add-on ({', '.join(f'{k}={v}' for k, v in env.items())})",
            permissions=UPDATE_ADDON_ENV.permissions,
        )
    return Step(
        id=step_id,
        action=SET_DAEMONSET_ENV.name,
        params={"namespace": "kube-system", "name": "aws-node", "container": "aws-node", "env": env},
        description=f"set {what} on DaemonSet kube-system/aws-node ({', '.join(f'{k}={v}' for k, v in env.items())})",
        permissions=SET_DAEMONSET_ENV.permissions,
    )


def associate_step(eks: EksSection, cidr: IPv4Network, pool: IpamPool | None) -> Step:
    """`associate-vpc-cidr`: `cidr` itself, or (with the IPAM `pool` the VPC's CIDRs come from) a block of
    its size that IPAM picks when the association is made."""
    if pool is None:
        return Step(
            id="associate-vpc-cidr",
            action=ASSOCIATE_VPC_CIDR.name,
            params={"vpc_id": eks.vpc.vpc_id, "cidr": str(cidr)},
            description=f"associate secondary CIDR {cidr} with {eks.vpc.vpc_id} and wait until associated",
            permissions=ASSOCIATE_VPC_CIDR.permissions,
        )
    return Step(
        id="associate-vpc-cidr",
        action=ASSOCIATE_VPC_CIDR_FROM_POOL.name,
        params={"vpc_id": eks.vpc.vpc_id, "ipam_pool_id": pool.pool_id, "netmask_length": cidr.prefixlen},
        description=f"associate a /{cidr.prefixlen} from IPAM pool {pool.pool_id} with {eks.vpc.vpc_id} (IPAM "
        "picks the CIDR) and wait until associated",
        permissions=ASSOCIATE_VPC_CIDR_FROM_POOL.permissions,
    )


def zone_subnet_steps(
    eks: EksSection,
    az: str,
    cidr: str,
    tags: dict[str, str],
    create: tuple[str, tuple[str, ...]],
    route: tuple[str, str],
    *,
    carved: dict[str, Any] | None = None,
) -> list[Step]:
    """`create-subnet-<az>` (description, depends_on) and `route-subnet-<az>` (route table, description).
    With `carved`, the subnet's CIDR is carved at apply time from a CIDR known only then (an IPAM pool's)."""
    (create_text, create_after), (table, route_text) = create, route
    where: dict[str, Any] = {"cidr": cidr} if carved is None else {"carve": carved}
    return [
        Step(
            id=f"create-subnet-{az}",
            action=CREATE_SUBNET.name,
            params={"vpc_id": eks.vpc.vpc_id, "az": az, **where, "tags": tags},
            description=create_text,
            depends_on=create_after,
            permissions=CREATE_SUBNET.permissions,
        ),
        Step(
            id=f"route-subnet-{az}",
            action=ASSOCIATE_ROUTE_TABLE.name,
            params={"route_table_id": table, "subnet_id": f"${{create-subnet-{az}.subnet_id}}"},
            description=route_text,
            depends_on=(f"create-subnet-{az}",),
            permissions=ASSOCIATE_ROUTE_TABLE.permissions,
        ),
    ]
