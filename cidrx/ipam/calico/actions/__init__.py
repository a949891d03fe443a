"""Calico's step actions, one module per action: its `Action` declaration beside its executor (and its undo
and Terraform where it has them)."""
