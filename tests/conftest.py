"""Root pytest configuration: shared fixtures live in plugins so each stays small."""

pytest_plugins = ["tests.conftest_kube", "tests.conftest_retry", "tests.conftest_faults"]
