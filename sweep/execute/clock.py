"""When this process began importing ``sweep`` (``sweep/__init__.py`` imports this module first).

The CPU time used by then is the interpreter's own start-up: :func:`sweep.cli.run.process_age`
counts the start-up of a run from it when the kernel's record of the process start is older than
the command (a shell that execs its last command without forking)."""

import time

#: (``time.perf_counter()``, ``time.process_time()``) at the start of ``import sweep``
IMPORT_STARTED = (time.perf_counter(), time.process_time())
