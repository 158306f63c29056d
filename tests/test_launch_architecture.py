"""A model no record matches, built from what the launch gives: Megatron flags (slime's
scripts/models/*.sh) or the config.json in the local model folder; or one line saying exactly
what is missing. Checked against the KB's model records, whose numbers come from the models'
published configurations by another path."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.kb.schema.specs import Architecture

from rlmguide.cli import cli
from rlmguide.review import Hardware, ReviewError, review
from rlmguide.review.architecture import ArchitectureMissing, from_hf_config, from_megatron
from rlmguide.review.budget import Budget

SLIME = Path(__file__).parent / "fixtures" / "review" / "slime-624b824"
SHAPES = ("layers", "hidden", "heads", "kv_heads", "vocab", "tied_embeddings", "qkv_bias")


def _record(model_id: str) -> Any:
    return load_catalog(record_roots(), ("model",)).of("model")[model_id]


def _unknown_model(tmp_path: Path, script: str, model_path: str) -> Path:
    """The slime fixture tree with the script's checkpoint renamed to one no record has."""
    shutil.copytree(SLIME, tmp_path / "slime")
    path = tmp_path / "slime" / "scripts" / script
    text = re.sub(r"--hf-checkpoint \S+", f"--hf-checkpoint {model_path}", path.read_text())
    path.write_text(text)
    return path


def test_the_architecture_is_read_from_the_sourced_megatron_flags(tmp_path: Path) -> None:
    script = _unknown_model(tmp_path, "run-qwen3-4B.sh", "/nowhere/MyModel")
    got = review(script, hardware=Hardware("h100-sxm-80gb"))
    policy = got["scenario"]["models"]["policy"]
    record = _record("qwen3-4b")
    assert {k: policy[k] for k in SHAPES} == {k: getattr(record, k) for k in SHAPES}
    assert (policy["head_dim"], policy["ffn"], policy["ffn_kind"]) == (128, 9728, "gated")
    (said,) = [a for a in got["assumed"] if a["field"] == "models.policy"]
    # the first architecture flag of scripts/models/qwen3-4B.sh (its line 4: --swiglu)
    models = tmp_path / "slime" / "scripts" / "models" / "qwen3-4B.sh"
    assert said["source"] == f"{models}:4"
    assert f"architecture read from {models}:4" in said["why"]
    # no context bound in the flags: the run's own lengths, said so
    workload = got["scenario"]["workload"]
    context = [a for a in got["assumed"] if a["field"] == "models.policy.max_context_tokens"]
    assert context[0]["value"] == workload["prompt_tokens"] + workload["max_response_tokens"]
    assert got["estimate"]["step_seconds"] > 0


def test_a_moe_whose_layer_split_a_loop_builds_is_named_not_guessed(tmp_path: Path) -> None:
    script = _unknown_model(tmp_path, "run-qwen3-30B-A3B.sh", "/nowhere/MyMoE")
    with pytest.raises(ReviewError) as caught:
        review(script, hardware=Hardware("h100-sxm-80gb"))
    message = str(caught.value)
    assert "no /nowhere/MyMoE/config.json on this machine" in message
    assert "--moe-layer-freq empty as read" in message and "\n" not in message
    done = CliRunner().invoke(cli, ["review", str(script), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 2 and done.output.count("\n") == 1


def _flags(**given: Any) -> dict[str, Any]:
    return {k.replace("_", "-"): v for k, v in given.items()}


def test_megatron_flags_of_a_latent_attention_mixture_of_experts() -> None:
    # DeepSeek-V3's numbers as Megatron flags, its dense-then-MoE split in the [0]*N+[1]*M form
    record = _record("deepseek-v3")
    flags = _flags(
        num_layers=61, hidden_size=7168, num_attention_heads=128, ffn_hidden_size=18432,
        vocab_size=129280, max_position_embeddings=163840, swiglu=True,
        untie_embeddings_and_output_weights=True, multi_latent_attention=True, q_lora_rank=1536,
        kv_lora_rank=512, qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128,
        num_experts=256, moe_router_topk=8, moe_ffn_hidden_size=2048,
        moe_shared_expert_intermediate_size=2048, moe_layer_freq="[0]*3+[1]*58",
    )  # fmt: skip
    read = from_megatron(flags, [])
    assert read is not None and read.defaulted == []
    built = Architecture.model_validate(read.spec)
    assert built.params_total == record.architecture.params_total
    assert built.params_active == record.architecture.params_active
    assert built.kv_bytes_per_token == record.architecture.kv_bytes_per_token


def test_megatron_gated_delta_net_flags_give_a_hybrid() -> None:
    flags = _flags(
        num_layers=8, hidden_size=1024, num_attention_heads=8, group_query_attention=True,
        num_query_groups=2, kv_channels=256, ffn_hidden_size=3072, vocab_size=1000,
        max_position_embeddings=4096, swiglu=True, experimental_attention_variant="gated_delta_net",
        linear_attention_freq=4, linear_num_value_heads=16,
    )  # fmt: skip
    read = from_megatron(flags, [])
    assert read is not None
    built = Architecture.model_validate(read.spec)
    assert built.layer_mix == "2 full + 6 linear"
    assert built.linear is not None and built.linear.heads == 16
    # the linear flags left out are Megatron's defaults at 1dcf0da, and said to be
    assert built.linear.key_heads == 16 and built.linear.key_dim == 128
    assert "linear.key_heads" in read.defaulted and "linear.heads" not in read.defaulted


def test_a_custom_layer_spec_is_named_and_a_config_json_settles_it(tmp_path: Path) -> None:
    """slime's Qwen3.5 scripts build their layers with a plugin spec that mixes in linear
    attention from the HF config: named, never costed as dense; with the config.json in the
    model folder the hybrid is read from it."""
    shutil.copytree(SLIME, tmp_path / "slime")
    models = tmp_path / "slime" / "scripts" / "models"
    (models / "hybrid.sh").write_text(
        "MODEL_ARGS=(\n"
        '   --spec "slime_plugins.models.qwen3_5" "get_qwen3_5_spec"\n'
        "   --num-layers 8 --hidden-size 1024 --num-attention-heads 8\n"
        "   --group-query-attention --num-query-groups 2 --kv-channels 256\n"
        "   --ffn-hidden-size 3072 --swiglu --vocab-size 1000\n)\n"
    )
    folder = tmp_path / "Hybrid-1B"
    script = tmp_path / "slime" / "scripts" / "run-hybrid.sh"
    text = (tmp_path / "slime" / "scripts" / "run-qwen3-4B.sh").read_text()
    text = text.replace("models/qwen3-4B.sh", "models/hybrid.sh")
    script.write_text(re.sub(r"--hf-checkpoint \S+", f"--hf-checkpoint {folder}", text))
    with pytest.raises(
        ReviewError, match=re.escape("custom spec slime_plugins.models.qwen3_5.get_qwen3_5_spec")
    ):
        review(script, hardware=Hardware("h100-sxm-80gb"))
    folder.mkdir()
    config = {
        "model_type": "qwen3_5",
        "text_config": {
            "num_hidden_layers": 8, "hidden_size": 1024, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": 3072,
            "vocab_size": 1000, "max_position_embeddings": 32768, "tie_word_embeddings": False,
            "full_attention_interval": 4, "linear_num_value_heads": 16,
            "linear_num_key_heads": 8, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "attn_output_gate": True,
        },
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    got = review(script, hardware=Hardware("h100-sxm-80gb"))
    policy = got["scenario"]["models"]["policy"]
    assert policy["layer_pattern"] == ["linear", "linear", "linear", "full"]
    assert policy["linear"]["heads"] == 16 and policy["attention_output_gate"] is True
    (said,) = [a for a in got["assumed"] if a["field"] == "models.policy"]
    assert said["source"] == str(folder / "config.json")


def _hf_config(record: Any) -> dict[str, Any]:
    """The record's numbers under Hugging Face's key names (written here, by hand, per key)."""
    a = record.architecture
    config: dict[str, Any] = {
        "num_hidden_layers": a.layers, "hidden_size": a.hidden,
        "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
        "vocab_size": a.vocab, "max_position_embeddings": a.max_context_tokens,
        "tie_word_embeddings": a.tied_embeddings, "attention_bias": a.qkv_bias,
    }  # fmt: skip
    if a.head_dim:
        config["head_dim"] = a.head_dim
    if a.ffn:
        config["intermediate_size"] = a.ffn
    if a.moe:
        config |= {
            "n_routed_experts": a.moe.experts, "num_experts_per_tok": a.moe.experts_per_token,
            "moe_intermediate_size": a.moe.expert_ffn,
            "first_k_dense_replace": a.moe.dense_layers,
        }  # fmt: skip
        if a.moe.shared_experts:
            config["n_shared_experts"] = a.moe.shared_experts
    if a.mla:
        config |= a.mla.model_dump()
    if a.layer_pattern:
        kinds = {"full": "full_attention", "linear": "linear_attention"}
        config["layer_types"] = [kinds[k] for k in a.layer_kinds]
    if a.linear:
        config |= {
            "linear_num_value_heads": a.linear.heads, "linear_num_key_heads": a.linear.key_heads,
            "linear_key_head_dim": a.linear.key_dim, "linear_value_head_dim": a.linear.value_dim,
            "linear_conv_kernel_dim": a.linear.conv_kernel,
        }  # fmt: skip
    config["attn_output_gate"] = a.attention_output_gate
    return config


@pytest.mark.parametrize(
    "model_id", ["qwen2.5-7b", "qwen3-4b", "qwen3-30b-a3b", "deepseek-v3", "qwen3.5-35b-a3b"]
)
def test_a_config_json_reads_back_the_records_architecture(tmp_path: Path, model_id: str) -> None:
    record = _record(model_id)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_hf_config(record)))
    built = Architecture.model_validate(from_hf_config(path, Budget()).spec)
    a = record.architecture
    assert (built.params_total, built.params_active) == (a.params_total, a.params_active)
    assert built.kv_bytes_per_token == a.kv_bytes_per_token
    assert (built.layer_mix, built.attention) == (a.layer_mix, a.attention)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("[1, 2", "not a readable config.json"), ("[1, 2]", "holds an object")],
)
def test_a_broken_config_json_is_one_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ArchitectureMissing, match=problem):
        from_hf_config(path, Budget())


def test_qk_norm_is_read_from_the_flag_or_the_model_type(tmp_path: Path) -> None:
    # Megatron builds q and k norms only under --qk-layernorm; no config.json key says so, the
    # Qwen3 model types' code has them, another type's stays unknown (null, costed without).
    flags = _flags(num_layers=36, hidden_size=4096, num_attention_heads=32, vocab_size=151936,
                   group_query_attention=True, num_query_groups=8, swiglu=True)  # fmt: skip
    for given, expected in (({"qk-layernorm": True}, True), ({}, False)):
        read = from_megatron({**flags, **given}, [])
        assert read is not None and read.spec["qk_norm"] is expected
    config = _hf_config(_record("qwen3-8b"))
    for kind, expected in (("qwen3", True), ("qwen3_moe", True), ("llama", None)):
        path = tmp_path / f"{kind}.json"
        path.write_text(json.dumps({**config, "model_type": kind}))
        assert from_hf_config(path, Budget()).spec.get("qk_norm") is expected
