"""Array-level analysis: variation, extreme indices, Pareto masks, change points.

Plain NumPy in, NumPy out; nothing here knows about xarray (``sweep.accessor`` maps dims and
coordinates onto these functions). Conventions shared by every function:

- a candidate is *valid* (feasible) where its ``valid`` flag is true; callers pass
  ``np.isfinite(values) & (fits == 1)``. Invalid candidates never win, never dominate and are
  never part of a Pareto front;
- ``direction`` is ``"max"`` (higher is better) or ``"min"`` (lower is better), as in
  ``sweep.variables.DIRECTION``.
"""

from __future__ import annotations

import numpy as np

#: largest boolean (groups x n x n) block the Pareto filter materialises at once
PARETO_BLOCK_ELEMENTS = 1 << 22
#: groups with more candidates than this use the sorted chunked filter instead of all pairs
LARGE_GROUP = 1024

DIRECTIONS = ("max", "min")


def check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'max' or 'min', got {direction!r}")
    return direction


def oriented(values: np.ndarray, direction: str) -> np.ndarray:
    """``values`` as float64, negated for ``"min"`` so that larger is always better."""
    v = np.asarray(values, dtype=np.float64)
    return v if check_direction(direction) == "max" else -v


# ------------------------------------------------------------------------------ variation
def variation(values: np.ndarray, valid: np.ndarray, axis: int = 0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Spread of a non-negative metric across ``axis``, over valid candidates only.

    Returns ``(ratio, hi, lo, count)``: ``hi``/``lo`` the largest/smallest valid value (NaN
    where none is valid), ``count`` the number of valid candidates and ``ratio = hi / lo``
    where at least two are valid (NaN elsewhere). ``ratio >= 1`` wherever it is defined:
    ``0 / 0`` counts as 1 (all equal) and ``x / 0`` as ``inf``.
    """
    v = np.asarray(values, dtype=np.float64)
    ok = np.asarray(valid, dtype=bool) & np.isfinite(v)
    count = ok.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        hi = np.where(ok, v, -np.inf).max(axis=axis)
        lo = np.where(ok, v, np.inf).min(axis=axis)
        ratio = np.where(hi == lo, 1.0, hi / lo)
    none = count == 0
    hi = np.where(none, np.nan, hi)
    lo = np.where(none, np.nan, lo)
    ratio = np.where((count >= 2) & (lo >= 0), ratio, np.nan)
    return ratio, hi, lo, count


def extreme_index(values: np.ndarray, valid: np.ndarray, direction: str, axis: int = -1,
                  order: np.ndarray | None = None) -> np.ndarray:
    """Index (along ``axis``) of the best valid candidate; -1 where none is valid.

    Ties go to the candidate that comes first in ``order`` (a permutation of the axis, e.g. the
    argsort of the labels), so the result does not depend on the storage order of candidates.
    """
    v = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    ok = np.moveaxis(np.asarray(valid, dtype=bool), axis, -1) & np.isfinite(v)
    if order is not None:
        order = np.asarray(order, dtype=np.intp)
        v, ok = v[..., order], ok[..., order]
    if v.shape[-1] == 0:
        return np.full(v.shape[:-1], -1, dtype=np.intp)
    if check_direction(direction) == "max":
        idx = np.where(ok, v, -np.inf).argmax(axis=-1)
    else:
        idx = np.where(ok, v, np.inf).argmin(axis=-1)
    if order is not None:
        idx = order[idx]
    return np.where(ok.any(axis=-1), idx, -1).astype(np.intp)


def take_labels(index: np.ndarray, labels: np.ndarray, missing: str = "") -> np.ndarray:
    """``labels[index]`` as an object array of ``str``, ``missing`` where ``index < 0``."""
    lut = np.array([*(str(x) for x in np.asarray(labels).ravel()), missing], dtype=object)
    idx = np.asarray(index, dtype=np.intp)
    return lut[np.where(idx < 0, len(lut) - 1, idx)]


# ------------------------------------------------------------------------------ Pareto
def pareto_mask(x: np.ndarray, valid: np.ndarray | None = None,
                block_elements: int = PARETO_BLOCK_ELEMENTS) -> np.ndarray:
    """Non-dominated candidates of every group, all objectives to be maximised.

    ``x`` has shape ``(groups, n, k)``: ``n`` candidates with ``k`` objectives per group (orient
    lower-is-better objectives with :func:`oriented` first). ``valid`` ``(groups, n)`` marks
    feasible candidates (default: all objectives finite). Returns a ``(groups, n)`` bool mask.

    Candidate ``q`` dominates ``p`` iff ``q >= p`` in every objective and ``q > p`` in at least
    one; equivalently ``ge(q, p) and not ge(p, q)`` where ``ge`` is "no worse in all". Equal
    points therefore do not dominate each other (both stay on the front); invalid points never
    dominate and are never on the front. Vectorised O(n^2 k) per group, in blocks of groups so
    that at most ``block_elements`` booleans are alive at once.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"pareto_mask expects (groups, n, k), got shape {x.shape}")
    g, n, k = x.shape
    ok = np.isfinite(x).all(axis=-1)
    if valid is not None:
        ok &= np.asarray(valid, dtype=bool).reshape(g, n)
    out = np.zeros((g, n), dtype=bool)
    if g == 0 or n == 0:
        return out
    if n == 1 or k == 0:
        return ok.copy()
    if k == 2:
        return _pareto_two(x, ok)
    if n > LARGE_GROUP:
        for gi in range(g):
            idx = np.flatnonzero(ok[gi])
            out[gi, idx] = _pareto_sorted(x[gi, idx])
        return out
    # only groups with two or more valid candidates need the pairwise test
    multi = ok.sum(axis=1) >= 2
    out[~multi] = ok[~multi]
    todo = np.flatnonzero(multi)
    step = max(1, block_elements // (n * n))
    for s in range(0, len(todo), step):
        rows = todo[s:s + step]
        xb, okb = x[rows], ok[rows]
        ge = np.ones((len(rows), n, n), dtype=bool)  # ge[g, q, p]: q no worse than p in all
        for m in range(k):
            c = xb[:, :, m]
            ge &= c[:, :, None] >= c[:, None, :]
        dom = ge & ~ge.transpose(0, 2, 1)  # q dominates p
        dom &= okb[:, :, None]  # only feasible candidates dominate
        out[rows] = okb & ~dom.any(axis=1)
    return out


def _pareto_two(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """:func:`pareto_mask` of two objectives, every group at once, by sorting: O(n log n).

    Within a group sorted by the first objective, then the second, both decreasing, a point is
    dominated iff an earlier point of strictly larger first objective has a second objective at
    least as large, or an earlier point of the same first objective has a strictly larger
    second one (equal points do not dominate each other)."""
    g, n = ok.shape
    a = np.where(ok, x[..., 0], -np.inf)
    b = np.where(ok, x[..., 1], -np.inf)
    order = np.lexsort((-b, -a), axis=-1)
    a = np.take_along_axis(a, order, axis=-1)
    b = np.take_along_axis(b, order, axis=-1)
    col = np.broadcast_to(np.arange(n), (g, n))
    starts = np.ones((g, n), dtype=bool)
    starts[:, 1:] = a[:, 1:] != a[:, :-1]
    start = np.maximum.accumulate(np.where(starts, col, 0), axis=-1)  # first of its block
    running = np.maximum.accumulate(b, axis=-1)
    before = np.concatenate([np.full((g, 1), -np.inf), running[:, :-1]], axis=-1)
    strictly_larger = np.take_along_axis(before, start, axis=-1)  # max b of larger a
    block_top = np.take_along_axis(b, start, axis=-1)
    dominated = (strictly_larger >= b) | (block_top > b)
    out = np.zeros((g, n), dtype=bool)
    np.put_along_axis(out, order, ~dominated, axis=-1)
    return out & ok


def _dominates(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[i, j]``: ``a[i]`` dominates ``b[j]`` (rows are points, columns objectives)."""
    ge = np.ones((len(a), len(b)), dtype=bool)
    le = np.ones((len(a), len(b)), dtype=bool)
    for m in range(a.shape[1]):
        ge &= a[:, None, m] >= b[None, :, m]
        le &= a[:, None, m] <= b[None, :, m]
    return ge & ~le


def _pareto_sorted(x: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Non-dominated rows of one large group of valid points ``(n, k)`` (maximise all).

    Points are visited in decreasing lexicographic order: a dominating point is always
    lexicographically larger, so a point is final once compared with the front found so far
    and with the earlier points of its chunk. O(n (|front| + chunk) k).
    """
    n = len(x)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    order = np.lexsort(tuple(-x[:, m] for m in range(x.shape[1] - 1, -1, -1)))
    front = np.zeros((0, x.shape[1]))
    for s in range(0, n, chunk):
        rows = order[s:s + chunk]
        c = x[rows]
        dominated = _dominates(front, c).any(axis=0) if len(front) else np.zeros(len(c), bool)
        dominated |= _dominates(c, c).any(axis=0)
        new = rows[~dominated]
        keep[new] = True
        front = np.concatenate([front, x[new]])
    return keep


# ------------------------------------------------------------------------------ frontiers
def change_points(codes: np.ndarray, axis: int = -1) -> np.ndarray:
    """Where a winner code changes between neighbours along ``axis``.

    ``codes`` are integer labels (-1 = no winner). Returns a bool array one shorter along
    ``axis``: entry ``i`` is true iff ``codes[i]`` and ``codes[i+1]`` are both defined and differ.
    """
    c = np.moveaxis(np.asarray(codes), axis, -1)
    a, b = c[..., :-1], c[..., 1:]
    return np.moveaxis((a != b) & (a >= 0) & (b >= 0), -1, axis)


# ------------------------------------------------------------------------------ helpers
def geometric_mean(values: np.ndarray, axis=None) -> np.ndarray:
    """Geometric mean of the positive finite entries (NaN where there are none)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v) & (v > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(ok, np.log(np.where(ok, v, 1.0)), 0.0).sum(axis=axis)
        n = ok.sum(axis=axis)
        return np.where(n > 0, np.exp(s / np.maximum(n, 1)), np.nan)


def nearest_log(values: np.ndarray, target: float, lo: float | None = None,
                hi: float | None = None) -> int:
    """Index of the value closest to ``target`` on a log scale within ``[lo, hi]`` (-1: none).

    Ties go to the smaller value.
    """
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v) & (v > 0)
    if lo is not None:
        ok &= v >= lo
    if hi is not None:
        ok &= v <= hi
    if not ok.any():
        return -1
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.where(ok, np.abs(np.log(np.where(ok, v, 1.0) / target)), np.inf)
    best = dist.min()
    cands = np.flatnonzero(dist <= best * (1 + 1e-12) + 1e-15)
    return int(cands[np.argmin(v[cands])])
