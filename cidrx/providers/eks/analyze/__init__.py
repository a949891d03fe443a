"""EKS diagnosis: findings and capacity rows, pure functions of the snapshot. `diagnosis.analyze` joins the
parts; each finding kind is declared in the module that raises it."""
