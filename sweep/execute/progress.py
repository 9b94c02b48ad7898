"""A plain progress bar for long runs: points done, points/s, ETA.

Shown only when the stream is a terminal (and ``enabled``); otherwise silent, so logs and pipes
stay clean.
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


class Progress:
    def __init__(self, total: int, enabled: bool = True, stream=None, label: str = "sweep",
                 min_interval: float = 0.2) -> None:
        self.total = max(int(total), 1)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled) and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.label = label
        self.done = 0
        self.start = time.perf_counter()
        self._last = 0.0
        self.min_interval = min_interval

    def update(self, n: int) -> None:
        self.done += int(n)
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
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
