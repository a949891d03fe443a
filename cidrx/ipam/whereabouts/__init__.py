"""Whereabouts (cluster-wide IPAM CNI plugin): diagnose its pools and reclaim stale reservations."""
