"""ROLL's FSDP2 strategy as its code at 8eb27cc runs it: fully_shard over a mesh that always
shards (the whole world, or fsdp_size-way groups), with reshard_after_forward choosing ZeRO-3
or ZeRO-2 (constraint roll-fsdp2-shards-optimizer-and-gradients). A plan with replicated
weights (ZeRO 0 or 1) runs only on ROLL's Megatron strategy, which parks the trainer's state
every step when colocated (roll-megatron-parks-trainer-state-every-step). Each case pins one
plan and reads which (training backend, rollout engine) pairs ROLL's constraints leave it."""

from __future__ import annotations

from typing import Any

import pytest
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Scenario
from rlmguide.rules.recommend import recommender_for
from rlmguide.rules.scenario import resolve

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])


def backends(zero: int, phase: bool) -> set[Any]:
    """The training backends ROLL runs a colocated synchronous GRPO plan of Qwen2.5-7B on
    8 H100s with, at ZeRO stage `zero` and with or without phase offload."""
    scenario = Scenario.model_validate(
        {
            "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
            "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
            "workload": {
                "algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
                "prompt_tokens": 512, "response_tokens": 1024, "max_response_tokens": 2048,
            },
            "plan": {
                "placement": "colocated", "execution": "sync",
                "rollout": {"gpus": 8, "tp": 2, "pp": 1, "ep": 1},
                "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": zero,
                          "recompute": "full", "offload": {"phase": phase, "frozen": True}},
            },
        }
    )  # fmt: skip
    # judged on constraints alone: whether the plan fits is another question
    resolved = resolve(scenario, CATALOG.records)
    recommender = recommender_for(resolved, CATALOG, enforce_memory=False, filter_frameworks=False)
    recommender.run()
    return {backend for backend, _ in recommender.pairs_for("roll", 0)}


@pytest.mark.parametrize("zero", [2, 3])
def test_fsdp2_runs_zero_2_and_3(zero: int) -> None:
    assert "pytorch-fsdp" in backends(zero, phase=True)
    assert "pytorch-fsdp" in backends(zero, phase=False)


@pytest.mark.parametrize("zero", [0, 1])
def test_replicated_weights_run_only_on_megatron_which_parks_its_state(zero: int) -> None:
    assert backends(zero, phase=True) == {"megatron-lm"}
    # without phase offload neither strategy runs it: FSDP2 always shards, and colocated
    # Megatron parks the trainer every step
    assert backends(zero, phase=False) == set()
