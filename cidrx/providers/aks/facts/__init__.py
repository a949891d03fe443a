"""Pure facts about an AKS snapshot that diagnosis and the plans share: what each subnet holds and must hold
under the cluster's network plugin mode, the space the VNet has taken, and the agent pool a plan copies."""
