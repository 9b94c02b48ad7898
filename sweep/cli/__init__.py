"""The ``sweep`` command line: one module per group of commands, each with ``register(sub)``.

Exit codes: 0 success, 2 bad input (one clear message, no traceback), 1 unexpected error,
130 interrupted by Ctrl-C (SIGINT), 143 terminated by SIGTERM; an interrupted run leaves the previous
target as it was and removes its partial file.
Set ``SWEEP_DEBUG=1`` to see tracebacks of unexpected errors.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from typing import NoReturn

from grids.errors import SpecError

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

#: command modules, in the order their commands appear in ``sweep --help``
COMMAND_MODULES = ("sweep.cli.run", "sweep.cli.catalog", "sweep.cli.analysis",
                   "sweep.cli.report", "sweep.cli.validate", "sweep.cli.glossary",
                   "sweep.cli.fleet")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors are bad input too
        # one line, as every other bad input (argparse would print its usage block first)
        sys.stderr.write(f"sweep: error: {message} (`{self.prog} --help` shows the usage)\n")
        sys.exit(EXIT_BAD_INPUT)


def _version() -> str:
    from sweep.results.provenance import package_version

    return package_version()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sweep", description="Parametric roofline sweeps of LLM inference on AI "
                "accelerators: evaluate a grid of hardware x model x batch x context x precision "
                "x layout x engine (sweep run), then analyse, plot and report the result.",
                epilog="Start with 'sweep run' (the built-in default grid, written to sweep.nc), "
                "then 'sweep info sweep.nc' and 'sweep report sweep.nc -o report.html'. "
                "'sweep COMMAND --help' describes a command's options; 'sweep glossary' every "
                "metric, dim and basis with its units; 'sweep catalog hardware' the devices.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return p


_SHOWN: set[str] = set()


def _note(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line on stderr, each text once per command."""
    text = str(message)
    if text not in _SHOWN:
        _SHOWN.add(text)
        sys.stderr.write(f"sweep: warning: {text}\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = warnings.showwarning
    warnings.showwarning = _note  # the analyses' warnings as one line each
    try:
        code = args.func(args)
    except SpecError as exc:
        sys.stderr.write(f"sweep: error: {exc}\n")
        code = EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        code = getattr(exc, "exit_code", EXIT_INTERRUPTED)
        what = "terminated" if code == 128 + signal.SIGTERM else "interrupted"
        written = getattr(exc, "published", None) or getattr(args, "published", None)
        if written is not None:  # the signal came after the result was renamed onto the target
            sys.stderr.write(f"\nsweep: {what} after the result was written to {str(written)!r}; "
                             f"only its summary was not printed (`sweep info` describes it)\n")
        else:
            sys.stderr.write(f"\nsweep: {what}; the previous output (if any) is unchanged and "
                             f"no partial result was left\n")
    except BrokenPipeError:
        code = EXIT_OK
    except ModuleNotFoundError as exc:  # a dependency of the package is missing
        sys.stderr.write(f"sweep: error: this command needs the Python package "
                         f"{exc.name!r}, which is not installed; accel-sweep declares it, so "
                         f"reinstall it (python3 -m pip install .) or install {exc.name!r}\n")
        code = EXIT_BAD_INPUT
    except Exception as exc:
        if os.environ.get("SWEEP_DEBUG"):
            raise
        written = getattr(exc, "published", None) or getattr(args, "published", None)
        after = (f" after the result was written to {str(written)!r}" if written is not None
                 else "")
        sys.stderr.write(f"sweep: unexpected error{after}: {type(exc).__name__}: {exc}\n"
                         f"(run with SWEEP_DEBUG=1 for a traceback and please report it)\n")
        code = EXIT_ERROR
    finally:
        warnings.showwarning = previous
    return code
