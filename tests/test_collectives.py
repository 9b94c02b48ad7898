"""Collectives by algorithm (kernels/collectives.py, docs/model.md section 5).

- the kernel's all-reduce and all-to-all agree with the independent reference (tests/reference.py);
- a full mesh gives a group of n its n - 1 peer links, a switched fabric the whole link, and the
  model reproduces the rccl-tests / nccl-tests figures the catalog cites;
- the custom all-reduce parameters reproduce SGLang PR #2904's timings;
- the algorithm chosen never goes back as the message grows;
- more devices do not make memory-bound decode slower: a hypothesis grid, the default grid
  (native and ideal: every remaining rise attributed to a named mechanism) and the issue's
  examples.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from grids.engines import resolve
from grids.hardware import load_device
from grids.spec import DEFAULT_SPEC
from kernels.collectives import (
    ALG_NONE,
    ALG_ONESHOT,
    ALG_RING,
    ALG_SWITCH,
    ALG_TWOSHOT,
    allreduce_time,
    alltoall_time,
)
from kernels.params import HW_FIELDS
from sweep.execute.tables import platform_columns
from tests import reference as ref
from tests import strategies as S

GiB = float(1 << 30)
MiB = float(1 << 20)


def platform(engine: str, device: str, overlay: dict | None = None, **override) -> dict:
    """The kernels' platform row of ``device`` under ``engine`` as a dict (``override`` replaces
    fields)."""
    dev = load_device(device)
    cols = platform_columns(dev, resolve(engine, dev, overlay), None, 8192)
    cols.update(override)
    return cols


def row(cols: dict) -> np.ndarray:
    return np.array([cols[f] for f in HW_FIELDS], dtype=np.float64)


def allreduce(cols: dict, n: int, nbytes: float) -> tuple[float, int]:
    t, alg = allreduce_time(row(cols), float(n), float(nbytes))
    return float(t), int(alg)


def busbw(cols: dict, n: int, nbytes: float) -> float:
    """nccl-tests' bus bandwidth of an all-reduce: 2 (n-1)/n M / t [B/s]."""
    return 2 * (n - 1) / n * nbytes / allreduce(cols, n, nbytes)[0]


# ------------------------------------------------------------------- kernel against the reference
message_sizes = S.log_floats(1.0, 64 * GiB)
group_sizes = st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 18, 64, 72, 256])


@pytest.mark.nojit
@given(hw=S.devices(), n=group_sizes, nbytes=message_sizes)
def test_allreduce_agrees_with_the_reference(hw, n, nbytes):
    got, alg = allreduce(hw, n, nbytes)
    assert got == pytest.approx(ref.allreduce(hw, nbytes, float(n)), rel=1e-12)
    assert (alg == ALG_NONE) == (n == 1)


@pytest.mark.nojit
@given(hw=S.devices(), ep=st.sampled_from([2, 4, 8, 16]), tp=st.sampled_from([1, 2, 4, 8]),
       nbytes=message_sizes)
def test_alltoall_agrees_with_the_reference(hw, ep, tp, nbytes):
    got = alltoall_time(row(hw), float(tp * ep), float(ep), nbytes)
    assert got == pytest.approx(ref.alltoall(hw, nbytes, float(tp * ep), float(ep)), rel=1e-12)


# ------------------------------------------------------------------------------ fabrics and data
def test_a_full_mesh_gives_a_group_its_peer_links_as_rccl_tests_measure():
    """8x MI300X, RCCL all-reduce of 4 GiB (stas00/ml-engineering network/README.md): bus
    bandwidth 47.7 GB/s on 2 GPUs (one xGMI link), 312.9 GB/s on 8 (seven). The model's bus
    bandwidth grows as n - 1 links; at 8 GPUs it is the catalog's measured efficiency."""
    cols = platform("vllm", "mi300x")  # 4 GiB is above the custom all-reduce's 8 MiB: RCCL ring
    got = {n: busbw(cols, n, 4 * GiB) for n in (2, 4, 8)}
    assert got[8] == pytest.approx(312.9e9, rel=0.01)
    assert got[2] == pytest.approx(47.7e9, rel=0.1)
    assert got[4] == pytest.approx(3 * got[2], rel=1e-3)  # three of the seven links


def test_a_switched_fabric_gives_any_group_the_whole_link():
    """NVSwitch: the ring's bus bandwidth at large messages does not depend on the group size
    (nccl-tests: ~370 GB/s on 8x H100, NVIDIA/nccl-tests issue #212)."""
    cols = platform("trtllm", "h100-sxm", in_switch_overhead=math.inf)  # ring only
    bws = [busbw(cols, n, 64 * GiB) for n in (2, 4, 8)]
    assert bws == pytest.approx([bws[0]] * 3, rel=1e-3)
    assert bws[2] == pytest.approx(370e9, rel=0.01)


def test_in_switch_reduction_gain_matches_nccl_tests():
    """8x H200, NCCL 2.27.7, 8 GiB (stas00/ml-engineering network/README.md, SHARP section): NVLS
    over ring bus bandwidth 1.00 / 1.14 / 1.19 / 1.26 / 1.29 at 4-8 GPUs; at 4 NCCL does not
    pick NVLS."""
    with_nvls = platform("trtllm", "h200-sxm")
    ring_only = platform("trtllm", "h200-sxm", in_switch_overhead=math.inf)
    measured = {4: 1.00, 5: 1.14, 6: 1.19, 7: 1.26, 8: 1.29}
    for n, gain in measured.items():
        got = busbw(with_nvls, n, 8 * GiB) / busbw(ring_only, n, 8 * GiB)
        assert got == pytest.approx(gain, abs=0.03), n
    assert allreduce(with_nvls, 8, 8 * GiB)[1] == ALG_SWITCH
    assert busbw(with_nvls, 8, 16 * GiB) == pytest.approx(482e9, rel=0.02)


def test_nccl_uses_a_ring_for_small_and_nvls_for_large_messages():
    """8x H200 (all-reduce-8xH200.md): Ring/LL up to 1 MiB, NVLS from 2 MiB. The model's crossover
    lies between 4 and 8 MiB (it has one ring protocol; NCCL's LL halves the ring's bandwidth for
    small messages), so only the ends are checked; docs/model.md section 5 says so."""
    cols = platform("deepspeed-mii", "h200-sxm")  # NCCL only, no custom all-reduce
    assert allreduce(cols, 8, 1 * MiB)[1] == ALG_RING
    assert allreduce(cols, 8, 16 * MiB)[1] == ALG_SWITCH


def _pr2904_rows() -> list[dict]:
    from scripts.collectives.fit_custom_allreduce import read_table

    return read_table()


@pytest.mark.parametrize(("kernel", "engine", "median", "largest"),
                         [("sgl-kernel", "sglang", 0.10, 0.30), ("sgl-kernel", "trtllm", 0.10, 0.30),
                          ("vllm", "vllm", 0.10, 0.30)])
def test_custom_allreduce_reproduces_pr2904(kernel, engine, median, largest):
    """The engine files' custom all-reduce (cost, bandwidth share, one-shot/two-shot thresholds)
    against SGLang PR #2904's H100 table (TensorRT-LLM's kernel as ported to sgl-kernel, and
    vLLM's), 2-8 GPUs, 2 KiB-4 MiB. The two free parameters were fitted to these rows
    (scripts/collectives/fit_custom_allreduce.py: median 6.5% / 4.7%, largest 27% / 21%); this
    pins the shipped values, the thresholds and the kernel's formulas to them."""
    cols = platform(engine, "h100-sxm", overlay={})
    rows = [r for r in _pr2904_rows() if r["kernel"] == kernel]
    err = np.array([allreduce(cols, r["gpus"], r["bytes"])[0] / r["time"] - 1 for r in rows])
    assert np.median(np.abs(err)) <= median
    assert np.max(np.abs(err)) <= largest
    algs = {(r["gpus"], r["bytes"]): allreduce(cols, r["gpus"], r["bytes"])[1] for r in rows}
    assert algs[(2, 4 * MiB)] == ALG_ONESHOT  # 2 GPUs: always one-shot
    assert algs[(8, 2048)] == ALG_ONESHOT and algs[(8, 4 * MiB)] == ALG_TWOSHOT


# -------------------------------------------------------------------- choice along message size
def _rank(alg: int) -> int:
    """Order in which an engine's rules move as the message grows: one-shot, two-shot, then the
    library (ring, tree or in-switch)."""
    return {ALG_ONESHOT: 0, ALG_TWOSHOT: 1}.get(alg, 2)


@given(hw=S.devices(), n=group_sizes.filter(lambda n: n > 1))
def test_algorithm_choice_never_goes_back_as_the_message_grows(hw, n):
    """Along growing messages each algorithm is chosen over one contiguous range; with the
    engine's rules the order is one-shot, two-shot, library; with the fastest choice the time is
    non-decreasing and concave (the lower envelope of affine costs)."""
    sizes = np.geomspace(1.0, 64 * GiB, 160)
    out = [allreduce(hw, n, m) for m in sizes]
    algs = [a for _, a in out]
    runs = [a for i, a in enumerate(algs) if i == 0 or a != algs[i - 1]]
    assert len(runs) == len(set(runs)), runs
    times = np.array([t for t, _ in out])
    if hw["fastest_collective"] == 1:
        assert np.all(np.diff(times) >= -1e-12 * times[1:])
        mid = (times[:-2] * (sizes[2:] - sizes[1:-1]) + times[2:] * (sizes[1:-1] - sizes[:-2])) \
            / (sizes[2:] - sizes[:-2])
        assert np.all(times[1:-1] >= mid * (1 - 1e-9))
    else:
        ranks = [_rank(a) for a in algs]
        assert ranks == sorted(ranks)


# ------------------------------------------------------------------------------ tp -> 2 tp
@given(p=S.fitting_points(layout={"pp": 1, "ep": 1, "dp": 1, "offload": 0, "spill": 0}),
       kv_heads=st.sampled_from([8, 16, 32]))
def test_memory_bound_decode_is_not_slower_on_twice_the_devices(p, kv_heads):
    """Pure TP inside the scale-up domain, on a random platform and model whose memory traffic
    halves with 2tp (KV heads shard over 2tp, heads divide it): when the decode step at 2tp is
    memory-bound its exposed communication is below its memory time, which is half of tp's, so
    TPOT(2tp) <= TPOT(tp), whatever the collectives cost (docs/model.md sections 5, 7, 10).
    Without speculative decoding: its TPOT is the verify step's (k_s + 1 tokens per sequence,
    twice the all-reduce message at k_s = 1), which `bound` does not describe."""
    tp = p["ly"]["tp"]
    md = dict(p["md"], kv_tp_shardable=1.0, n_kv_heads=float(kv_heads),
              n_heads=float(max(p["md"]["n_heads"], kv_heads)))
    if md["n_heads"] % (2 * tp) or kv_heads % (2 * tp) or p["hw"]["domain_size"] < 2 * tp:
        return
    one = S.with_capacity_for(S.variant(p, md=md, ly={"tp": tp, "spill": 0.0},
                                        hw={"spec_tokens": 0.0}), factor=2.5)
    two = S.variant(one, ly={"tp": 2 * tp})
    a, b = S.evaluate([one, two])
    if a["fits"] != 1 or b["fits"] != 1 or b["bound"] not in (1.0, 2.0):
        return
    assert b["tpot"] <= a["tpot"] * (1 + 1e-5)


PURE_TP = ("tp1", "tp2", "tp4", "tp8")


@pytest.fixture(scope="module")
def tp_grid() -> xr.Dataset:
    """The default grid with its pure tensor-parallel layouts, for native and ideal, as static
    batches: the decode step of a fixed batch, whose all-reduce message is the batch's (under
    continuous batching an iteration also carries prompt chunks)."""
    import sweep

    spec = {**DEFAULT_SPEC, "engine": ["native", "ideal"], "parallelism": list(PURE_TP),
            "batching": "static"}
    return sweep.run(spec, progress=False)


def _rises(ds: xr.Dataset) -> list[dict]:
    """Every (point, tp) where TPOT rises from tp to 2tp inside the scale-up domain although the
    decode step at tp is memory-bound (bound sram or dram), at equal concurrency: a batch that
    does not fit runs in waves (docs/model.md section 11), and where 2tp holds more of it at once
    each step carries more sequences, a larger batch rather than a slower one."""
    out = []
    domain = {h: load_device(h).domain_size for h in ds.hardware.values}
    for a, b in itertools.pairwise(PURE_TP):
        hws = [h for h in ds.hardware.values if domain[h] >= int(b[2:])]
        s1, s2 = ds.sel(parallelism=a, hardware=hws), ds.sel(parallelism=b, hardware=hws)
        rise = ((s1.fits == 1) & (s2.fits == 1) & (s2.tpot > s1.tpot)
                & s1.bound.isin([1, 2]) & (s1.concurrency == s2.concurrency))
        dims = list(rise.dims)
        for idx in np.argwhere(rise.values):
            point = {d: rise[d].values[i] for d, i in zip(dims, idx)}
            point = {d: v.item() if isinstance(v, np.generic) else v for d, v in point.items()}
            out.append({**point, "tp": int(a[2:]),
                        "rise": float(s2.tpot.sel(point) - s1.tpot.sel(point)),
                        "concurrency": float(s1.concurrency.sel(point))})
    return out


@functools.cache
def _platform_cached(engine: str, hardware: str) -> dict:
    return platform(engine, hardware)


def _comm_growth(r: dict) -> float:
    """Per-token all-reduce time added by doubling tp at the rise's point: 2 L [t_ar(2tp, M) -
    t_ar(tp, M)] with the decode message M = B d cb' of the B sequences that run at once (pure
    TP, one stage; section 5)."""
    from grids.models import load_model
    from grids.precisions import parse_precision

    md, pr = load_model(r["model"]), parse_precision(r["precision"])
    cols = _platform_cached(r["engine"], r["hardware"])
    msg = r["concurrency"] * md.d_model * max(cols["comm_bytes"], pr.act_bits / 8)
    tp = r["tp"]
    return 2 * md.n_layers * (allreduce(cols, 2 * tp, msg)[0] - allreduce(cols, tp, msg)[0])


def _cause(r: dict) -> str:
    """The mechanism behind a rise (docs/validation.md lists the counts). Memory time never grows
    with tp and the overheads do not change, so a rise can only come from the KV cache not
    sharding further or from the collectives: it is at most the all-reduce time doubling adds."""
    from grids.models import load_model

    md = load_model(r["model"])
    if not md.kv_tp_shardable or md.n_kv_heads % (2 * r["tp"]):
        return "kv cache stops sharding"
    if not r["rise"] <= _comm_growth(r) * (1 + 1e-3) + 1e-9:
        return "unexplained"
    if r["tp"] == 1 and load_device(r["hardware"]).peer_links > 0:
        return "a pair shares one direct link"
    return "all-reduce time grows with the group"


def test_tp_doubling_on_the_default_grid(tp_grid):
    """Default grid, native and ideal: a memory-bound decode point that gets slower on twice the
    devices has a named cause: its KV cache stops sharding, or the rise is no more than the
    all-reduce time the doubling adds (a pair sharing one direct link on a mesh or torus, or an
    all-reduce whose latency or bytes grow with the group, from the measurements and cost models
    docs/model.md section 5 cites). None on NVIDIA's NVLink parts, whose collectives those
    measurements pin; in all, fewer than 1% of the grid's points (the ring with a fitted
    per-step latency had 22,327 at equal concurrency: docs/validation.md)."""
    rises = _rises(tp_grid)
    causes = [_cause(r) for r in rises]
    assert "unexplained" not in causes
    nvidia = [r for r, c in zip(rises, causes) if c != "kv cache stops sharding"
              and load_device(r["hardware"]).vendor == "NVIDIA"]
    assert nvidia == []
    assert len(rises) < 0.01 * tp_grid.tpot.size


def test_tp_doubling_under_continuous_batching():
    """The same count under continuous batching, the default serving mode (docs/validation.md):
    an iteration also carries prompt chunks, so its all-reduce message is not the batch's and the
    causes are not attributed here, but no rise is on NVIDIA's NVLink parts and there are fewer
    than 1% of the grid's points (the ring with a fitted per-step latency had 19,360)."""
    import sweep

    spec = {**DEFAULT_SPEC, "engine": ["native", "ideal"], "parallelism": list(PURE_TP),
            "batching": "continuous"}
    ds = sweep.run(spec, progress=False)
    rises = _rises(ds)
    assert [r for r in rises if load_device(r["hardware"]).vendor == "NVIDIA"] == []
    assert len(rises) < 0.01 * ds.tpot.size


def _point(engine: str, hardware: str, model: str, precision: str, layout: str):
    """One point at B = 1, a 1024-token prompt and 256 generated tokens (sweep.evaluate)."""
    import pandas as pd

    import sweep

    t = pd.DataFrame([{"engine": engine, "hardware": hardware, "model": model,
                       "precision": precision, "parallelism": layout, "batch": 1,
                       "context": 1024, "output_len": 256}])
    return sweep.evaluate(t).iloc[0]


def test_the_issues_examples_get_faster_with_more_gpus():
    """Issue 20: TensorRT-LLM Llama-70B fp8 B=1 on H100 was 15.4 ms at tp4 and 20.2 ms at tp8;
    SGLang 21.6 ms at tp2 and 63.2 ms at tp8 (ring with a fitted per-step latency)."""
    trt = [_point("trtllm", "h100-sxm", "llama-3.3-70b", "fp8", f"tp{n}")["tpot"] for n in (4, 8)]
    sgl = [_point("sglang", "h100-sxm", "llama-3.3-70b", "fp8", f"tp{n}")["tpot"]
           for n in (2, 4, 8)]
    assert trt[1] < trt[0]
    assert sgl[2] < sgl[1] < sgl[0]


def test_deepseek_on_8_h200_is_memory_bound_under_ideal():
    """Issue 20: DeepSeek-V3 fp8 on 8x H200 under ideal was 1.71 ms per token, all of it ring
    latency, against its 1.11 ms memory bound; the decode step is memory-bound now, at the
    H200's achievable bandwidth."""
    r = _point("ideal", "h200-sxm", "deepseek-v3", "fp8", "tp8")
    assert r["bound"] == 2  # dram
    assert r["mbu"] == pytest.approx(load_device("h200-sxm").tiers[0].efficiency, rel=0.01)


# ---------------------------------------------------------------------------- the fabric fields
def _device_file(**interconnect) -> dict:
    """A device file (as parsed TOML): the catalog H100 with ``interconnect`` fields replaced."""
    import copy

    from grids import tomlio
    from grids.hardware import hardware_dir

    raw = copy.deepcopy(tomlio.load(hardware_dir() / "h100-sxm.toml"))
    raw["interconnect"].update(interconnect)
    return raw


def test_bad_fabric_fields_give_one_error_naming_each():
    from grids.errors import SpecError
    from grids.hardware import parse_device

    src = "test"
    raw = _device_file(peer_links={"value": 2.5, "source": src},
                       link_efficiency={"value": 1.5, "source": src},
                       switch_reduction_efficiency={"value": 0.7, "source": src})
    with pytest.raises(SpecError) as info:
        parse_device(raw, "mine.toml")
    text = str(info.value)
    assert "peer_links = 2.5 must be a whole number" in text
    assert "link_efficiency = 1.5 outside (0, 1]" in text
    mesh = _device_file(peer_links={"value": 7, "source": src})
    with pytest.raises(SpecError, match="switch_reduction_efficiency needs a switched fabric"):
        parse_device(mesh, "mine.toml")
    # without the switch's reduction a mesh is fine, and absent fields mean a switched fabric
    del mesh["interconnect"]["switch_reduction_efficiency"]
    assert parse_device(mesh, "mine.toml").peer_links == 7
    bare = _device_file()
    for key in ("peer_links", "switch_reduction_efficiency", "link_efficiency"):
        bare["interconnect"].pop(key)
    dev = parse_device(bare, "mine.toml")
    assert (dev.peer_links, dev.switch_reduction_efficiency) == (0, 0.0)
    assert dev.sources["interconnect.link_efficiency"].estimate  # the class default, as such


def test_a_hypothetical_mesh_gives_a_pair_one_link():
    """A hypothetical H100 whose NVLink were 7 direct links instead of a switch (docs/spec.md):
    a pair's large all-reduce runs on one of them, 1/7 of the switched bandwidth; all 8 GPUs get
    all 7."""
    from grids.hardware import derive_device

    base = load_device("h100-sxm")
    mesh = derive_device(base, "h100-mesh", {"peer_links": 7, "switch_reduction_efficiency": 0.0})

    def bus(dev, n):
        cols = platform_columns(dev, resolve("trtllm", dev, {}), None, 8192)
        return busbw(cols, n, 4 * GiB)  # above the custom all-reduce's limit: NCCL

    assert bus(mesh, 2) == pytest.approx(bus(base, 2) / 7, rel=1e-3)
    assert bus(mesh, 8) < bus(base, 8)  # the ring on all 7 links, but no in-switch reduction
