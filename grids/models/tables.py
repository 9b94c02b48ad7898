"""The ``model_type`` tables of the config readers: the defaults of the Hugging Face configuration
classes (each entry names its ``transformers`` file), the ``model_type`` families of features
that have no config field, the canonical names of GPT-2 style fields, and the sane bounds of
every integer field."""

from __future__ import annotations

from dataclasses import dataclass

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
