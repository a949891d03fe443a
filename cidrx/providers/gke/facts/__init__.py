"""Pure facts about a GKE snapshot that diagnosis and the plans share: pod ranges in per-node blocks, the
occupied and unallocated network space, the node pool a plan copies, and the firewall rules and ip-masq-agent
configuration a new pod range must be added to."""
