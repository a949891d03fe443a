"""The AKS step actions, one module per family: each holds its `Action` declarations together with their
Executor, Undo and Terraform; the strategies name the ones their plans use."""
