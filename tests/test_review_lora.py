"""Review reads verl's and SkyRL's LoRA rank into the plan it costs.

verl's example qwen2-14b_grpo-lora_2_h100_fsdp_vllm.sh (b178a3cd) trains rank-32 adapters on
Qwen2.5-14B over 2 GPUs; review left `actor_rollout_ref.model.lora_rank` unmapped and costed
full fine-tuning (Adam over 14.8e9 weights: 112 GiB a GPU, "fits: no"). SkyRL's text2sql example
(a9564572) trains rank-32 adapters on Qwen2.5-Coder-7B with Megatron TP 4 over 8 GPUs, no KL."""

from __future__ import annotations

from pathlib import Path

import pytest
from launch_support import review_json

FIXTURES = Path(__file__).parent / "fixtures" / "review"
LAUNCH = FIXTURES / "verl-b178a3c-qwen2-14b_grpo-lora_2_h100_fsdp_vllm.sh"
SKYRL = FIXTURES / "skyrl-a956457-run_skyrl_sql_megatron_lora.sh"

# Qwen2.5-14B (kb/records/models/qwen2.5-14b.yaml): 48 layers, hidden 5120, 8 KV heads of 128,
# MLP 13824. Rank-32 adapters on every linear layer, A (in x r) and B (r x out) each:
# q, o: 32 x (5120 + 5120); k, v: 32 x (5120 + 1024); gate, up, down: 32 x (5120 + 13824).
ADAPTER = 48 * 32 * (2 * 10240 + 2 * 6144 + 3 * 18944)
# Qwen2.5-7B (qwen2.5-7b.yaml): 28 layers, hidden 3584, 4 KV heads of 128, MLP 18944.
ADAPTER_7B = 28 * 32 * (2 * 7168 + 2 * 4096 + 3 * 22528)
GIB = 2**30


def test_the_adapters_are_counted_by_hand() -> None:
    assert (ADAPTER, ADAPTER_7B) == (137_625_600, 80_740_352)


@pytest.fixture(scope="module")
def reviewed() -> dict:
    return review_json(LAUNCH, "--accelerator", "h100-sxm-80gb")


def test_the_lora_rank_is_read_into_the_plan(reviewed: dict) -> None:
    assert reviewed["scenario"]["plan"]["train"]["lora_rank"] == 32
    assert "actor_rollout_ref.model.lora_rank" not in {u["key"] for u in reviewed["unmapped"]}


def test_only_the_adapters_carry_adam_states(reviewed: dict) -> None:
    training = reviewed["estimate"]["memory_breakdown_gib"]["training"]
    # fp32 master, m and v (12 bytes) for the adapters alone, sharded over the 2 ranks
    assert training["optimizer"] == pytest.approx(ADAPTER * 12 / 2 / GIB, rel=1e-6)
    assert reviewed["estimate"]["feasible"] is True


def test_skyrl_megatron_lora_is_read_and_costed() -> None:
    got = review_json(SKYRL, "--accelerator", "h100-sxm-80gb")
    assert got["scenario"]["plan"]["train"]["lora_rank"] == 32
    training = got["estimate"]["memory_breakdown_gib"]["training"]
    # the adapters split over TP 4, Adam's 12 bytes sharded over the 2 data-parallel ranks
    assert training["optimizer"] == pytest.approx(ADAPTER_7B / 4 * 12 / 2 / GIB, rel=1e-6)
