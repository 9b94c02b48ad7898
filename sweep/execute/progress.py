"""A progress bar for long runs: points done, points/s, ETA.

On a terminal, a plain text bar on stderr; in a Jupyter notebook (where stderr is no terminal),
tqdm's notebook widget (a text bar where ipywidgets is missing); anywhere else
(logs, pipes, a script's captured output) silent. ``enabled=False`` silences both.
"""

from __future__ import annotations

import sys
import time


def _fmt_time(s: float) -> str:
    if s != s or s == float("inf"):
        return "--:--"
    s = int(s)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else \
        f"{s // 60:02d}:{s % 60:02d}"


def in_notebook() -> bool:
    """True inside a Jupyter kernel (an IPython shell that talks to a notebook front end)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:  # pragma: no cover - a very old IPython
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def notebook_bar(total: int, label: str):
    """tqdm's notebook widget where ipywidgets is installed, else tqdm's text bar (on stderr,
    which a notebook shows below the cell) without tqdm.auto's warning about the widget."""
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is not None:  # tqdm.notebook needs it
        from tqdm.notebook import tqdm_notebook

        return tqdm_notebook(total=total, desc=label, unit=" points", unit_scale=True)
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit=" points", unit_scale=True)


class Progress:
    def __init__(self, total: int, enabled: bool = True, stream=None, label: str = "sweep",
                 min_interval: float = 0.2) -> None:
        self.total = max(int(total), 1)
        self.stream = stream if stream is not None else sys.stderr
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = bool(enabled) and tty
        self.label = label
        self.done = 0
        self.start = time.perf_counter()
        self._last = 0.0
        self.min_interval = min_interval
        self._tqdm = None
        if enabled and not tty and stream is None and in_notebook():
            self._tqdm = notebook_bar(self.total, label)

    def update(self, n: int) -> None:
        self.done += int(n)
        if self._tqdm is not None:
            self._tqdm.update(int(n))
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < self.min_interval and self.done < self.total:
            return
        self._last = now
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        frac = self.done / self.total
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        self.stream.write(f"\r{self.label} [{bar}] {frac:6.1%} {self.done:,}/{self.total:,} "
                          f"points  {rate:,.0f} points/s  ETA {_fmt_time(eta)} ")
        self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
