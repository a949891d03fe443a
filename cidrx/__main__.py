"""`python -m cidrx`: the same entry point as the `cidrx` console script."""

from cidrx.cli import main

main()
