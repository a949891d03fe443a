"""Collect the GKE section of a snapshot (`collect.collect_gke`) from the GKE and GCE APIs."""
