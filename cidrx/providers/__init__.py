"""The clouds (and plain Kubernetes) cidrx diagnoses and fixes: one package each, named in cidrx.registry."""
