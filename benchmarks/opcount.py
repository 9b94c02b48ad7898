"""The kernel's arithmetic bound: operations per point, counted, times their cost on this CPU.

:func:`count_ops` runs the per-point physics of the kernels (every module of :data:`PHYSICS`:
the forward pass, collectives, power, the static batch, the continuous-batching scheduler and
its queueing) as plain Python, with their source rewritten (``ast``) so that every
floating-point operation is counted: divisions, ``**``, the ``math`` functions,
multiplications, additions and subtractions, ``min``/``max``, and every store to the output
array. It drives the stages exactly as ``kernels/grid.py`` does (the static part once per
compatible (platform, model, batch, precision, layout), the prefill part once per context, the
rest per point, infeasible combinations only stored), in the grid's serving mode, on a random
sample of the
benchmark grid's (platform, model, batch, precision, layout) combinations, so the counts are the
dynamic averages per grid point, branches taken as the data take them. The counted evaluation is
checked against the compiled kernel's output on the same points.

:func:`op_costs` measures, with numba on one thread, the throughput cost of each kind of
operation (eight independent dependency chains, so that the CPU overlaps them as well as it can)
and of the kernel's store pattern (one float32 per metric row per point).

:func:`arithmetic_bound` combines them: the time per point if the CPU did nothing but these
operations at full throughput. Python's ``math`` and the compiled kernel call the same libm for
the transcendentals; the counts ignore integer index arithmetic, loads and branches.
"""

from __future__ import annotations

import ast
import math
import sys
import time
import types
from collections import Counter
from pathlib import Path

import numpy as np

COUNTED = ("div", "pow", "sqrt", "exp", "log", "log1p", "ceil", "floor", "gcd", "mul", "add",
           "minmax", "store")


class _Counting:
    def __init__(self) -> None:
        self.n = Counter()

    # arithmetic
    def div(self, a, b):
        self.n["div"] += 1
        return a / b

    def pow(self, a, b):
        self.n["pow"] += 1
        return a ** b

    def mul(self, a, b):
        self.n["mul"] += 1
        return a * b

    def add(self, a, b):
        self.n["add"] += 1
        return a + b

    def sub(self, a, b):
        self.n["add"] += 1
        return a - b

    def min(self, *a):
        self.n["minmax"] += len(a) - 1
        return min(*a)

    def max(self, *a):
        self.n["minmax"] += len(a) - 1
        return max(*a)


class _Math:
    """``math`` with counted functions."""

    def __init__(self, c: _Counting) -> None:
        self._c = c
        self.pi = math.pi

    def __getattr__(self, name):
        fn = getattr(math, name)
        if not callable(fn):  # constants (inf, nan, e)
            return fn

        def counted(*a):
            self._c.n[name] += 1
            return fn(*a)

        return counted


class _Out:
    """The output array, counting stores."""

    def __init__(self, c: _Counting, arr: np.ndarray) -> None:
        self._c = c
        self.arr = arr
        self.shape = arr.shape

    def __setitem__(self, key, value):
        self._c.n["store"] += 1
        self.arr[key] = value


_OPS = {ast.Div: "div", ast.Pow: "pow", ast.Mult: "mul", ast.Add: "add", ast.Sub: "sub"}


class _Rewrite(ast.NodeTransformer):

    def visit_FunctionDef(self, node):
        node.decorator_list = []
        self.generic_visit(node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = _OPS.get(type(node.op))
        if name is None:
            return node
        return ast.copy_location(ast.Call(func=ast.Attribute(ast.Name("_C", ast.Load()), name,
                                                             ast.Load()),
                                          args=[node.left, node.right], keywords=[]), node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        name = _OPS.get(type(node.op))
        if name is None or not isinstance(node.target, ast.Name):
            return node
        value = ast.Call(func=ast.Attribute(ast.Name("_C", ast.Load()), name, ast.Load()),
                         args=[ast.Name(node.target.id, ast.Load()), node.value], keywords=[])
        return ast.copy_location(ast.Assign(targets=[ast.Name(node.target.id, ast.Store())],
                                            value=value), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            node.func = ast.Attribute(ast.Name("_C", ast.Load()), node.func.id, ast.Load())
        return node

    def visit_ImportFrom(self, node):
        # the physics modules import each other's counted copies; params and accelerate are
        # imported as they are (tables and decorators)
        sub = (node.module or "").removeprefix("kernels.")
        if node.module and node.module.startswith("kernels.") and sub in PHYSICS:
            node.module = f"{COUNTED_PKG}.{sub}"
        return node


#: the modules of ``kernels/`` whose operations are counted, each after those it imports
PHYSICS = ("collectives", "dataflow", "power", "queueing", "roofline", "metrics", "iteration",
           "static", "serving", "point")
#: the package the counted copies are registered under
COUNTED_PKG = "kernels_counted"


def counted_kernels(root: Path) -> tuple[dict[str, types.ModuleType], _Counting]:
    """({name: module} of the :data:`PHYSICS` modules with counted operations and without their
    numba decorators, the counter). The copies import each other."""
    c = _Counting()
    pkg = types.ModuleType(COUNTED_PKG)
    pkg.__path__ = []
    sys.modules[COUNTED_PKG] = pkg
    mods = {}
    for name in PHYSICS:
        src = (root / "kernels" / f"{name}.py").read_text()
        tree = _Rewrite().visit(ast.parse(src))
        ast.fix_missing_locations(tree)
        mod = types.ModuleType(f"{COUNTED_PKG}.{name}")
        mod.__dict__["_C"] = c
        sys.modules[mod.__name__] = mod
        setattr(pkg, name, mod)
        exec(compile(tree, f"{COUNTED_PKG}/{name}.py", "exec"), mod.__dict__)
        mod.__dict__["math"] = _Math(c)
        mods[name] = mod
    c.n.clear()  # operations of the module-level constants are not per point
    return mods, c


def count_ops(root: Path, tables, batch, context, output_len, *, combos: int = 300,
              seed: int = 0, kernel_out: np.ndarray | None = None, mode: float = 1.0) -> dict:
    """Average counted operations per grid point over ``combos`` random (platform, model, batch,
    precision, layout) combinations of the grid (every context and output length of each), in
    serving mode ``mode`` (``kernels.params.MODE_*``)."""
    from kernels.params import (
        HW_FIELDS,
        LAYOUT_FIELDS,
        METRICS,
        MODE_RATE,
        MODEL_FIELDS,
        PRECISION_FIELDS,
        RATE_METRICS,
    )

    mods, c = counted_kernels(root)
    point, roof = mods["point"], mods["roofline"]
    hw, md, px, pr, ly = tables
    n_h, n_m, n_b, n_s, n_o, n_p, n_l = (hw.shape[0], md.shape[0], len(batch), len(context),
                                         len(output_len), pr.shape[0], ly.shape[0])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, [n_h, n_m, n_b, n_p, n_l], size=(combos, 5))
    buf = np.empty((len(METRICS), n_s * n_o), dtype=np.float32)
    out = _Out(c, buf)
    by_stage: dict[str, Counter] = {k: Counter() for k in ("reason", "static", "prompt", "point",
                                                           "infeasible")}
    n_points = 0
    n_compatible = 0
    mismatches = 0
    checked = 0
    mode = float(mode)
    stored = [k for k, name in enumerate(METRICS) if mode == MODE_RATE or name not in RATE_METRICS]
    t0 = time.perf_counter()
    for h, m, b, p, li in picks:
        hw_t = tuple(hw[h][:len(HW_FIELDS)])
        md_t = tuple(md[m][:len(MODEL_FIELDS)])
        px_t = tuple(px[h, p])
        pr_t = tuple(pr[p][:len(PRECISION_FIELDS)])
        ly_t = tuple(ly[li][:len(LAYOUT_FIELDS)])
        # the scheduler's called functions read the rows through pointers: the rows here
        rows = (hw[h], md[m], px[h, p], pr[p], ly[li])
        bt = float(batch[b])
        before = Counter(c.n)
        code = roof.static_reason(hw_t, md_t, px_t, ly_t)
        by_stage["reason"] += Counter(c.n) - before
        n_points += n_s * n_o
        if code != 0:
            before = Counter(c.n)
            for j in range(n_s * n_o):
                roof.store_infeasible(out, j, code)
            by_stage["infeasible"] += Counter(c.n) - before
        else:
            n_compatible += 1
            before = Counter(c.n)
            st = point.stage_static(hw_t, md_t, px_t, bt, pr_t, ly_t, mode)
            by_stage["static"] += Counter(c.n) - before
            for s in range(n_s):
                cs = float(context[s])
                before = Counter(c.n)
                pt = point.stage_prompt(st, hw_t, md_t, px_t, pr_t, ly_t, bt, cs, mode)
                by_stage["prompt"] += Counter(c.n) - before
                before = Counter(c.n)
                for o in range(n_o):
                    point.stage_point(st, pt, hw_t, md_t, px_t, pr_t, ly_t, rows, bt, cs,
                                      float(output_len[o]), mode, out, s * n_o + o)
                by_stage["point"] += Counter(c.n) - before
        if kernel_out is not None:
            # the grid kernel's output for this combination: (metric, s, o) at (h, m, b, p, l),
            # the metrics it stores in this mode (the percentiles only at request rates)
            ref = kernel_out[:, h, m, b, :, :, p, li].reshape(len(METRICS), -1)
            same = np.array_equal(ref[stored], buf[stored], equal_nan=True)
            checked += 1
            mismatches += 0 if same else 1
    per_point = {k: sum(st[k] for st in by_stage.values()) / n_points for k in COUNTED}
    return {
        "combos": int(combos), "points": int(n_points), "mode": mode,
        "compatible_fraction": n_compatible / combos,
        "per_point": per_point,
        "per_stage_call": {
            "static": {k: v / max(1, n_compatible) for k, v in by_stage["static"].items()},
            "prompt": {k: v / max(1, n_compatible * n_s) for k, v in by_stage["prompt"].items()},
            "point": {k: v / max(1, n_compatible * n_s * n_o) for k, v in by_stage["point"].items()},
        },
        "checked_against_kernel": checked, "mismatching_combos": mismatches,
        "seconds": time.perf_counter() - t0,
    }


# ------------------------------------------------------------------------------ op costs
_CHAINS = 8


def _bench_src(expr: str) -> str:
    """A numba loop of 8 independent chains ``x_i = expr(x_i)``."""
    lines = ["def f(n, d):"]
    lines += [f"    x{i} = 1.0 + {i} * 1e-3" for i in range(_CHAINS)]
    lines += ["    for _ in range(n):"]
    lines += [f"        x{i} = {expr.format(x=f'x{i}')}" for i in range(_CHAINS)]
    lines += ["    return " + " + ".join(f"x{i}" for i in range(_CHAINS))]
    return "\n".join(lines)


#: operation -> expression of one chain step (a chain must stay finite and away from denormals)
OP_EXPRS = {
    "div": "{x} / d",
    "mul": "{x} * d",
    "add": "{x} + d",
    "sqrt": "math.sqrt({x})",
    "exp": "math.exp({x} * 1e-9)",
    "log": "math.log({x} + d)",
    "log1p": "math.log1p({x})",
    "pow": "{x} ** d",
    "ceil": "math.ceil({x}) * 1e-300 + {x}",
    "floor": "math.floor({x}) * 1e-300 + {x}",
    "minmax": "min({x}, d)",
}


def op_costs(n: int = 2_000_000, reps: int = 3) -> dict[str, float]:
    """Seconds per operation (throughput over 8 chains, one thread) of each kind, numba-compiled
    with the kernels' options (no fastmath). Some chain steps include a cheap helper operation
    (``exp``'s multiplication, ``log``'s addition, ``ceil``'s multiply-add): subtracted."""
    import numba

    costs: dict[str, float] = {}
    for op, expr in OP_EXPRS.items():
        ns = {"math": math}
        exec(_bench_src(expr), ns)
        f = numba.njit(fastmath=False, nogil=True)(ns["f"])
        d = 1.0000001 if op not in ("log",) else 1e-7
        if op == "minmax":
            d = 1e300
        f(10, d)
        best = min(_time(f, n, d) for _ in range(reps))
        costs[op] = best / (n * _CHAINS)
    helper = {"exp": costs["mul"], "log": costs["add"], "ceil": costs["mul"] + costs["add"],
              "floor": costs["mul"] + costs["add"]}
    for op, extra in helper.items():
        costs[op] = max(costs[op] - extra, 0.0)
    costs["gcd"] = costs["div"] * 4  # integer gcd of small numbers: a few divisions (estimate)
    return costs


def _time(f, n, d) -> float:
    t0 = time.perf_counter()
    f(n, d)
    return time.perf_counter() - t0


def store_cost(n_metrics: int, n: int = 4_000_000, reps: int = 3) -> float:
    """Seconds per float32 store in the kernel's pattern (point j writes out[k, j] for every
    metric row k, one thread, pages already touched)."""
    import numba

    @numba.njit(nogil=True)
    def stores(out, v):
        for j in range(out.shape[1]):
            for k in range(out.shape[0]):
                out[k, j] = v + k

    out = np.empty((n_metrics, n), dtype=np.float32)
    stores(out, 1.0)
    best = min(_time(stores, out, 2.0) for _ in range(reps))
    return best / (n_metrics * n)


def arithmetic_bound(per_point: dict[str, float], costs: dict[str, float],
                     store_s: float) -> dict:
    """Seconds per point (one thread) of the counted operations at full throughput."""
    parts = {op: per_point.get(op, 0.0) * costs.get(op, 0.0) for op in costs}
    parts["store"] = per_point.get("store", 0.0) * store_s
    total = sum(parts.values())
    return {"seconds_per_point": total, "parts_s": parts,
            "dominant": sorted(parts, key=parts.get, reverse=True)[:4]}
