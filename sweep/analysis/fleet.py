"""Fleet sizing, the capacity planner's question: how many devices of each type (and kW, $/h)
serve ``rate`` requests per second of a workload under TTFT and TPOT targets, each device at
its best layout, engine and load?

A replica of a layout serves ``x`` requests/s at a point: over a request-rate grid ``x`` is the
point's ``request_rate`` (its latencies were computed at that Poisson arrival rate); over a
concurrency (``batch``) grid it is ``throughput / output_len``, the closed-loop rate at that
many requests in flight (docs/model.md section 13). ``n = ceil(rate / x)`` replicas then serve
the rate, each at most as loaded as the point (so no slower than it: the targets hold), and
the fleet is ``n`` times the layout's devices, system power and hourly cost (the power and cost
of a fully loaded replica: an upper bound). Per device type (and every other dim that is kept)
the fleet with the fewest devices (or kW, or $/h) over engine, layout and load is chosen, and
the types are ranked with the margin to the runner-up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import xarray as xr

from grids.errors import SpecError
from sweep.analysis.kept import is_kept, need_every_layout
from sweep.analysis.select import as_dims

#: what the fleet is sized by, and the column that holds it
BY = {"devices": "devices", "kw": "kW", "kW": "kW", "power": "kW", "$": "usd_per_h",
      "usd": "usd_per_h", "cost": "usd_per_h", "usd_per_h": "usd_per_h"}
#: the dims chosen over (each device type at its best of them), when the result has them
FLEET_OVER = ("engine", "parallelism", "batch", "request_rate")
PERCENTILES = ("p50", "p90", "p99")


def _target(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise SpecError(f"{name} target must be a positive number of seconds, got {value!r}")
    return float(value)


def _latency(ds: xr.Dataset, name: str, percentile: str | None) -> str:
    """The variable a target on ``name`` reads: the mean, or a percentile at request rates."""
    if percentile is None or name == "tpot":  # decode is deterministic in the model (13.4)
        var = name
    else:
        var = f"{name}_{percentile}"
        if var not in ds.data_vars:
            raise SpecError(f"a {percentile} {name.upper()} target needs a result over "
                            f"request_rate (the latency percentiles exist only there); this one "
                            f"is over {'batch' if 'batch' in ds.dims else 'neither'}")
    if var not in ds.data_vars:
        raise SpecError(f"a {name} target needs the {var!r} metric in the result")
    return var


def fleet_arguments(rate: float, ttft: float | None, tpot: float | None, by: str,
                    percentile: str | None) -> tuple[str, float | None, float | None]:
    """Check a fleet question's arguments; returns the column sized by and the targets [s]."""
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise SpecError(f"rate must be a positive number of requests per second, got {rate!r}")
    key = BY.get(str(by), BY.get(str(by).lower()))
    if key is None:
        raise SpecError(f"by must be one of devices, kW or $, got {by!r}")
    if percentile is not None and percentile not in PERCENTILES:
        raise SpecError(f"percentile must be one of {list(PERCENTILES)}, got {percentile!r}")
    return key, _target("ttft", ttft), _target("tpot", tpot)


def fleet(ds: xr.Dataset, rate: float, ttft: float | None = None, tpot: float | None = None,
          *, by: str = "devices", percentile: str | None = None,
          over: Iterable[str] | str | None = None) -> pd.DataFrame:
    """Fleets that serve ``rate`` [requests/s] under ``TTFT <= ttft`` and ``TPOT <= tpot`` [s]
    (None: no target), one per device type and combination of the dims not in ``over``.

    ``by``: ``devices`` (default), ``kW`` (system power) or ``$`` (USD per hour at the result's
    prices); ties go to fewer devices, then less power. ``percentile``: ``p50``, ``p90`` or
    ``p99`` reads the TTFT target against that percentile (results over ``request_rate``
    only). ``over``: the dims chosen over (default those of ``engine, parallelism, batch,
    request_rate`` the result has).

    Returns a table sorted by ``by`` within each combination of the other kept dims, with
    columns ``hardware``, the kept dims, the chosen ``over`` coordinates, ``replicas``,
    ``devices``, ``kW``, ``usd_per_h`` (NaN for unpriced devices), ``per_replica`` [requests/s],
    ``ttft``, ``tpot`` [s] at that point, ``rank`` and ``margin`` (the next device type's
    figure over this one's; NaN for the last). Device types that meet the targets nowhere are
    left out (``attrs["unserved"]`` lists them), and so are unpriced ones when ranking by cost
    (``attrs["unpriced"]``).
    """
    key, ttft, tpot = fleet_arguments(rate, ttft, tpot, by, percentile)
    if is_kept(ds):  # it sizes fleets from each layout's devices and replicas
        raise need_every_layout(ds, "fleet")
    if "hardware" not in ds.dims:
        raise SpecError("fleet compares device types: the result needs a hardware dim (select "
                        "other dims away, keep hardware)")
    for need in ("fits", "throughput", "system_power", "cost_per_mtok"):
        if need not in ds.data_vars:
            raise SpecError(f"fleet needs the {need!r} metric in the result")
    at_rate = "request_rate" in ds.dims
    if over is None:
        dims = [d for d in FLEET_OVER if d in ds.dims]
    else:
        dims = list(as_dims(ds, over, "over", allow_scalar=True))
    if "hardware" in dims:
        raise SpecError("fleet ranks device types: hardware cannot be chosen over")
    lat = {name: _latency(ds, name, percentile) for name, t in (("ttft", ttft), ("tpot", tpot))
           if t is not None}
    names = ["fits", "throughput", "system_power", "cost_per_mtok", "ttft", "tpot",
             *lat.values()]
    names = list(dict.fromkeys(n for n in names if n in ds.data_vars))
    table = ds[names].to_dataframe().reset_index()
    table = table[table["fits"] == 1]
    for name, t in (("ttft", ttft), ("tpot", tpot)):
        if t is not None:
            table = table[table[lat[name]] <= t]
    out_len = (table["output_len"].to_numpy(np.float64) if "output_len" in table.columns
               else float(ds["output_len"].values))
    # requests/s the whole layout serves at the point
    if at_rate:
        layout_rate = table["request_rate"].to_numpy(np.float64)
    else:
        layout_rate = table["throughput"].to_numpy(np.float64) / out_len
    ok = np.isfinite(layout_rate) & (layout_rate > 0)
    table, layout_rate = table[ok], layout_rate[ok]
    dp = _coord(ds, table, "dp")
    table = table.assign(per_replica=layout_rate / dp)
    n = np.ceil(rate / layout_rate)  # layouts (each of dp replicas) needed
    table = table.assign(
        replicas=(n * dp).astype(np.int64),
        devices=(n * _coord(ds, table, "devices")).astype(np.int64),
        kW=n * table["system_power"].to_numpy(np.float64) / 1e3,
        usd_per_h=n * table["cost_per_mtok"].to_numpy(np.float64)
        * table["throughput"].to_numpy(np.float64) * 3600.0 / 1e6)
    rest = [str(d) for d in ds.dims if d not in dims and d != "hardware"]
    best = rank_fleets(table, key, rest, [str(h) for h in ds["hardware"].values])
    cols = ["hardware", *rest, *dims, "replicas", "devices", "kW", "usd_per_h", "per_replica",
            "ttft", "tpot", *(v for v in lat.values() if v not in ("ttft", "tpot")), "rank",
            "margin"]
    attrs = best.attrs
    best = best[[c for c in cols if c in best.columns]]
    best.attrs = {**attrs, "rate": float(rate), "ttft_target_s": ttft, "tpot_target_s": tpot,
                  "percentile": percentile, "over": dims,
                  "units": {"rate": "1/s", "per_replica": "1/s", "kW": "kW",
                            "usd_per_h": "USD/h", "ttft": "s", "tpot": "s"}}
    return best


def rank_fleets(table: pd.DataFrame, key: str, rest: list[str], hardware: list[str]
                ) -> pd.DataFrame:
    """Each device type's best fleet of ``table`` (columns ``hardware``, ``rest``, ``devices``,
    ``kW``, ``usd_per_h``) by ``key`` (ties: fewer devices, then less power) within each
    combination of ``rest``, ranked with ``rank`` and ``margin`` (the next type's figure over
    this one's; NaN for the last). ``attrs``: ``by``, ``unserved`` (types of ``hardware`` with
    no row), ``unpriced`` (types left out of a cost ranking for want of a price)."""
    order = [key, *(c for c in ("devices", "kW") if c != key)]
    served = set(table["hardware"])
    unpriced: list[str] = []
    if key == "usd_per_h":
        priced = np.isfinite(table["usd_per_h"])
        unpriced = sorted(served - set(table.loc[priced, "hardware"]))
        table = table[priced]
    best = (table.sort_values([*rest, "hardware", *order], kind="stable")
            .drop_duplicates([*rest, "hardware"], keep="first"))
    best = best.sort_values([*rest, *order], kind="stable").reset_index(drop=True)
    groups = best.groupby(rest, sort=False) if rest else [((), best)]
    ranks, margins = np.zeros(len(best)), np.full(len(best), np.nan)
    for _, g in groups:
        idx = g.index.to_numpy()
        vals = g[key].to_numpy(np.float64)
        ranks[idx] = np.arange(1, len(idx) + 1)
        margins[idx[:-1]] = vals[1:] / vals[:-1]
    best = best.assign(rank=ranks.astype(int), margin=margins)
    best.attrs = {"by": key, "unserved": [h for h in hardware if h not in served],
                  "unpriced": unpriced}
    return best


def _coord(ds: xr.Dataset, table: pd.DataFrame, name: str) -> np.ndarray:
    """A per-layout coordinate (``dp``, ``devices``) for every row of ``table``."""
    if "parallelism" in table.columns:
        lookup = dict(zip(map(str, ds["parallelism"].values),
                          np.asarray(ds[name].values, dtype=np.float64).reshape(-1)))
        return table["parallelism"].map(lookup).to_numpy(np.float64)
    return np.full(len(table), float(np.asarray(ds[name].values).reshape(-1)[0]))
