"""The EKS step actions, one module per family: each holds its `Action` declarations together with their
executor (cidrx.engine.executor), their undo (cidrx.engine.undo) and their Terraform (`hcl`), so an action is
read and changed in one place; `all.ACTIONS` lists them for the package's spec.

Every executor finds its own earlier work (by the plan tag, label or description) before acting, so a crashed
or repeated apply converges without duplicates; writes that can race use the API's guard (Kubernetes objects
are replaced with their resourceVersion). Every undo finds only what carries the plan's tag or what the plan
itself names, puts settings back to the values the apply journal recorded before the change, and decides
"in use" before anything is removed (EC2 refuses some deletions only later, and moto refuses none).
"""
