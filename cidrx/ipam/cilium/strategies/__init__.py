"""The `cilium-pool` strategy and what its plans share (the section they read, the space they keep clear of)."""
