"""Reading an AKS target: the managed cluster and its VNet through ARM (collect), and the cluster's own
ClusterSubnetState objects (cluster)."""
