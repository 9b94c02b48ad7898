"""Model catalog and config.json parsing (grids.models)."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grids.errors import SpecError
from grids.models import MODEL_IDS, ModelArch, catalog, catalog_models, list_models, load_model

REPO = Path(__file__).resolve().parents[1]
REFERENCE_CSV = REPO.parent / "shared" / "reference" / "models.csv"

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
CSV_NAME = {"deepseek-v3": "DeepSeek-V3 / R1 (671B)", "deepseek-r1": "DeepSeek-V3 / R1 (671B)"}

EXPECTED_IDS = {
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


def test_reference_table_copied_correctly():
    if not REFERENCE_CSV.exists():
        pytest.skip("shared/reference/models.csv not beside the repo")
    rows = {r["model"]: r for r in csv.DictReader(REFERENCE_CSV.open())}
    names = {mid: CSV_NAME.get(mid, catalog()[mid]["name"]) for mid in REFERENCE_COMPUTED}
    for mid, (total, active) in REFERENCE_COMPUTED.items():
        r = rows[names[mid]]
        assert (int(r["computed_total"]), int(r["computed_active"])) == (total, active), mid


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
        assert m.window == 8192
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
