"""The in-cluster IPAMs cidrx diagnoses and reclaims from: one package each, named in cidrx.registry."""
