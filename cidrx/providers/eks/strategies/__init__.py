"""The EKS strategies, one module each (`custom_networking`, `prefix_delegation`, `subnet_discovery`): its
`make_plan(snapshot, opts, created_at)`, its `check_drift(plan, snapshot, begun)` and `ACTIONS`, named by its
declaration in the package's `__init__`. Planning helpers more than one strategy uses live in modules named
for what they hold (`space`, `placement`, `network_steps`, `provisioners`, `drift`); `default` picks the
strategy `expand --plan` uses without --strategy. Pure: no I/O.
"""
