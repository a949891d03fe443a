"""The GKE step actions, one module per family: each holds its `Action` declaration together with its Executor,
its Undo and its Terraform. `ACTIONS` is every one of them (the package's `SPEC.actions`), in the order
`cidrx permissions` and the docs list them."""

from __future__ import annotations

from cidrx.providers.gke.actions.cluster_ranges import ADD_CLUSTER_POD_RANGES
from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
from cidrx.providers.gke.actions.ip_masq import ADD_IP_MASQ_CIDR
from cidrx.providers.gke.actions.node_pool import CREATE_NODE_POOL
from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE

ACTIONS = (ADD_SECONDARY_RANGE, CREATE_NODE_POOL, ADD_CLUSTER_POD_RANGES, ADD_FIREWALL_RANGE, ADD_IP_MASQ_CIDR)
