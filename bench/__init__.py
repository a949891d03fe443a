"""Benchmarks of DESIGN.md §7 (run from the repository root: `python -m bench.<script>` or `bench/run`)."""
