"""``python -m sweep.cli``: the ``sweep`` command."""

import sys

from sweep.cli import main

sys.exit(main())
