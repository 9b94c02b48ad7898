"""Model catalog: Hugging Face ``config.json`` files parsed into :class:`ModelArch`.

A model is a plain HF-style ``config.json`` (``grids/data/models/<id>.json``, listed with its
sources and published parameter counts in ``grids/data/models/catalog.toml``). A user passes a
catalog id, the path of their own ``config.json`` (or of the directory holding it), or an
already-loaded ``dict``.

The config is read with the semantics of the model's reference code, the Hugging Face
``transformers`` configuration class of its ``model_type``: a field the file leaves out takes that
class's default (tables ``_TIE_DEFAULTS``, ``_ALTERNATING``, ``_QWEN_SLIDING``,
``_SLIDING_DEFAULTS``, ``_CONTEXT_DEFAULTS`` below, each with the ``transformers`` file it comes
from), and every default so assumed is written to
:attr:`ModelArch.assumptions`.

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
* Windowed attention, in this order: ``layer_types`` (``full_attention`` / ``sliding_attention`` /
  ``chunked_attention``); else ``attention_chunk_size`` (chunked on RoPE layers, full on the NoPE
  layers given by ``no_rope_layers`` or every ``no_rope_layer_interval``-th layer, default 4, as HF
  Llama 4); else the alternating local/global pattern of ``model_type`` (Gemma-2, Gemma-3,
  Cohere2, gpt-oss: layer i is global iff (i + 1) is a multiple of the period); else
  ``sliding_window`` (all layers, or layers >= ``max_window_layers``; Qwen2/Qwen3 only when
  ``use_sliding_window`` is true; a Mistral config without the key gets MistralConfig's 4096,
  an explicit ``null`` means none). ``use_sliding_window: false`` disables a sliding window.
* Nemotron-NAS: ``block_configs`` (per-block attention ``no_op`` / ``replace_with_linear`` /
  ``n_heads_in_group``, FFN ``ffn_mult`` -> ``roundup_256(int(2*ffn_mult*d/3))``).
* Multimodal wrappers: ``text_config`` is used (vision towers are not counted).
* GPT-2 style names: ``n_embd``/``n_embed``, ``n_layer``, ``n_head``, ``n_inner``, ``n_positions``.
* Biases: ``attention_bias`` (q/k/v/o biases).
* Context extension: ``rope_scaling`` (or transformers-5 ``rope_parameters``), see
  :attr:`ModelArch.max_context`.

Where the config has no field for a feature the architecture is recognised by ``model_type``:
Qwen2 q/k/v biases (``qwen2*``), per-head QK RMSNorm (``qwen3``, ``qwen3_moe``, ``gemma3*``),
gpt-oss attention sinks and expert/router biases (``gpt_oss``), DeepSeek-V3
``e_score_correction_bias`` (``deepseek_v3`` or ``topk_method = "noaux_tc"``), Llama 4 implicit
shared expert (``llama4*``), and the block layouts of ``_block``: GPT-J (parallel block, one
LayerNorm, GELU MLP with biases, ``lm_head`` bias), BLOOM (fused QKV and dense with biases, GELU MLP
4d with biases, LayerNorms with bias, LayerNorm after the embedding), Falcon (parallel attention
and MLP, GELU MLP 4d, LayerNorms with bias, biases per ``bias``; one or two norms per layer as
``new_decoder_architecture`` / ``num_ln_in_parallel_attn`` / ``parallel_attn``), Gemma (GeGLU,
counted like SwiGLU) and Gemma-2/3 (four RMSNorms per layer). An unknown ``model_type`` is counted
as a Llama-style decoder (SwiGLU MLP, two RMSNorms per layer, no biases) and says so in
``assumptions``.

The parameter-count formula is the one in ``shared/reference/models.md`` and reproduces e.g. the
published Mixtral-8x22B count 140,620,634,112 / 39,152,031,744 and BLOOM's 176,247,271,424 exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grids.errors import SpecError, suggest

__all__ = ["MODEL_IDS", "ModelArch", "catalog", "catalog_models", "list_models", "load_model",
           "model_from_config"]

# ----------------------------------------------------------------------------------------------
# model_type tables. _TF is where the reference code lives; every entry names its file.

_TF = "huggingface/transformers src/transformers/models"

#: tie_word_embeddings when the config leaves it out: the default of the model_type's HF config class
_TIE_DEFAULTS: dict[str, tuple[bool, str]] = {
    "llama": (False, f"{_TF}/llama/configuration_llama.py (LlamaConfig)"),
    "mistral": (False, f"{_TF}/mistral/configuration_mistral.py (MistralConfig)"),
    "mixtral": (False, f"{_TF}/mixtral/configuration_mixtral.py (MixtralConfig)"),
    "qwen2": (False, f"{_TF}/qwen2/configuration_qwen2.py (Qwen2Config)"),
    "qwen3": (False, f"{_TF}/qwen3/configuration_qwen3.py (Qwen3Config)"),
    "qwen3_moe": (False, f"{_TF}/qwen3_moe/configuration_qwen3_moe.py (Qwen3MoeConfig)"),
    "deepseek_v3": (False, f"{_TF}/deepseek_v3/configuration_deepseek_v3.py (DeepseekV3Config)"),
    "llama4": (False, f"{_TF}/llama4/configuration_llama4.py (Llama4Config)"),
    "llama4_text": (False, f"{_TF}/llama4/configuration_llama4.py (Llama4TextConfig)"),
    "gpt_oss": (False, f"{_TF}/gpt_oss/configuration_gpt_oss.py (GptOssConfig)"),
    "gptj": (False, f"{_TF}/gptj/configuration_gptj.py (GPTJConfig)"),
    "gemma": (True, f"{_TF}/gemma/configuration_gemma.py (GemmaConfig)"),
    "gemma2": (True, f"{_TF}/gemma2/configuration_gemma2.py (Gemma2Config)"),
    "gemma3_text": (True, f"{_TF}/gemma3/configuration_gemma3.py (Gemma3TextConfig)"),
    "cohere2": (True, f"{_TF}/cohere2/configuration_cohere2.py (Cohere2Config)"),
    "bloom": (True, f"{_TF}/bloom/configuration_bloom.py (BloomConfig sets no default: "
                    f"PretrainedConfig's)"),
    "falcon": (True, f"{_TF}/falcon/configuration_falcon.py (FalconConfig sets no default: "
                     f"PretrainedConfig's)"),
}
_PRETRAINED_TIE = (True, "huggingface/transformers src/transformers/configuration_utils.py "
                         "(PretrainedConfig default)")


@dataclass(frozen=True)
class _Pattern:
    """Alternating local/global attention of a model_type when ``layer_types`` is absent."""

    period: int  # layer i is global (full) iff (i + 1) % period == 0, else sliding
    period_key: str | None  # config field that overrides the period (None: fixed)
    window: int  # the class default of sliding_window [tokens]
    source: str


_ALTERNATING: dict[str, _Pattern] = {
    "gemma2": _Pattern(2, None, 4096, f"{_TF}/gemma2/configuration_gemma2.py (Gemma2Config)"),
    "gemma3_text": _Pattern(6, "sliding_window_pattern", 4096,
                            f"{_TF}/gemma3/configuration_gemma3.py (Gemma3TextConfig)"),
    "cohere2": _Pattern(4, "sliding_window_pattern", 4096,
                        f"{_TF}/cohere2/configuration_cohere2.py (Cohere2Config)"),
    "gpt_oss": _Pattern(2, None, 128, f"{_TF}/gpt_oss/configuration_gpt_oss.py (GptOssConfig)"),
}
_ALTERNATING["gemma3"] = _ALTERNATING["gemma3_text"]

#: Qwen classes whose sliding window is off unless use_sliding_window is true (class default
#: false); value: default max_window_layers (None: the class applies the window to every layer)
_QWEN_SLIDING: dict[str, tuple[int | None, str]] = {
    "qwen2": (28, f"{_TF}/qwen2/configuration_qwen2.py (Qwen2Config)"),
    "qwen3": (28, f"{_TF}/qwen3/configuration_qwen3.py (Qwen3Config)"),
    "qwen3_moe": (None, f"{_TF}/qwen3_moe/configuration_qwen3_moe.py (Qwen3MoeConfig)"),
}

#: sliding_window of every layer when the key is absent (an explicit null means none)
_SLIDING_DEFAULTS: dict[str, tuple[int, str]] = {
    "mistral": (4096, f"{_TF}/mistral/configuration_mistral.py (MistralConfig)"),
}

#: Llama 4 default chunk of its local attention when attention_chunk_size is absent
_LLAMA4_CHUNK = (8192, f"{_TF}/llama4/configuration_llama4.py (Llama4TextConfig)")

#: context window when the config has no max_position_embeddings (ALiBi / old configs)
_CONTEXT_DEFAULTS: dict[str, tuple[int, str]] = {
    "bloom": (2048, "BLOOM has no position field (ALiBi); 2048 = its training sequence length "
                    "(bigscience/bloom model card)"),
    "falcon": (2048, f"{_TF}/falcon/configuration_falcon.py (FalconConfig "
                     f"max_position_embeddings default)"),
}

# model_type families for features that have no config field
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text"}
_GPT_OSS_TYPES = {"gpt_oss"}
_SCORE_BIAS_TYPES = {"deepseek_v3"}
_LLAMA4_TYPES = {"llama4", "llama4_text"}
_GPTJ_TYPES = {"gptj"}
_BLOOM_TYPES = {"bloom"}
_FALCON_TYPES = {"falcon", "RefinedWeb", "RefinedWebModel"}
_GEMMA_TYPES = {"gemma"}
_SANDWICH_TYPES = {"gemma2", "gemma3", "gemma3_text"}  # pre- and post-norm around both sub-layers
_COHERE_TYPES = {"cohere", "cohere2"}  # parallel block, one LayerNorm (no bias) per layer
#: model_types whose layers are counted exactly by the Llama-style default block
_LLAMA_LIKE_TYPES = {"llama", "mistral", "ministral", "mistral3", "mixtral", "qwen2", "qwen2_moe",
                     "qwen2_vl", "qwen2_5_vl", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3",
                     "llama4", "llama4_text", "gpt_oss", "nemotron-nas", "phi3"}

#: rope_scaling types (HF rope_type) and whether they extend the window, see ModelArch.max_context
_ROPE_NO_EXTENSION = {"default", "llama3", "longrope", "su", "mrope"}
_ROPE_EXTENSION = {"yarn", "linear", "dynamic"}

# GPT-2 / BLOOM style names -> canonical HF names (as the HF GPTJConfig / BloomConfig attribute_map)
_ALIASES = (("n_embd", "hidden_size"), ("n_embed", "hidden_size"),
            ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"),
            ("n_positions", "max_position_embeddings"), ("n_inner", "intermediate_size"))

_EXPERT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")
_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk")

_FULL, _WINDOW, _NONE, _LINEAR = "full", "window", "none", "linear"
_LAYER_TYPES = {"full_attention": _FULL, "sliding_attention": _WINDOW, "chunked_attention": _WINDOW}

# sane bounds: nothing real comes near them, and they keep every count a finite float
_MAX_DIM = 2**31  # widths, heads, vocabulary, tokens
_MAX_LAYERS = 10**5  # layer counts and layer indices
_MAX_EXPERTS = 2**20
_MAX_ROPE_FACTOR = 2.0**16
_MAX_FFN_MULT = 1024.0
#: every integer field read from a config (bounds checked even where a model does not use it)
_INT_FIELDS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "vocab_size", "max_position_embeddings", "intermediate_size", "intermediate_size_mlp",
    "moe_intermediate_size", "shared_expert_intermediate_size", *_EXPERT_KEYS, *_TOPK_KEYS,
    "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
    "interleave_moe_layer_step", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim", "sliding_window", "attention_chunk_size",
    "no_rope_layer_interval", "max_window_layers", "sliding_window_pattern", "num_kv_heads",
    "n_head_kv", "ffn_hidden_size", "num_ln_in_parallel_attn")
_EXPERT_MAX_KEYS = {*_EXPERT_KEYS, *_TOPK_KEYS, "n_shared_experts"}
_LAYER_KEYS = {"num_hidden_layers", "first_k_dense_replace", "moe_layer_freq",
               "decoder_sparse_step", "interleave_moe_layer_step", "no_rope_layer_interval",
               "max_window_layers", "sliding_window_pattern"}

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
    """One decoder LLM reduced to the numbers a roofline needs (counts are parameters/elements).

    Windowed attention. ``kv_elems_window`` and ``attn_flops_window_*`` cover the layers that do
    not attend to the whole context; ``window`` [tokens] is their length W (0 = none) and
    ``window_chunked`` says which kind they are (one kind per model: a config that mixes both is
    rejected):

    * sliding (``window_chunked = False``; Mistral, Gemma-2 local layers, gpt-oss): query token i
      attends to the last W keys ``[max(0, i - W + 1), i]``; the cache holds min(S, W) tokens and
      a decode step at KV length c reads min(c, W) of them; prefill costs
      ``sum_{i<S} min(i + 1, W)`` (query, key) pairs.
    * chunked-local (``window_chunked = True``; Llama 4 ``attention_chunk_size`` C): token i attends
      to the keys of its own chunk ``[floor(i / C) C, i]``, so ``i mod C + 1`` keys; a cache needs
      only the current chunk, ``c mod C`` tokens, on average C/2 over a long generation, and
      prefill of S = q C + r tokens costs ``q C (C + 1) / 2 + r (r + 1) / 2`` pairs. Treating a
      chunk as a sliding window of C overstates these layers' KV reads and attention FLOPs by up
      to 2x.

    Parameter counts do not depend on the window.

    Context. ``max_position_embeddings`` [tokens] is the config's field as written;
    :attr:`max_context` [tokens] is the context the model is built for once its ``rope_scaling``
    is applied (``rope_scaling_type``, ``rope_scaling_factor``,
    ``rope_original_max_position_embeddings`` keep what the config says).

    ``assumptions`` lists, one short sentence each, every default taken because the config left a
    field out or has an unknown ``model_type``.
    """

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
    params_other: int  # final norm (+ BLOOM's embedding LayerNorm)
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
    window_chunked: bool = False  # windowed layers are chunked-local, not sliding
    rope_scaling_type: str = ""  # HF rope_type of rope_scaling ("" if none)
    rope_scaling_factor: float = 1.0
    rope_original_max_position_embeddings: int = 0  # tokens, 0 if the config gives none
    assumptions: tuple[str, ...] = ()

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

    @property
    def max_context(self) -> int:
        """Longest context the model is built for [tokens]: ``max_position_embeddings``, extended
        only where the Hugging Face semantics of ``rope_scaling`` say the window is longer.

        * none, ``default``, ``llama3``, ``longrope`` / ``su``, ``mrope``: no extension
          (``max_position_embeddings`` already is the extended window, e.g. Llama 3.1: 131072 =
          8 x its original 8192);
        * ``yarn``: ``factor x original_max_position_embeddings``, or ``factor x
          max_position_embeddings`` when the original is not given (HF
          ``modeling_rope_utils._validate_yarn_parameters`` treats the factor as post-YaRN /
          pre-YaRN length and, without the original, takes max_position_embeddings as pre-YaRN;
          vLLM ``_get_and_verify_max_len`` derives the same length);
        * ``linear`` / ``dynamic``: ``factor x`` (original, else max_position_embeddings), "a
          factor of x enables sequences of x times the original maximum pre-trained length" (HF
          rope_scaling docs), as vLLM;
        * Gemma-3 (``model_type`` contains ``gemma3``): no extension, its max_position_embeddings
          (128K) is already scaled (vLLM skips the factor for it).

        The result is never below ``max_position_embeddings``.
        """
        base = self.max_position_embeddings
        kind = self.rope_scaling_type
        if kind not in _ROPE_EXTENSION or "gemma3" in self.model_type:
            return base
        original = self.rope_original_max_position_embeddings or base
        return max(base, int(self.rope_scaling_factor * original))

    def kv_bytes_per_token(self, kv_bits: float = 16) -> float:
        """K+V cache bytes per token over all layers (full length, window truncation ignored)."""
        b = (self.kv_elems_full + self.kv_elems_window) * kv_bits / 8
        return int(b) if float(b).is_integer() else b

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["sources"] = list(self.sources)
        out["assumptions"] = list(self.assumptions)
        out["params_total"] = self.params_total
        out["params_active"] = self.params_active
        out["max_context"] = self.max_context
        out["kv_bytes_per_token_16bit"] = self.kv_bytes_per_token(16)
        return out


# ----------------------------------------------------------------------------------------------
# field readers: append to `problems` instead of raising, so every problem is reported at once


def _show(v: Any) -> str:
    """``repr`` of a config value for a message: short, and safe for any value."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**18:
        return f"an integer of {v.bit_length()} bits"
    try:
        text = repr(v)
    except Exception:  # e.g. nesting too deep to print
        return f"a {type(v).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def _int(c: dict, key: str, problems: list[str], *, required: bool = True, default: Any = None,
         minimum: int = 1, maximum: int | None = None) -> Any:
    v = c.get(key)
    hint = f" ({_HINTS[key]})" if key in _HINTS else ""
    if v is None:
        if required:
            problems.append(f"missing required field '{key}'{hint}")
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (
            isinstance(v, float) and not v.is_integer()):
        problems.append(f"'{key}' must be an integer, got {_show(v)}")
        return default
    if maximum is None:
        maximum = (_MAX_LAYERS if key in _LAYER_KEYS else _MAX_EXPERTS if key in _EXPERT_MAX_KEYS
                   else _MAX_DIM)
    if not minimum <= v <= maximum:
        bound = f">= {minimum}" if v < minimum else f"<= {maximum:,} (a sane bound)"
        problems.append(f"'{key}' must be {bound}, got {_show(v)}{hint}")
        return default
    return int(v)


def _bool(c: dict, key: str, problems: list[str], default: bool | None = None) -> bool | None:
    v = c.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        problems.append(f"'{key}' must be true or false, got {_show(v)}")
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


def _index_list(c: dict, key: str, n: int, problems: list[str]) -> list[int] | None:
    """A list of layer indices 0..n-1 (None if the key is absent)."""
    v = c.get(key)
    if v is None:
        return None
    if not isinstance(v, list):
        problems.append(f"'{key}' must be a list of layer indices, got {_show(v)}")
        return []
    bad = [x for x in v if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < n]
    if bad:
        problems.append(f"'{key}' entries must be layer indices 0..{n - 1}, got {_show(bad[:5])}")
    return [x for x in v if x not in bad]


@dataclass
class _Layer:
    attn: str  # full | window | none | linear
    kv_heads: int = 0
    mlp: str = "dense"  # dense | moe | none | linear
    inter: int = 0  # dense MLP width
    window: int = 0


@dataclass
class _Ctx:
    """What the readers share: the (text) config, its model types and the collected output."""

    c: dict
    top_type: str
    mt: str  # model_type of the decoder (text_config's if any, else the top-level one)
    problems: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    @property
    def types(self) -> set[str]:
        return {self.top_type, self.mt}

    def assume(self, text: str) -> None:
        self.assumptions.append(text)


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


def _check_int_fields(c: dict, problems: list[str]) -> None:
    """Type and upper bound of every known integer field, used by this model or not (the readers
    check the lower bounds; identical messages are merged)."""
    for key in _INT_FIELDS:
        _int(c, key, problems, required=False, minimum=-(2**63))


def _model_types(cfg: dict, c: dict, problems: list[str]) -> tuple[str, str]:
    """model_type of the config and of its decoder (text_config's, else the same)."""
    types = []
    for where, name in ((cfg, "model_type"), (c, "text_config.model_type")):
        v = where.get("model_type")
        if v is not None and not isinstance(v, str):
            if where is cfg or isinstance(cfg.get("text_config"), dict):
                problems.append(f"'{name}' must be a string, got {_show(v)}")
            v = None
        types.append(v or "")
    top, inner = types
    return top, inner or top


# ----------------------------------------------------------------------------------------------
# dims and heads


def _known(v: int | None) -> int:
    """A field the readers found present and valid. They record a problem for every field they
    return as None, and a config with problems stops before its records are checked."""
    if v is None:
        raise AssertionError("a required model field is missing but no problem was recorded")
    return v


@dataclass
class _Dims:
    """The dimensions of a config without problems: every one present."""

    d: int
    L: int
    H: int
    V: int
    max_pos: int
    KV: int
    hd: int
    tied: bool


@dataclass
class _ReadDims:
    """The dimensions as read: None where the field is missing or invalid (a problem says so)."""

    d: int | None
    L: int | None
    H: int | None
    V: int | None
    max_pos: int | None
    KV: int | None
    hd: int | None
    tied: bool

    def checked(self) -> _Dims:
        """The dimensions, once the config has no problem."""
        return _Dims(_known(self.d), _known(self.L), _known(self.H), _known(self.V),
                     _known(self.max_pos), _known(self.KV), _known(self.hd), self.tied)


def _read_dims(x: _Ctx) -> _ReadDims:
    c, p = x.c, x.problems
    d = _int(c, "hidden_size", p)
    L = _int(c, "num_hidden_layers", p)
    H = _int(c, "num_attention_heads", p)
    V = _int(c, "vocab_size", p)
    max_pos = _read_context(x)
    KV = _kv_heads(x, H)
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
    return _ReadDims(d, L, H, V, max_pos, KV, hd, _read_tie(x))


def _read_context(x: _Ctx) -> int | None:
    if x.c.get("max_position_embeddings") is None and x.mt in _CONTEXT_DEFAULTS:
        value, source = _CONTEXT_DEFAULTS[x.mt]
        x.assume(f"max_position_embeddings absent: {value} tokens ({source})")
        return value
    return _int(x.c, "max_position_embeddings", x.problems)


def _kv_heads(x: _Ctx, H: int | None) -> int | None:
    c, p = x.c, x.problems
    if x.mt in _FALCON_TYPES:
        # HF FalconAttention: num_kv_heads if new_decoder_architecture or not multi_query, else 1
        new_arch = _bool(c, "new_decoder_architecture", p, False)
        multi_query = _bool(c, "multi_query", p, None)
        if multi_query is None:
            multi_query = True
            if not new_arch:
                x.assume("multi_query absent: FalconConfig default true (one KV head)")
        key = _first(c, ("num_kv_heads", "n_head_kv", "num_key_value_heads"))
        if not new_arch and multi_query:
            return 1
        if key is None:
            x.assume("num_kv_heads absent: FalconConfig default num_attention_heads (MHA)")
            return H
        return _int(c, key, p)
    if c.get("num_key_value_heads") is None and not (
            x.mt in _GPTJ_TYPES | _BLOOM_TYPES or c.get("kv_lora_rank") is not None
            or c.get("block_configs") is not None):
        x.assume("num_key_value_heads absent: multi-head attention (KV heads = "
                 "num_attention_heads), the HF default")
    return _int(c, "num_key_value_heads", p, required=False, default=H)


def _read_tie(x: _Ctx) -> bool:
    tied = _bool(x.c, "tie_word_embeddings", x.problems, None)
    if tied is not None:
        return tied
    value, source = _TIE_DEFAULTS.get(x.mt, _PRETRAINED_TIE)
    x.assume(f"tie_word_embeddings absent: {'tied' if value else 'untied'} "
             f"(model_type {x.mt or 'absent'!r}: {source})")
    return value


# ----------------------------------------------------------------------------------------------
# rope scaling (context extension)


@dataclass
class _Rope:
    kind: str = ""
    factor: float = 1.0
    original: int = 0


def _read_rope(x: _Ctx) -> _Rope:
    c, p = x.c, x.problems
    key = "rope_scaling" if c.get("rope_scaling") is not None else "rope_parameters"
    rs = c.get(key)
    if rs is None:
        return _Rope()
    if not isinstance(rs, dict):
        p.append(f"'{key}' must be an object (or null), got {_show(rs)}")
        return _Rope()
    per_layer_type = sorted(set(rs) & set(_LAYER_TYPES))
    if per_layer_type:
        # transformers 5: one entry per layer type; the global (full-attention) layers count
        bad = [t for t in per_layer_type if not isinstance(rs[t], dict)]
        if bad:
            p.append(f"'{key}.{bad[0]}' must be an object, got {_show(rs[bad[0]])}")
            return _Rope()
        rs = rs.get("full_attention") or rs[per_layer_type[0]]
    kind = rs.get("rope_type", rs.get("type", "default"))
    if not isinstance(kind, str):
        p.append(f"'{key}.rope_type' must be a string, got {_show(kind)}")
        return _Rope()
    factor = rs.get("factor", 1.0)
    if factor is None:
        factor = 1.0
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not (
            math.isfinite(factor) and 1.0 <= factor <= _MAX_ROPE_FACTOR):
        p.append(f"'{key}.factor' must be a number in [1, {_MAX_ROPE_FACTOR:g}], "
                 f"got {_show(factor)}")
        factor = 1.0
    n = len(p)
    original = _int(rs, "original_max_position_embeddings", p, required=False, default=0)
    if len(p) > n:
        p[-1] = f"'{key}.{p[-1][1:]}"
    if kind not in _ROPE_NO_EXTENSION | _ROPE_EXTENSION:
        x.assume(f"{key} type {kind!r} is not recognised: no context extension beyond "
                 f"max_position_embeddings")
    return _Rope(kind, float(factor), original or 0)


# ----------------------------------------------------------------------------------------------
# MLA and MoE


@dataclass
class _Mla:
    """MLA ranks of a config without problems (q_lora: None or 0 without a query LoRA)."""

    kv_lora: int
    q_lora: int | None
    rope: int
    nope: int
    vdim: int


@dataclass
class _ReadMla:
    """MLA ranks as read: None where a field is missing or invalid (a problem says so)."""

    kv_lora: int | None
    q_lora: int | None
    rope: int | None
    nope: int | None
    vdim: int | None

    def checked(self) -> _Mla:
        """The ranks, once the config has no problem."""
        return _Mla(_known(self.kv_lora), self.q_lora, _known(self.rope), _known(self.nope),
                    _known(self.vdim))


def _read_mla(x: _Ctx) -> _ReadMla | None:
    c, p = x.c, x.problems
    if c.get("kv_lora_rank") is None:
        return None
    return _ReadMla(kv_lora=_int(c, "kv_lora_rank", p),
                    q_lora=_int(c, "q_lora_rank", p, required=False),
                    rope=_int(c, "qk_rope_head_dim", p), nope=_int(c, "qk_nope_head_dim", p),
                    vdim=_int(c, "v_head_dim", p))


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


# ----------------------------------------------------------------------------------------------
# layer list: attention kind (full / windowed) and MLP kind per layer


@dataclass
class _Kinds:
    kinds: list[str]
    window: int = 0
    chunked: bool = False


def _layer_list(x: _Ctx, dims: _ReadDims, moe: _Moe, dense_default: int | None
                ) -> tuple[list[_Layer], int, bool]:
    """Per-layer attention and MLP; the window length [tokens] and whether it is chunked."""
    c, p, L = x.c, x.problems, dims.L
    if L is None:
        return [], 0, False
    blocks = c.get("block_configs")
    if blocks is not None:
        layers, window = _nas_layers(blocks, L, dims.H, dims.d, p)
        return layers, window, False
    att = _attention_kinds(x, L)
    moe_idx = _moe_layer_indices(c, L, p) if moe.E > 0 else set()
    I_dense = 0
    if len(moe_idx) < L:
        I_dense = _dense_width(x, dense_default)
    layers = []
    for i in range(L):
        lay = _Layer(attn=att.kinds[i], kv_heads=dims.KV or 0,
                     window=att.window if att.kinds[i] == _WINDOW else 0)
        if i in moe_idx:
            lay.mlp = "moe"
        else:
            lay.mlp, lay.inter = "dense", I_dense
        layers.append(lay)
    return layers, att.window, att.chunked


def _dense_width(x: _Ctx, default: int | None) -> int:
    c = x.c
    key = "intermediate_size_mlp" if c.get("intermediate_size_mlp") is not None \
        else "intermediate_size"
    if default is not None and (x.mt in _BLOOM_TYPES or c.get(key) is None):
        return default  # a block whose MLP width is fixed by the architecture (see _block)
    return _int(c, key, x.problems) or 0


def _attention_kinds(x: _Ctx, L: int) -> _Kinds:
    """Per-layer attention kind (full / window), the window length and its kind."""
    c, p = x.c, x.problems
    use = _bool(c, "use_sliding_window", p, None)
    if c.get("layer_types") is not None:
        return _kinds_from_layer_types(x, L)
    if c.get("attention_chunk_size") is not None or (
            "attention_chunk_size" not in c and x.types & _LLAMA4_TYPES):
        return _kinds_chunked(x, L)
    if x.mt in _ALTERNATING and use is not False:
        return _kinds_alternating(x, L, _ALTERNATING[x.mt])
    if "sliding_window" not in c and x.mt in _SLIDING_DEFAULTS and use is not False:
        window, source = _SLIDING_DEFAULTS[x.mt]
        x.assume(f"sliding_window absent: {window} on every layer ({source})")
        return _Kinds([_WINDOW] * L, window)
    if c.get("sliding_window") is None or use is False:
        return _Kinds([_FULL] * L)
    window = _int(c, "sliding_window", p) or 0
    qwen = _QWEN_SLIDING.get(x.mt)
    if qwen is not None and use is None:
        x.assume(f"use_sliding_window absent: false, so sliding_window {window} is unused "
                 f"({qwen[1]})")
        return _Kinds([_FULL] * L)
    if use is True and (c.get("max_window_layers") is not None or qwen is not None):
        if qwen is not None and qwen[0] is None:
            return _Kinds([_WINDOW] * L, window)  # the class windows every layer
        mwl = _int(c, "max_window_layers", p, required=False, default=None, minimum=0)
        if mwl is None and c.get("max_window_layers") is None:
            mwl = qwen[0] if qwen is not None else 0
            x.assume(f"max_window_layers absent: {mwl} ({qwen[1] if qwen else ''})")
        return _Kinds([_WINDOW if i >= (mwl or 0) else _FULL for i in range(L)], window)
    return _Kinds([_WINDOW] * L, window)


def _kinds_from_layer_types(x: _Ctx, L: int) -> _Kinds:
    c, p = x.c, x.problems
    layer_types = c.get("layer_types")
    if not isinstance(layer_types, list) or len(layer_types) != L:
        got = len(layer_types) if isinstance(layer_types, list) else repr(layer_types)
        p.append(f"'layer_types' must be a list of num_hidden_layers = {L} entries, "
                 f"got {_show(got)}")
        return _Kinds([_FULL] * L)
    kinds = []
    bad: dict[str, list[int]] = {}  # one problem per unsupported value, naming its layers
    for i, t in enumerate(layer_types):
        if not isinstance(t, str) or t not in _LAYER_TYPES:
            bad.setdefault(_show(t), []).append(i)
            kinds.append(_FULL)
        else:
            kinds.append(_LAYER_TYPES[t])
    for shown, layers in bad.items():
        at = ", ".join(map(str, layers[:8])) + (", ..." if len(layers) > 8 else "")
        many = f" ({len(layers)} of {L} layers)" if len(layers) > 1 else ""
        p.append(f"layer_types[{at}] = {shown} is not supported{many} (use one of "
                 f"{', '.join(sorted(_LAYER_TYPES))})")
    sliding = "sliding_attention" in layer_types
    chunked = "chunked_attention" in layer_types
    window = 0
    if sliding:
        if c.get("sliding_window") is None:
            p.append("layer_types has 'sliding_attention' layers but 'sliding_window' is "
                     "not set")
        else:
            window = _int(c, "sliding_window", p) or 0
    if chunked:
        cw = _int(c, "attention_chunk_size", p) or 0
        if sliding:
            p.append(f"layer_types mixes 'sliding_attention' (sliding_window {window}) and "
                     f"'chunked_attention' (attention_chunk_size {cw}) layers: only one window "
                     f"kind and length per model is supported")
        window = window or cw
    return _Kinds(kinds, window, chunked and not sliding)


def _kinds_chunked(x: _Ctx, L: int) -> _Kinds:
    """Llama 4: chunked local attention on RoPE layers, full attention on NoPE layers."""
    c, p = x.c, x.problems
    if c.get("attention_chunk_size") is None:
        window = _LLAMA4_CHUNK[0]
        x.assume(f"attention_chunk_size absent: {window} ({_LLAMA4_CHUNK[1]})")
    else:
        window = _int(c, "attention_chunk_size", p) or 0
    nrl = c.get("no_rope_layers")
    if isinstance(nrl, list) and nrl:
        if len(nrl) != L or any(v not in (0, 1) or isinstance(v, float) for v in nrl):
            p.append(f"'no_rope_layers' must have num_hidden_layers = {L} entries of 0 or 1, "
                     f"got {_show(nrl)}")
            return _Kinds([_WINDOW] * L, window, True)
        # HF Llama 4: 1 = RoPE layer (chunked local attention), 0 = NoPE layer (full attention)
        return _Kinds([_WINDOW if v else _FULL for v in nrl], window, True)
    if nrl is not None and nrl != []:
        p.append(f"'no_rope_layers' must be a list of 0/1 per layer, got {_show(nrl)}")
    if c.get("no_rope_layer_interval") is None:
        x.assume("no_rope_layers and no_rope_layer_interval absent: every 4th layer is a NoPE "
                 "full-attention layer (Llama4TextConfig default interval 4)")
    interval = _int(c, "no_rope_layer_interval", p, required=False, default=4)
    return _Kinds([_FULL if (i + 1) % interval == 0 else _WINDOW for i in range(L)], window, True)


def _kinds_alternating(x: _Ctx, L: int, pat: _Pattern) -> _Kinds:
    """Gemma-2/3, Cohere2, gpt-oss without layer_types: sliding layers with a global layer every
    ``period`` layers, as the HF config class builds its default layer_types."""
    c, p = x.c, x.problems
    if "sliding_window" not in c:
        x.assume(f"sliding_window absent: {pat.window} ({pat.source})")
        window = pat.window
    elif c.get("sliding_window") is None:
        return _Kinds([_FULL] * L)  # explicitly null: no local layers
    else:
        window = _int(c, "sliding_window", p) or 0
    period = pat.period
    if pat.period_key is not None:
        if c.get(pat.period_key) is None:
            x.assume(f"{pat.period_key} absent: {period} ({pat.source})")
        period = _int(c, pat.period_key, p, required=False, default=period)
    return _Kinds([_FULL if (i + 1) % period == 0 else _WINDOW for i in range(L)], window)


def _nas_layers(blocks: Any, L: int, H: int | None, d: int | None,
                p: list[str]) -> tuple[list[_Layer], int]:
    """Nemotron-NAS (DeciLM) heterogeneous blocks."""
    if not isinstance(blocks, list) or len(blocks) != L:
        got = len(blocks) if isinstance(blocks, list) else repr(blocks)
        p.append(f"'block_configs' must be a list of num_hidden_layers = {L} blocks, "
                 f"got {_show(got)}")
        return [], 0
    layers: list[_Layer] = []
    window = 0
    for i, b in enumerate(blocks):
        where = f"block_configs[{i}]"
        a = b.get("attention") or {} if isinstance(b, dict) else None
        f = b.get("ffn") or {} if isinstance(b, dict) else None
        if not isinstance(a, dict) or not isinstance(f, dict):
            p.append(f"{where} must be an object with 'attention' and 'ffn' objects")
            continue
        lay = _Layer(attn=_FULL)
        window = window or _nas_attention(a, lay, H, where, p)
        _nas_ffn(f, lay, d, where, p)
        layers.append(lay)
    return layers, window


def _nas_attention(a: dict, lay: _Layer, H: int | None, where: str, p: list[str]) -> int:
    if a.get("no_op"):
        lay.attn = _NONE
        return 0
    if a.get("replace_with_linear"):
        lay.attn = _LINEAR
        return 0
    n = len(p)
    g = _int(a, "n_heads_in_group", p)
    if len(p) > n:
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
    return lay.window


def _nas_ffn(f: dict, lay: _Layer, d: int | None, where: str, p: list[str]) -> None:
    if f.get("no_op"):
        lay.mlp = "none"
    elif f.get("replace_with_linear"):
        lay.mlp = "linear"
    elif f.get("intermediate_size") is not None:
        lay.inter = _int(f, "intermediate_size", p) or 0
    else:
        m = f.get("ffn_mult")
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not (
                math.isfinite(m) and 0 < m <= _MAX_FFN_MULT):
            p.append(f"{where}.ffn: 'ffn_mult' must be a number in (0, {_MAX_FFN_MULT:g}], "
                     f"got {_show(m)}")
        elif d is not None:
            lay.inter = _ffn_mult_to_intermediate(m, d)


# ----------------------------------------------------------------------------------------------
# parameter counts


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


# ----------------------------------------------------------------------------------------------
# KV cache, attention FLOPs, activations


@dataclass
class _Traffic:
    kv_full: int = 0
    kv_win: int = 0
    f_full_dec: float = 0.0
    f_win_dec: float = 0.0
    f_full_pre: float = 0.0
    f_win_pre: float = 0.0
    act: int = 0


def _traffic(dims: _Dims, mla: _Mla | None, moe: _Moe, layers: list[_Layer]) -> _Traffic:
    d, H, hd = dims.d, dims.H, dims.hd
    out = _Traffic()
    for lay in layers:
        if lay.attn in (_FULL, _WINDOW):
            if mla is not None:
                kv = mla.kv_lora + mla.rope
                fd = 2.0 * H * ((mla.kv_lora + mla.rope) + mla.kv_lora)  # absorbed decode
                fp = 2.0 * H * ((mla.nope + mla.rope) + mla.vdim)
            else:
                kv = 2 * lay.kv_heads * hd
                fd = fp = 2.0 * H * (hd + hd)
            if lay.attn == _FULL:
                out.kv_full += kv
                out.f_full_dec += fd
                out.f_full_pre += fp
            else:
                out.kv_win += kv
                out.f_win_dec += fd
                out.f_win_pre += fp
        if lay.mlp == "moe":
            width = moe.k_top * moe.I_e + moe.shared_width
        elif lay.mlp == "dense":
            width = lay.inter
        elif lay.mlp == "linear":
            width = d
        else:
            width = 0
        out.act += 4 * d + 2 * width
    return out


# ----------------------------------------------------------------------------------------------
# the parser


def model_from_config(cfg: dict, *, id: str = "custom", name: str | None = None,
                      sources: tuple[str, ...] | list[str] = (), published_total: int | None = None,
                      published_active: int | None = None, context: str = "") -> ModelArch:
    """Build a :class:`ModelArch` from a parsed ``config.json``; raise :class:`SpecError` with
    every problem found."""
    ctx = context or f"model {id!r}"
    if not isinstance(cfg, dict):
        raise SpecError(f"a model config must be a JSON object (dict), got {type(cfg).__name__}",
                        ctx)
    problems: list[str] = []
    c = _text_config(cfg)
    top_type, mt = _model_types(cfg, c, problems)
    _check_int_fields(c, problems)
    x = _Ctx(c, top_type, mt, problems)

    read_dims = _read_dims(x)
    rope = _read_rope(x)
    read_mla = _read_mla(x)
    moe = _read_moe(x)
    blk = _block(x, read_dims.d)
    layers, window, chunked = _layer_list(x, read_dims, moe, blk.dense_default)
    if layers and read_dims.d is not None:
        too_wide = sorted({lay.inter for lay in layers if lay.inter > _MAX_DIM})
        if too_wide:
            problems.append(f"MLP width {too_wide[0]:,} is out of range (<= {_MAX_DIM:,}): "
                            f"check intermediate_size / ffn_mult")
    if problems:
        raise SpecError(list(dict.fromkeys(problems)), ctx)

    dims = read_dims.checked()
    mla = read_mla.checked() if read_mla is not None else None
    counts = _param_counts(x, dims, mla, moe, blk, layers)
    t = _traffic(dims, mla, moe, layers)
    attn_kv = [lay.kv_heads for lay in layers if lay.attn in (_FULL, _WINDOW)]
    if mla is not None:
        n_kv_heads = dims.H
    else:
        n_kv_heads = Counter(attn_kv).most_common(1)[0][0] if attn_kv else dims.KV or 0
    head_dim = (mla.nope + mla.rope) if mla is not None else dims.hd
    n_moe = counts.n_moe
    return ModelArch(
        id=str(id), name=str(name or id), model_type=top_type or mt,
        n_layers=dims.L, d_model=dims.d, vocab_size=dims.V, n_heads=dims.H, n_kv_heads=n_kv_heads,
        head_dim=head_dim, is_mla=mla is not None, params_attn=counts.attn,
        params_dense_mlp=counts.dense, params_expert=counts.expert, n_moe_layers=n_moe,
        n_experts=moe.E if n_moe else 0, experts_per_token=moe.k_top if n_moe else 0,
        params_shared_experts=counts.shared, params_router=counts.router,
        params_embed=counts.embed, params_lm_head=counts.lm_head, lm_head_tied=dims.tied,
        params_other=counts.other, kv_elems_full=t.kv_full, kv_elems_window=t.kv_win,
        window=window if t.kv_win else 0, kv_tp_shardable=mla is None,
        attn_flops_full_decode=t.f_full_dec, attn_flops_window_decode=t.f_win_dec,
        attn_flops_full_prefill=t.f_full_pre, attn_flops_window_prefill=t.f_win_pre,
        act_elems=t.act, tp_divisor=dims.H, max_position_embeddings=dims.max_pos,
        sources=tuple(sources), published_total=published_total,
        published_active=published_active, window_chunked=chunked and t.kv_win > 0,
        rope_scaling_type=rope.kind, rope_scaling_factor=rope.factor,
        rope_original_max_position_embeddings=rope.original,
        assumptions=tuple(dict.fromkeys(x.assumptions)))


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


#: a Hugging Face model id: ORGANISATION/NAME (letters, digits, '-', '_', '.')
HF_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
    ``~/.cache/huggingface/hub`` (huggingface_hub's own rule; nothing is downloaded here)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join("~", ".cache")), "huggingface")
    return Path(home).expanduser() / "hub"


def hf_config_path(repo_id: str, cache: Path | None = None) -> Path:
    """The ``config.json`` of a Hugging Face model in the local hub cache: the snapshot that
    ``refs/main`` names, else the newest snapshot that has one. One SpecError names the exact
    path looked for and how to fetch it."""
    root = (cache or hf_cache_dir()) / f"models--{repo_id.replace('/', '--')}"
    snaps = root / "snapshots"
    ref = root / "refs" / "main"
    if ref.is_file():
        main = snaps / ref.read_text(encoding="utf-8").strip() / "config.json"
        if main.is_file():
            return main
    found = sorted(snaps.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    if found:
        return found[-1]
    raise SpecError(f"model {repo_id!r} is neither a catalog id nor in the local Hugging Face "
                    f"cache: no {snaps}/*/config.json. Fetch its config (huggingface-cli "
                    f"download {repo_id} config.json, or from Python hf_hub_download("
                    f"{repo_id!r}, 'config.json')), or give the path of a config.json")


def _load_file(path: Path, mid: str | None = None) -> ModelArch:
    if path.is_dir():
        path = path / "config.json"
    try:
        with path.open("r", encoding="utf-8") as fh:
            cfg = json.load(fh)
    except FileNotFoundError:
        raise SpecError(f"model config file {str(path)!r} does not exist "
                        f"(give a catalog id or the path of a config.json)") from None
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, deep nesting
        raise SpecError(f"cannot read model config {str(path)!r} as JSON: {exc}") from None
    except RecursionError:
        raise SpecError(f"cannot read model config {str(path)!r} as JSON: nested too deeply") \
            from None
    mid = mid or (path.parent.name if path.stem == "config" and path.parent.name
                  else path.stem)
    name = str(cfg.get("_name_or_path") or mid) if isinstance(cfg, dict) else mid
    return model_from_config(cfg, id=mid, name=name, sources=(f"user config: {path}",),
                             context=f"model config {str(path)!r}")


def load_model(spec: str | os.PathLike | dict | ModelArch) -> ModelArch:
    """Load a model: a catalog id, the path of a ``config.json`` (or its directory), a Hugging
    Face id ``ORG/NAME`` whose config.json is in the local hub cache (:func:`hf_config_path`;
    the model's id is then the Hugging Face id), or a dict."""
    if isinstance(spec, ModelArch):
        return spec
    if isinstance(spec, dict):
        mid = spec.get("_name_or_path") or spec.get("model_type") or "custom"
        mid = str(mid) if isinstance(mid, str) else "custom"
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
    if not path.exists() and HF_ID.match(spec) and not spec.endswith(".json"):
        return _load_file(hf_config_path(spec), mid=spec)  # a Hugging Face id, from the cache
    if path.exists() or spec.endswith(".json") or os.sep in spec or "/" in spec:
        return _load_file(path)
    raise SpecError(f"unknown model {spec!r}{suggest(spec.lower(), ids)}; or give a Hugging "
                    f"Face id (ORG/NAME, read from the local cache) or the path of a config.json")


def catalog_models() -> list[ModelArch]:
    """Every catalog model, in catalog order."""
    return [_load_catalog_model(m) for m in MODEL_IDS]


def list_models() -> list[ModelArch]:
    """Every catalog model, in catalog order (same as :func:`catalog_models`)."""
    return catalog_models()
