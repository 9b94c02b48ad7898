"""Errors for bad user input.

Every check at the ``grids``/``sweep`` boundary collects *all* the problems it finds and raises one
:class:`SpecError`, so a user fixes a spec in one pass instead of one error at a time.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SpecError(ValueError):
    """Bad user input: carries every problem found, each saying what is wrong and how to fix it."""

    def __init__(self, problems: str | Iterable[str], context: str = "") -> None:
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        self.context = context
        head = f"{context}: " if context else ""
        if len(self.problems) == 1:
            text = head + self.problems[0]
        else:
            text = head + f"{len(self.problems)} problems:\n  - " + "\n  - ".join(self.problems)
        super().__init__(text)


def suggest(name: str, known: Iterable[str], n: int = 3) -> str:
    """Return a hint naming the closest known names to ``name`` (or listing all of them)."""
    known = list(known)
    matches = difflib.get_close_matches(str(name), known, n=n, cutoff=0.5)
    if matches:
        return f" (did you mean {', '.join(repr(m) for m in matches)}?)"
    return f" (known: {', '.join(sorted(known))})"
