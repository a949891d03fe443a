"""Benchmarks of docs/performance.md (run from the repository root: `python -m bench.<script>` or `bench/run`)."""
