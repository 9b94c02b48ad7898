"""Model catalog and config.json parsing (grids.models)."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grids.errors import SpecError
from grids.models import (
    _MAX_DIM,
    _MAX_LAYERS,
    MODEL_IDS,
    ModelArch,
    catalog,
    catalog_models,
    list_models,
    load_model,
    model_from_config,
)
from tests import strategies as sts

REPO = Path(__file__).resolve().parents[1]

# Exact computed counts from shared/reference/models.csv (columns computed_total, computed_active),
# keyed by catalog id. mistral-7b and qwen2.5-7b are not in that file.
REFERENCE_COMPUTED = {
    "llama-2-7b": (6738415616, 6738415616),
    "llama-2-70b": (68976648192, 68976648192),
    "llama-3.1-8b": (8030261248, 8030261248),
    "llama-3.1-70b": (70553706496, 70553706496),
    "llama-3.1-405b": (405853388800, 405853388800),
    "llama-3.3-70b": (70553706496, 70553706496),
    "llama-3.3-nemotron-super-49b": (49867145216, 49867145216),
    "llama-4-scout": (107769861120, 17172894720),
    "llama-4-maverick": (400711848960, 17184691200),
    "qwen3-8b": (8190735360, 8190735360),
    "qwen3-32b": (32762123264, 32762123264),
    "qwen3-14b": (14768307200, 14768307200),
    "qwen2.5-72b": (72706203648, 72706203648),
    "qwen3-235b-a22b": (235093634560, 22190763520),
    "qwen3-30b-a3b": (30532122624, 3353032704),
    "ministral-8b": (8019808256, 8019808256),
    "mistral-small-3.1-24b": (23572403200, 23572403200),
    "mixtral-8x7b": (46702792704, 12879925248),
    "mixtral-8x22b": (140620634112, 39152031744),
    "deepseek-v3": (671026419200, 37552297472),
    "deepseek-r1": (671026419200, 37552297472),
    "gpt-oss-120b": (116829156672, 5711982912),
    "gpt-oss-20b": (20914757184, 4187440704),
    "gpt-j-6b": (6050882784, 6050882784),
}

# models added for published measurements: exact counts computed by hand in the tests below
NEW_IDS = {"llama-3-8b", "llama-3-70b", "llama-2-13b", "codellama-13b", "mistral-large-2407",
           "bloom-176b", "falcon-180b", "gemma-7b", "gemma-2b", "gemma-2-9b",
           "qwen3-coder-480b-a35b"}

EXPECTED_IDS = NEW_IDS | {
    "llama-2-7b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b",
    "llama-3.3-nemotron-super-49b", "llama-4-scout", "llama-4-maverick", "qwen3-8b", "qwen3-14b",
    "qwen3-32b", "qwen2.5-72b", "qwen3-235b-a22b", "qwen3-30b-a3b", "ministral-8b",
    "mistral-small-3.1-24b", "mixtral-8x7b", "mixtral-8x22b", "deepseek-r1", "deepseek-v3",
    "gpt-oss-120b", "gpt-oss-20b", "gpt-j-6b", "mistral-7b", "qwen2.5-7b",
}


def rel(a: float, b: float) -> float:
    return abs(a - b) / b


# --------------------------------------------------------------------------------------------------
# catalog


def test_catalog_has_every_model_with_sources():
    assert set(MODEL_IDS) == EXPECTED_IDS
    cat = catalog()
    for mid in MODEL_IDS:
        e = cat[mid]
        for key in ("name", "hf_repo", "config", "config_source", "notes"):
            assert isinstance(e.get(key), str) and e[key].strip(), (mid, key)
        for key in ("published_total", "published_active"):
            assert isinstance(e[key]["value"], int) and e[key]["value"] > 0, (mid, key)
            assert e[key]["source"].strip(), (mid, key)
    assert [m.id for m in list_models()] == list(MODEL_IDS)
    assert [m.id for m in catalog_models()] == list(MODEL_IDS)


@pytest.mark.parametrize("mid", sorted(EXPECTED_IDS))
def test_params_match_published(mid):
    m = load_model(mid)
    e = catalog()[mid]
    assert m.published_total == e["published_total"]["value"]
    assert m.published_active == e["published_active"]["value"]
    for computed, published, col in ((m.params_total, m.published_total, 0),
                                     (m.params_active, m.published_active, 1)):
        if rel(computed, published) <= 0.02:
            continue
        # outside 2%: the catalog must explain why, and the computed value must be the exact
        # figure of the reference formula
        assert e.get("published_note", "").strip(), f"{mid}: {computed} vs {published} needs a note"
        assert computed == REFERENCE_COMPUTED[mid][col]


@pytest.mark.parametrize("mid", sorted(REFERENCE_COMPUTED))
def test_params_equal_reference_formula(mid):
    m = load_model(mid)
    assert (m.params_total, m.params_active) == REFERENCE_COMPUTED[mid]


def test_notes_exactly_where_published_differs():
    noted = {mid for mid in MODEL_IDS if catalog()[mid].get("published_note")}
    assert noted == {"llama-2-7b", "qwen3-30b-a3b", "gpt-oss-120b", "gpt-oss-20b"}


# --------------------------------------------------------------------------------------------------
# hand-computed worked examples


def test_llama31_8b_kv_and_shapes():
    m = load_model("llama-3.1-8b")
    # 32 layers x 8 KV heads x 128 head_dim x 2 (K,V) x 2 B
    assert m.kv_bytes_per_token(16) == 32 * 8 * 128 * 2 * 2 == 131072
    assert m.kv_bytes_per_token(8) == 65536
    assert m.kv_elems_full == 65536 and m.kv_elems_window == 0 and m.window == 0
    assert (m.n_layers, m.d_model, m.n_heads, m.n_kv_heads, m.head_dim) == (32, 4096, 32, 8, 128)
    assert m.kv_tp_shardable and not m.is_mla and not m.is_moe and m.tp_divisor == 32
    # per layer: q 4096*4096, k,v 4096*1024, o 4096*4096, two RMSNorms 2*4096
    assert m.params_attn == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 4096)
    assert m.params_dense_mlp == 32 * 3 * 4096 * 14336
    assert m.params_embed == m.params_lm_head == 128256 * 4096 and m.params_other == 4096
    assert m.params_total == 8_030_261_248
    # decode attention FLOPs per (query, context) token pair: 2 * H * (d_qk + d_v) per layer
    assert m.attn_flops_full_decode == m.attn_flops_full_prefill == 32 * 2 * 32 * (128 + 128)
    # activations: per layer 4*d + 2*I
    assert m.act_elems == 32 * (4 * 4096 + 2 * 14336)


def test_deepseek_r1_mla():
    m = load_model("deepseek-r1")
    assert m.is_mla and not m.kv_tp_shardable
    # latent: 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B
    assert m.kv_bytes_per_token() == 61 * (512 + 64) * 2 == 70272
    assert m.n_kv_heads == m.n_heads == 128 and m.head_dim == 128 + 64
    # decode (absorbed): d_qk = 512 + 64, d_v = 512; prefill: d_qk = 128 + 64, d_v = 128
    assert m.attn_flops_full_decode == 61 * 2 * 128 * ((512 + 64) + 512)
    assert m.attn_flops_full_prefill == 61 * 2 * 128 * ((128 + 64) + 128)
    d, H = 7168, 128
    mla = (d * 1536 + 1536 + 1536 * H * (128 + 64) + d * (512 + 64) + 512 + 512 * H * (128 + 128)
           + H * 128 * d)
    assert m.params_attn == 61 * (mla + 2 * d)
    assert m.params_dense_mlp == 3 * 3 * d * 18432  # first_k_dense_replace = 3
    assert (m.n_moe_layers, m.n_experts, m.experts_per_token) == (58, 256, 8)
    assert m.params_expert == 3 * d * 2048
    assert m.params_shared_experts == 58 * 3 * d * 2048
    assert m.params_router == 58 * (d * 256 + 256)  # + e_score_correction_bias
    assert m.act_elems == 3 * (4 * d + 2 * 18432) + 58 * (4 * d + 2 * (8 * 2048 + 2048))
    assert (m.params_total, m.params_active) == (671_026_419_200, 37_552_297_472)


def test_mixtral_8x22b_exact_published_count():
    m = load_model("mixtral-8x22b")
    d, L, H, KV, hd, ffn, E, V = 6144, 56, 48, 8, 128, 16384, 8, 32000
    attn = d * H * hd + 2 * d * KV * hd + H * hd * d + 2 * d  # = 88,092,672
    assert attn == 88_092_672
    expert = 3 * d * ffn  # = 301,989,888
    assert m.params_expert == expert == 301_989_888
    router = d * E
    total = L * (attn + E * expert + router) + 2 * V * d + d
    active = L * (attn + 2 * expert + router) + 2 * V * d + d
    assert total == 140_620_634_112 and active == 39_152_031_744
    assert (m.params_total, m.params_active) == (total, active)
    assert m.published_total == 140_620_634_112 and m.published_active == 39_152_031_744


def test_gpt_oss_windows_biases_and_sinks():
    m = load_model("gpt-oss-120b")
    d, H, KV, hd, ffn, E = 2880, 64, 8, 64, 2880, 128
    # 18 sliding (window 128) + 18 full layers, each 2 x 8 x 64 K+V elements
    assert m.window == 128
    assert m.kv_elems_full == m.kv_elems_window == 18 * 2 * KV * hd
    assert m.params_expert == 3 * d * ffn + 2 * ffn + d
    assert m.params_router == 36 * (d * E + E)
    attn = d * H * hd + 2 * d * KV * hd + H * hd * d + (H * hd + 2 * KV * hd + d) + H + 2 * d
    assert m.params_attn == 36 * attn
    # OpenAI's active count excludes the input embedding: 5.13B ~ published 5.1B
    assert rel(m.params_active - m.params_embed, 5.1e9) < 0.01
    assert rel(load_model("gpt-oss-20b").params_active - 201088 * 2880, 3.6e9) < 0.01


def test_llama4_chunked_attention_and_shared_expert():
    scout, mav = load_model("llama-4-scout"), load_model("llama-4-maverick")
    for m in (scout, mav):
        # every 4th layer NoPE/full (12), the other 36 chunked with attention_chunk_size 8192
        assert m.window == 8192 and m.window_chunked
        assert m.kv_elems_full == 12 * 2 * 8 * 128 and m.kv_elems_window == 36 * 2 * 8 * 128
    d = 5120
    assert (scout.n_moe_layers, scout.n_experts, scout.experts_per_token) == (48, 16, 1)
    assert scout.params_dense_mlp == 0
    assert scout.params_shared_experts == 48 * 3 * d * 8192
    assert (mav.n_moe_layers, mav.n_experts) == (24, 128)  # interleave_moe_layer_step 2
    assert mav.params_dense_mlp == 24 * 3 * d * 16384  # intermediate_size_mlp
    assert mav.act_elems == 24 * (4 * d + 2 * 16384) + 24 * (4 * d + 2 * (8192 + 8192))


def test_nemotron_nas_blocks():
    m = load_model("llama-3.3-nemotron-super-49b")
    d = 8192
    # 49 attention blocks with 64/8 = 8 KV heads; 31 attention-free blocks
    assert m.kv_bytes_per_token() == 49 * 2 * 8 * 128 * 2 == 200_704
    widths = 28672 * 49 + 7168 * 10 + 5632 * 8 + 14336 * 6 + 2816 * 6 + 17920 * 1
    assert m.params_dense_mlp == 3 * d * widths
    # attention-free blocks have no input_layernorm
    attn = d * 64 * 128 + 2 * d * 8 * 128 + 64 * 128 * d
    assert m.params_attn == 49 * (attn + 2 * d) + 31 * d
    assert m.act_elems == 80 * 4 * d + 2 * widths


def test_qwen_biases_and_qk_norm():
    q25 = load_model("qwen2.5-7b")
    d, L, H, KV, hd, ffn, V = 3584, 28, 28, 4, 128, 18944, 152064
    attn = d * H * hd + 2 * d * KV * hd + H * hd * d + (H * hd + 2 * KV * hd) + 2 * d
    assert q25.params_attn == L * attn
    assert q25.params_total == L * (attn + 3 * d * ffn) + 2 * V * d + d == 7_615_616_512
    # published non-embedding 6.53B
    assert rel(q25.params_total - 2 * V * d, 6.53e9) < 0.005
    q3 = load_model("qwen3-8b")
    assert q3.params_attn == 36 * (4096 * 32 * 128 * 2 + 2 * 4096 * 8 * 128 + 2 * 128 + 2 * 4096)


def test_gptj_and_sliding_window_models():
    g = load_model("gpt-j-6b")
    d, V = 4096, 50400
    assert (g.n_layers, g.n_heads, g.head_dim, g.max_position_embeddings) == (28, 16, 256, 2048)
    assert g.params_dense_mlp == 28 * (d * 4 * d + 4 * d + 4 * d * d + d)
    assert g.params_lm_head == V * d + V and g.params_other == 2 * d
    m7 = load_model("mistral-7b")
    assert m7.window == 4096 and m7.kv_elems_full == 0 and m7.kv_elems_window == 32 * 2 * 8 * 128
    assert load_model("mistral-small-3.1-24b").head_dim == 128  # q dim 4096 < hidden 5120
    assert load_model("qwen2.5-72b").window == 0  # use_sliding_window false


def test_to_dict_is_json_and_frozen():
    m = load_model("mixtral-8x7b")
    d = json.loads(json.dumps(m.to_dict()))
    assert d["params_total"] == m.params_total and d["id"] == "mixtral-8x7b"
    assert d["sources"] and all(isinstance(s, str) for s in d["sources"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.n_layers = 1  # type: ignore[misc]
    for mm in catalog_models():
        for f in ("n_layers", "d_model", "params_attn", "kv_elems_full", "act_elems"):
            assert type(getattr(mm, f)) is int, (mm.id, f)


# --------------------------------------------------------------------------------------------------
# user configs


def _user_moe_config() -> dict:
    # a made-up MoE with sliding/full layers, recognised purely by its fields
    return {
        "model_type": "my_moe", "hidden_size": 1024, "num_hidden_layers": 4,
        "num_attention_heads": 16,
        "num_key_value_heads": 4, "intermediate_size": 2048, "moe_intermediate_size": 512,
        "num_local_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
        "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": True,
        "sliding_window": 256, "layer_types": ["sliding_attention", "full_attention"] * 2,
    }


def test_user_config_file_loads(tmp_path):
    folder = tmp_path / "my-moe"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_user_moe_config()))
    for spec in (str(folder / "config.json"), folder / "config.json", str(folder)):
        m = load_model(spec)
        assert isinstance(m, ModelArch) and m.id == "my-moe"
        d = 1024
        assert (m.n_moe_layers, m.n_experts, m.experts_per_token) == (3, 8, 2)
        assert m.params_dense_mlp == 3 * d * 2048 and m.params_expert == 3 * d * 512
        assert m.params_lm_head == 0 and m.lm_head_tied
        assert m.window == 256 and m.kv_elems_full == m.kv_elems_window == 2 * 2 * 4 * 64
        assert m.published_total is None
    other = tmp_path / "dense.json"
    cfg = {"hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
           "intermediate_size": 1024, "vocab_size": 100, "max_position_embeddings": 128}
    other.write_text(json.dumps(cfg))
    m = load_model(str(other))
    assert m.id == "dense" and m.n_kv_heads == 8 and m.head_dim == 64
    # no model_type and no tie_word_embeddings: PretrainedConfig's default ties the LM head to the
    # embedding (one V x d matrix), and the assumption is recorded
    assert m.lm_head_tied and m.params_lm_head == 0
    assert m.params_total == 2 * (4 * 512 * 512 + 2 * 512 + 3 * 512 * 1024) + 100 * 512 + 512
    assert any("tie_word_embeddings absent: tied" in a for a in m.assumptions)
    assert load_model(cfg).params_total == m.params_total


def test_user_mla_config_from_dict():
    cfg = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 512, "vocab_size": 100, "max_position_embeddings": 1024,
           "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32}
    m = load_model(cfg)
    assert m.is_mla and not m.kv_tp_shardable and m.kv_elems_full == 2 * (64 + 16)
    assert m.attn_flops_full_decode == 2 * 2 * 4 * (80 + 64)


def test_bad_config_lists_every_problem(tmp_path):
    bad = {"hidden_size": -1, "num_hidden_layers": 0, "num_attention_heads": 30,
           "num_key_value_heads": 8, "num_local_experts": 4, "num_experts_per_tok": 8,
           "intermediate_size": 128}
    with pytest.raises(SpecError) as ei:
        load_model(bad)
    probs = ei.value.problems
    text = "\n".join(probs)
    assert len(probs) >= 6, probs
    for needle in ("hidden_size", "num_hidden_layers", "not divisible by num_key_value_heads",
                   "exceeds the number of experts", "vocab_size", "max_position_embeddings"):
        assert needle in text, needle
    f = tmp_path / "config.json"
    f.write_text(json.dumps({"hidden_size": 64}))
    with pytest.raises(SpecError) as ei:
        load_model(str(f))
    assert len(ei.value.problems) == 4  # layers, heads, vocab, max_position_embeddings
    f.write_text("{not json")
    with pytest.raises(SpecError):
        load_model(str(f))
    with pytest.raises(SpecError):
        load_model(str(tmp_path / "missing.json"))
    lt = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10,
          "max_position_embeddings": 8, "intermediate_size": 128,
          "layer_types": ["full_attention"]}
    with pytest.raises(SpecError, match="layer_types"):
        load_model(lt)


def test_each_config_problem_is_reported_once():
    """32 unsupported layer types are one problem naming the layers, not 32 lines; a top-k
    router without experts is refused (issue 22 items 12, 13)."""
    cfg = {"hidden_size": 64, "num_hidden_layers": 32, "num_attention_heads": 4,
           "vocab_size": 10, "max_position_embeddings": 8, "intermediate_size": 128}
    with pytest.raises(SpecError) as ei:
        load_model({**cfg, "layer_types": ["mamba"] * 30 + ["bogus", "full_attention"]})
    assert len(ei.value.problems) == 2
    assert "layer_types[0, 1, 2, 3, 4, 5, 6, 7, ...] = 'mamba' is not supported (30 of 32" in \
        ei.value.problems[0]
    assert "layer_types[30] = 'bogus'" in ei.value.problems[1]
    with pytest.raises(SpecError, match="'num_local_experts' = 0"):
        load_model({**cfg, "num_local_experts": 0, "num_experts_per_tok": 2})
    assert load_model({**cfg, "num_local_experts": 0, "num_experts_per_tok": 0}).n_experts == 0


def test_unknown_id_suggests_close_name():
    with pytest.raises(SpecError) as ei:
        load_model("llama-3.1-8")
    assert "did you mean" in str(ei.value) and "'llama-3.1-8b'" in str(ei.value)
    with pytest.raises(SpecError, match="mixtral-8x7b"):
        load_model("mixtral-8x7")
    assert load_model("Llama-3.1-8B").id == "llama-3.1-8b"


def test_grids_models_does_not_import_kernels_or_sweep():
    code = ("import sys, grids.models; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('kernels', 'sweep', 'numba')]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO,
                   env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


# --------------------------------------------------------------------------------------------------
# models of published measurements: arithmetic by hand


def _llama_total(L, d, H, KV, hd, ffn, V, tied=False):
    """Llama-style decoder: q,k,v,o + SwiGLU + two RMSNorms per layer, embedding, head, final norm."""
    layer = d * H * hd + 2 * d * KV * hd + H * hd * d + 3 * d * ffn + 2 * d
    return L * layer + V * d * (1 if tied else 2) + d


@pytest.mark.parametrize("mid, total", [
    ("llama-3-8b", _llama_total(32, 4096, 32, 8, 128, 14336, 128256)),
    ("llama-3-70b", _llama_total(80, 8192, 64, 8, 128, 28672, 128256)),
    ("llama-2-13b", _llama_total(40, 5120, 40, 40, 128, 13824, 32000)),
    ("codellama-13b", _llama_total(40, 5120, 40, 40, 128, 13824, 32016)),
    ("mistral-large-2407", _llama_total(88, 12288, 96, 8, 128, 28672, 32768)),
    ("gemma-2b", _llama_total(18, 2048, 8, 1, 256, 16384, 256000, tied=True)),
    ("gemma-7b", _llama_total(28, 3072, 16, 16, 256, 24576, 256000, tied=True)),
])
def test_new_dense_models_by_hand(mid, total):
    m = load_model(mid)
    assert m.params_total == m.params_active == total
    assert rel(m.params_total, m.published_total) < 0.02


def test_gemma_non_embedding_counts_equal_the_papers():
    # Gemma (arXiv:2403.08295) and Gemma 2 (arXiv:2408.00118) Table 2, non-embedding parameters;
    # their embedding rows are 256128, the HF configs' 256000
    for mid, non_embedding in (("gemma-2b", 1_981_884_416), ("gemma-7b", 7_751_248_896),
                               ("gemma-2-9b", 8_324_201_984)):
        m = load_model(mid)
        assert m.params_total - m.params_embed == non_embedding, mid
        assert m.published_total - m.params_total == (256128 - 256000) * m.d_model, mid


def test_bloom_176b_exact_model_card_count():
    m = load_model("bloom-176b")
    d, L, V = 14336, 70, 250880
    # fused QKV d x 3d + 3d bias, dense d x d + d, MLP d x 4d + 4d and 4d x d + d, 2 LayerNorms
    layer = (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d + 4 * d * d + d) + 2 * 2 * d
    assert m.params_attn + m.params_dense_mlp == L * layer
    assert m.params_embed == V * d == 3_596_615_680  # the model card's embedding parameters
    assert m.lm_head_tied and m.params_lm_head == 0
    assert m.params_other == 2 * d + 2 * d  # ln_f + word_embeddings_layernorm
    assert m.params_total == m.published_total == 176_247_271_424
    assert (m.n_heads, m.n_kv_heads, m.head_dim) == (112, 112, 128)
    assert m.max_position_embeddings == m.max_context == 2048
    assert any("max_position_embeddings absent" in a for a in m.assumptions)


def test_falcon_180b_parallel_block():
    m = load_model("falcon-180b")
    d, L, H, KV, hd, V = 14848, 80, 232, 8, 64, 65024
    # fused QKV without bias, dense, GELU MLP 4d without bias, ln_attn + ln_mlp with bias
    layer = d * (H + 2 * KV) * hd + H * hd * d + 2 * d * 4 * d + 2 * 2 * d
    assert m.params_attn + m.params_dense_mlp == L * layer
    assert m.kv_elems_full == L * 2 * KV * hd and (m.n_kv_heads, m.head_dim) == (KV, hd)
    # tie_word_embeddings absent: FalconConfig keeps PretrainedConfig's default (tied)
    assert m.lm_head_tied and m.params_total == L * layer + V * d + 2 * d
    assert any("tie_word_embeddings absent: tied" in a for a in m.assumptions)
    assert rel(m.params_total, 180e9) < 0.02


def test_falcon_kv_heads_follow_the_architecture_flags():
    base = {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 8, "vocab_size": 10, "num_kv_heads": 2}
    old_mq = model_from_config({**base, "new_decoder_architecture": False})  # multi_query default
    assert old_mq.n_kv_heads == 1 and old_mq.max_position_embeddings == 2048
    assert any("multi_query absent" in a for a in old_mq.assumptions)
    old_mha = model_from_config({**base, "multi_query": False})
    assert old_mha.n_kv_heads == 2
    new = model_from_config({**base, "new_decoder_architecture": True})
    assert new.n_kv_heads == 2
    # one LayerNorm per layer in the old parallel block, two in the new one
    assert new.params_attn - old_mha.params_attn == 2 * 2 * 64
    seq = model_from_config({**base, "multi_query": False, "parallel_attn": False})
    assert seq.params_attn == new.params_attn


def test_qwen3_coder_moe_counts():
    m = load_model("qwen3-coder-480b-a35b")
    d, L, H, KV, hd, E, k, ffn, V = 6144, 62, 96, 8, 128, 160, 8, 2560, 151936
    attn = d * H * hd + 2 * d * KV * hd + H * hd * d + 2 * hd + 2 * d  # + QK-norm, 2 RMSNorms
    assert m.params_attn == L * attn
    assert (m.n_moe_layers, m.n_experts, m.experts_per_token) == (L, E, k)
    assert m.params_expert == 3 * d * ffn and m.params_shared_experts == 0
    assert m.params_total == L * (attn + E * 3 * d * ffn + d * E) + 2 * V * d + d
    assert m.params_active == L * (attn + k * 3 * d * ffn + d * E) + 2 * V * d + d
    assert m.window == 0 and m.max_context == 262144


# --------------------------------------------------------------------------------------------------
# config.json semantics of the reference code (HF config classes)


def _dense(**over) -> dict:
    cfg = {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000,
           "max_position_embeddings": 4096}
    cfg.update(over)
    return cfg


@pytest.mark.parametrize("model_type, tied", [
    ("llama", False), ("mistral", False), ("mixtral", False), ("qwen2", False),
    ("qwen3_moe", False), ("deepseek_v3", False), ("gpt_oss", False), ("llama4_text", False),
    ("gemma", True), ("gemma2", True), ("gemma3_text", True), ("cohere2", True),
    ("bloom", True), ("falcon", True), ("never_heard_of_it", True), (None, True),
])
def test_tie_default_per_model_type(model_type, tied):
    cfg = _dense(**({"model_type": model_type} if model_type else {}))
    m = model_from_config(cfg)
    assert m.lm_head_tied is tied
    assert m.params_lm_head == (0 if tied else m.params_embed)
    note = [a for a in m.assumptions if a.startswith("tie_word_embeddings absent")]
    assert len(note) == 1 and ("tied" if tied else "untied") in note[0]
    assert ("configuration_" in note[0]) or "PretrainedConfig" in note[0]
    for explicit in (True, False):  # a stated value always wins, and nothing is assumed
        m2 = model_from_config({**cfg, "tie_word_embeddings": explicit})
        assert m2.lm_head_tied is explicit
        assert not any(a.startswith("tie_word_embeddings") for a in m2.assumptions)


def test_wrapper_takes_the_decoder_type_and_top_level_tie():
    inner = _dense(model_type="gemma")
    assert model_from_config({"model_type": "x", "text_config": inner}).lm_head_tied
    top = {"model_type": "x", "tie_word_embeddings": False, "text_config": inner}
    assert not model_from_config(top).lm_head_tied


def test_gemma2_9b_alternates_and_counts_9_24b():
    m = load_model("gemma-2-9b")  # config without layer_types and without tie_word_embeddings
    assert m.params_total == 9_241_705_984 and rel(m.params_total, 9.24e9) < 0.001
    untied = model_from_config({**json.loads((REPO / "grids/data/models/gemma-2-9b.json")
                                             .read_text()), "tie_word_embeddings": False})
    assert rel(untied.params_total, 10.16e9) < 0.001  # the old, wrong count
    # 42 layers: 0, 2, ..., 40 sliding (window 4096), 1, 3, ..., 41 global
    per_layer = 2 * 8 * 256
    assert m.window == 4096 and not m.window_chunked
    assert m.kv_elems_window == m.kv_elems_full == 21 * per_layer
    d = 3584
    assert m.params_attn == 42 * (d * 16 * 256 + 2 * d * 8 * 256 + 16 * 256 * d + 4 * d)


@pytest.mark.parametrize("n_layers", [1, 2, 5, 7])
def test_which_gemma2_layers_are_sliding(n_layers):
    # layer i is global iff (i + 1) % 2 == 0 (Gemma2Config layer_types): the sliding ones are the
    # even indices; compare with the same config written with explicit layer_types
    cfg = _dense(model_type="gemma2", num_hidden_layers=n_layers, sliding_window=16)
    types = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n_layers)]
    implicit, explicit = model_from_config(cfg), model_from_config({**cfg, "layer_types": types})
    assert implicit.to_dict() == {**explicit.to_dict(), "assumptions": list(implicit.assumptions)}
    assert implicit.kv_elems_window == ((n_layers + 1) // 2) * 2 * 2 * 16


@pytest.mark.parametrize("model_type, pattern_key, period", [
    ("gemma3_text", "sliding_window_pattern", 6), ("cohere2", "sliding_window_pattern", 4),
    ("gpt_oss", None, 2),
])
def test_alternating_patterns_of_other_model_types(model_type, pattern_key, period):
    L, per_layer = 12, 2 * 2 * 16
    m = model_from_config(_dense(model_type=model_type, num_hidden_layers=L, sliding_window=32))
    n_full = L // period
    assert (m.kv_elems_full, m.kv_elems_window) == (n_full * per_layer, (L - n_full) * per_layer)
    assert m.window == 32
    if pattern_key:
        assert any(a.startswith(f"{pattern_key} absent") for a in m.assumptions)
        m3 = model_from_config(_dense(model_type=model_type, num_hidden_layers=L,
                                      sliding_window=32, **{pattern_key: 3}))
        assert m3.kv_elems_full == (L // 3) * per_layer


def test_alternating_window_defaults_and_null():
    m = model_from_config(_dense(model_type="gemma2"))  # no sliding_window: class default
    assert m.window == 4096 and any(a.startswith("sliding_window absent: 4096") for a in m.assumptions)
    none = model_from_config(_dense(model_type="gemma2", sliding_window=None))
    assert none.window == 0 and none.kv_elems_window == 0


def test_sliding_window_rules_of_qwen_and_mistral():
    qwen = _dense(model_type="qwen2", num_hidden_layers=40, sliding_window=64)
    m = model_from_config(qwen)  # use_sliding_window absent: Qwen2Config default false
    assert m.window == 0 and any("use_sliding_window absent" in a for a in m.assumptions)
    on = model_from_config({**qwen, "use_sliding_window": True})  # max_window_layers default 28
    assert on.kv_elems_window == 12 * 2 * 2 * 16 and on.window == 64
    on5 = model_from_config({**qwen, "use_sliding_window": True, "max_window_layers": 5})
    assert on5.kv_elems_window == 35 * 2 * 2 * 16
    mistral = model_from_config(_dense(model_type="mistral"))  # MistralConfig default 4096
    assert mistral.window == 4096 and mistral.kv_elems_full == 0
    assert model_from_config(_dense(model_type="mistral", sliding_window=None)).window == 0


def test_chunked_versus_sliding_flag():
    for mid in ("llama-4-scout", "llama-4-maverick"):
        assert load_model(mid).window_chunked, mid
    for mid in ("gpt-oss-20b", "gpt-oss-120b", "mistral-7b", "gemma-2-9b"):
        m = load_model(mid)
        assert m.window > 0 and not m.window_chunked, mid
    assert not load_model("llama-3.1-8b").window_chunked
    # layer_types with chunked layers only is chunked; mixing both kinds is an error
    cfg = _dense(attention_chunk_size=64, sliding_window=64)
    chunked = model_from_config({**cfg, "layer_types": ["chunked_attention", "full_attention"] * 2})
    assert chunked.window_chunked and chunked.window == 64
    with pytest.raises(SpecError, match="only one window kind"):
        model_from_config({**cfg, "layer_types": ["chunked_attention", "sliding_attention"] * 2})
    # a Llama 4 config without attention_chunk_size takes Llama4TextConfig's 8192
    l4 = model_from_config(_dense(model_type="llama4_text"))
    assert l4.window_chunked and l4.window == 8192
    assert any(a.startswith("attention_chunk_size absent") for a in l4.assumptions)


@pytest.mark.parametrize("rope, model_type, expected", [
    (None, "llama", 4096),
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 512}, "llama", 4096),
    ({"rope_type": "longrope", "original_max_position_embeddings": 1024}, "phi3", 4096),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}, "qwen2",
     16384),
    ({"type": "yarn", "factor": 40, "original_max_position_embeddings": 100}, "deepseek_v3", 4096),
    ({"rope_type": "yarn", "factor": 2.0}, "qwen3", 8192),
    ({"type": "linear", "factor": 2.0}, "llama", 8192),
    ({"rope_type": "dynamic", "factor": 3.0}, "llama", 12288),
    ({"rope_type": "linear", "factor": 8.0}, "gemma3_text", 4096),
    ({"rope_type": "mrope", "mrope_section": [16, 24, 24]}, "qwen2_vl", 4096),
])
def test_max_context_rules(rope, model_type, expected):
    m = model_from_config(_dense(model_type=model_type, rope_scaling=rope))
    assert m.max_position_embeddings == 4096
    assert m.max_context == expected == m.to_dict()["max_context"]


def test_max_context_from_rope_parameters_and_unknown_types():
    nested = {"full_attention": {"rope_type": "yarn", "factor": 2.0},
              "sliding_attention": {"rope_type": "default"}}
    assert model_from_config(_dense(rope_parameters=nested)).max_context == 8192
    m = model_from_config(_dense(rope_scaling={"rope_type": "funky", "factor": 9.0}))
    assert m.max_context == 4096 and any("'funky' is not recognised" in a for a in m.assumptions)
    assert load_model("llama-3.1-8b").max_context == 131072  # no rope_scaling in the file


def test_assumptions_recorded_for_unknown_model_type():
    m = model_from_config(_dense(model_type="my_arch"))
    text = "\n".join(m.assumptions)
    assert "model_type 'my_arch' is not recognised" in text and "Llama-style" in text
    assert "tie_word_embeddings absent: tied" in text and "PretrainedConfig" in text
    assert all(isinstance(a, str) and a and "\n" not in a for a in m.assumptions)
    assert json.loads(json.dumps(m.to_dict()))["assumptions"] == list(m.assumptions)
    no_kv = model_from_config({k: v for k, v in _dense(model_type="llama").items()
                               if k != "num_key_value_heads"})
    assert no_kv.n_kv_heads == 4 and any("num_key_value_heads absent" in a
                                         for a in no_kv.assumptions)
    # a fully specified known config assumes nothing
    assert model_from_config(_dense(model_type="llama", tie_word_embeddings=False)).assumptions == ()
    assert load_model("llama-3.1-8b").assumptions == ()


# --------------------------------------------------------------------------------------------------
# bounds and bad input: one SpecError listing every problem, never another exception


def test_huge_fields_are_bounded_with_clear_messages():
    cfg = _dense(vocab_size=1e15, hidden_size=10**400, num_hidden_layers=10**6,
                 sliding_window=2**40, rope_scaling={"rope_type": "yarn", "factor": 1e9})
    with pytest.raises(SpecError) as ei:
        model_from_config(cfg)
    text = "\n".join(ei.value.problems)
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "sliding_window",
                "rope_scaling.factor"):
        assert f"'{key}' must be" in text, key
    assert f"<= {_MAX_DIM:,}" in text and f"<= {_MAX_LAYERS:,}" in text
    assert "an integer of 1329 bits" in text  # 10**400 shown without overflowing
    assert len(ei.value.problems) == 5


@pytest.mark.parametrize("over, needle", [
    ({"layer_types": [[1], {}, None, "sliding_attention"]}, "layer_types[0]"),
    ({"moe_layers": 3, "num_local_experts": 4, "num_experts_per_tok": 1}, "'moe_layers'"),
    ({"mlp_only_layers": [True, 99], "num_local_experts": 4, "num_experts_per_tok": 1},
     "'mlp_only_layers' entries"),
    ({"no_rope_layers": [2, 1, 1, 1], "attention_chunk_size": 8}, "'no_rope_layers'"),
    ({"tie_word_embeddings": "yes"}, "'tie_word_embeddings' must be true or false"),
    ({"use_sliding_window": "false", "sliding_window": 8}, "'use_sliding_window'"),
    ({"rope_scaling": "yarn"}, "'rope_scaling' must be an object"),
    ({"rope_parameters": {"full_attention": 5}}, "'rope_parameters.full_attention'"),
    ({"model_type": ["llama"]}, "'model_type' must be a string"),
    ({"block_configs": [[], {}, 3, None]}, "block_configs[0]"),
    ({"block_configs": [{"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": 1e12}}] * 4},
     "'ffn_mult' must be a number"),
    ({"head_dim": float("nan")}, "'head_dim' must be an integer"),
])
def test_bad_field_values_give_spec_error(over, needle):
    with pytest.raises(SpecError) as ei:
        model_from_config(_dense(**over))
    assert needle in str(ei.value)


@given(sts.hf_configs())
def test_generated_valid_configs_parse(cfg):
    m = model_from_config(cfg)
    assert 0 < m.params_active <= m.params_total
    assert m.max_context >= m.max_position_embeddings > 0
    assert m.window_chunked <= (m.kv_elems_window > 0)
    assert len(set(m.assumptions)) == len(m.assumptions)


@given(sts.corrupted_configs())
def test_any_corruption_gives_spec_error_or_a_model(case):
    cfg, _ = case
    try:
        m = model_from_config(cfg)
    except SpecError as exc:
        assert exc.problems and all(isinstance(p, str) and p.strip() for p in exc.problems)
        assert len(set(exc.problems)) == len(exc.problems)
        return
    for f in ("params_total", "params_active", "kv_elems_full", "act_elems", "max_context"):
        assert math.isfinite(float(getattr(m, f))) and getattr(m, f) >= 0, f


@given(base=sts.hf_configs(), key=st.sampled_from(["hidden_size", "num_hidden_layers",
                                                   "vocab_size", "intermediate_size",
                                                   "max_position_embeddings", "head_dim",
                                                   "sliding_window", "num_local_experts",
                                                   "attention_chunk_size", "kv_lora_rank"]),
       value=st.one_of(st.integers(_MAX_DIM + 1, 10**400),
                       st.integers(10, 300).map(lambda e: 10.0**e)))  # integral floats
def test_out_of_bound_values_are_named(base, key, value):
    inner = base.get("text_config", base)
    inner[key] = value
    with pytest.raises(SpecError) as ei:
        model_from_config(base)
    assert any(p.startswith(f"'{key}' must be <=") for p in ei.value.problems), ei.value.problems


@given(sts.corrupted_configs())
def test_corrupted_config_files_give_spec_error(tmp_path_factory, case):
    cfg, _ = case
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(cfg))  # NaN/Infinity and huge integers are written as JSON allows
    try:
        m = load_model(path)
    except SpecError as exc:  # anything else fails the test
        assert exc.problems and str(path) in str(exc)
    else:
        assert isinstance(m, ModelArch) and m.id.startswith("cfg")


def test_hugging_face_ids_resolve_from_the_local_cache(tmp_path, monkeypatch):
    """``meta-llama/Llama-3.1-8B`` reads the config.json that ``refs/main`` names in the hub
    cache (HF_HUB_CACHE), and a missing one gives the exact path looked for and the fix."""
    import shutil

    from grids.models import hf_config_path, load_model

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--meta-llama--Llama-3.1-8B"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parents[1] / "grids" / "data" / "models"
                / "llama-3.1-8b.json", snap / "config.json")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123\n")
    m = load_model("meta-llama/Llama-3.1-8B")
    assert m.id == "meta-llama/Llama-3.1-8B"
    assert m.params_total == load_model("llama-3.1-8b").params_total
    assert hf_config_path("meta-llama/Llama-3.1-8B") == snap / "config.json"
    with pytest.raises(SpecError) as err:
        load_model("mistralai/Mistral-7B-v0.1")
    msg = str(err.value)
    assert str(tmp_path / "models--mistralai--Mistral-7B-v0.1" / "snapshots") in msg
    assert "huggingface-cli download mistralai/Mistral-7B-v0.1 config.json" in msg
