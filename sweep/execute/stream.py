"""Stream chunks to a result file on a writer thread while the next chunk is computed.

The writer thread first creates the file (:meth:`ResultWriter.prepare
<sweep.results.files.ResultWriter.prepare>`) while the first chunk is computed. The run then
evaluates chunk k+1 into one buffer while the writer thread compresses and writes chunk k from the
other: two buffers, reused for the whole run (no fresh memory, hence no page faults, per chunk),
so memory stays within the run's budget. The writer thread is the only thread that touches
the file while it runs (netCDF4/HDF5 is not thread-safe); the kernels release the GIL, and so do
the compressors (zlib in HDF5, Blosc/Zstd in numcodecs), so both cores stay busy.

Failures: an exception on the writer thread (a full disk) is raised on the calling thread at the
next chunk or at :meth:`ChunkStream.finish`; an exception on the calling thread (an interrupt) is
followed by :meth:`ChunkStream.abort`, which stops the writer thread before the caller removes the
partial file.
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np

from sweep.execute.grid import GridRun, count_feasible
from sweep.execute.memory import populated_empty
from sweep.execute.plan import Chunk


class ChunkStream:
    """Double-buffered chunk writer: :meth:`dest` lends a free buffer to
    :meth:`GridRun.evaluate <sweep.execute.grid.GridRun.evaluate>`, :meth:`submit` hands the
    evaluated chunk to the writer thread, which gives the buffer back once written."""

    def __init__(self, writer, gr: GridRun, buffer_points: int, n_buffers: int = 2) -> None:
        self.writer = writer
        self.gr = gr
        self._free: queue.Queue = queue.Queue()
        self._todo: queue.Queue = queue.Queue()
        self._lent: np.ndarray | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="accel-sweep-writer", daemon=True)
        self.error: BaseException | None = None
        self.feasible = 0
        self.write_seconds = 0.0  # the writer thread's busy time
        self.buffer_wait = 0.0    # the calling thread's time waiting for a free buffer
        self.finish_wait = 0.0    # ... and for the last writes
        # the writer thread creates the file (a writer opened later) while the buffers are
        # mapped here and the first chunk is computed
        self._thread.start()
        for _ in range(max(1, n_buffers)):
            self._free.put(populated_empty((gr.rows, max(1, int(buffer_points))),
                                           np.float32))

    # ---- calling thread
    def dest(self, c: Chunk) -> tuple[np.ndarray, int]:
        """A free buffer for chunk ``c`` (waits while both are being written)."""
        self._raise_if_failed()
        if self._lent is not None:
            raise RuntimeError("a buffer is already lent: submit() the evaluated chunk first")
        t0 = time.perf_counter()
        buf = self._free.get()
        self.buffer_wait += time.perf_counter() - t0
        self._lent = buf
        self._raise_if_failed()
        return buf, 0

    def submit(self, c: Chunk, out: np.ndarray) -> None:
        """Queue the evaluated chunk ``c`` (``out``, a view of the lent buffer) for writing."""
        buf, self._lent = self._lent, None
        if buf is None:
            raise RuntimeError("submit() without a lent buffer")
        self._todo.put((c, out, buf))
        self._raise_if_failed()

    def finish(self) -> None:
        """Wait until every chunk is written; raise the writer's error, if any."""
        t0 = time.perf_counter()
        self._todo.put(None)
        self._thread.join()
        self.finish_wait += time.perf_counter() - t0
        self._raise_if_failed()

    def abort(self) -> None:
        """Stop writing (chunks still queued are dropped) and wait for the writer thread, so that
        nothing touches the file afterwards. Never raises."""
        self._stop.set()
        self._todo.put(None)
        while self._thread.is_alive():
            try:
                self._thread.join()
            except BaseException:  # a second interrupt: keep waiting, the write ends soon
                continue

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    # ---- writer thread
    def _work(self) -> None:
        int8: dict[str, np.ndarray] = {}
        prepare = getattr(self.writer, "prepare", None)
        if prepare is not None:
            t0 = time.perf_counter()
            try:
                prepare()
            except BaseException as exc:  # raised on the calling thread
                self.error = exc
            self.write_seconds += time.perf_counter() - t0
        while True:
            item = self._todo.get()
            if item is None:
                return
            c, out, buf = item
            try:
                if self.error is None and not self._stop.is_set():
                    t0 = time.perf_counter()
                    if self.gr.keeper is None:  # else the run counts every layout's points
                        self.feasible += count_feasible(out)
                    self.writer.write(self.gr.region(c), self.gr.chunk_arrays(c, out, int8))
                    self.write_seconds += time.perf_counter() - t0
            except BaseException as exc:  # raised on the calling thread
                self.error = exc
            finally:
                del out
                self._free.put(buf)
