"""Where a result goes: output checks before any work, atomic publication, stale partials,
file-system faults as one clear error. See docs/results.md.

A result is written under a temporary name next to the target and renamed onto it only once
complete, so a run interrupted at any moment (Ctrl-C, SIGTERM, SIGKILL, a crash, a full disk)
leaves either the previous target or nothing under the target name; an existing target is replaced
only when it is recognisably a previous result of this tool, or when the user says so.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from grids.errors import SpecError

TMP_PREFIX = ".sweep-partial-"
FORMATS = ("netcdf", "zarr")
#: file name suffixes each format accepts (a result the tool cannot read back is refused up front)
SUFFIXES = {"netcdf": (".nc", ".nc4", ".netcdf"), "zarr": (".zarr",)}
#: the global ``source`` attribute of every result this tool writes starts with this
RESULT_MARK = "accel-sweep"


class OutputError(SpecError):
    """The output path cannot be written (exit 2 from the CLI): says what and how to fix it."""


def infer_format(path: str | Path, fmt: str | None) -> str:
    """The format of ``path``: ``fmt`` if given (it must agree with the file name), else from the
    suffix (``.nc``/``.nc4``/``.netcdf`` netCDF, ``.zarr`` Zarr)."""
    name = str(path).rstrip("/")
    by_suffix = next((f for f, sfx in SUFFIXES.items() if name.lower().endswith(sfx)), None)
    if fmt is not None:
        if fmt not in FORMATS:
            raise OutputError(f"unknown format {fmt!r}: use one of {FORMATS}")
        if by_suffix is not None and by_suffix != fmt:
            raise OutputError(f"output {name!r} has a {by_suffix} file name but --format {fmt} was "
                              f"asked for: name it *{SUFFIXES[fmt][0]} or drop --format")
        if by_suffix is None:
            raise OutputError(f"output {name!r}: a {fmt} result needs a name ending in "
                              f"{' or '.join(SUFFIXES[fmt])} (so that it can be opened again)")
        return fmt
    if by_suffix is None:
        raise OutputError(f"output {name!r}: cannot tell the format from the name; end it in .nc "
                          f"(netCDF) or .zarr (Zarr)")
    return by_suffix


def is_result(path: str | Path) -> bool:
    """True if ``path`` is recognisably a result written by this tool: a netCDF file or a Zarr
    store whose global ``source`` attribute starts with ``accel-sweep``. Reads metadata only."""
    p = Path(path)
    try:
        if p.is_dir():
            return _zarr_attrs_mark(p)
        if p.is_file():
            import netCDF4

            with netCDF4.Dataset(p, "r") as nc:
                return str(getattr(nc, "source", "")).startswith(RESULT_MARK)
    except (OSError, RuntimeError, ValueError, UnicodeDecodeError):
        return False
    return False


def _zarr_attrs_mark(p: Path) -> bool:
    import json

    for meta in (p / ".zattrs", p / "zarr.json"):
        if meta.is_file():
            attrs = json.loads(meta.read_text(encoding="utf-8"))
            attrs = attrs.get("attributes", attrs) if meta.name == "zarr.json" else attrs
            return str(attrs.get("source", "")).startswith(RESULT_MARK)
    return False


def check_output(path: str | Path, fmt: str | None = None, *, overwrite: bool = False
                 ) -> tuple[Path, str]:
    """Check an output path before any work is done; returns ``(path, format)``.

    Refused (:class:`OutputError`): a name whose suffix does not match the format; a missing or
    unwritable parent directory; an existing target of the wrong kind (a directory where a netCDF
    file is wanted, a file where a Zarr store is wanted); an existing target that is not a result
    of this tool, unless ``overwrite`` (the user's explicit choice to replace it).
    """
    target = Path(path)
    fmt = infer_format(target, fmt)
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"output directory {str(parent)!r} does not exist (create it first)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"output directory {str(parent)!r} is not writable")
    if target.exists() or target.is_symlink():
        if fmt == "netcdf" and target.is_dir():
            raise OutputError(f"output {str(target)!r} is a directory; a netCDF result is a file: "
                              f"choose a file name")
        if fmt == "zarr" and not target.is_dir():
            raise OutputError(f"output {str(target)!r} exists and is not a directory; a Zarr result "
                              f"is a directory: choose another name")
        if not overwrite and not is_result(target):
            what = "directory" if target.is_dir() else "file"
            raise OutputError(f"refusing to replace {str(target)!r}: it is an existing {what} that "
                              f"is not a result written by sweep; choose another output name or pass "
                              f"--overwrite (overwrite=True) to replace it")
    return target, fmt


#: suffix of the lock file a run holds on its target (``.<target name>.sweep-lock``)
LOCK_SUFFIX = ".sweep-lock"


class TargetLock:
    """An exclusive lock on an output path, held from the check of the target until the result
    is published: a second run to the same target is refused at once (before it computes
    anything), naming the run that holds it, instead of racing it to the rename.

    The lock is ``fcntl.flock`` on ``.<target name>.sweep-lock`` beside the target (any process on
    the machine sees it; on network file systems flock may be local to each client). A lock file
    left by a killed run is not held and is taken over; the file is removed on release. Within
    one process the lock is re-entrant (a run's writer and the run share it)."""

    _held: ClassVar[dict[str, TargetLock]] = {}

    def __init__(self, target: str | Path) -> None:
        self.target = Path(target)
        self.path = self.target.parent / f".{self.target.name}{LOCK_SUFFIX}"
        self.key = os.path.realpath(self.path)
        self._fd: int | None = None
        self._depth = 0

    @classmethod
    def acquire(cls, target: str | Path) -> TargetLock:
        """The lock of ``target``, taken (or the one this process holds already)."""
        lock = cls(target)
        held = cls._held.get(lock.key)
        if held is not None:
            held._depth += 1
            return held
        lock._take()
        lock._depth = 1
        cls._held[lock.key] = lock
        return lock

    def _take(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        for _ in range(10):  # retry when the file was replaced under us (see below)
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as exc:
                raise OutputError(f"cannot write in {str(self.path.parent)!r}: "
                                  f"{exc.strerror}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_text(fd)
                os.close(fd)
                raise OutputError(
                    f"another sweep run{(' (' + holder + ')') if holder else ''} is writing "
                    f"{str(self.target)!r}; it keeps the target: wait for it to finish, or "
                    f"write this run elsewhere (-o)") from None
            # a run that released the lock removed the file: if ours is no longer the one at
            # the path, a third run may lock the new file too; take the lock again
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"pid {os.getpid()}, started {_now()}".encode())
                self._fd = fd
                return
            os.close(fd)
        raise OutputError(f"cannot lock {str(self.target)!r}: its lock file keeps changing")

    def release(self) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        TargetLock._held.pop(self.key, None)
        if self._fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # while still held: a waiting run re-checks the path
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> TargetLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read_text(fd: int) -> str:
    try:
        return os.pread(fd, 200, 0).decode(errors="replace").strip()
    except OSError:
        return ""


def _now() -> str:
    import time

    return time.strftime("%H:%M:%S")


class _Atomic:
    """Write under a temporary name in the target's directory, publish by renaming onto it.

    The temporary result is ``.<target name>.sweep-partial-<token><suffix>``, created after a lock
    file ``.<target name>.sweep-partial-<token>.lock`` that this process holds locked
    (``fcntl.flock``) until it has published or discarded the result. A run that dies leaves its
    partial behind with an unlocked lock file: the next run to the same target removes it (see
    :func:`remove_stale_partials`); partials whose lock is held belong to a live run and are kept.
    """

    def __init__(self, target: str | Path, suffix: str, *, overwrite: bool = False,
                 before_publish: Callable[[], None] | None = None) -> None:
        self.target = Path(target)
        self.overwrite = overwrite
        self.before_publish = before_publish
        self.published = False
        parent = self.target.parent
        if not parent.is_dir():
            raise OutputError(f"output directory {str(parent)!r} does not exist")
        self.target_lock: TargetLock | None = TargetLock.acquire(self.target)
        try:
            remove_stale_partials(self.target)
            token = uuid.uuid4().hex[:12]
            stem = f".{self.target.name}{TMP_PREFIX}{token}"
            self.lock_path = parent / f"{stem}.lock"
            self.tmp = parent / f"{stem}{suffix}"
            self.old = parent / f"{stem}.old"
            self._lock_fd = _take_lock(self.lock_path)
        except BaseException:
            self._release_target()
            raise

    def commit(self) -> None:
        if self.before_publish is not None:
            self.before_publish()  # e.g. stop here if an interrupt was swallowed somewhere
        t = self.target
        exists = t.exists() or t.is_symlink()
        if exists and not self.overwrite and not is_result(t):
            raise OutputError(f"refusing to replace {str(t)!r}: it appeared during the run and is "
                              f"not a result written by sweep (pass --overwrite to replace it)")
        with publishing():  # an interrupt waits until the renames and the flag agree
            if exists and t.is_dir() and not t.is_symlink():
                # a directory cannot be renamed over: move it aside first (a run that dies
                # between the two renames leaves it as <stem>.old, which the next run restores)
                os.replace(t, self.old)
            os.replace(self.tmp, t)  # a file target (or symlink) is replaced atomically
            self.published = True
        if self.old.exists():
            shutil.rmtree(self.old, ignore_errors=True)
        _fsync_dir(t.parent)
        self._release()

    def discard(self) -> None:
        if not self.published:
            if self.tmp.is_dir():
                shutil.rmtree(self.tmp, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    self.tmp.unlink()
        self._release()

    def _release(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.lock_path.unlink()
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)  # closing drops the flock
            self._lock_fd = None
        self._release_target()

    def _release_target(self) -> None:
        if self.target_lock is not None:
            self.target_lock.release()
            self.target_lock = None


_publishing = 0


@contextlib.contextmanager
def publishing():
    """The renames that publish a result. A run's signal handler
    (:mod:`sweep.execute.signals`) only records a signal that arrives in here, and the run raises
    it right after (:func:`sweep.execute.signals.checkpoint`), so what it reports (published or
    not) is what happened to the target."""
    global _publishing
    _publishing += 1
    try:
        yield
    finally:
        _publishing -= 1


def publishing_now() -> bool:
    """True while a result is being renamed onto its target (see :func:`publishing`)."""
    return _publishing > 0


def _take_lock(path: Path) -> int | None:
    """Create ``path`` and hold an exclusive flock on it (None where flock is unavailable)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot write in {str(path.parent)!r}: {exc.strerror}") from exc
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - not POSIX
        pass
    return fd


def remove_stale_partials(target: str | Path) -> list[Path]:
    """Remove what dead runs to ``target`` left behind; returns the removed paths.

    Only files that are provably this tool's (the ``.<target>.sweep-partial-<token>`` names) and
    provably dead (their lock file can be locked, so no process holds it) are removed.
    """
    target = Path(target)
    removed: list[Path] = []
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return removed
    prefix = f".{target.name}{TMP_PREFIX}"
    for lock in sorted(target.parent.glob(f"{glob.escape(prefix)}*.lock")):
        stem = lock.name[:-len(".lock")]
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # held by a live run
            for p in lock.parent.glob(f"{glob.escape(stem)}*"):
                if p == lock:
                    continue
                if p.name.endswith(".old") and not (target.exists() or target.is_symlink()):
                    os.replace(p, target)  # died between the two renames of a commit: restore
                    continue
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        p.unlink()
                removed.append(p)
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            removed.append(lock)
        finally:
            os.close(fd)
    return removed


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: below this many free bytes a failed write is reported as a full disk
FULL_DISK_SLACK = 16 << 20


@contextlib.contextmanager
def diagnose_write(directory: Path, nbytes: int = 0):
    """Turn a failed write into one clear :class:`OutputError` when the cause is the file system:
    no space left, a read-only file system, no permission. (The netCDF library reports a full
    disk only as "NetCDF: HDF error", so the free space is checked after any failure.) Other
    errors pass through unchanged."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        code = getattr(exc, "errno", None)
        try:
            free = shutil.disk_usage(directory).free
        except OSError:
            free = None
        where = str(directory)
        if code == errno.ENOSPC or (free is not None and free < max(FULL_DISK_SLACK, 2 * nbytes)):
            have = "" if free is None else f" ({free / 2**20:.1f} MiB free)"
            raise OutputError(f"no space left on the device holding {where!r}{have}: free some "
                              f"space or write elsewhere (-o); nothing was left under the target "
                              f"name") from exc
        if code in (errno.EROFS, errno.EACCES, errno.EPERM):
            reason = getattr(exc, "strerror", None) or exc  # errno set: an OSError's message
            raise OutputError(f"cannot write in {where!r}: {reason} (a read-only file "
                              f"system or no permission): write elsewhere (-o)") from exc
        raise


# --------------------------------------------------------------------------------------------
# other outputs: images, calibration overlays


def check_file_output(path: str | Path, *, what: str, suffixes: tuple[str, ...],
                      is_own: Callable[[Path], bool], overwrite: bool = False) -> Path:
    """Check a single-file output (an image, a calibration overlay) before any work, as
    :func:`check_output` does for results: the name ends in one of ``suffixes``; its directory
    exists (it is not created) and is writable; the target is not a directory; an existing file
    is replaced only when ``is_own`` recognises it as this tool's output of the same kind, or
    with ``overwrite``. Returns the path; raises :class:`OutputError`."""
    target = Path(path)
    if not target.name.lower().endswith(tuple(s.lower() for s in suffixes)):
        raise OutputError(f"{what} {str(target)!r}: cannot tell the format from the name; "
                          f"end it in {' or '.join(suffixes)}")
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"output directory {str(parent)!r} does not exist (create it first)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"output directory {str(parent)!r} is not writable")
    if target.is_dir():
        raise OutputError(f"{what} {str(target)!r} is a directory: choose a file name")
    if (target.exists() or target.is_symlink()) and not overwrite and not is_own(target):
        raise OutputError(f"refusing to replace {str(target)!r}: it is an existing file that is "
                          f"not {what} written by sweep; choose another name or pass "
                          f"--overwrite to replace it")
    return target


def write_file(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Write a single-file output atomically: ``write(tmp)`` fills a temporary file beside the
    target (``.<name>.sweep-partial-<token><suffix>``), which is then renamed onto it; on any
    failure the temporary file is removed and the target is untouched. File-system faults (full
    disk, read-only) become one :class:`OutputError`."""
    target = Path(path)
    tmp = target.parent / f".{target.name}{TMP_PREFIX}{uuid.uuid4().hex[:12]}{target.suffix}"
    try:
        with diagnose_write(target.parent):
            write(tmp)
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target
