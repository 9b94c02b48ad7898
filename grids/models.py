"""Model catalog: Hugging Face ``config.json`` files parsed into :class:`ModelArch`.

A model is a plain HF-style ``config.json`` (``grids/data/models/<id>.json``, listed with its
sources and published parameter counts in ``grids/data/models/catalog.toml``). A user passes a
catalog id, the path of their own ``config.json`` (or of the directory holding it), or an
already-loaded ``dict``.

Architectures are recognised by the *fields* of the config, so a new model of a known kind needs no
code:

* MoE: ``num_local_experts`` / ``n_routed_experts`` / ``num_experts`` (> 0) with
  ``num_experts_per_tok`` / ``experts_per_token``; expert width ``moe_intermediate_size`` (else
  ``intermediate_size``); which layers are MoE from ``moe_layers``, ``interleave_moe_layer_step``,
  ``first_k_dense_replace`` + ``moe_layer_freq``, ``mlp_only_layers`` + ``decoder_sparse_step``;
  dense layers use ``intermediate_size_mlp`` if present, else ``intermediate_size``; shared experts
  from ``n_shared_experts`` (x ``moe_intermediate_size``) or ``shared_expert_intermediate_size``.
* MLA: ``kv_lora_rank`` (with ``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
  ``v_head_dim``).
* Windowed attention: ``layer_types`` (``full_attention`` / ``sliding_attention`` /
  ``chunked_attention``), else ``attention_chunk_size`` (chunked on RoPE layers, full on the NoPE
  layers given by ``no_rope_layers`` or every ``no_rope_layer_interval``-th layer, default 4, as HF
  Llama 4), else ``sliding_window`` (all layers, or layers >= ``max_window_layers`` when
  ``use_sliding_window`` is true); ``use_sliding_window: false`` disables it.
* Nemotron-NAS: ``block_configs`` (per-block attention ``no_op`` / ``replace_with_linear`` /
  ``n_heads_in_group``, FFN ``ffn_mult`` -> ``roundup_256(int(2*ffn_mult*d/3))``).
* Multimodal wrappers: ``text_config`` is used (vision towers are not counted).
* GPT-2 style names: ``n_embd``, ``n_layer``, ``n_head``, ``n_inner``, ``n_positions``.
* Biases: ``attention_bias`` (q/k/v/o biases).

Where the config has no field for a feature the architecture is recognised by ``model_type``:
Qwen2 q/k/v biases (``qwen2*``), Qwen3 per-head QK RMSNorm (``qwen3``, ``qwen3_moe``), gpt-oss
attention sinks and expert/router biases (``gpt_oss``), DeepSeek-V3 ``e_score_correction_bias``
(``deepseek_v3`` or ``topk_method = "noaux_tc"``), Llama 4 implicit shared expert (``llama4*``),
GPT-J GELU MLP with biases, LayerNorms with bias and ``lm_head`` bias (``gptj``). An unknown
``model_type`` is counted as a Llama-style decoder (SwiGLU MLP, RMSNorms, no biases).

The parameter-count formula is the one in ``shared/reference/models.md`` and reproduces e.g. the
published Mixtral-8x22B count 140,620,634,112 / 39,152,031,744 exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from grids.errors import SpecError, suggest

__all__ = ["MODEL_IDS", "ModelArch", "catalog", "catalog_models", "list_models", "load_model",
           "model_from_config"]

# model_type families for features that have no config field
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe"}
_GPT_OSS_TYPES = {"gpt_oss"}
_SCORE_BIAS_TYPES = {"deepseek_v3"}
_LLAMA4_TYPES = {"llama4", "llama4_text"}
_GPTJ_TYPES = {"gptj"}

# GPT-2 style names -> canonical HF names (as the HF GPTJConfig.attribute_map)
_ALIASES = (("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"),
            ("n_head", "num_attention_heads"), ("n_positions", "max_position_embeddings"),
            ("n_inner", "intermediate_size"))

_EXPERT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")
_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk")

_FULL, _WINDOW, _NONE, _LINEAR = "full", "window", "none", "linear"
_LAYER_TYPES = {"full_attention": _FULL, "sliding_attention": _WINDOW, "chunked_attention": _WINDOW}

_HINTS = {
    "hidden_size": "model width d (GPT-2 style: n_embd)",
    "num_hidden_layers": "number of decoder layers (GPT-2 style: n_layer)",
    "num_attention_heads": "number of query heads (GPT-2 style: n_head)",
    "vocab_size": "vocabulary size (rows of the embedding)",
    "max_position_embeddings": "longest supported context in tokens (GPT-2 style: n_positions)",
    "intermediate_size": "MLP width of dense layers (the SwiGLU hidden size)",
    "qk_rope_head_dim": "MLA rotary part of the query/key head",
    "qk_nope_head_dim": "MLA non-rotary part of the query/key head",
    "v_head_dim": "MLA value head size",
}


@dataclass(frozen=True)
class ModelArch:
    """One decoder LLM reduced to the numbers a roofline needs (counts are parameters/elements)."""

    id: str
    name: str
    model_type: str
    n_layers: int
    d_model: int
    vocab_size: int
    n_heads: int
    n_kv_heads: int  # MLA: = n_heads (the latent is shared by all heads)
    head_dim: int  # MLA: qk_nope_head_dim + qk_rope_head_dim
    is_mla: bool
    params_attn: int  # attention weights + biases + QK-norm + per-layer norms, all layers
    params_dense_mlp: int  # MLP weights of all dense (non-MoE) layers
    params_expert: int  # ONE routed expert in ONE MoE layer
    n_moe_layers: int
    n_experts: int
    experts_per_token: int
    params_shared_experts: int  # all shared experts over all MoE layers
    params_router: int  # all router weights (+ biases)
    params_embed: int
    params_lm_head: int  # 0 when tied
    lm_head_tied: bool
    params_other: int  # final norm
    kv_elems_full: int  # K+V cache elements per token over full-attention layers
    kv_elems_window: int  # same over sliding-window / chunked-local layers
    window: int  # tokens, 0 if none
    kv_tp_shardable: bool
    attn_flops_full_decode: float  # per (query token x context token), full-attention layers
    attn_flops_window_decode: float
    attn_flops_full_prefill: float
    attn_flops_window_prefill: float
    act_elems: int  # activation elements read+written per token per forward pass
    tp_divisor: int
    max_position_embeddings: int
    sources: tuple[str, ...] = ()
    published_total: int | None = None
    published_active: int | None = None

    @property
    def params_total(self) -> int:
        return (self.params_attn + self.params_dense_mlp
                + self.n_moe_layers * self.n_experts * self.params_expert
                + self.params_shared_experts + self.params_router + self.params_embed
                + self.params_lm_head + self.params_other)

    @property
    def params_active(self) -> int:
        return (self.params_attn + self.params_dense_mlp
                + self.n_moe_layers * self.experts_per_token * self.params_expert
                + self.params_shared_experts + self.params_router + self.params_embed
                + self.params_lm_head + self.params_other)

    @property
    def is_moe(self) -> bool:
        return self.n_moe_layers > 0

    def kv_bytes_per_token(self, kv_bits: float = 16) -> float:
        """K+V cache bytes per token over all layers (full length, window truncation ignored)."""
        b = (self.kv_elems_full + self.kv_elems_window) * kv_bits / 8
        return int(b) if float(b).is_integer() else b

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["sources"] = list(self.sources)
        out["params_total"] = self.params_total
        out["params_active"] = self.params_active
        out["kv_bytes_per_token_16bit"] = self.kv_bytes_per_token(16)
        return out


# ----------------------------------------------------------------------------------------------
# field readers: append to `problems` instead of raising, so every problem is reported at once


def _int(c: dict, key: str, problems: list[str], *, required: bool = True, default: Any = None,
         minimum: int = 1) -> Any:
    v = c.get(key)
    if v is None:
        if required:
            hint = f" ({_HINTS[key]})" if key in _HINTS else ""
            problems.append(f"missing required field '{key}'{hint}")
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (
            isinstance(v, float) and not v.is_integer()):
        problems.append(f"'{key}' must be an integer, got {v!r}")
        return default
    v = int(v)
    if v < minimum:
        hint = f" ({_HINTS[key]})" if key in _HINTS else ""
        problems.append(f"'{key}' must be >= {minimum}, got {v}{hint}")
        return default
    return v


def _first(c: dict, keys: tuple[str, ...]) -> str | None:
    for k in keys:
        if c.get(k) is not None:
            return k
    return None


def _roundup(x: int, m: int) -> int:
    return -(-x // m) * m


def _ffn_mult_to_intermediate(ffn_mult: float, d: int) -> int:
    """Nemotron-NAS / DeciLM rule: ``roundup_256(int(2 * ffn_mult * d / 3))``."""
    return _roundup(int(2 * ffn_mult * d / 3), 256)


@dataclass
class _Layer:
    attn: str  # full | window | none | linear
    kv_heads: int = 0
    mlp: str = "dense"  # dense | moe | none | linear
    inter: int = 0  # dense MLP width
    window: int = 0


def _text_config(cfg: dict) -> dict:
    c = cfg
    if isinstance(cfg.get("text_config"), dict):
        # multimodal wrapper (llama4, mistral3, ...): the decoder lives in text_config; a
        # top-level tie_word_embeddings applies to it when text_config does not say
        c = dict(cfg["text_config"])
        if "tie_word_embeddings" not in c and "tie_word_embeddings" in cfg:
            c["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    c = dict(c)
    for alias, canon in _ALIASES:
        if canon not in c and alias in c:
            c[canon] = c[alias]
    return c


def model_from_config(cfg: dict, *, id: str = "custom", name: str | None = None,
                      sources: tuple[str, ...] | list[str] = (), published_total: int | None = None,
                      published_active: int | None = None, context: str = "") -> ModelArch:
    """Build a :class:`ModelArch` from a parsed ``config.json``; raise :class:`SpecError` with
    every problem found."""
    ctx = context or f"model {id!r}"
    if not isinstance(cfg, dict):
        raise SpecError(f"a model config must be a JSON object (dict), got {type(cfg).__name__}",
                        ctx)
    p: list[str] = []
    c = _text_config(cfg)
    top_type = str(cfg.get("model_type") or "")
    mt = str(c.get("model_type") or top_type)
    types = {top_type, mt}

    d = _int(c, "hidden_size", p)
    L = _int(c, "num_hidden_layers", p)
    H = _int(c, "num_attention_heads", p)
    V = _int(c, "vocab_size", p)
    max_pos = _int(c, "max_position_embeddings", p)
    KV = _int(c, "num_key_value_heads", p, required=False, default=H)
    hd = _int(c, "head_dim", p, required=False)
    if hd is None and d is not None and H is not None:
        if d % H:
            p.append(f"hidden_size {d} is not divisible by num_attention_heads {H}: "
                     f"set 'head_dim' explicitly")
        else:
            hd = d // H
    if H is not None and KV is not None and H % KV:
        p.append(f"num_attention_heads {H} is not divisible by num_key_value_heads {KV} "
                 f"(GQA needs a whole number of query heads per KV head)")
    tied = c.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        p.append(f"'tie_word_embeddings' must be true or false, got {tied!r}")
        tied = bool(tied)

    # --- MLA -----------------------------------------------------------------------------------
    is_mla = c.get("kv_lora_rank") is not None
    kv_lora = q_lora = rope = nope = vdim = None
    if is_mla:
        kv_lora = _int(c, "kv_lora_rank", p)
        q_lora = _int(c, "q_lora_rank", p, required=False)
        rope = _int(c, "qk_rope_head_dim", p)
        nope = _int(c, "qk_nope_head_dim", p)
        vdim = _int(c, "v_head_dim", p)

    # --- MoE -----------------------------------------------------------------------------------
    ekey = _first(c, _EXPERT_KEYS)
    E = _int(c, ekey, p, minimum=0) if ekey else 0
    E = E or 0
    k_top = I_e = 0
    if E > 0:
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

    # --- layer list: attention kind + MLP kind per layer ----------------------------------------
    layers: list[_Layer] = []
    window = 0
    blocks = c.get("block_configs")
    if L is not None and blocks is not None:
        layers, window = _nas_layers(blocks, L, H, d, p)
    elif L is not None:
        kinds, window = _attention_kinds(c, L, p)
        dense_key = "intermediate_size_mlp" if c.get("intermediate_size_mlp") is not None \
            else "intermediate_size"
        moe_idx = _moe_layer_indices(c, L, E, p) if E > 0 else set()
        I_dense = None
        if len(moe_idx) < L:
            if mt in _GPTJ_TYPES and c.get(dense_key) is None and d is not None:
                I_dense = 4 * d  # GPT-J n_inner = None -> 4 * n_embd
            else:
                I_dense = _int(c, dense_key, p) or 0
        for i in range(L):
            lay = _Layer(attn=kinds[i], kv_heads=KV or 0,
                         window=window if kinds[i] == _WINDOW else 0)
            if i in moe_idx:
                lay.mlp = "moe"
            else:
                lay.mlp, lay.inter = "dense", I_dense or 0
            layers.append(lay)

    # --- shared experts ------------------------------------------------------------------------
    shared_width = 0  # total shared-expert MLP width per MoE layer
    shared_gate = 0
    if E > 0:
        if c.get("shared_expert_intermediate_size"):
            shared_width = _int(c, "shared_expert_intermediate_size", p, minimum=0) or 0
            shared_gate = 1  # qwen2_moe shared_expert_gate: d -> 1
        else:
            n_sh = _int(c, "n_shared_experts", p, required=False, minimum=0)
            if n_sh is None and types & _LLAMA4_TYPES:
                n_sh = 1  # Llama 4: one always-on shared expert of intermediate_size per MoE layer
            shared_width = (n_sh or 0) * I_e

    if p:
        raise SpecError(p, ctx)

    # --- parameter counts ----------------------------------------------------------------------
    gptj = mt in _GPTJ_TYPES
    gpt_oss = bool(types & _GPT_OSS_TYPES)
    attn_bias = bool(c.get("attention_bias", False))
    qkv_bias = attn_bias or bool(types & _QKV_BIAS_TYPES)
    o_bias = attn_bias and not (types & _QKV_BIAS_TYPES)
    qk_norm = bool(types & _QK_NORM_TYPES)
    nas = blocks is not None

    def attn_params(kvh: int) -> int:
        if is_mla:
            if q_lora:  # q_a_proj, q_a_layernorm, q_b_proj
                q = d * q_lora + q_lora + q_lora * H * (nope + rope)
            else:  # plain q_proj (e.g. DeepSeek-V2-Lite)
                q = d * H * (nope + rope)
            return (q + d * (kv_lora + rope) + kv_lora + kv_lora * H * (nope + vdim)
                    + H * vdim * d)
        n = d * H * hd + 2 * d * kvh * hd + H * hd * d
        if qkv_bias:
            n += H * hd + 2 * kvh * hd
        if o_bias:
            n += d
        if qk_norm:
            n += 2 * hd
        if gpt_oss:
            n += H  # one attention sink per head
        return n

    def mlp_params(width: int) -> int:
        if gptj:
            return 2 * d * width + width + d  # fc_in, fc_out with biases (GELU, not gated)
        return 3 * d * width  # SwiGLU gate, up, down

    norm = 2 * d if gptj else d  # LayerNorm (weight+bias) vs RMSNorm
    params_attn = params_dense = 0
    for lay in layers:
        if lay.attn in (_FULL, _WINDOW):
            params_attn += attn_params(lay.kv_heads)
        elif lay.attn == _LINEAR:
            params_attn += d * d
        # per-layer norms: NAS blocks drop the norm of a no_op sub-block; GPT-J has one
        # LayerNorm for its parallel attention+MLP block
        if gptj:
            params_attn += norm
        elif nas:
            params_attn += (norm if lay.attn != _NONE else 0) + (norm if lay.mlp != "none" else 0)
        else:
            params_attn += 2 * norm
        if lay.mlp == "dense":
            params_dense += mlp_params(lay.inter)
        elif lay.mlp == "linear":
            params_dense += d * d

    n_moe = sum(1 for lay in layers if lay.mlp == "moe")
    params_expert = 3 * d * I_e if E > 0 else 0
    if gpt_oss and E > 0:
        params_expert += 2 * I_e + d  # gate_up bias (2I) + down bias (d)
    router_per_layer = d * E if E > 0 else 0
    if E > 0 and (gpt_oss or types & _SCORE_BIAS_TYPES or c.get("topk_method") == "noaux_tc"):
        router_per_layer += E  # gpt-oss router bias / DeepSeek e_score_correction_bias
    params_router = n_moe * router_per_layer
    params_shared = n_moe * (3 * d * shared_width + shared_gate * d)
    params_embed = V * d
    params_lm_head = 0 if tied else V * d + (V if gptj else 0)
    params_other = norm

    # --- KV cache, attention FLOPs, activations -------------------------------------------------
    kv_full = kv_win = 0
    f_full_dec = f_win_dec = f_full_pre = f_win_pre = 0.0
    act = 0
    for lay in layers:
        if lay.attn in (_FULL, _WINDOW):
            if is_mla:
                kv = kv_lora + rope
                fd = 2.0 * H * ((kv_lora + rope) + kv_lora)
                fp = 2.0 * H * ((nope + rope) + vdim)
            else:
                kv = 2 * lay.kv_heads * hd
                fd = fp = 2.0 * H * (hd + hd)
            if lay.attn == _FULL:
                kv_full += kv
                f_full_dec += fd
                f_full_pre += fp
            else:
                kv_win += kv
                f_win_dec += fd
                f_win_pre += fp
        if lay.mlp == "moe":
            width = k_top * I_e + shared_width
        elif lay.mlp == "dense":
            width = lay.inter
        elif lay.mlp == "linear":
            width = d
        else:
            width = 0
        act += 4 * d + 2 * width

    attn_kv = [lay.kv_heads for lay in layers if lay.attn in (_FULL, _WINDOW)]
    n_kv_heads = H if is_mla else (Counter(attn_kv).most_common(1)[0][0] if attn_kv else KV or 0)
    head_dim = (nope + rope) if is_mla else hd

    return ModelArch(
        id=str(id), name=str(name or id), model_type=top_type or mt,
        n_layers=L, d_model=d, vocab_size=V, n_heads=H, n_kv_heads=n_kv_heads, head_dim=head_dim,
        is_mla=is_mla, params_attn=params_attn, params_dense_mlp=params_dense,
        params_expert=params_expert, n_moe_layers=n_moe if E > 0 else 0,
        n_experts=E if n_moe else 0, experts_per_token=k_top if n_moe else 0,
        params_shared_experts=params_shared, params_router=params_router,
        params_embed=params_embed, params_lm_head=params_lm_head, lm_head_tied=tied,
        params_other=params_other, kv_elems_full=kv_full, kv_elems_window=kv_win,
        window=window if kv_win else 0, kv_tp_shardable=not is_mla,
        attn_flops_full_decode=f_full_dec, attn_flops_window_decode=f_win_dec,
        attn_flops_full_prefill=f_full_pre, attn_flops_window_prefill=f_win_pre,
        act_elems=act, tp_divisor=H, max_position_embeddings=max_pos,
        sources=tuple(sources), published_total=published_total,
        published_active=published_active)


def _attention_kinds(c: dict, L: int, p: list[str]) -> tuple[list[str], int]:
    """Per-layer attention kind (full / window) and the window length in tokens."""
    sw = c.get("sliding_window")
    if c.get("use_sliding_window") is False:
        sw = None
    chunk = c.get("attention_chunk_size")
    layer_types = c.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != L:
            got = len(layer_types) if isinstance(layer_types, list) else repr(layer_types)
            p.append(f"'layer_types' must be a list of num_hidden_layers = {L} entries, got {got}")
            return [_FULL] * L, 0
        kinds = []
        for i, t in enumerate(layer_types):
            if t not in _LAYER_TYPES:
                p.append(f"layer_types[{i}] = {t!r} is not supported "
                         f"(use one of {', '.join(sorted(_LAYER_TYPES))})")
                kinds.append(_FULL)
            else:
                kinds.append(_LAYER_TYPES[t])
        window = 0
        if "sliding_attention" in layer_types:
            if sw is None:
                p.append("layer_types has 'sliding_attention' layers but 'sliding_window' is "
                         "not set")
            else:
                window = _int(c, "sliding_window", p) or 0
        if "chunked_attention" in layer_types:
            cw = _int(c, "attention_chunk_size", p) or 0
            if window and cw and cw != window:
                p.append(f"both sliding_window {window} and attention_chunk_size {cw} are used: "
                         f"only one window length per model is supported")
            window = window or cw
        return kinds, window
    if chunk is not None:
        window = _int(c, "attention_chunk_size", p) or 0
        nrl = c.get("no_rope_layers")
        if isinstance(nrl, list) and nrl:
            if len(nrl) != L:
                p.append(f"'no_rope_layers' must have num_hidden_layers = {L} entries, "
                         f"got {len(nrl)}")
                return [_WINDOW] * L, window
            # HF Llama 4: 1 = RoPE layer (chunked local attention), 0 = NoPE layer (full attention)
            return [_WINDOW if x else _FULL for x in nrl], window
        interval = _int(c, "no_rope_layer_interval", p, required=False, default=4)
        return [_FULL if (i + 1) % interval == 0 else _WINDOW for i in range(L)], window
    if sw is not None:
        window = _int(c, "sliding_window", p) or 0
        if c.get("use_sliding_window") is True and c.get("max_window_layers") is not None:
            mwl = _int(c, "max_window_layers", p, minimum=0) or 0
            return [_WINDOW if i >= mwl else _FULL for i in range(L)], window
        return [_WINDOW] * L, window
    return [_FULL] * L, 0


def _moe_layer_indices(c: dict, L: int, E: int, p: list[str]) -> set[int]:
    explicit = c.get("moe_layers")
    if isinstance(explicit, list):
        bad = [x for x in explicit if not isinstance(x, int) or not 0 <= x < L]
        if bad:
            p.append(f"'moe_layers' entries must be layer indices 0..{L - 1}, got {bad}")
        return {x for x in explicit if isinstance(x, int) and 0 <= x < L}
    step = c.get("interleave_moe_layer_step")
    if step is not None:
        step = _int(c, "interleave_moe_layer_step", p) or 1
        return set(range(step - 1, L, step))
    k_dense = _int(c, "first_k_dense_replace", p, required=False, default=0, minimum=0)
    if k_dense > L:
        p.append(f"first_k_dense_replace {k_dense} exceeds num_hidden_layers {L}")
    freq = _int(c, "moe_layer_freq", p, required=False, default=1)
    sparse_step = _int(c, "decoder_sparse_step", p, required=False, default=1)
    mlp_only = set(c.get("mlp_only_layers") or [])
    return {i for i in range(L) if i >= k_dense and i % freq == 0 and (i + 1) % sparse_step == 0
            and i not in mlp_only}


def _nas_layers(blocks: Any, L: int, H: int | None, d: int | None,
                p: list[str]) -> tuple[list[_Layer], int]:
    """Nemotron-NAS (DeciLM) heterogeneous blocks."""
    if not isinstance(blocks, list) or len(blocks) != L:
        got = len(blocks) if isinstance(blocks, list) else repr(blocks)
        p.append(f"'block_configs' must be a list of num_hidden_layers = {L} blocks, got {got}")
        return [], 0
    layers: list[_Layer] = []
    window = 0
    for i, b in enumerate(blocks):
        where = f"block_configs[{i}]"
        if not isinstance(b, dict):
            p.append(f"{where} must be an object with 'attention' and 'ffn'")
            continue
        a = b.get("attention") or {}
        f = b.get("ffn") or {}
        lay = _Layer(attn=_FULL)
        if a.get("no_op"):
            lay.attn = _NONE
        elif a.get("replace_with_linear"):
            lay.attn = _LINEAR
        else:
            g = _int(a, "n_heads_in_group", p)
            if g is None:
                p[-1] = f"{where}.attention: {p[-1]}"
            elif H is not None:
                if H % g:
                    p.append(f"{where}.attention: num_attention_heads {H} is not divisible by "
                             f"n_heads_in_group {g}")
                else:
                    lay.kv_heads = H // g
            if a.get("window_length") is not None:
                lay.attn = _WINDOW
                lay.window = _int(a, "window_length", p) or 0
                window = window or lay.window
        if f.get("no_op"):
            lay.mlp = "none"
        elif f.get("replace_with_linear"):
            lay.mlp = "linear"
        elif f.get("intermediate_size") is not None:
            lay.inter = _int(f, "intermediate_size", p) or 0
        else:
            m = f.get("ffn_mult")
            if isinstance(m, bool) or not isinstance(m, (int, float)) or m <= 0:
                p.append(f"{where}.ffn: 'ffn_mult' must be a positive number, got {m!r}")
            elif d is not None:
                lay.inter = _ffn_mult_to_intermediate(m, d)
        layers.append(lay)
    return layers, window


# ----------------------------------------------------------------------------------------------
# catalog


def _models_dir():
    return resources.files("grids") / "data" / "models"


@functools.lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, Any]]:
    """The parsed ``catalog.toml``: id -> entry (name, hf_repo, config, published_*, notes...)."""
    with (_models_dir() / "catalog.toml").open("rb") as fh:
        return tomllib.load(fh)


MODEL_IDS: tuple[str, ...] = tuple(catalog())


def _published(entry: dict, key: str) -> tuple[int | None, str]:
    v = entry.get(key)
    if isinstance(v, dict):
        return int(v["value"]), str(v.get("source", ""))
    return None, ""


@functools.cache
def _load_catalog_model(model_id: str) -> ModelArch:
    e = catalog()[model_id]
    with (_models_dir() / e["config"]).open("r", encoding="utf-8") as fh:
        cfg = json.load(fh)
    pt, pts = _published(e, "published_total")
    pa, pas = _published(e, "published_active")
    sources = [f"config: {e.get('config_source', '')}"]
    if pts:
        sources.append(f"published total: {pts}")
    if pas and pas != pts:
        sources.append(f"published active: {pas}")
    return model_from_config(cfg, id=model_id, name=e.get("name", model_id), sources=sources,
                             published_total=pt, published_active=pa)


def _load_file(path: Path) -> ModelArch:
    if path.is_dir():
        path = path / "config.json"
    try:
        with path.open("r", encoding="utf-8") as fh:
            cfg = json.load(fh)
    except FileNotFoundError:
        raise SpecError(f"model config file {str(path)!r} does not exist "
                        f"(give a catalog id or the path of a config.json)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(f"cannot read model config {str(path)!r} as JSON: {exc}") from None
    mid = path.parent.name if path.stem == "config" and path.parent.name else path.stem
    name = str(cfg.get("_name_or_path") or mid) if isinstance(cfg, dict) else mid
    return model_from_config(cfg, id=mid, name=name, sources=(f"user config: {path}",),
                             context=f"model config {str(path)!r}")


def load_model(spec: str | os.PathLike | dict | ModelArch) -> ModelArch:
    """Load a model: a catalog id, the path of a ``config.json`` (or its directory), or a dict."""
    if isinstance(spec, ModelArch):
        return spec
    if isinstance(spec, dict):
        mid = str(spec.get("_name_or_path") or spec.get("model_type") or "custom")
        return model_from_config(spec, id=mid, name=mid, sources=("user config dict",))
    if isinstance(spec, os.PathLike):
        return _load_file(Path(spec))
    if not isinstance(spec, str):
        raise SpecError(f"a model is a catalog id, a config.json path or a dict, got {spec!r}")
    ids = catalog()
    if spec in ids:
        return _load_catalog_model(spec)
    low = {k.lower(): k for k in ids}
    if spec.lower() in low:
        return _load_catalog_model(low[spec.lower()])
    path = Path(spec).expanduser()
    if path.exists() or spec.endswith(".json") or os.sep in spec or "/" in spec:
        return _load_file(path)
    raise SpecError(f"unknown model {spec!r}{suggest(spec.lower(), ids)}; or give the path of a "
                    f"config.json")


def catalog_models() -> list[ModelArch]:
    """Every catalog model, in catalog order."""
    return [_load_catalog_model(m) for m in MODEL_IDS]


def list_models() -> list[ModelArch]:
    """Every catalog model, in catalog order (same as :func:`catalog_models`)."""
    return catalog_models()
