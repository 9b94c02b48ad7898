"""Mixture of experts: experts, experts per token, expert and shared-expert widths, and which
layers are MoE."""

from __future__ import annotations

from dataclasses import dataclass

from grids.models.fields import _Ctx, _first, _index_list, _int
from grids.models.tables import _EXPERT_KEYS, _LLAMA4_TYPES, _TOPK_KEYS


@dataclass
class _Moe:
    E: int = 0  # routed experts per MoE layer
    k_top: int = 0
    I_e: int = 0  # expert MLP width
    shared_width: int = 0  # total shared-expert MLP width per MoE layer
    shared_gate: int = 0  # 1 if the shared experts have a d -> 1 gate (qwen2_moe)


def _read_moe(x: _Ctx) -> _Moe:
    c, p = x.c, x.problems
    ekey = _first(c, _EXPERT_KEYS)
    E = (_int(c, ekey, p, minimum=0) if ekey else 0) or 0
    if E == 0:
        kkey = _first(c, _TOPK_KEYS)
        k_top = c.get(kkey) if kkey else None
        if ekey and isinstance(k_top, int) and not isinstance(k_top, bool) and k_top > 0:
            p.append(f"'{kkey}' = {k_top} routes each token to experts, but '{ekey}' = 0: a "
                     f"MoE model needs at least that many experts, a dense one no '{kkey}' "
                     f"(or 0)")
        return _Moe()
    k_top = 0
    kkey = _first(c, _TOPK_KEYS)
    if kkey is None:
        p.append(f"MoE config ('{ekey}' = {E}) is missing 'num_experts_per_tok' "
                 f"(experts routed per token)")
    else:
        k_top = _int(c, kkey, p) or 0
        if k_top > E:
            p.append(f"'{kkey}' = {k_top} exceeds the number of experts '{ekey}' = {E}")
    ikey = "moe_intermediate_size" if c.get("moe_intermediate_size") is not None \
        else "intermediate_size"
    I_e = _int(c, ikey, p) or 0
    moe = _Moe(E, k_top, I_e)
    if c.get("shared_expert_intermediate_size"):
        moe.shared_width = _int(c, "shared_expert_intermediate_size", p, minimum=0) or 0
        moe.shared_gate = 1  # qwen2_moe shared_expert_gate: d -> 1
    else:
        n_sh = _int(c, "n_shared_experts", p, required=False, minimum=0)
        if n_sh is None and x.types & _LLAMA4_TYPES:
            n_sh = 1  # Llama 4: one always-on shared expert of intermediate_size per MoE layer
        moe.shared_width = (n_sh or 0) * I_e
    return moe


def _moe_layer_indices(c: dict, L: int, p: list[str]) -> set[int]:
    explicit = _index_list(c, "moe_layers", L, p)
    if explicit is not None:
        return set(explicit)
    step = c.get("interleave_moe_layer_step")
    if step is not None:
        step = _int(c, "interleave_moe_layer_step", p) or 1
        return set(range(step - 1, L, step))
    k_dense = _int(c, "first_k_dense_replace", p, required=False, default=0, minimum=0)
    if k_dense > L:
        p.append(f"first_k_dense_replace {k_dense} exceeds num_hidden_layers {L}")
    freq = _int(c, "moe_layer_freq", p, required=False, default=1)
    sparse_step = _int(c, "decoder_sparse_step", p, required=False, default=1)
    mlp_only = set(_index_list(c, "mlp_only_layers", L, p) or [])
    return {i for i in range(L) if i >= k_dense and i % freq == 0 and (i + 1) % sparse_step == 0
            and i not in mlp_only}
