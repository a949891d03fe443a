"""Calico IPAM (Kubernetes datastore): collect, analyze, reclaim and expand with a new IPPool."""
