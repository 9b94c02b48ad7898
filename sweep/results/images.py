"""Image files written by ``sweep plot`` and ``sweep validate --plot``: marked as this tool's in
their metadata, so that a later command replaces its own image and refuses to replace anything
else (a photo, a figure of yours) unless told to (``--overwrite``), as results are
(docs/results.md)."""

from __future__ import annotations

import re
from pathlib import Path

from sweep.results.provenance import package_version
from sweep.results.target import RESULT_MARK, check_file_output, write_file

#: image formats by file suffix, and the metadata key that carries the mark in each
FORMATS = {"png": "Software", "pdf": "Creator", "svg": "Creator"}
#: largest file searched for the mark (our images are well below)
MAX_BYTES = 64 << 20
_MARKS = {
    "png": re.compile(rb"^\x89PNG.*tEXtSoftware\x00" + RESULT_MARK.encode(), re.S),
    "pdf": re.compile(rb"^%PDF.*/Creator \(" + RESULT_MARK.encode(), re.S),
    "svg": re.compile(rb"<dc:creator>\s*<cc:Agent>\s*<dc:title>" + RESULT_MARK.encode()),
}


def image_format(path: str | Path) -> str:
    return Path(path).suffix.lower().lstrip(".")


def is_own_image(path: str | Path) -> bool:
    """True if ``path`` is an image this tool wrote (its metadata carries the mark)."""
    p = Path(path)
    fmt = image_format(p)
    try:
        if fmt not in _MARKS or not p.is_file() or p.stat().st_size > MAX_BYTES:
            return False
        return _MARKS[fmt].search(p.read_bytes()) is not None
    except OSError:
        return False


def check_image_output(path: str | Path, overwrite: bool = False) -> Path:
    """Check an image output before any work (see
    :func:`sweep.results.target.check_file_output`)."""
    return check_file_output(path, what="an image", suffixes=tuple(f".{f}" for f in FORMATS),
                             is_own=is_own_image, overwrite=overwrite)


def save_figure(fig, path: str | Path, *, dpi: int = 120, overwrite: bool = False,
                what: str = "sweep plot") -> Path:
    """Write a matplotlib figure to ``path`` (png, pdf or svg from the suffix) atomically, with
    the mark in its metadata; an existing file that is not ours is refused unless
    ``overwrite``."""
    target = check_image_output(path, overwrite)
    fmt = image_format(target)
    meta = {FORMATS[fmt]: f"{RESULT_MARK} {package_version()} ({what})"}
    return write_file(target, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt, metadata=meta))
