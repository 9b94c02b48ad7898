"""Parameter counts: the parameter layout of one decoder layer of a ``model_type`` family
(:class:`_Block`) and the counts of attention, dense MLP, experts, router, embedding and LM head
over the layer list."""

from __future__ import annotations

from dataclasses import dataclass

from grids.models.dims import _Dims
from grids.models.fields import _bool, _Ctx, _int
from grids.models.layers import _Layer
from grids.models.mla import _Mla
from grids.models.moe import _Moe
from grids.models.tables import (
    _BLOOM_TYPES,
    _COHERE_TYPES,
    _FALCON_TYPES,
    _FULL,
    _GEMMA_TYPES,
    _GPT_OSS_TYPES,
    _GPTJ_TYPES,
    _LINEAR,
    _LLAMA_LIKE_TYPES,
    _NONE,
    _QK_NORM_TYPES,
    _QKV_BIAS_TYPES,
    _SANDWICH_TYPES,
    _SCORE_BIAS_TYPES,
    _WINDOW,
)


@dataclass(frozen=True)
class _Block:
    """Parameter layout of one decoder layer of a model_type family."""

    norm: int  # parameters of one norm: d (RMSNorm) or 2 d (LayerNorm with bias)
    norms_per_layer: int  # 2 pre-norms; 1 parallel block; 4 Gemma-2/3 pre+post norms
    gated_mlp: bool  # SwiGLU / GeGLU: 3 d I; else up and down only: 2 d I
    mlp_bias: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    sinks: bool = False  # gpt-oss: one attention sink per head
    lm_head_bias: bool = False
    embed_norm: bool = False  # BLOOM: LayerNorm after the word embedding
    nas: bool = False  # Nemotron-NAS: a norm only before sub-blocks that exist
    dense_default: int | None = None  # MLP width fixed by the architecture when not in the config


def _block(x: _Ctx, d: int | None) -> _Block:
    c, p, types = x.c, x.problems, x.types
    attention_bias = bool(_bool(c, "attention_bias", p, False))
    qwen_bias = bool(types & _QKV_BIAS_TYPES)
    common = {"qkv_bias": attention_bias or qwen_bias, "o_bias": attention_bias and not qwen_bias,
              "qk_norm": bool(types & _QK_NORM_TYPES), "sinks": bool(types & _GPT_OSS_TYPES),
              "nas": c.get("block_configs") is not None}
    d = d or 0
    if x.mt in _GPTJ_TYPES:
        if c.get("intermediate_size") is None:
            x.assume("n_inner absent or null: MLP width 4 x n_embd (GPTJConfig)")
        return _Block(2 * d, 1, False, mlp_bias=True, lm_head_bias=True, dense_default=4 * d,
                      **common)
    if x.mt in _BLOOM_TYPES:
        return _Block(2 * d, 2, False, mlp_bias=True, qkv_bias=True, o_bias=True,
                      embed_norm=True, dense_default=4 * d)
    if x.mt in _FALCON_TYPES:
        return _falcon_block(x, d)
    if x.mt in _GEMMA_TYPES:
        return _Block(d, 2, True, **common)
    if x.mt in _SANDWICH_TYPES:
        return _Block(d, 4, True, **common)
    if x.mt in _COHERE_TYPES:
        return _Block(d, 1, True, **common)
    if x.mt not in _LLAMA_LIKE_TYPES:
        what = f"model_type {x.mt!r} is not recognised" if x.mt else "model_type absent"
        x.assume(f"{what}: counted as a Llama-style decoder (SwiGLU MLP, two RMSNorms per layer, "
                 f"no biases unless attention_bias, head_dim = hidden_size / num_attention_heads "
                 f"unless given)")
    return _Block(d, 2, True, **common)


def _falcon_block(x: _Ctx, d: int) -> _Block:
    """HF FalconDecoderLayer / FalconMLP: parallel attention + MLP, LayerNorms with bias."""
    c, p = x.c, x.problems
    bias = bool(_bool(c, "bias", p, False))
    parallel = _bool(c, "parallel_attn", p, True)
    new_arch = _bool(c, "new_decoder_architecture", p, False)
    if not parallel:
        n_ln = 2  # input_layernorm + post_attention_layernorm
    else:
        n_ln = _int(c, "num_ln_in_parallel_attn", p, required=False, default=None)
        if n_ln is not None and n_ln > 2:
            p.append(f"'num_ln_in_parallel_attn' must be 1 or 2, got {n_ln}")
            n_ln = 2
        if n_ln is None:
            n_ln = 2 if new_arch else 1  # ln_attn + ln_mlp, or one input_layernorm
    width = _int(c, "ffn_hidden_size", p, required=False, default=None)
    if width is None:
        width = 4 * d
        x.assume("ffn_hidden_size absent: MLP width 4 x hidden_size (FalconConfig)")
    return _Block(2 * d, n_ln, False, mlp_bias=bias, qkv_bias=bias, o_bias=bias,
                  dense_default=width)


@dataclass
class _Counts:
    attn: int = 0
    dense: int = 0
    expert: int = 0
    n_moe: int = 0
    router: int = 0
    shared: int = 0
    embed: int = 0
    lm_head: int = 0
    other: int = 0


def _attn_params(dims: _Dims, mla: _Mla | None, blk: _Block, kvh: int) -> int:
    d, H, hd = dims.d, dims.H, dims.hd
    if mla is not None:
        kv_lora, rope, nope, vdim = mla.kv_lora, mla.rope, mla.nope, mla.vdim
        if mla.q_lora:  # q_a_proj, q_a_layernorm, q_b_proj
            q = d * mla.q_lora + mla.q_lora + mla.q_lora * H * (nope + rope)
        else:  # plain q_proj (e.g. DeepSeek-V2-Lite)
            q = d * H * (nope + rope)
        return q + d * (kv_lora + rope) + kv_lora + kv_lora * H * (nope + vdim) + H * vdim * d
    n = d * H * hd + 2 * d * kvh * hd + H * hd * d
    if blk.qkv_bias:
        n += H * hd + 2 * kvh * hd
    if blk.o_bias:
        n += d
    if blk.qk_norm:
        n += 2 * hd
    if blk.sinks:
        n += H
    return n


def _mlp_params(d: int, width: int, blk: _Block) -> int:
    n = (3 if blk.gated_mlp else 2) * d * width
    if blk.mlp_bias:
        n += width + d
    return n


def _param_counts(x: _Ctx, dims: _Dims, mla: _Mla | None, moe: _Moe, blk: _Block,
                  layers: list[_Layer]) -> _Counts:
    d, V = dims.d, dims.V
    out = _Counts()
    for lay in layers:
        if lay.attn in (_FULL, _WINDOW):
            out.attn += _attn_params(dims, mla, blk, lay.kv_heads)
        elif lay.attn == _LINEAR:
            out.attn += d * d
        if blk.nas:  # NAS blocks drop the norm of a no_op sub-block
            out.attn += (blk.norm if lay.attn != _NONE else 0) + (blk.norm if lay.mlp != "none"
                                                                  else 0)
        else:
            out.attn += blk.norms_per_layer * blk.norm
        if lay.mlp == "dense":
            out.dense += _mlp_params(d, lay.inter, blk)
        elif lay.mlp == "linear":
            out.dense += d * d
    if moe.E > 0:
        out.n_moe = sum(1 for lay in layers if lay.mlp == "moe")
        out.expert = 3 * d * moe.I_e
        if blk.sinks:  # gpt-oss experts: gate_up bias (2I) + down bias (d)
            out.expert += 2 * moe.I_e + d
        router = d * moe.E
        if blk.sinks or x.types & _SCORE_BIAS_TYPES or x.c.get("topk_method") == "noaux_tc":
            router += moe.E  # gpt-oss router bias / DeepSeek e_score_correction_bias
        out.router = out.n_moe * router
        out.shared = out.n_moe * (3 * d * moe.shared_width + moe.shared_gate * d)
    out.embed = V * d
    out.lm_head = 0 if dims.tied else V * d + (V if blk.lm_head_bias else 0)
    out.other = blk.norm + (blk.norm if blk.embed_norm else 0)
    return out
