"""Commands added to the ``sweep`` CLI by this module (see ``sweep.cli.EXTRA_COMMANDS``)."""

from __future__ import annotations


def register(subparsers) -> None:
    """Add this module's sub-commands to the ``sweep`` parser."""
