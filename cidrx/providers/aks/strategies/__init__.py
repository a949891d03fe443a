"""AKS expand strategies: one module per strategy, and what they share (subnet)."""
