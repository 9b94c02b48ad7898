"""``python -m sweep``: the ``sweep`` command (as the console script)."""

import sys

from sweep.cli import main

sys.exit(main())
