"""Whereabouts' plan kinds, one module per strategy (`make_plan`, `check_drift`, `ACTIONS`)."""
