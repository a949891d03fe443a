"""Plain Kubernetes clusters (`--k8s`): no cloud API, everything comes from the cluster itself."""
