"""AKS diagnosis (analyze)."""
