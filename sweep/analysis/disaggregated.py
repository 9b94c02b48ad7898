"""Disaggregated prefill and decode: the capacity planner's question of
:mod:`sweep.analysis.fleet` for a fleet split into a prefill pool and a decode pool, each with its
own layout and load, the KV cache of every prompt sent from one to the other over the scale-out
network (the architecture of DistServe, Zhong et al., OSDI 2024, and Splitwise, Patel et al.,
ISCA 2024). docs/model.md section 13.6 states the model; in short, for a workload of ``s`` prompt
and ``L`` output tokens at ``R`` requests/s:

* **Prefill pool**: continuous batching of requests that generate one token (the kernels'
  "prompts only" steady state, output_len = 1). A layout point serves ``x_p`` requests/s (its
  ``throughput``, or its ``request_rate`` over a request-rate grid) with TTFT = the point's TTFT:
  the first token comes from the prefill pool.
* **KV transfer** of one request: ``t_x = kv_bits/16 * (k_full * s + k_win * min(s, W)) /
  (n * B_so) + l_so`` [s], with ``k_full``, ``k_win`` the 16-bit KV bytes per token of the full
  and windowed layers, ``W`` the window, ``n`` the devices of the smaller of the two replicas
  (each sends or receives an equal share over its own NIC), ``B_so`` and ``l_so`` the device's
  scale-out bandwidth and latency (catalog).
* **Decode pool**: a static decode batch of ``C`` sequences (``C`` at most the batch that fits at
  ``s + L`` tokens: no waves), one step every ``tpot`` (the static point's decode step at the
  mean KV length). A request holds its slot for ``t_x + (L - 1) tpot``, so a replica serves
  ``C / (t_x + (L - 1) tpot)`` requests/s, and the TPOT a client sees is ``tpot + t_x / (L - 1)``
  (the transfer delays the second token).
* **Decode-phase power and cost**: the static kernels report a wave's mean over prefill and
  decode. The decode phase's mean of an extensive rate ``q`` (system power [W], cost [USD/s]) is
  ``(q_L e2e_L - q_1 e2e_1) / (e2e_L - e2e_1)`` with the same batch at ``L`` and at one output
  token (``q_1 e2e_1`` is the prompt pass alone): no second formula, the kernels' own energy.
* **Network**: the pools' NICs carry ``R`` prompts' KV a second; a pair whose smaller pool
  cannot (``network_load = R * bytes / (devices * B_so) > 1``) is not kept.
* **Fleet**: ``n_p = ceil(R / x_p)`` prefill and ``n_d = ceil(R / x_d)`` decode layouts; devices,
  kW and USD/h add. Each device type gets the pair (same engine and precision in both pools) with
  the fewest devices, kW or USD/h, and the types are ranked with the margin to the runner-up.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from grids.errors import SpecError
from sweep.analysis.fleet import _coord, _latency, fleet_arguments, rank_fleets

#: what disaggregation reads of its two inputs
_PREFILL_NEEDS = ("fits", "throughput", "system_power", "cost_per_mtok", "ttft")
_DECODE_NEEDS = ("fits", "tpot", "e2e_latency", "system_power", "cost_per_mtok", "throughput",
                 "max_concurrency")
#: the dims of one workload: one value each (select the others away)
_WORKLOAD = ("model", "context", "precision")
#: columns of the returned table, in order
COLUMNS = ("hardware", "engine", "prefill_layout", "prefill_load", "prefill_replicas",
           "decode_layout", "decode_batch", "decode_replicas", "devices", "kW", "usd_per_h",
           "ttft", "tpot", "kv_transfer", "network_load", "rank", "margin")


def prompt_kv_bytes(kv_bytes_per_token, kv_window_bytes_per_token, window, kv_bits, context):
    """Bytes of one prompt's KV cache [B]: ``kv_bytes_per_token`` [B] and
    ``kv_window_bytes_per_token`` [B] at 16 bits (the result's model coordinates), ``window``
    [token] (0 = none), ``kv_bits`` [bit] of the precision, ``context`` [token]. Windowed layers
    keep at most ``window`` tokens (an upper bound for chunked-local layers)."""
    s = np.asarray(context, dtype=np.float64)
    kept = np.where(np.asarray(window) > 0, np.minimum(s, window), s)
    full = np.asarray(kv_bytes_per_token, np.float64) - kv_window_bytes_per_token
    return np.asarray(kv_bits, np.float64) / 16.0 * (full * s + kv_window_bytes_per_token * kept)


def kv_transfer_seconds(kv_bytes_per_token, kv_window_bytes_per_token, window, kv_bits, context,
                        devices, bandwidth, latency):
    """Time to send one prompt's KV cache (:func:`prompt_kv_bytes`) from a prefill replica to a
    decode replica [s]: ``devices`` send or receive equal shares in parallel (the smaller
    replica's), each over its own scale-out network at ``bandwidth`` [B/s] after ``latency`` [s]
    (catalog ``scaleout_bandwidth``, ``scaleout_latency``)."""
    nbytes = prompt_kv_bytes(kv_bytes_per_token, kv_window_bytes_per_token, window, kv_bits,
                             context)
    return nbytes / (np.asarray(devices, np.float64) * bandwidth) + latency


def decode_phase(q_full: np.ndarray, e2e_full: np.ndarray, q_prompt: np.ndarray,
                 e2e_prompt: np.ndarray) -> np.ndarray:
    """The decode phase's mean of an extensive rate (power [W], cost [USD/s]) from a static
    wave's mean over prefill and decode (``q_full`` over ``e2e_full`` [s]) and the same batch's
    prompt pass alone (one output token: ``q_prompt`` over ``e2e_prompt``)."""
    return (q_full * e2e_full - q_prompt * e2e_prompt) / (e2e_full - e2e_prompt)


def _one(ds: xr.Dataset, dim: str, what: str):
    """The single value of a workload dim (a scalar coordinate or a dim of length one)."""
    v = np.asarray(ds[dim].values).reshape(-1)
    if v.size != 1:
        raise SpecError(f"disaggregated fleet sizes one workload: the {what} result has "
                        f"{v.size} values of {dim} ({', '.join(map(str, v[:6]))}); select one "
                        f"(e.g. --sel {dim}={v[0]})")
    return v[0]


def _at_output(ds: xr.Dataset, length: int, what: str) -> xr.Dataset:
    """``ds`` at ``output_len = length`` (a dim or a scalar coordinate)."""
    values = np.asarray(ds["output_len"].values).reshape(-1)
    if length not in {int(v) for v in values}:
        raise SpecError(f"disaggregated fleet: the {what} result needs output_len = {length} "
                        f"(it has {', '.join(str(int(v)) for v in values)})")
    return ds.sel(output_len=length) if "output_len" in ds.dims else ds


def _check(ds: xr.Dataset, what: str, batching: str, needs: tuple[str, ...]) -> None:
    got = ds.attrs.get("batching", "")
    if got != batching:
        raise SpecError(f"disaggregated fleet: the {what} pool is read from a result with "
                        f"batching = \"{batching}\", this one has {got!r}")
    if "hardware" not in ds.dims:
        raise SpecError(f"disaggregated fleet compares device types: the {what} result needs a "
                        f"hardware dim")
    for need in needs:
        if need not in ds.data_vars:
            raise SpecError(f"disaggregated fleet needs the {need!r} metric in the {what} result")


def _frame(ds: xr.Dataset, names: list[str]) -> pd.DataFrame:
    """The metrics ``names`` over every point, one row each, with layout coordinates."""
    table = ds[names].to_dataframe().reset_index()
    for dim in ("engine", "parallelism"):
        if dim not in table.columns:
            table[dim] = str(np.asarray(ds[dim].values).reshape(-1)[0]) if dim in ds.coords \
                else ""
    table["layout_devices"] = _coord(ds, table, "devices")
    table["dp"] = _coord(ds, table, "dp")
    return table


def disaggregated_fleet(prefill: xr.Dataset, decode: xr.Dataset, rate: float,
                        ttft: float | None = None, tpot: float | None = None, *,
                        output_len: int | None = None, by: str = "devices",
                        percentile: str | None = None) -> pd.DataFrame:
    """Disaggregated fleets that serve ``rate`` [requests/s] under ``TTFT <= ttft`` and
    ``TPOT <= tpot`` [s] (None: no target), one per device type.

    Parameters
    ----------
    prefill : xr.Dataset
        A continuous-batching result (``batching = "continuous"``) with ``output_len = 1``: the
        prefill pool. Over ``batch`` (concurrency) or ``request_rate`` (then ``percentile``
        reads the TTFT target against ``ttft_p50/p90/p99``).
    decode : xr.Dataset
        A static-batching result with ``output_len`` = 1 and the workload's ``output_len``
        (the decode pool, and its prompt pass alone for the decode-phase power and cost).
    output_len : int, optional
        Generated tokens per request; default the one value other than 1 of ``decode``.
    by : "devices", "kW" or "$"
        What the fleet minimises (ties: fewer devices, then less power).

    Both results hold one model, prompt length and precision (select the others away), the
    same devices and engines. Returns one row per device type (columns ``COLUMNS``;
    ``prefill_load`` is the prefill point's concurrency or request rate, ``ttft`` and ``tpot``
    what a client sees [s], ``kv_transfer`` one request's KV transfer [s], ``network_load`` the
    share of the smaller pool's scale-out bandwidth the transfers use), ranked by ``by``;
    ``attrs["unserved"]`` lists types that meet the targets nowhere and ``attrs["unpriced"]``
    unpriced ones when ranking by cost.
    """
    key, ttft, tpot = fleet_arguments(rate, ttft, tpot, by, percentile)
    _check(prefill, "prefill", "continuous", _PREFILL_NEEDS)
    _check(decode, "decode", "static", _DECODE_NEEDS)
    for dim in _WORKLOAD:
        a, b = _one(prefill, dim, "prefill"), _one(decode, dim, "decode")
        if str(a) != str(b):
            raise SpecError(f"disaggregated fleet: the prefill and decode results are of "
                            f"different {dim}s ({a} and {b})")
    if output_len is None:
        others = sorted({int(v) for v in np.asarray(decode["output_len"].values).reshape(-1)}
                        - {1})
        if len(others) != 1:
            raise SpecError(f"disaggregated fleet: give output_len (the decode result has "
                            f"output_len {others or [1]})")
        output_len = others[0]
    if not isinstance(output_len, (int, np.integer)) or output_len < 2:
        raise SpecError(f"output_len must be a whole number >= 2 (a request of one token has no "
                        f"decode phase), got {output_len!r}")
    pre = _at_output(prefill, 1, "prefill")
    dec, dec1 = _at_output(decode, int(output_len), "decode"), _at_output(decode, 1, "decode")
    at_rate = "request_rate" in pre.dims
    lat = _latency(pre, "ttft", percentile) if ttft is not None else "ttft"

    # ---- prefill pool: each layout at its best load point
    p = _frame(pre, list(dict.fromkeys([*_PREFILL_NEEDS, lat])))
    p = p[p["fits"] == 1]
    if ttft is not None:
        p = p[p[lat] <= ttft]
    x_p = (p["request_rate"] if at_rate else p["throughput"]).to_numpy(np.float64)
    n_p = np.ceil(rate / x_p)
    thr = p["throughput"].to_numpy(np.float64)
    p = p.assign(prefill_load=p["request_rate" if at_rate else "batch"], n_p=n_p,
                 dev_p=n_p * p["layout_devices"], kw_p=n_p * p["system_power"] / 1e3,
                 usd_p=n_p * p["cost_per_mtok"].to_numpy(np.float64) * thr * 3600.0 / 1e6,
                 rep_p=p["layout_devices"] / p["dp"], ttft_seen=p[lat].to_numpy(np.float64))
    p = p[np.isfinite(x_p) & (x_p > 0)]
    p_key = {"devices": "dev_p", "kW": "kw_p", "usd_per_h": "usd_p"}[key]
    p = (p.sort_values(["hardware", "engine", "parallelism", p_key, "dev_p", "kw_p"],
                       kind="stable")
         .drop_duplicates(["hardware", "engine", "parallelism"], keep="first"))
    p = p[["hardware", "engine", "parallelism", "prefill_load", "n_p", "dev_p", "kw_p", "usd_p",
           "rep_p", "dp", "ttft_seen"]].rename(columns={"parallelism": "prefill_layout",
                                                        "dp": "dp_p", "ttft_seen": "ttft"})

    # ---- decode pool: static decode batches that run at once, decode-phase power and cost
    names = list(_DECODE_NEEDS)
    d = _frame(dec, names)
    d1 = _frame(dec1, ["fits", "e2e_latency", "system_power", "cost_per_mtok", "throughput"])
    keys = ["hardware", "engine", "parallelism", "batch"]
    d = d.merge(d1[[*keys, "fits", "e2e_latency", "system_power", "cost_per_mtok", "throughput"]],
                on=keys, suffixes=("", "_1"))
    d = d[(d["fits"] == 1) & (d["fits_1"] == 1) & (d["batch"] <= d["max_concurrency"])]
    e2e, e2e1 = d["e2e_latency"].to_numpy(np.float64), d["e2e_latency_1"].to_numpy(np.float64)
    usd_s = d["cost_per_mtok"].to_numpy(np.float64) * d["throughput"].to_numpy(np.float64) / 1e6
    usd_s1 = (d["cost_per_mtok_1"].to_numpy(np.float64)
              * d["throughput_1"].to_numpy(np.float64) / 1e6)
    d = d.assign(w_d=decode_phase(d["system_power"].to_numpy(np.float64), e2e,
                                  d["system_power_1"].to_numpy(np.float64), e2e1),
                 usd_d=decode_phase(usd_s, e2e, usd_s1, e2e1) * 3600.0,
                 rep_d=d["layout_devices"] / d["dp"])
    d = d[["hardware", "engine", "parallelism", "batch", "tpot", "w_d", "usd_d", "rep_d", "dp",
           "layout_devices"]].rename(columns={"parallelism": "decode_layout", "tpot": "step",
                                              "batch": "decode_batch", "dp": "dp_d"})

    # ---- pairs of one engine on one device type, the KV transfer between them
    pairs = p.merge(d, on=["hardware", "engine"])
    hw = decode.reset_coords()[["scaleout_bandwidth", "scaleout_latency"]].to_dataframe()
    md = {k: float(np.asarray(decode[k].values).reshape(-1)[0])
          for k in ("kv_bytes_per_token", "kv_window_bytes_per_token", "attention_window",
                    "kv_bits")}
    bw = pairs["hardware"].map(hw["scaleout_bandwidth"]).to_numpy(np.float64)
    lt = pairs["hardware"].map(hw["scaleout_latency"]).to_numpy(np.float64)
    kv = (md["kv_bytes_per_token"], md["kv_window_bytes_per_token"], md["attention_window"],
          md["kv_bits"], float(_one(decode, "context", "decode")))
    t_x = kv_transfer_seconds(*kv, np.minimum(pairs["rep_p"], pairs["rep_d"]).to_numpy(
        np.float64), bw, lt)
    steps = float(output_len) - 1.0
    tpot_d = pairs["step"].to_numpy(np.float64)
    x_d = (pairs["dp_d"].to_numpy(np.float64) * pairs["decode_batch"].to_numpy(np.float64)
           / (t_x + steps * tpot_d))
    n_d = np.ceil(rate / x_d)
    pairs = pairs.assign(
        kv_transfer=t_x, tpot=tpot_d + t_x / steps, decode_replicas=n_d * pairs["dp_d"],
        prefill_replicas=pairs["n_p"] * pairs["dp_p"],
        devices=pairs["dev_p"] + n_d * pairs["layout_devices"],
        kW=pairs["kw_p"] + n_d * pairs["w_d"] / 1e3,
        usd_per_h=pairs["usd_p"] + n_d * pairs["usd_d"])
    # the network carries rate x bytes out of the prefill pool and into the decode pool
    dev_d = n_d * pairs["layout_devices"].to_numpy(np.float64)
    network = rate * prompt_kv_bytes(*kv) / (np.minimum(pairs["dev_p"], dev_d) * bw)
    pairs = pairs.assign(network_load=network)
    pairs = pairs[np.isfinite(x_d) & (x_d > 0) & (network <= 1.0)]
    if tpot is not None:
        pairs = pairs[pairs["tpot"] <= tpot]
    for c in ("devices", "prefill_replicas", "decode_replicas"):
        pairs[c] = pairs[c].astype(np.int64)
    hardware = [str(h) for h in np.asarray(decode["hardware"].values)]
    best = rank_fleets(pairs, key, [], hardware)
    best = best[[c for c in COLUMNS if c in best.columns]]
    best.attrs.update({"rate": float(rate), "output_len": int(output_len),
                       "ttft_target_s": ttft, "tpot_target_s": tpot, "percentile": percentile,
                       "units": {"rate": "1/s", "kW": "kW", "usd_per_h": "USD/h", "ttft": "s",
                                 "tpot": "s", "kv_transfer": "s", "network_load": "1"}})
    return best


def versus_aggregated(disaggregated: pd.DataFrame, aggregated: pd.DataFrame) -> pd.DataFrame:
    """``disaggregated`` (from :func:`disaggregated_fleet`) with each device type's aggregated
    fleet beside it (``aggregated`` from :func:`sweep.analysis.fleet.fleet` at the same rate,
    targets and ``by``): columns ``aggregated_devices``, ``aggregated_kW``,
    ``aggregated_usd_per_h`` and ``gain`` = the aggregated figure over the disaggregated one
    (above 1: disaggregation needs less; NaN where the aggregated fleet meets the targets
    nowhere). Device types that only aggregated serving serves are appended (their
    disaggregated columns NaN)."""
    key = disaggregated.attrs.get("by", "devices")
    if aggregated.attrs.get("by", key) != key:
        raise SpecError(f"versus_aggregated: the fleets are sized by different figures "
                        f"({key} and {aggregated.attrs.get('by')})")
    agg = aggregated[["hardware", "devices", "kW", "usd_per_h"]].rename(
        columns={c: f"aggregated_{c}" for c in ("devices", "kW", "usd_per_h")})
    out = disaggregated.merge(agg, on="hardware", how="outer", sort=False)
    out["gain"] = out[f"aggregated_{key}"] / out[key]
    out = out.sort_values(["rank", f"aggregated_{key}"], kind="stable",
                          na_position="last").reset_index(drop=True)
    out.attrs = {**disaggregated.attrs,
                 "aggregated_unserved": aggregated.attrs.get("unserved", []),
                 "units": {**disaggregated.attrs.get("units", {}), "aggregated_kW": "kW",
                           "aggregated_usd_per_h": "USD/h", "gain": "1"}}
    return out
