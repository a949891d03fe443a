"""`python -m tools.docgen [--check]`: regenerate (or check) the generated docs."""

import sys

from tools.docgen import main

sys.exit(main())
