"""Model catalog: Hugging Face ``config.json`` files parsed into :class:`ModelArch`.

A model is a plain HF-style ``config.json`` (``grids/data/models/<id>.json``, listed with its
sources and published parameter counts in ``grids/data/models/catalog.toml``). A user passes a
catalog id, the path of their own ``config.json`` (or of the directory holding it), or an
already-loaded ``dict``.

The config is read with the semantics of the model's reference code, the Hugging Face
``transformers`` configuration class of its ``model_type``: a field the file leaves out takes that
class's default (tables ``_TIE_DEFAULTS``, ``_ALTERNATING``, ``_QWEN_SLIDING``,
``_SLIDING_DEFAULTS``, ``_CONTEXT_DEFAULTS`` in ``tables.py``, each with the ``transformers`` file
it comes from), and every default so assumed is written to
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

Which file holds what (each imports only the ones listed above it, so the package has no cycle):

* ``tables.py``: the ``model_type`` tables (HF class defaults, feature families), field names
  and sane bounds.
* ``record.py``: :class:`ModelArch`, the model record (counts, ``max_context``, ``to_dict``).
* ``fields.py``: typed field readers that collect problems, the readers' shared context, the
  decoder config (``text_config``, GPT-2 style aliases) and its ``model_type``.
* ``dims.py``: width, layers, heads, KV heads, head size, vocabulary, context, tied LM head.
* ``rope.py``: ``rope_scaling`` / ``rope_parameters`` (context extension).
* ``mla.py``: MLA ranks.
* ``moe.py``: experts, experts per token, expert widths, which layers are MoE.
* ``layers.py``: the per-layer attention and MLP kinds (windows, chunked attention, Nemotron-NAS).
* ``counts.py``: the block layout of each ``model_type`` family and the parameter counts.
* ``traffic.py``: KV cache elements, attention FLOPs and activation elements per token.
* ``parse.py``: :func:`model_from_config`, which runs the readers and builds the record.
* ``shipped.py``: the shipped catalog (``catalog.toml``), ``MODEL_IDS``, :func:`catalog_models`.
* ``hf_cache.py``: a Hugging Face id's ``config.json`` in the local hub cache.
* ``load.py``: :func:`load_model` (catalog id, config path, Hugging Face id or dict).
"""

from grids.models.hf_cache import hf_config_path as hf_config_path
from grids.models.load import load_model
from grids.models.parse import model_from_config
from grids.models.record import ModelArch
from grids.models.shipped import MODEL_IDS, catalog, catalog_models, list_models

# the integer bounds of the config readers (tests/test_models.py reads them from here)
from grids.models.tables import _MAX_DIM as _MAX_DIM
from grids.models.tables import _MAX_LAYERS as _MAX_LAYERS

__all__ = ["MODEL_IDS", "ModelArch", "catalog", "catalog_models", "list_models", "load_model",
           "model_from_config"]
