"""Attention kinds in the architecture schema: layer patterns, linear and sparse mixers, the
parameters, cache figures and the one-line refusal they give, worked by hand and checked
against the parameter counts the model makers publish."""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest
from click.testing import CliRunner
from pydantic import ValidationError
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Architecture, LinearAttention

from rlmguide.cli import cli

EXAMPLE = "examples/grpo-qwen2.5-7b-8xh100.yaml"
GDN = dict(kind="gated-deltanet", heads=32, key_heads=16, key_dim=128, value_dim=128)
DENSE = dict(layers=4, hidden=2048, heads=16, kv_heads=2, head_dim=256, ffn=8192)
DENSE |= dict(vocab=1000, max_context_tokens=4096)


@functools.cache
def models() -> dict:
    return dict(load_catalog(DEFAULT_ROOTS, ["model"]).of("model"))


def test_gated_deltanet_layer_parameters_by_hand() -> None:
    # Qwen3.5-35B-A3B's linear layer: q and k of 16 x 128, v and the gate z of 32 x 128
    # (conv channels 2*16*128 + 32*128 = 8,192), beta and alpha per value head (64).
    projection = 2048 * (8192 + 4096 + 64)
    conv = 8192 * 4
    per_head = 2 * 32  # A_log, dt_bias
    norm = 128
    out = 4096 * 2048
    assert LinearAttention(**GDN).params(2048) == projection + conv + per_head + norm + out
    # state: 32 heads of 128 x 128, and the last 3 inputs of the 8,192-channel convolution
    assert LinearAttention(**GDN).state_elements == 32 * 128 * 128 + 3 * 8192


def test_mamba2_layer_parameters_by_hand() -> None:
    # Nemotron 3 Nano: 64 heads of 64 channels (d_inner 4,096), 8 groups of state 128
    # (conv channels 4,096 + 2*8*128 = 6,144); in_proj writes z, x, B, C and dt.
    mamba = LinearAttention(kind="mamba2", heads=64, key_heads=8, key_dim=128, value_dim=64)
    projection = 2688 * (6144 + 4096 + 64)
    conv = 6144 * 4 + 6144  # kernel and bias
    per_head = 3 * 64  # A_log, D, dt_bias
    assert mamba.params(2688) == projection + conv + per_head + 4096 + 4096 * 2688
    assert mamba.state_elements == 64 * 64 * 128 + 3 * 6144


def test_a_pattern_repeats_over_the_layers() -> None:
    arch = Architecture(
        **DENSE | dict(layers=6), layer_pattern=["sliding", "full"], sliding_window=128
    )
    assert arch.layer_kinds == ["sliding", "full"] * 3
    assert arch.layer_mix == "3 full + 3 sliding"
    per_layer = 2 * 2 * 256 * 2  # K and V of 2 heads of 256, bf16
    assert arch.kv_bytes_per_token == 3 * per_layer
    assert arch.window_kv_bytes_per_token == 3 * per_layer
    # a pattern that does not divide the layers is cut at the last layer (Gemma 3: 5:1)
    arch = Architecture(
        **DENSE | dict(layers=8), layer_pattern=["sliding"] * 5 + ["full"], sliding_window=1024
    )
    assert arch.layer_count("full") == 1 and arch.layer_count("sliding") == 7


def test_linear_layers_hold_a_state_and_no_kv() -> None:
    arch = Architecture(
        **DENSE,
        layer_pattern=["linear", "linear", "linear", "full"],
        linear=GDN,
        attention_output_gate=True,
    )
    assert arch.kv_bytes_per_token == 2 * 2 * 256 * 2  # the one full layer
    assert arch.state_bytes_per_sequence == 3 * LinearAttention(**GDN).state_elements * 2
    # the output gate is a second query-sized projection on each attention layer
    gate = 2048 * 16 * 256
    plain = Architecture(**DENSE, layer_pattern=["linear", "linear", "linear", "full"], linear=GDN)
    assert arch.params_total - plain.params_total == gate


def test_sparse_layers_cache_the_indexer_key() -> None:
    model = models()["deepseek-v3.2"]
    arch = model.architecture
    assert arch.layer_mix == "61 sparse"
    assert model.kv_bytes_per_token == (512 + 64 + 128) * 61 * 2  # latent, RoPE key, indexer
    # the indexer: q from the 1,536 query latent to 64 x 128, k from the hidden state to 128,
    # its norm (weight and bias) and a weight per head
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert arch.indexer_params == indexer
    assert arch.params_total - models()["deepseek-v3"].params_total == 61 * indexer


@pytest.mark.parametrize(
    ("model", "total_b", "active_b"),
    [
        ("qwen3.5-397b-a17b", 397, 17),  # with its 0.4B vision encoder
        ("qwen3.5-35b-a3b", 35, 3),
        ("nemotron-3-nano-30b-a3b", 31.6, 3.6),  # NVIDIA: 31.6B total, 3.6B with embeddings
        ("nemotron-3-super-120b-a12b", 120, 12),
        ("deepseek-v3.2", 671, 37),
        ("glm-5", 744, 40),
        ("minimax-m2.5", 229, 10),
        ("moonlight-16b-a3b", 16, 3),
        ("qwen1.5-moe-a2.7b", 14.3, 2.7),  # its card: 14.3B in total, 2.7B activated
        ("deepseek-llm-7b", 7, 7),
        ("gemma-3-1b", 1, 1),
    ],
)
def test_parameters_match_what_the_makers_publish(model: str, total_b: float, active_b: float):
    record = models()[model]
    vision = record.vision_params or 0
    assert (record.params_total + vision) / 1e9 == pytest.approx(total_b, rel=0.04)
    assert record.params_active / 1e9 == pytest.approx(active_b, rel=0.2)


def test_every_kind_needs_its_numbers() -> None:
    with pytest.raises(ValidationError, match="layer_pattern has sliding layers but no"):
        Architecture(**DENSE, layer_pattern=["sliding", "full"])
    with pytest.raises(ValidationError, match="linear is given but layer_pattern has no"):
        Architecture(**DENSE, linear=GDN)
    with pytest.raises(ValidationError, match="longer than the 4 layers"):
        Architecture(**DENSE, layer_pattern=["full"] * 5)
    without_ffn = {k: v for k, v in DENSE.items() if k != "ffn"}
    with pytest.raises(ValidationError, match="ffn is required"):
        Architecture(**without_ffn)
    moe = dict(experts=8, experts_per_token=2, expert_ffn=512)
    assert Architecture(**without_ffn, moe=moe).params_total > 0


def test_a_stack_of_separate_mixer_and_ffn_blocks_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(
        cli, ["estimate", EXAMPLE, "--set", "models.policy=nemotron-3-nano-30b-a3b"]
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: models.policy: nemotron-3-nano-30b-a3b has feed-forward-only layers (mixers "
        "and feed-forward networks as separate blocks), which the cost model does not cost yet"
    ]


@pytest.mark.parametrize("model", ["qwen3.5-35b-a3b", "gpt-oss-120b", "deepseek-v3.2"])
def test_the_other_kinds_are_costed(model: str) -> None:
    assert models()[model].costing_gap is None


def test_recommend_refuses_it_too_as_a_process() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlmguide",
            "recommend",
            EXAMPLE,
            "--policy",
            "nemotron-3-super-120b-a12b",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "nemotron-3-super-120b-a12b has feed-forward-only layers" in done.stderr
    assert "Traceback" not in done.stderr
