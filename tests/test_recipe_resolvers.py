"""NeMo-RL recipes size their packed micro-batches with the arithmetic resolvers NeMo-RL registers
(add, mul, div, max: nemo_rl/utils/config.py L198-L204 at 7ea279ab); review reads them as
NeMo-RL computes them, not as text (audit8 rv/r6)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from launch_support import review_json

from rlmguide.review.recipe import RecipeError, resolve

FIXTURE = Path(__file__).parent / "fixtures" / "review" / "wild" / "nemo-rl-7ea279a"


def test_arithmetic_resolvers_by_hand() -> None:
    flat = {
        "len": 4096,
        "mb": 2,
        "train": "${mul:${len}, ${mb}}",
        "sum": "${add:${len}, 512}",
        "half": "${div:${len}, 2}",
        "most": "${max:${mb}, 3}",
        "zero": "${div:${len}, 0}",
        "other": "${oc.select:len, 1}",
        "text": "${mul:${len}, many}",
    }
    got = resolve(flat)
    assert (got["train"], got["sum"], got["half"], got["most"]) == (8192, 4608, 2048.0, 3)
    # what NeMo-RL would stop on or no number gives stays as written
    assert got["zero"] == "${div:4096, 0}" and got["text"] == "${mul:4096, many}"
    assert got["other"] == "${oc.select:len, 1}"


def test_review_costs_the_packed_micro_batch_the_base_config_computes(tmp_path: Path) -> None:
    # grpo_math_1B.yaml at 7ea279ab: train_mb_tokens = ${mul:max_total_sequence_length,
    # train_micro_batch_size}; the recipe sets 4096 x 1, so a micro-batch packs 4,096 tokens
    tree = tmp_path / "examples" / "configs"
    shutil.copytree(FIXTURE / "examples" / "configs", tree)
    recipe = tree / "recipes" / "llm" / "packed.yaml"
    recipe.write_text(
        "defaults: ../../grpo_math_1B.yaml\n"
        "policy:\n"
        "  model_name: meta-llama/Llama-3.1-8B-Instruct\n"
        "  train_micro_batch_size: 1\n"
        "  logprob_batch_size: 2\n"
        "  max_total_sequence_length: 4096\n"
        "  dtensor_cfg: {enabled: false}\n"
        "  megatron_cfg: {enabled: true, activation_checkpointing: true}\n"
        "cluster: {gpus_per_node: 8, num_nodes: 1}\n"
    )
    found = review_json(recipe, "--accelerator", "h100-sxm-80gb")
    keys = {k["key"]: k["value"] for k in found["understood"]}
    assert keys["policy.sequence_packing.train_mb_tokens"] == 4096
    assert keys["policy.sequence_packing.logprob_mb_tokens"] == 8192
    assert found["estimate"]["train"]["micro_batch_tokens"] == 4096


def test_relative_interpolations_resolve_as_omegaconf_resolves_them() -> None:
    """OmegaConf's `${.x}` names a sibling and each further dot climbs a level: NeMo-RL's
    distillation configs at 7ea279ab set policy.generation.max_new_tokens to
    `${..max_total_sequence_length}` and size micro-batches with `${mul:${..a}, ${..b}}`.
    Review once read them as text and refused the recipe ("not a number"); the figures below
    are OmegaConf 2.3's own resolution of the same tree."""
    flat = {
        "policy.max_total_sequence_length": 4096,
        "policy.train_micro_batch_size": 2,
        "policy.generation.temperature": 0.7,
        "policy.generation.max_new_tokens": "${..max_total_sequence_length}",
        "policy.generation.val_temperature": "${.temperature}",
        "policy.dtensor.train_mb_tokens": "${mul:${..max_total_sequence_length}, "
        "${..train_micro_batch_size}}",
    }
    got = resolve(flat)
    assert got["policy.generation.max_new_tokens"] == 4096
    assert got["policy.generation.val_temperature"] == 0.7
    assert got["policy.dtensor.train_mb_tokens"] == 8192


def test_an_interpolation_above_the_root_is_refused() -> None:
    with pytest.raises(RecipeError, match="climbs above"):
        resolve({"a.b": "${...c}"})
