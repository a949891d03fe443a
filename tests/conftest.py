"""Root pytest configuration: shared fixtures live in plugins so each stays small."""

pytest_plugins = [
    "tests.support.conftest_kube",
    "tests.support.conftest_retry",
    "tests.support.conftest_faults",
    "tests.support.conftest_eks",
    "tests.support.conftest_gke",
    "tests.support.conftest_prometheus",
]
