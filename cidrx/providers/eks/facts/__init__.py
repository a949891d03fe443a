"""Pure facts about an EKS estate, derived from the snapshot and shared by analysis, the strategies and the
address maps: the VPC CNI's settings, ENIConfig selection, subnet use, routed space, IPAM pools, the add-on
schema, node provisioners and subnet discovery."""
