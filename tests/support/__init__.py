"""Everything the tests share that is not a test: fakes, estates, cases, the CLI runner, pytest plugins."""
