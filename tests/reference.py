"""Independent plain-Python reference of the roofline model, written from ``docs/model.md`` only.

Nothing here is shared with ``kernels.roofline`` / ``kernels.grid``: it reads the same packed tables
(the array contract of :mod:`kernels.params`) but evaluates each point with straightforward scalar
Python, one function per section of the specification. Section numbers in comments refer to
``docs/model.md``.

:func:`reference_point` evaluates one point from dicts (field name -> value) and returns
``{metric name: float}``; :func:`reference_grid` has the signature of ``kernels.evaluate_grid`` and
loops over the Cartesian grid one point at a time (the per-point Python baseline);
:func:`reference_points` mirrors ``kernels.evaluate_points``.

Besides the metrics, :func:`reference_point` can report (``diagnostics=True``) the intermediate
quantities and two flags, ``near_fit_edge`` and ``near_bound_tie``, that say whether a discrete
decision (fits / bound) sits within a relative 1e-9 of its threshold, where float32 storage or a
different but equivalent summation order may legitimately flip it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from kernels.params import HW_FIELDS, LAYOUT_FIELDS, METRICS, MODEL_FIELDS, PRECISION_FIELDS

N_TIERS = 3
NAN = float("nan")
_EDGE = 1e-9          # relative distance to a threshold below which a decision is "near a tie"

BOUND_COMPUTE, BOUND_SRAM, BOUND_DRAM, BOUND_HOST, BOUND_INTERCONNECT, BOUND_OVERHEAD = range(6)


def _near(a: float, b: float) -> bool:
    scale = max(abs(a), abs(b))
    return scale > 0 and abs(a - b) <= _EDGE * scale


# --------------------------------------------------------------------------------------- section 2
def is_compatible(hw: dict, md: dict, peak: float, ly: dict) -> bool:
    """Section 2: structural feasibility (before any capacity check)."""
    tp, pp, ep, off = ly["tp"], ly["pp"], ly["ep"], ly["offload"]
    n_exp = md["n_experts"]
    if peak == 0:
        return False
    if math.fmod(md["tp_divisor"], tp) != 0:
        return False
    if ep > 1 and (n_exp == 0 or math.fmod(n_exp, ep) != 0):
        return False
    if pp > md["n_layers"]:
        return False
    return not (off > 0 and hw["host_capacity"] == 0)


# --------------------------------------------------------------------------------------- section 3
def kv_elems(md: dict, length: float) -> float:
    """Per-sequence KV elements at sequence length ``length`` (section 3 (2))."""
    w = md["window"]
    windowed = length if w == 0 else min(length, w)
    return md["kv_elems_full"] * length + md["kv_elems_window"] * windowed


def window_min(x: float, w: float) -> float:
    """``min(x, W)`` with ``W = 0`` meaning no window."""
    return x if w == 0 else min(x, w)


def kv_shard_fraction(md: dict, tp: float) -> float:
    n_kv = md["n_kv_heads"]
    if md["kv_tp_shardable"] and n_kv > 0:
        return math.ceil(n_kv / tp) / n_kv
    return 1.0


def stage(md: dict, pp: float) -> tuple[float, float, float]:
    """Busiest pipeline stage: (layers L_s, share sf, MoE layers Lm_s)."""
    n_layers = md["n_layers"]
    l_s = math.ceil(n_layers / pp)
    sf = l_s / n_layers
    return l_s, sf, md["n_moe_layers"] * sf


def sizes(md: dict, pr: dict, ly: dict, batch: float, context: float, output_len: float,
          chunk: float) -> dict:
    """Section 3: per-device bytes of dense weights, expert weights, KV cache, activations."""
    tp, pp, ep = ly["tp"], ly["pp"], ly["ep"]
    wb, ab, kvb, eb = pr["weight_bytes"], pr["act_bytes"], pr["kv_bytes"], pr["embed_bytes"]
    _, sf, lm_s = stage(md, pp)
    if pp == 1:
        w_ends = eb * (md["params_head"] + md["params_embed_only"])
    else:
        w_ends = eb * max(md["params_head"], md["params_embed_only"])
    w_dense = (wb * md["params_linear"] * sf + w_ends) / tp
    # bytes of the dense segment read per forward pass: the input embedding is only gathered
    w_dense_read = (wb * md["params_linear"] * sf + eb * md["params_head"]) / tp
    w_exp = lm_s * (md["n_experts"] / ep) * wb * md["params_expert"] / tp
    bg = batch / ep
    f_kv = kv_shard_fraction(md, tp)
    kv_dev = bg * kv_elems(md, context + output_len) * kvb * f_kv * sf
    t_c = min(bg * context, chunk)
    a_dev = (t_c * (md["act_elems"] / md["n_layers"]) * ab + bg * md["vocab_size"] * 4) / tp
    return {"w_dense": w_dense, "w_dense_read": w_dense_read, "w_exp": w_exp, "kv": kv_dev,
            "act": a_dev, "f_kv": f_kv}


def min_devices(hw: dict, md: dict, pr: dict, batch: float, context: float, output_len: float,
                chunk: float) -> float:
    """Section 3 (14): layout-independent lower bound on devices per replica."""
    wb, ab, kvb, eb = pr["weight_bytes"], pr["act_bytes"], pr["kv_bytes"], pr["embed_bytes"]
    replica = (wb * md["params_linear"]
               + eb * (md["params_head"] + md["params_embed_only"])
               + wb * md["n_moe_layers"] * md["n_experts"] * md["params_expert"]
               + batch * kv_elems(md, context + output_len) * kvb
               + min(batch * context, chunk) * (md["act_elems"] / md["n_layers"]) * ab
               + batch * md["vocab_size"] * 4)
    device_cap = hw["capacity_fraction"] * sum(hw[f"tier{i}_capacity"] for i in range(N_TIERS))
    return float(math.ceil(replica / device_cap))


# --------------------------------------------------------------------------------------- section 4
def place(hw: dict, sz: dict, off: float) -> dict:
    """Place the five resident segments greedily, fastest tier first (section 4).

    Returns per segment a list of bytes per device tier plus the bytes in the host tier, and
    whether the point fits.
    """
    f_cap = hw["capacity_fraction"]
    free = [f_cap * hw[f"tier{i}_capacity"] for i in range(N_TIERS)]
    segments = {
        "dense": (1 - off) * sz["w_dense_read"],
        "exp": (1 - off) * sz["w_exp"],
        "emb": (1 - off) * (sz["w_dense"] - sz["w_dense_read"]),
        "kv": sz["kv"],
        "act": sz["act"],
    }
    placed = {}
    fits = True
    spilled = 0.0
    for name, size in segments.items():
        remaining = size
        parts = [0.0] * N_TIERS
        for i in range(N_TIERS):
            take = min(remaining, free[i])
            if take > 0:
                parts[i] = take
                free[i] -= take
                remaining -= take
        if remaining > 0:
            if off > 0:
                spilled += remaining
            else:
                fits = False
        placed[name] = (parts, max(remaining, 0.0), size)
    host_bytes = off * (sz["w_dense"] + sz["w_exp"]) + spilled
    if host_bytes > hw["host_capacity"]:
        fits = False
    near = _near(host_bytes, hw["host_capacity"])
    # an exact fill of the device tiers, which rounding could push either way
    total = sum(segments.values())
    cap_total = f_cap * sum(hw[f"tier{i}_capacity"] for i in range(N_TIERS))
    near = near or _near(total, cap_total)
    return {"segments": placed, "fits": fits, "near_fit_edge": near}


def memory_time(hw: dict, placement: dict, traffic: dict, host_extra: float) -> dict:
    """Spread each segment's traffic over the tiers holding it; sum times (section 4)."""
    per_tier = [0.0] * N_TIERS
    host = host_extra
    for name, t in traffic.items():
        parts, in_host, size = placement["segments"][name]
        if size <= 0 or t == 0:
            continue
        for i in range(N_TIERS):
            per_tier[i] += t * parts[i] / size
        host += t * in_host / size
    t_mem = t_peak = 0.0
    by_kind = {"sram": 0.0, "dram": 0.0, "host": 0.0}
    for i in range(N_TIERS):
        if per_tier[i] == 0:
            continue
        bw, eff = hw[f"tier{i}_bandwidth"], hw[f"tier{i}_efficiency"]
        t = per_tier[i] / (bw * eff)
        t_mem += t
        t_peak += per_tier[i] / bw
        by_kind["sram" if hw[f"tier{i}_kind"] == 0 else "dram"] += t
    if host > 0:
        t = host / (hw["host_bandwidth"] * hw["host_efficiency"])
        t_mem += t
        t_peak += host / hw["host_bandwidth"]
        by_kind["host"] += t
    return {"t_mem": t_mem, "t_peak": t_peak, "by_kind": by_kind,
            "traffic": sum(per_tier) + host}


# --------------------------------------------------------------------------------------- section 5
def links(hw: dict, ly: dict) -> tuple[float, float]:
    d_r = ly["tp"] * ly["pp"] * ly["ep"]
    if d_r <= hw["domain_size"]:
        return hw["link_bandwidth"], hw["link_latency"]
    return hw["scaleout_bandwidth"], hw["scaleout_latency"]


def ring_allreduce(n_bytes: float, tp: float, bw: float, lat: float) -> float:
    """(9) ring all-reduce of ``n_bytes`` over ``tp`` devices."""
    if tp == 1:
        return 0.0
    return 2 * (tp - 1) / tp * n_bytes / bw + 2 * (tp - 1) * lat


def communication(hw: dict, md: dict, pr: dict, ly: dict, tokens_per_group: float,
                  phi: float) -> dict:
    """(10) per stage pass: all-reduces, all-to-alls and the pipeline hop.

    ``tokens_per_group`` is ``Bg'`` for decode and ``Bg' S`` for prefill.
    """
    tp, pp, ep = ly["tp"], ly["pp"], ly["ep"]
    bw, lat = links(hw, ly)
    ab, d = pr["act_bytes"], md["d_model"]
    l_s, _, lm_s = stage(md, pp)
    t_ar = 2 * l_s * ring_allreduce(tokens_per_group * d * ab, tp, bw, lat)
    t_a2a = 0.0
    if ep > 1:
        n_a2a = tokens_per_group * md["experts_per_token"] * d * ab * (ep - 1) / ep * phi / tp
        t_a2a = 2 * lm_s * (n_a2a / bw + (ep - 1) * lat)
    t_hop = tokens_per_group * d * ab / bw + lat if pp > 1 else 0.0
    return {"t_comm": t_ar + t_a2a, "t_a2a": t_a2a, "t_hop": t_hop}


# --------------------------------------------------------------------------------------- section 7
def experts_touched_fraction(md: dict, tokens: float) -> float:
    """(7) fraction ``u`` of routed experts touched by ``tokens`` tokens."""
    n_exp, k = md["n_experts"], md["experts_per_token"]
    if n_exp == 0:
        return 0.0
    if k >= n_exp:
        return 1.0
    return 1.0 - (1.0 - k / n_exp) ** tokens


def ep_imbalance(assignments: float, ep: float) -> tuple[float, float]:
    """(12) imbalance factor ``phi`` and relative spread ``r`` of the busiest EP rank."""
    if ep == 1 or assignments <= 0:
        return 1.0, 0.0
    mean = assignments / ep
    sigma = math.sqrt(assignments * (1 / ep) * (1 - 1 / ep))
    ln_ep = math.log(ep)
    e_max = mean + sigma * math.sqrt(2 * ln_ep)
    phi = min(e_max / mean, ep)
    std_max = sigma * math.pi / math.sqrt(12 * ln_ep)
    return phi, std_max / (phi * mean)


def pairs(s: float, w: float) -> float:
    """(5) causal (query, key) pairs of a prompt of ``s`` tokens with window ``w`` (0 = none)."""
    if w == 0 or s <= w:
        return s * (s + 1) / 2
    return w * (w + 1) / 2 + (s - w) * w


def _phase(hw, md, pr, ly, peak, placement, sz, *, flops, expert_flops, traffic, host_traffic,
           tokens_per_group, phi, t_ovh):
    """Times of one stage pass on one micro-batch."""
    mem = memory_time(hw, placement, traffic, host_traffic)
    t_comp = flops / (peak * hw["flops_efficiency"])
    comm = communication(hw, md, pr, ly, tokens_per_group, phi)
    t_s = max(t_comp, mem["t_mem"]) + comm["t_comm"] + t_ovh
    return {"flops": flops, "t_comp": t_comp, "t_expert": expert_flops /
            (peak * hw["flops_efficiency"]), "t_ovh": t_ovh, "t_s": t_s, **mem, **comm}


def micro_batches(batch: float, pp: float) -> tuple[float, float]:
    """Section 6: number of micro-batches ``m`` and sequences per micro-batch ``B'``."""
    m = min(batch, pp)
    return m, batch / m


def decode(hw, md, pr, ly, peak, placement, sz, batch, context, output_len) -> dict:
    """Section 7: one decode step at the mean KV length."""
    tp, pp, ep, off = ly["tp"], ly["pp"], ly["ep"], ly["offload"]
    m, b_mb = micro_batches(batch, pp)
    bg = b_mb / ep
    l_s, sf, lm_s = stage(md, pp)
    c = context + output_len / 2
    k = md["experts_per_token"]
    u = experts_touched_fraction(md, b_mb)
    n_assign = b_mb * k
    phi, r = ep_imbalance(n_assign, ep)
    expert_flops = 2 * n_assign * md["params_expert"] * lm_s * phi / (ep * tp)
    flops = (2 * bg * (md["params_linear"] * sf + md["params_head"]) / tp
             + expert_flops
             + bg * (md["attn_flops_full_decode"] * c
                     + md["attn_flops_window_decode"] * window_min(c, md["window"])) * sf / tp)
    traffic = {
        "dense": (1 - off) * sz["w_dense_read"],
        "exp": (1 - off) * sz["w_exp"] * u,
        "kv": bg * kv_elems(md, c) * pr["kv_bytes"] * sz["f_kv"] * sf,
        "act": 2 * bg * md["act_elems"] * sf * pr["act_bytes"] / tp,
    }
    host = off * (sz["w_dense_read"] + sz["w_exp"] * u)
    ph = _phase(hw, md, pr, ly, peak, placement, sz, flops=flops, expert_flops=expert_flops,
                traffic=traffic, host_traffic=host, tokens_per_group=bg, phi=phi,
                t_ovh=l_s * hw["layer_overhead"])
    ph["time"] = max(m, pp) * ph["t_s"] + (pp - 1) * ph["t_hop"]
    ph.update(m=m, r=r, phi=phi, u=u)
    return ph


# --------------------------------------------------------------------------------------- section 8
def prefill(hw, md, pr, ly, peak, placement, sz, batch, context, chunk) -> dict:
    """Section 8: the prompt pass."""
    tp, pp, ep, off = ly["tp"], ly["pp"], ly["ep"], ly["offload"]
    s = context
    m, b_mb = micro_batches(batch, pp)
    bg = b_mb / ep
    l_s, sf, lm_s = stage(md, pp)
    tokens = b_mb * s
    u = experts_touched_fraction(md, tokens)
    n_assign = tokens * md["experts_per_token"]
    phi, _ = ep_imbalance(n_assign, ep)
    n_ch = math.ceil(bg * s / chunk)
    expert_flops = 2 * n_assign * md["params_expert"] * lm_s * phi / (ep * tp)
    flops = ((2 * bg * s * md["params_linear"] * sf + 2 * bg * md["params_head"]) / tp
             + expert_flops
             + bg * (md["attn_flops_full_prefill"] * s * (s + 1) / 2
                     + md["attn_flops_window_prefill"] * pairs(s, md["window"])) * sf / tp)
    traffic = {
        "dense": n_ch * (1 - off) * sz["w_dense_read"],
        "exp": n_ch * (1 - off) * sz["w_exp"] * u,
        "kv": bg * kv_elems(md, s) * pr["kv_bytes"] * sz["f_kv"] * sf,
        "act": 2 * bg * s * md["act_elems"] * sf * pr["act_bytes"] / tp,
    }
    host = n_ch * off * (sz["w_dense_read"] + sz["w_exp"] * u)
    ph = _phase(hw, md, pr, ly, peak, placement, sz, flops=flops, expert_flops=expert_flops,
                traffic=traffic, host_traffic=host, tokens_per_group=bg * s, phi=phi,
                t_ovh=l_s * hw["layer_overhead"] * n_ch)
    ph["time"] = (m + pp - 1) * ph["t_s"] + (pp - 1) * ph["t_hop"]
    ph.update(m=m, n_ch=n_ch)
    return ph


# ----------------------------------------------------------------------------------- section 9-10
def device_power(hw: dict, ph: dict, peak: float) -> float:
    """Section 9: utilisation of the binding resource and the resulting per-device power."""
    t_s = ph["t_s"]
    util = max(ph["flops"] / (peak * t_s), ph["t_peak"] / t_s) * ph["m"] * t_s / ph["time"]
    return hw["idle"] + (hw["tdp"] - hw["idle"]) * min(util, 1.0)


def bound(dec: dict, pp: float) -> tuple[int, bool]:
    """Section 10: which resource limits the decode step, and whether that call is a near tie."""
    m = dec["m"]
    c = dec["t_comm"] + (pp - 1) * dec["t_hop"] / max(m, pp)
    t_comp, t_mem, t_ovh = dec["t_comp"], dec["t_mem"], dec["t_ovh"]
    x = max(t_comp, t_mem)
    kinds = dec["by_kind"]
    near = _near(x, c) or _near(x, t_ovh)
    if x >= c and x >= t_ovh:
        near = near or _near(t_comp, t_mem)
        if t_comp >= t_mem:
            return BOUND_COMPUTE, near
        times = [kinds["sram"], kinds["dram"], kinds["host"]]
        best = max(times)
        near = near or sum(_near(t, best) for t in times) > 1
        return BOUND_SRAM + times.index(best), near
    near = near or _near(c, t_ovh)
    return (BOUND_INTERCONNECT if c >= t_ovh else BOUND_OVERHEAD), near


# ------------------------------------------------------------------------------------ the point
def reference_point(hw: dict, md: dict, peak: float, batch, context, output_len, pr: dict,
                    ly: dict, prefill_chunk=8192.0, *, diagnostics: bool = False
                    ) -> dict[str, float]:
    """Every metric of ``docs/model.md`` at one point, as ``{metric name: float}``."""
    batch, context, output_len = float(batch), float(context), float(output_len)
    peak, chunk = float(peak), float(prefill_chunk)
    out = dict.fromkeys(METRICS, NAN)
    out["fits"] = 0.0
    out["bound"] = -1.0
    extra = {"near_fit_edge": False, "near_bound_tie": False, "compatible": False}
    if not is_compatible(hw, md, peak, ly):
        return {**out, **extra} if diagnostics else out
    extra["compatible"] = True

    sz = sizes(md, pr, ly, batch, context, output_len, chunk)
    out["memory_per_device"] = sz["w_dense"] + sz["w_exp"] + sz["kv"] + sz["act"]
    out["min_devices"] = min_devices(hw, md, pr, batch, context, output_len, chunk)
    placement = place(hw, sz, ly["offload"])
    extra["near_fit_edge"] = placement["near_fit_edge"]
    if not placement["fits"]:
        return {**out, **extra} if diagnostics else out

    dec = decode(hw, md, pr, ly, peak, placement, sz, batch, context, output_len)
    pre = prefill(hw, md, pr, ly, peak, placement, sz, batch, context, chunk)
    tpot, ttft = dec["time"], pre["time"]
    dp = ly["dp"]
    devices = ly["tp"] * ly["pp"] * ly["ep"] * dp
    e2e = ttft + (output_len - 1) * tpot
    throughput = dp * batch * output_len / e2e
    energy = (device_power(hw, pre, peak) * ttft
              + device_power(hw, dec, peak) * (output_len - 1) * tpot)
    power = devices * energy / e2e
    b, near_tie = bound(dec, ly["pp"])
    t_imb = dec["t_a2a"] + (dec["t_expert"] if dec["t_comp"] >= dec["t_mem"] else 0.0)
    cov = math.sqrt(hw["jitter"] ** 2 + (dec["r"] * t_imb / dec["t_s"]) ** 2)
    m = dec["m"]
    out.update(
        ttft=ttft, tpot=tpot, e2e_latency=e2e, throughput=throughput,
        total_throughput=dp * batch * (context + output_len) / e2e,
        throughput_per_device=throughput / devices,
        tokens_per_joule=throughput / power, power=power, fits=1.0, bound=float(b),
        arithmetic_intensity=dec["flops"] / dec["traffic"],
        mfu=m * dec["flops"] / (peak * tpot), mbu=m * dec["t_peak"] / tpot,
        latency_cov=cov,
    )
    extra["near_bound_tie"] = near_tie
    if diagnostics:
        extra.update(decode=dec, prefill=pre, sizes=sz)
        return {**out, **extra}
    return out


# ------------------------------------------------------------------------------------ the grids
def _rows(table: np.ndarray, fields: tuple[str, ...]) -> list[dict]:
    table = np.asarray(table, dtype=np.float64)
    return [{f: float(v) for f, v in zip(fields, row)} for row in table]


def reference_grid(hw, md, peak, batch, context, output_len, pr, ly, prefill_chunk=8192.0):
    """Same signature and output layout as ``kernels.evaluate_grid``, one point at a time."""
    hws, mds = _rows(hw, HW_FIELDS), _rows(md, MODEL_FIELDS)
    prs, lys = _rows(pr, PRECISION_FIELDS), _rows(ly, LAYOUT_FIELDS)
    peak = np.asarray(peak, dtype=np.float64)
    bs, ss, os_ = (np.asarray(a, dtype=np.float64).reshape(-1)
                   for a in (batch, context, output_len))
    shape = (len(METRICS), len(hws), len(mds), len(bs), len(ss), len(os_), len(prs), len(lys))
    out = np.empty(shape, dtype=np.float32)
    for (h, hwd), (mi, mdd), (bi, b), (si, s), (oi, o), (pi, prd), (li, lyd) in itertools.product(
            enumerate(hws), enumerate(mds), enumerate(bs), enumerate(ss), enumerate(os_),
            enumerate(prs), enumerate(lys)):
        res = reference_point(hwd, mdd, peak[h, pi], b, s, o, prd, lyd, prefill_chunk)
        out[:, h, mi, bi, si, oi, pi, li] = [res[name] for name in METRICS]
    return out


def reference_points(hw, md, peak, pr, ly, hi, mi, pi, li, batch, context, output_len,
                     prefill_chunk=8192.0):
    """Same signature and output layout as ``kernels.evaluate_points``."""
    hws, mds = _rows(hw, HW_FIELDS), _rows(md, MODEL_FIELDS)
    prs, lys = _rows(pr, PRECISION_FIELDS), _rows(ly, LAYOUT_FIELDS)
    peak = np.asarray(peak, dtype=np.float64)
    idx = [np.asarray(a).reshape(-1).astype(np.int64) for a in (hi, mi, pi, li)]
    wl = [np.asarray(a, dtype=np.float64).reshape(-1) for a in (batch, context, output_len)]
    n = idx[0].shape[0]
    out = np.empty((len(METRICS), n), dtype=np.float32)
    for j in range(n):
        h, m_, p, la = (int(a[j]) for a in idx)
        res = reference_point(hws[h], mds[m_], peak[h, p], wl[0][j], wl[1][j], wl[2][j],
                              prs[p], lys[la], prefill_chunk)
        out[:, j] = [res[name] for name in METRICS]
    return out
