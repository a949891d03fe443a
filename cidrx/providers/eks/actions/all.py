"""Every EKS step action, in the order `cidrx permissions` and the docs list them (the spec's `actions`)."""

from __future__ import annotations

from cidrx.providers.eks.actions.auto_mode import APPLY_AUTO_NODE_CLASS
from cidrx.providers.eks.actions.cni_env import SET_DAEMONSET_ENV, UPDATE_ADDON_ENV
from cidrx.providers.eks.actions.eniconfig import APPLY_ENICONFIG
from cidrx.providers.eks.actions.karpenter import SET_DEPLOYMENT_ENV, UPDATE_EC2_NODE_CLASS
from cidrx.providers.eks.actions.launch_template import CREATE_LAUNCH_TEMPLATE_VERSION, SET_GROUP_LAUNCH_TEMPLATE
from cidrx.providers.eks.actions.nodegroup import CREATE_NODEGROUP
from cidrx.providers.eks.actions.subnets import ASSOCIATE_ROUTE_TABLE, CREATE_SUBNET, RESERVE_SUBNET_CIDR
from cidrx.providers.eks.actions.vpc_cidr import ASSOCIATE_VPC_CIDR, ASSOCIATE_VPC_CIDR_FROM_POOL

ACTIONS = (
    ASSOCIATE_VPC_CIDR,
    CREATE_SUBNET,
    ASSOCIATE_ROUTE_TABLE,
    APPLY_ENICONFIG,
    UPDATE_ADDON_ENV,
    SET_DAEMONSET_ENV,
    CREATE_NODEGROUP,
    ASSOCIATE_VPC_CIDR_FROM_POOL,
    UPDATE_EC2_NODE_CLASS,
    APPLY_AUTO_NODE_CLASS,
    SET_DEPLOYMENT_ENV,
    CREATE_LAUNCH_TEMPLATE_VERSION,
    SET_GROUP_LAUNCH_TEMPLATE,
    RESERVE_SUBNET_CIDR,
)
