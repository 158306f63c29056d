"""NeMo-RL's SGLang generation as its code at 7ea279abf runs it: colocated, synchronous GRPO
refit from the DTensor (v2) policy workers, on engines without pipeline parallelism
(constraints nemo-rl-sglang-*, nemo-rl-ppo-sglang-refit-unset). Each case pins one plan and
reads which (training backend, rollout engine) pairs NeMo-RL's constraints leave it."""

from __future__ import annotations

from typing import Any

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Scenario
from rlmguide.rules.recommend import recommender_for
from rlmguide.rules.scenario import resolve

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
SGLANG = ("pytorch-fsdp", "sglang")


def pairs(algorithm: str, rollout_pp: int, zero: int = 3) -> list[tuple[Any, Any]]:
    """NeMo-RL's allowed pairs for a colocated synchronous plan of Qwen2.5-7B on 8 H100s."""
    scenario = Scenario.model_validate(
        {
            "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
            "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
            "workload": {
                "algorithm": algorithm, "prompts_per_step": 64, "samples_per_prompt": 8,
                "prompt_tokens": 512, "response_tokens": 1024, "max_response_tokens": 2048,
            },
            "plan": {
                "placement": "colocated", "execution": "sync",
                "rollout": {"gpus": 8, "tp": 2, "pp": rollout_pp, "ep": 1},
                # ZeRO-3 is NeMo-RL's DTensor backend, ZeRO-1 its Megatron one
                "train": {"gpus": 8, "tp": 1 if zero == 3 else 2, "pp": 1, "cp": 1, "ep": 1,
                          "zero": zero, "recompute": "full",
                          # colocated, NeMo-RL always parks the trainer
                          # (constraint nemo-rl-colocated-parks-trainer-state)
                          "offload": {"phase": True, "frozen": True}},
            },
        }
    )  # fmt: skip
    recommender = recommender_for(resolve(scenario, CATALOG.records), CATALOG)
    recommender.run()
    return recommender.pairs_for("nemo-rl", 0)


def test_grpo_on_dtensor_runs_sglang_engines_of_one_stage() -> None:
    assert SGLANG in pairs("grpo", rollout_pp=1)


def test_sglang_engines_with_a_pipeline_are_refused() -> None:
    # sglang/config.py L152-L159: pp_size stays 1 in this version; vLLM takes the plan instead
    found = pairs("grpo", rollout_pp=2)
    assert SGLANG not in found and ("pytorch-fsdp", "vllm") in found


def test_ppo_never_refits_sglang() -> None:
    # ppo.py L893-L910 never sets the engine size the DTensor worker's refit asserts
    found = pairs("ppo", rollout_pp=1)
    assert found and all(engine != "sglang" for _, engine in found)


def test_megatron_training_never_refits_sglang() -> None:
    # only the DTensor (v2) worker defines set_rollout_num_gpus_per_engine (grpo.py L1442)
    found = pairs("grpo", rollout_pp=1, zero=1)
    assert ("megatron-lm", "vllm") in found and all(engine != "sglang" for _, engine in found)
