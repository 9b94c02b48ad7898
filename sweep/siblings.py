"""``sweep`` needs its sibling packages ``kernels`` and ``grids``, installed beside it under those
top-level names. Hugging Face's kernel-hub package (``pip install kernels``, installed beside
``transformers`` by many LLM users) also installs a top-level ``kernels``: in one environment the
two overwrite each other's files. :func:`check` (run by ``import sweep``; ``setup.py`` asks the
same before installing) finds the packages Python would import, without importing them, and stops
with one message and the fix when either is not this project's.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

#: per sibling: files only this project's package has, and a name its ``__init__.py`` defines
SIGNATURE = {"kernels": (("params.py", "roofline.py", "grid.py"), "evaluate_grid"),
             "grids": (("tomlio.py", "layouts.py", "data/classes.toml"), "load_spec")}
FIX = ("install accel-sweep in an environment of its own: python3 -m venv ~/.venvs/accel-sweep "
       "&& ~/.venvs/accel-sweep/bin/python -m pip install . (or pipx install .), and keep "
       "Hugging Face's kernels package in the environment of your models")


class PackageClash(ImportError):
    """A sibling package (``kernels`` or ``grids``) is not accel-sweep's."""


def problem(name: str, here: Path) -> str:
    """Why the package ``name`` that Python would import is not accel-sweep's (``""`` if it is).
    ``here``: the directory that holds ``sweep``."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return f"the package {name!r} is missing (accel-sweep installs it beside 'sweep')"
    init = Path(spec.origin)
    files, defined = SIGNATURE[name]
    lacks = [f for f in files if not (init.parent / f).is_file()]
    text = init.read_text(encoding="utf-8", errors="replace") if init.is_file() else ""
    if init.name != "__init__.py" or lacks or defined not in text:
        what = f"it lacks {', '.join(lacks)}" if lacks else f"its __init__.py has no {defined}"
        return (f"the package {name!r} at {init.parent} is not accel-sweep's ({what}); another "
                f"distribution (e.g. Hugging Face's 'kernels') installs the same top-level name "
                f"and overwrites its files")
    if init.parent.parent.resolve() != here.resolve():
        return (f"the package {name!r} at {init.parent} is not the one installed beside "
                f"'sweep' in {here} (another package of that name comes first on sys.path)")
    return ""


def check(here: Path | None = None) -> None:
    """Raise :class:`PackageClash` (one message, with the fix) when ``kernels`` or ``grids`` is
    not accel-sweep's."""
    here = Path(__file__).resolve().parent.parent if here is None else here
    found = [p for p in (problem(n, here) for n in SIGNATURE) if p]
    if found:
        raise PackageClash(f"accel-sweep cannot run: {'; '.join(found)}. Fix: {FIX}.")


DISTRIBUTION = "accel-sweep"


def foreign_owners(mapping: Mapping[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Installed distributions other than accel-sweep that provide a top-level ``kernels``,
    ``grids`` or ``sweep`` (``mapping``: ``importlib.metadata.packages_distributions()``, read
    when not given). ``setup.py`` asks this of the target environment before installing."""
    if mapping is None:
        from importlib.metadata import packages_distributions

        mapping = packages_distributions()
    out = {}
    for name in ("kernels", "grids", "sweep"):
        others = sorted({d for d in mapping.get(name, []) if d.lower().replace("_", "-")
                         != DISTRIBUTION})
        if others:
            out[name] = others
    return out


def clash_message(owners: dict[str, list[str]]) -> str:
    """The one message for an environment whose ``kernels``/``grids``/``sweep`` belong to other
    distributions."""
    held = "; ".join(f"'{n}' by {', '.join(d)}" for n, d in owners.items())
    return (f"this environment already has top-level packages that accel-sweep installs: {held}. "
            f"Installing here would overwrite their files (and they ours). Fix: {FIX}.")


if __name__ == "sweep.siblings":  # imported by `import sweep`, before grids and kernels
    check()

if __name__ == "__main__":  # python sweep/siblings.py: used by setup.py, prints the clash if any
    import sys

    found = foreign_owners()
    if found:
        print(clash_message(found))
        sys.exit(3)
