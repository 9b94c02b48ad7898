"""The model record :class:`ModelArch`: one decoder LLM reduced to the numbers a roofline needs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from grids.models.tables import _ROPE_EXTENSION


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

    def _params_with(self, experts: int) -> int:
        """Parameters when ``experts`` routed experts of each MoE layer count."""
        return (self.params_attn + self.params_dense_mlp
                + self.n_moe_layers * experts * self.params_expert
                + self.params_shared_experts + self.params_router + self.params_embed
                + self.params_lm_head + self.params_other)

    @property
    def params_total(self) -> int:
        """Every parameter (all routed experts)."""
        return self._params_with(self.n_experts)

    @property
    def params_active(self) -> int:
        """Parameters one token uses (``experts_per_token`` routed experts per MoE layer)."""
        return self._params_with(self.experts_per_token)

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
