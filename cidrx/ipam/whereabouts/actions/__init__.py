"""Whereabouts' step actions, one module per action: its `Action` declaration beside its executor."""
