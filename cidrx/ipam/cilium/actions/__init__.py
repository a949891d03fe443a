"""The step actions of Cilium's plans, one module per family (declaration, executor and undo together)."""
