"""Kubernetes node IPAM (kube-controller-manager --allocate-node-cidrs): node podCIDR capacity."""
