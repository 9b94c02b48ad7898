"""The summary table at the top of the report: one row per claim, seed against model, verdict."""

from __future__ import annotations

from typing import Any

from .markdown import fnum, fx, table


def _rng(x, pct: bool = True) -> str:
    if not x:
        return "n/a"
    return (f"{x[0] * 100:+.0f}% to {x[1] * 100:+.0f}%" if pct
            else f"{x[0] * 100:.0f}% to {x[1] * 100:.0f}%")


def summary_table(s: dict[str, Any]) -> str:
    v, r = s.get("variation", {}), s.get("regimes", {})
    st, f, t = s.get("strategies", {}), s.get("seed004", {}), s.get("tables", {})
    m = s.get("seed004_measured", {})
    hd = s.get("headline", {})

    def var(key: str) -> str:
        x = v.get(key, {})
        return f"max {fx(x.get('max'))}, median {fx(x.get('median'))}"

    def verdicts(prefix: str) -> str:
        return "; ".join(f"{b}: {v.get(f'{prefix}_{b}', {}).get('verdict', 'n/a')}"
                         for b in ("device", "system:8", "power", "cost"))

    rd, rp = r.get("device", {}), r.get("power", {})
    rows = [
        ["cross-architecture variation, 4 HBM accelerators of Fig. 8 (002)", "up to 3.7x",
         "; ".join(f"{b} {var(f'hbm4_{b}')}" for b in ("device", "system:8", "power", "cost")),
         verdicts("hbm4")],
        ["cross-architecture variation, whole catalog (002)", "up to 3.7x",
         "; ".join(f"{b} {var(f'catalog_{b}')}" for b in ("device", "system:8", "power",
                                                          "cost")), verdicts("catalog")],
        ["old headline: CS-3 / MTIA v2 at qwen3-14b, batch 1, prompt 128", "1846x (README, "
         "grid values)", "; ".join(f"{k} {fx(x)}" for k, x in hd.items()),
         f"{fx(hd.get('grid values, tp1'))} today on grid values; per kW {fx(hd.get('power'))}"],
        ["regime ratings, Fig. 8 (002)", "qualitative",
         f"winner rated Excellent: {rd.get('winner_rated_excellent', 'n/a')} per device, "
         f"{rp.get('winner_rated_excellent', 'n/a')} per kW; mean Spearman "
         f"{fnum(rd.get('spearman_mean'), 2)} / {fnum(rp.get('spearman_mean'), 2)}",
         r.get("verdict", "n/a")],
        ["EP parameter-to-compute (002)", "8.4x",
         f"EP {fx(st.get('ep_param_compute'))} (mean total/active of the MoE models); EP/TP "
         f"{fx(st.get('ep_vs_tp_param_compute'))}", st.get("verdict_pc", "n/a")],
        ["EP vs TP latency variance (002)", "2.1x",
         f"CoV ratio {fx(st.get('ep_vs_tp_latency_cov'))}, variance ratio "
         f"{fx(st.get('latency_variance'))}", st.get("verdict_lat", "n/a")],
        ["dataflow vs GPU at batch <= 8, Llama-3.1-8B (004)",
         "CS-3 16.8x, SN40L 9.41x over A100 at batch 1",
         f"CS-3 {fx(f.get('cs3_over_a100_b1'))}, SN40L (8 RDUs) "
         f"{fx(f.get('sn40l_over_a100_b1'))}", f.get("dataflow_verdict", "n/a")],
        ["GPU peak > dataflow at large batch (004)", "H100 at b128 > CS-3 at b8 (12,327)",
         f"H100 b<=128 {fnum(f.get('h100_best_le128'))} vs CS-3 b8 {fnum(f.get('cs3_b8'))}",
         f.get("peak_verdict", "n/a")],
        ["W8A8 gain on Hopper, batch 16-128 (004)", "+20% to +38%",
         _rng(f.get("fp8_hopper")), f.get("fp8_verdict", "n/a")],
        ["TP scaling efficiency vs DP (004)", "TP2 <= 67%, TP4 <= 60%, DP ~linear",
         f"TP2 {_rng(f.get('tp2_eff'), False)}, TP4 {_rng(f.get('tp4_eff'), False)}; DP "
         f"{_rng(f.get('dp_eff'), False)}", f.get("tp_verdict", "n/a")],
        ["MoE gain vs 1/sparsity, H100 fp8 (004)", "Scout 1.17x over 70B; below Nemotron-49B",
         f"Scout {fx(f.get('scout_over_70b_h100_fp8'))} over 70B, "
         f"{fx(f.get('scout_over_nemotron_h100_fp8'))} over Nemotron (active-parameter ratio "
         f"{fx(f.get('active_param_ratio'))})", f.get("moe_verdict", "n/a")],
        ["TP vs EP for MoE on 4 GPUs (004)", "TP better (up to 2.7x)", "see 4f",
         f.get("ep_tp_verdict", "n/a")],
        ["seed 004's measured numbers within 1.5x (issue 13)", f"{m.get('rows', 'n/a')} numbers",
         f"{m.get('within', 'n/a')} within; of those independent of seed 004 "
         f"{m.get('independent_within', 'n/a')} of {m.get('independent_rows', 'n/a')}",
         f"misses: {', '.join(m.get('misses', [])) or 'none'} (section 5)"],
        ["Cerebras Llama-2-70B single stream (002)", "2,100 (Table III) vs 86.5 (text)",
         f"{fnum(t.get('cs3_single_stream_tps'))} tok/s", "the table's order of magnitude, "
         "not the text's"],
    ]
    return "## Summary\n\n" + table(["claim", "seed", "model", "verdict"], rows) + "\n"
