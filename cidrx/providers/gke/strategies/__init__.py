"""The GKE expand strategies, one module each (`node_pool`, `cluster_range`), and what both plan alike
(`pod_range`: the new secondary range, the firewall and ip-masq-agent steps, the notes, the drift checks)."""
