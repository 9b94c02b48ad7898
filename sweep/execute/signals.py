"""Interrupts that always stop a run: SIGINT (Ctrl-C) and SIGTERM.

Python turns SIGINT into ``KeyboardInterrupt`` wherever the main thread happens to be. When that is
inside a C callback (numba and llvmlite call back into Python while compiling), the exception is
printed as "ignored" and lost, and the run would go on to publish its result. So, while a run is
:func:`guarded`, both signals are recorded as well as raised: :func:`checkpoint` raises
:class:`Interrupted` again at every chunk boundary and right before a result is published, so an
interrupt that was swallowed once still stops the run, deterministically, before the target is
touched. SIGTERM (the default signal of ``kill``, and what batch schedulers send) is handled the same
way, so the partial file is cleaned up instead of left behind.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path

from sweep.results.target import publishing_now

#: signals a guarded run turns into :class:`Interrupted`
HANDLED = (signal.SIGINT, signal.SIGTERM)

_pending: list[int] = []
_depth = 0


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"interrupted by {signal.Signals(self.signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _handler(signum, frame) -> None:
    _pending.append(signum)
    if publishing_now():  # the rename of a result: checkpoint() raises it right after
        return
    raise Interrupted(signum)


def mark_published(exc: BaseException, output) -> BaseException:
    """``exc`` with the attribute ``published`` = the target's path: the result was published
    before ``exc`` was raised (the CLI then says so instead of "unchanged")."""
    with contextlib.suppress(AttributeError, TypeError):
        exc.published = Path(output)  # type: ignore[attr-defined]
    return exc


def abandon(writer, exc: BaseException, output) -> None:
    """After ``exc`` stopped a run: remove the writer's unfinished result (the previous one stays)
    and, when the result was already published, say so on ``exc`` (:func:`mark_published`)."""
    writer.abort()
    if writer.published:
        mark_published(exc, output)


def checkpoint() -> None:
    """Raise :class:`Interrupted` if a signal arrived during the guarded run (even if the
    exception it raised at the time was swallowed)."""
    if _pending:
        raise Interrupted(_pending[0])


def pending() -> int | None:
    """The first signal received during the guarded run, or None."""
    return _pending[0] if _pending else None


@contextlib.contextmanager
def guarded():
    """Install the handlers for the duration of a run (main thread only; elsewhere a no-op).

    Nested use is allowed: the outermost call installs the handlers, forgets earlier signals, and
    restores the previous handlers at the end. A signal that is ignored when the run starts
    (``nohup``, a background job) stays ignored."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    if _depth == 0:
        _pending.clear()
        for sig in HANDLED:
            current = signal.getsignal(sig)
            if current == signal.SIG_IGN:
                continue
            previous[sig] = current
            signal.signal(sig, _handler)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        for sig, old in previous.items():
            signal.signal(sig, old)
