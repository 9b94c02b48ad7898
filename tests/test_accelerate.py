"""``kernels.accelerate.row_pointer``: a table row handed to called kernel functions as one
pointer, read with the same indices as the row (the scheduler of kernels/serving.py takes its
rows this way)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from kernels.accelerate import row_pointer


@numba.njit(cache=False)
def _read(table, i, idx):
    p = row_pointer(table[i])
    out = np.empty(idx.shape[0])
    for k in range(idx.shape[0]):
        out[k] = p[idx[k]]
    return out


@numba.njit(cache=False)
def _first(row):
    return row_pointer(row)[0]


@pytest.mark.nojit
def test_a_row_pointer_reads_the_row():
    rng = np.random.default_rng(3)
    table = rng.standard_normal((5, 65))
    idx = np.array([0, 1, 17, 40, 64])
    for i in range(5):
        np.testing.assert_array_equal(_read(table, i, idx), table[i, idx])


def test_a_row_pointer_needs_a_contiguous_float64_row():
    table = np.arange(12.0).reshape(3, 4)
    with pytest.raises(numba.core.errors.TypingError):
        _first(table[:, 1])  # a strided column: the fields are not adjacent
    with pytest.raises(numba.core.errors.TypingError):
        _first(np.arange(4, dtype=np.float32))
