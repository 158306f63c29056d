"""`rlmguide review`: real launch scripts from the frameworks' repositories (pinned commits,
tests/fixtures/review/, licence noted in each header) read back into scenario and plan.

Each READING is what an engineer reads off the script by hand: GPUs, placement, execution,
every parallelism degree, offload, batch and lengths. Review must reproduce it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO, sets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlmguide.cli import cli
from rlmguide.review import Hardware, ReviewError, review
from rlmguide.review.review import LAUNCH_SETTINGS
from rlmguide.review.shell import ShellError, command_arguments

FIXTURES = Path(__file__).parent / "fixtures" / "review"


def reading(*values: Any) -> dict[str, Any]:
    """An engineer's reading, in the order GPUs, GPUs per node, placement, execution, rollout
    layout, training layout, offload, workload, policy model."""
    names = ("gpus", "per_node", "placement", "execution", "rollout", "train", "offload")
    return dict(zip((*names, "workload", "policy"), values, strict=True))


def w(*values: Any) -> dict[str, Any]:
    """The workload: algorithm, prompts per step, samples per prompt, prompt tokens, longest
    response, optimizer steps per RL step."""
    names = ("algorithm", "prompts_per_step", "samples_per_prompt", "prompt_tokens")
    return dict(zip((*names, "max_response_tokens", "minibatches_per_step"), values, strict=True))


RECIPES_A = "nemo-rl-5fb5889/examples/configs/recipes/llm/"
SLIME = "slime-624b824/scripts/"
RECIPES_B = "nemo-rl-6c70893/examples/configs/recipes/llm/"
OFF = {"phase": False, "optimizer": 0.0, "params": False, "frozen": False}
READINGS: dict[str, tuple[str, dict[str, Any]]] = {
    # trainer.nnodes=8 x 8; rollout TP 4; ulysses 4; offload=True for actor and reference;
    # 512 prompts x 16, mini-batch 32 prompts -> 16 optimizer steps; 2k prompt, 8k response;
    # clip-higher 0.28 and token-mean: DAPO
    "verl-recipe-test_dapo_7b_math.sh": (
        "h800-sxm-80gb",
        reading(
            64,
            8,
            "colocated",
            "sync",
            {"gpus": 64, "tp": 4},
            # fsdp_size=32: hybrid sharding, 2 replicas of 32-way FSDP (tp, pp: FSDP's 1)
            {
                "gpus": 64,
                "tp": 1,
                "pp": 1,
                "cp": 4,
                "zero": 3,
                "shard_group": 32,
                "recompute": "full",
            },
            {**OFF, "phase": True, "frozen": True},
            w("dapo", 512, 16, 2048, 8192, 16),
            "qwen2.5-math-7b",
        ),
    ),
    # one-step-off entry point: trainer 2 x 6 GPUs, rollout 2 x 2; rollout TP 2, ulysses 4;
    # strategy fsdp2 (ZeRO-3), checkpointing at verl's default (on); 512 prompts x 12,
    # mini-batch 32 -> 16 steps; actor_offload=False, ref_offload=True
    "verl-dapo_7b_math_fsdp2_4_12.sh": (
        "h20-96gb",
        reading(
            16,
            8,
            "disaggregated",
            "one-step-off",
            {"gpus": 4, "tp": 2},
            # fsdp_size=2: hybrid sharding, 6 replicas of pairs
            {
                "gpus": 12,
                "tp": 1,
                "pp": 1,
                "cp": 4,
                "zero": 3,
                "shard_group": 2,
                "recompute": "full",
            },
            {**OFF, "frozen": True},
            w("dapo", 512, 12, 2048, 8192, 16),
            "qwen2.5-math-7b",
        ),
    ),
    # 12 nodes x 8; Megatron TP 8 PP 12 EP 8 ETP 1, distributed optimizer (verl's default);
    # rollout TP 32; all offload on;
    # 96 prompts x 8, mini-batch 32 -> 3 steps; 2k + (8k + 1.4k) response
    "verl-run_deepseek671b_math_megatron_96gb.sh": (
        "h20-96gb",
        reading(
            96,
            8,
            "colocated",
            "sync",
            {"gpus": 96, "tp": 32, "cuda_graphs": False},
            {
                "gpus": 96,
                "tp": 8,
                "pp": 12,
                "cp": 1,
                "ep": 8,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
                "last_stage_layers": 6,  # LAST_LAYER=6, the rest split by Megatron
            },
            {"phase": True, "optimizer": 1.0, "params": False, "frozen": True},
            w("dapo", 96, 8, 2048, 9632, 3),
            "deepseek-v3",
        ),
    ),
    # 4 nodes x 8; Megatron TP 4 PP 8 EP 4 ETP 1; verl's defaults: distributed optimizer, no
    # recompute granularity; rollout TP 8; all offload on;
    # 32 prompts x 8, mini-batch 16 -> 2 steps
    "verl-run_qwen3-235b_megatron_96gb.sh": (
        "h20-96gb",
        reading(
            32,
            8,
            "colocated",
            "sync",
            {"gpus": 32, "tp": 8, "cuda_graphs": False},
            {
                "gpus": 32,
                "tp": 4,
                "pp": 8,
                "cp": 1,
                "ep": 4,
                "etp": 1,
                "zero": 1,
                "recompute": "none",
                # account_for_embedding/loss_in_pipeline_split: (94 + 2) / 8 = 12, 11 at the ends
                "first_stage_layers": 11,
                "last_stage_layers": 11,
            },
            {"phase": True, "optimizer": 1.0, "params": False, "frozen": True},
            w("dapo", 32, 8, 2048, 9632, 2),
            "qwen3-235b-a22b",
        ),
    ),
    # NNODES=1 x 8; TP 1 PP 1 CP 1 EP 8 ETP 1 (defaults: distributed optimizer, no recompute);
    # rollout TP 4; offload=True everywhere;
    # 512 prompts x 16, mini-batch 128 -> 4 steps; 2k + 8k
    "verl-run_qwen3moe-30b_megatron_96gb.sh": (
        "h20-96gb",
        reading(
            8,
            8,
            "colocated",
            "sync",
            {"gpus": 8, "tp": 4, "cuda_graphs": False},
            {
                "gpus": 8,
                "tp": 1,
                "pp": 1,
                "cp": 1,
                "ep": 8,
                "etp": 1,
                "zero": 1,
                "recompute": "none",
            },
            {"phase": True, "optimizer": 1.0, "params": False, "frozen": True},
            w("dapo", 512, 16, 2048, 8192, 4),
            "qwen3-30b-a3b",
        ),
    ),
    # PPO (gae) with a critic, 4 nodes x 8, rollout TP 4, checkpointing set False then True
    # (the later override wins), no offload;
    # 1024 prompts, mini-batch 256 -> 4 steps; 1k + 1k
    "verl-run_qwen2.5-32b.sh": (
        "a100-sxm-80gb",
        reading(
            32,
            8,
            "colocated",
            "sync",
            {"gpus": 32, "tp": 4},
            {"gpus": 32, "cp": 1, "zero": 3, "recompute": "full"},
            OFF,
            w("ppo", 1024, 1, 1024, 1024, 4),
            "qwen2.5-32b",
        ),
    ),
    # GRPO on SGLang, 1 node x 8, rollout TP 1, ref offload on; 256 x 16, mini-batch 256 -> 1
    "verl-run_qwen2.5-3b_gsm8k_multiturn.sh": (
        "h100-sxm-80gb",
        reading(
            8,
            8,
            "colocated",
            "sync",
            {"gpus": 8, "tp": 1},
            {"gpus": 8, "cp": 1, "zero": 3, "recompute": "full"},
            {**OFF, "frozen": True},
            w("grpo", 256, 16, 1024, 1024, 1),
            "qwen2.5-3b",
        ),
    ),
    # PPO with a 70B reward model: actor 8, critic 8, ref 4, reward 4, 4 vLLM engines x TP 2
    # = 32 GPUs; ZeRO-3 (DeepSpeed TP and ring attention at the parser's default 1), Adam
    # offload, checkpointing; 1024 prompts, train batch 128 -> 8 steps
    "openrlhf-train_ppo_llama_ray_70b.sh": (
        "a100-sxm-80gb",
        reading(
            32,
            8,
            "disaggregated",
            "sync",
            {"gpus": 8, "tp": 2},
            {"gpus": 8, "tp": 1, "cp": 1, "zero": 3, "recompute": "full"},
            {**OFF, "optimizer": 1.0},
            w("ppo", 1024, 1, 1024, 1024, 8),
            "llama-3-70b",
        ),
    ),
    # colocate_all hybrid engine: everything on 8 GPUs, 4 engines x TP 2, ZeRO-3, sleep mode
    # (phase offload); REINFORCE++; 1024 prompts, train batch 128 -> 8 steps
    "openrlhf-train_reinforce_llama_ray_hybrid_engine.sh": (
        "a100-sxm-80gb",
        reading(
            8,
            8,
            "colocated",
            "sync",
            {"gpus": 8, "tp": 2, "cuda_graphs": False},
            {"gpus": 8, "tp": 1, "cp": 1, "zero": 3, "recompute": "full"},
            {**OFF, "phase": True},
            w("reinforce-plus-plus", 1024, 1, 1024, 1024, 8),
            "llama-3-8b",
        ),
    ),
    # v0.11 dotted flags: async + partial rollouts, actor 4 GPUs ring 2, 2 engines x TP 2,
    # reference on the actor's GPUs; 128 x 8 = 1024 = one train batch; data.max_len 74240 with
    # 64000 new tokens -> 10240 prompt tokens
    "openrlhf-train_reinforce_baseline_ray_agent_async.sh": (
        "a100-sxm-80gb",
        reading(
            8,
            8,
            "disaggregated",
            "partial-rollout",
            {"gpus": 4, "tp": 2, "cuda_graphs": False},
            {"gpus": 4, "tp": 1, "cp": 2, "zero": 3, "recompute": "full"},
            {**OFF, "phase": True},
            w("reinforce-plus-plus-baseline", 128, 8, 10240, 64000, 1),
            "qwen3-4b-thinking-2507",
        ),
    ),
    # NeMo-RL recipes over their defaults chain (grpo_math_1B.yaml at the same commit). Each
    # bounds prompt + response by policy.max_total_sequence_length and lets max_new_tokens take
    # all of it, so the prompt length is given (128) and the response is the rest.
    # 32 nodes x 8, colocated generation (so phase offload), vLLM TP 32; Megatron TP 1 (base)
    # PP 16 EP 16 ETP 1 (base), distributed optimizer (base), activation checkpointing;
    # 32 prompts x 16 = 512 = train_global_batch_size -> 1 step; sequence 1536
    RECIPES_A + "performance/grpo-deepseek-v3-32n8g.yaml": (
        "h100-sxm-80gb",
        reading(
            256,
            8,
            "colocated",
            "sync",
            {"gpus": 256, "tp": 32, "pp": 1, "ep": 1},
            {
                "gpus": 256,
                "tp": 1,
                "pp": 16,
                "cp": 1,
                "ep": 16,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
                # the recipe's num_layers_in_first/last_pipeline_stage: 3 | 14 x 4 | 2
                "first_stage_layers": 3,
                "last_stage_layers": 2,
            },
            {**OFF, "phase": True, "frozen": True},
            w("grpo", 32, 16, 128, 1408, 1),
            "deepseek-v3",
        ),
    ),
    # 16 nodes x 8, vLLM TP 16; Megatron TP 2 PP 8 CP 2 EP 16; 16 x 32 = 512 -> 1; 8192
    RECIPES_A + "performance/grpo-qwen3-235b-16n8g.yaml": (
        "h100-sxm-80gb",
        reading(
            128,
            8,
            "colocated",
            "sync",
            {"gpus": 128, "tp": 16, "pp": 1, "ep": 1},
            {
                "gpus": 128,
                "tp": 2,
                "pp": 8,
                "cp": 2,
                "ep": 16,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
                # the recipe's num_layers_in_first/last_pipeline_stage: 11 | 6 x 12 | 11
                "first_stage_layers": 11,
                "last_stage_layers": 11,
            },
            {**OFF, "phase": True, "frozen": True},
            w("grpo", 16, 32, 128, 8064, 1),
            "qwen3-235b-a22b",
        ),
    ),
    # 4 nodes x 8, DTensor (FSDP2) TP 1 CP 1, no checkpointing; 64 x 32 = 2048 over a global
    # batch of 512 -> 4 steps; 4096
    RECIPES_A + "grpo-llama3.1-8b-instruct-4n8g-fsdp2tp1-long.v3.yaml": (
        "h100-sxm-80gb",
        reading(
            32,
            8,
            "colocated",
            "sync",
            {"gpus": 32, "tp": 1, "pp": 1, "ep": 1},
            {"gpus": 32, "tp": 1, "cp": 1, "zero": 3, "recompute": "none"},
            {**OFF, "phase": True, "frozen": True},
            w("grpo", 64, 32, 128, 3968, 4),
            "llama-3.1-8b",
        ),
    ),
    # over grpo-qwen3-32b-4n8g.yaml: 8 nodes x 8, generation on 4 nodes of its own (vLLM TP 4),
    # async GRPO one step stale with in-flight weight updates (the engine never drains: async,
    # not one-step-off); Megatron TP 4 PP 4; 64 x 32 over 512 -> 4; 4096
    RECIPES_B + "performance/grpo-qwen3-32b-8n8g-async-1off.yaml": (
        "h100-sxm-80gb",
        reading(
            64,
            8,
            "disaggregated",
            "async",
            {"gpus": 32, "tp": 4, "pp": 1, "ep": 1},
            {
                "gpus": 32,
                "tp": 4,
                "pp": 4,
                "cp": 1,
                "ep": 1,
                "etp": 1,
                "zero": 1,
                "recompute": "none",
            },
            {**OFF, "frozen": True},
            w("grpo", 64, 32, 128, 3968, 4),
            "qwen3-32b",
        ),
    ),
    # slime (scripts/ of THUDM/slime at 624b824, each sourcing its models/*.sh through the
    # BASH_SOURCE idiom). NUM_GPUS: no nvidia-smi, so DETECTED_GPUS=0 and the fallback 8;
    # actor 1 x 8 with --colocate (offload forced on; reference in pinned host memory via
    # --use-kl-loss); 2 GPUs per engine; Megatron TP 2, recompute full; 32 prompts x 8, global
    # batch 256 -> 1
    SLIME + "run-qwen3-4B.sh": (
        "h100-sxm-80gb",
        reading(
            8,
            8,
            "colocated",
            "sync",
            {"gpus": 8, "tp": 2, "pp": 1, "ep": 1, "attention_dp": 1},
            {
                "gpus": 8,
                "tp": 2,
                "pp": 1,
                "cp": 1,
                "ep": 1,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
            },
            {**OFF, "phase": True, "frozen": True},
            w("grpo", 32, 8, 2048, 8192, 1),
            "qwen3-4b",
        ),
    ),
    # 1 x 8 colocated; one 8-GPU engine (plain TP 8); Megatron TP 4 EP 8 ETP 1; CPU Adam
    # (--optimizer-cpu-offload, fraction at Megatron's default 1.0)
    SLIME + "run-qwen3-30B-A3B.sh": (
        "h100-sxm-80gb",
        reading(
            8,
            8,
            "colocated",
            "sync",
            {"gpus": 8, "tp": 8, "pp": 1, "ep": 1, "attention_dp": 1},
            {
                "gpus": 8,
                "tp": 4,
                "pp": 1,
                "cp": 1,
                "ep": 8,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
            },
            {**OFF, "phase": True, "optimizer": 1.0, "frozen": True},
            w("grpo", 32, 8, 2048, 8192, 1),
            "qwen3-30b-a3b",
        ),
    ),
    # actor 8 x 8 plus 64 rollout GPUs: 16 nodes, disaggregated (no --colocate, no offload);
    # engines of 32 GPUs with EP 32 and 4 DP-attention groups; Megatron TP 4 PP 4 CP 2 EP 16;
    # GSPO without a KL term (no reference to park); 8 prompts x 8, global batch 64 -> 1
    SLIME + "run-qwen3-235B-A22B.sh": (
        "h100-sxm-80gb",
        reading(
            128,
            8,
            "disaggregated",
            "sync",
            {"gpus": 64, "tp": 32, "pp": 1, "ep": 32, "attention_dp": 4},
            {
                "gpus": 64,
                "tp": 4,
                "pp": 4,
                "cp": 2,
                "ep": 16,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
                "last_stage_layers": 22,  # --decoder-last-pipeline-num-layers 22
            },
            {**OFF, "optimizer": 1.0},
            w("gspo", 8, 8, 2048, 8192, 1),
            "qwen3-235b-a22b",
        ),
    ),
    # 16 x 8 colocated; two 64-GPU engines with EP 64 and 8 DP-attention groups; Megatron TP 8
    # PP 4 CP 4 EP 32; 128 prompts x 8 in --num-steps-per-rollout 4 optimizer steps; 32k responses
    SLIME + "run-deepseek-r1.sh": (
        "h100-sxm-80gb",
        reading(
            128,
            8,
            "colocated",
            "sync",
            {"gpus": 128, "tp": 64, "pp": 1, "ep": 64, "attention_dp": 8},
            {
                "gpus": 128,
                "tp": 8,
                "pp": 4,
                "cp": 4,
                "ep": 32,
                "etp": 1,
                "zero": 1,
                "recompute": "full",
                "last_stage_layers": 13,  # --decoder-last-pipeline-num-layers 13
            },
            {**OFF, "phase": True, "optimizer": 1.0, "frozen": True},
            w("grpo", 128, 8, 2048, 32768, 4),
            "deepseek-r1",
        ),
    ),
}
GIVEN = {
    # the recipe's model_name is a sentence ("Follow instructions in ...docs/guides/deepseek.md")
    RECIPES_A + "performance/grpo-deepseek-v3-32n8g.yaml": {"policy": "deepseek-v3"},
}


def _read(name: str) -> dict[str, Any]:
    accelerator, _ = READINGS[name]
    # NeMo-RL bounds prompt and response together; slime's scripts bound no prompt (the slime
    # deployment records take 2048, the prompt cap of verl's DAPO recipes on the same data)
    prompt = 128 if name.endswith(".yaml") else 2048 if name.startswith(SLIME) else None
    return review(
        FIXTURES / name,
        hardware=Hardware(accelerator, prompt_tokens=prompt),
        **GIVEN.get(name, {}),
    )


@pytest.mark.parametrize("name", sorted(READINGS), ids=lambda n: Path(n).stem)
def test_review_reproduces_the_engineers_reading(name: str) -> None:
    _, wanted = READINGS[name]
    got = _read(name)
    s = got["scenario"]
    plan = s["plan"]
    assert s["cluster"]["nodes"] * s["cluster"]["gpus_per_node"] == wanted["gpus"]
    assert s["cluster"]["gpus_per_node"] == wanted["per_node"]
    assert (plan["placement"], plan["execution"]) == (wanted["placement"], wanted["execution"])
    # the layout an engineer writes down; the memory settings are checked on their own
    settings = {
        "offload",
        "fp32_gradients",
        "sequence_parallel",
        *LAUNCH_SETTINGS["train"],
        *LAUNCH_SETTINGS["rollout"],
    }
    assert {k: v for k, v in plan["rollout"].items() if k not in settings} == wanted["rollout"]
    assert {k: v for k, v in plan["train"].items() if k not in settings} == wanted["train"]
    assert plan["train"]["offload"] == wanted["offload"]
    assert {k: s["workload"][k] for k in wanted["workload"]} == wanted["workload"]
    assert s["models"]["policy"] == wanted["policy"]
    assert got["estimate"]["step_seconds"] > 0


@pytest.mark.parametrize("name", sorted(READINGS), ids=lambda n: Path(n).stem)
def test_the_recommendation_is_a_plan_the_mapping_can_launch(name: str) -> None:
    # What review proposes must be exportable: the same framework, a launch of its mapping
    # (slime has no entry point for partial rollouts, for one).
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots

    got = _read(name)
    top = got["recommendation"]
    if top is None:
        return
    mapping = load_catalog(record_roots(), ("mapping",)).of("mapping")[got["mapping"]]
    launches = {(x.execution, x.placement) for x in mapping.launches}  # type: ignore[attr-defined]
    assert (top["execution"], top["placement"]) in launches
    assert got["framework"] in top["frameworks"]


def test_verl_defaults_are_its_trainer_yamls_at_the_commit() -> None:
    """Each default of the verl mapping is the value verl's generated trainer configs (or, for
    the fully asynchronous trainer's own keys, its config) give the key
    (tests/fixtures/frameworks/, at the mapping's commit)."""
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots

    from rlmguide.review.recipe import flatten

    frameworks = Path(__file__).parent / "fixtures" / "frameworks"
    prefixes = {"verl-0.7.0-125-gb178a3cd5": "verl-", "verl-0.8.0": "verl-0.8.0-"}
    mappings = load_catalog(record_roots(), ("mapping",)).of("mapping").values()
    verls = [m for m in mappings if m.framework == "verl"]
    assert sorted(m.id for m in verls) == sorted(prefixes)
    for mapping in verls:
        declared: dict[str, Any] = {}
        for name in (
            "_generated_ppo_megatron_trainer.yaml",
            "_generated_ppo_trainer.yaml",
            "fully_async_ppo_trainer.yaml",
        ):
            path = frameworks / f"{prefixes[mapping.id]}{name}"
            declared |= flatten(yaml.safe_load(path.read_text()))
        assert mapping.config_defaults
        for key, value in mapping.config_defaults.items():
            assert key in declared, (mapping.id, key)
            assert declared[key] == value, (mapping.id, key)


def test_a_key_left_out_is_read_at_its_default_and_said_so() -> None:
    got = _read("verl-run_qwen3moe-30b_megatron_96gb.sh")
    defaults = {u["key"]: u["field_value"] for u in got["understood"] if u["default"]}
    assert defaults["actor_rollout_ref.actor.megatron.use_distributed_optimizer"] == 1
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size" not in defaults  # the script's


def test_nothing_is_dropped_silently() -> None:
    got = _read("verl-run_qwen3moe-30b_megatron_96gb.sh")
    keys = {u["key"].lstrip("+") for u in got["understood"]} | {u["key"] for u in got["unmapped"]}
    words, _ = command_arguments(
        (FIXTURES / "verl-run_qwen3moe-30b_megatron_96gb.sh").read_text(), "verl.trainer.main_ppo"
    )
    assert keys >= {x.lstrip("+").partition("=")[0].lstrip("-") for x in words}
    unmapped = {u["key"] for u in got["unmapped"]}
    assert "actor_rollout_ref.actor.optim.lr" in unmapped
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size" not in unmapped


def test_a_recipe_lists_only_its_own_unmapped_keys() -> None:
    got = _read(RECIPES_B + "performance/grpo-qwen3-32b-8n8g-async-1off.yaml")
    unmapped = {u["key"] for u in got["unmapped"]}
    assert "logger.log_dir" in unmapped
    assert not any(k.startswith("data.") for k in unmapped)  # the base config's, not the recipe's
    # through the chain: the parent recipe's model and the interpolated sequence bound
    fields = {u["field"]: u["field_value"] for u in got["understood"]}
    assert fields["input.model_path"] == "Qwen/Qwen3-32B"
    assert fields["workload.max_response_tokens"] == 4096  # ${policy.max_total_sequence_length}
    # the recipe's engine memory setting is read as the engine's memory fraction
    assert "launch.engine_memory_fraction" in fields


def _deployments() -> dict[str, Any]:
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots

    return load_catalog(record_roots(), ("deployment",)).of("deployment")


def test_a_recipe_without_a_prompt_bound_assumes_one_and_names_its_records() -> None:
    """NeMo-RL bounds prompt and response together and lets the response take all of it: the
    prompt is assumed (the median of NeMo-RL's deployment records, each named), the response
    is the bound less it, and the estimate says what it rests on."""
    name = RECIPES_A + "grpo-llama3.1-8b-instruct-4n8g-fsdp2tp1-long.v3.yaml"
    got = review(FIXTURES / name, hardware=Hardware("h100-sxm-80gb"))
    (prompt,) = [a for a in got["assumed"] if a["field"] == "workload.prompt_tokens"]
    deployments = _deployments()
    named = [deployments[i].scenario.workload.prompt_tokens for i in prompt["source"]]
    assert sorted(named) == sorted(
        d.scenario.workload.prompt_tokens for d in deployments.values() if d.framework == "nemo-rl"
    )
    # a median: a value one of the records has, with at least half of them on each side
    assert prompt["value"] in named
    assert 2 * sum(v <= prompt["value"] for v in named) >= len(named)
    assert 2 * sum(v >= prompt["value"] for v in named) >= len(named)
    workload = got["scenario"]["workload"]
    fields = {u["field"]: u["field_value"] for u in got["understood"]}
    assert workload["prompt_tokens"] == prompt["value"]
    assert workload["max_response_tokens"] == fields["workload.sequence_tokens"] - prompt["value"]
    (response,) = [a for a in got["assumed"] if a["field"] == "workload.max_response_tokens"]
    assert response["value"] == workload["max_response_tokens"]
    assert {"workload.prompt_tokens", "workload.max_response_tokens"} <= set(
        got["rests_on_assumptions"]
    )
    assert got["estimate"]["step_seconds"] > 0


def test_a_workload_number_left_to_the_framework_is_its_default(tmp_path: Path) -> None:
    """A verl launch without data.max_prompt_length runs at verl's default (512 in the trainer
    YAML at the mapping's commit): read so, and listed as assumed with the mapping named."""
    text = (FIXTURES / "verl-run_qwen2.5-32b.sh").read_text()
    script = tmp_path / "run.sh"
    script.write_text(text.replace("    data.max_prompt_length=1024 \\\n", ""))
    assert "max_prompt_length" not in script.read_text()
    got = review(script, hardware=Hardware("a100-sxm-80gb"))
    (cap,) = [a for a in got["assumed"] if a["field"] == "workload.max_prompt_tokens"]
    assert (cap["value"], cap["source"]) == (512, got["mapping"])
    assert "data.max_prompt_length" in cap["why"]
    # the key is the prompt cap: the mean is taken at it, said so
    (mean,) = [a for a in got["assumed"] if a["field"] == "workload.prompt_tokens"]
    assert mean["value"] == 512
    workload = got["scenario"]["workload"]
    assert (workload["prompt_tokens"], workload["max_prompt_tokens"]) == (512, 512)


def test_a_reference_on_gpus_of_its_own_does_not_resize_the_actor(tmp_path: Path) -> None:
    """OpenRLHF 0.8.9's reference count spells the actor's pool only with colocate_actor_ref;
    without it the reference has GPUs of its own. Whichever comes first in the file, the
    actor's keys size the training pool and the reference's its own (DeepSpeed TP and ring
    attention at the parser's default 1)."""
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m openrlhf.cli.train_ppo_ray --ref_num_nodes 1 --ref_num_gpus_per_node 2 "
        "--actor_num_nodes 1 --actor_num_gpus_per_node 4 --vllm_num_engines 2 "
        "--vllm_tensor_parallel_size 1 --pretrain OpenRLHF/Llama-3-8b-sft-mixture "
        "--advantage_estimator reinforce_baseline --n_samples_per_prompt 4 --use_kl_loss "
        "--zero_stage 3\n"
    )
    plan = review(script, hardware=Hardware("a100-sxm-80gb"))["estimate"]
    assert (plan["train"]["gpus"], plan["rollout"]["gpus"]) == (4, 2)
    assert (plan["train"]["tp"], plan["train"]["cp"]) == (1, 1)
    assert {k: v for k, v in plan["pools"].items() if v} == {"reference": 2}


def test_a_layout_the_planner_cannot_hold_is_named_not_guessed() -> None:
    """OpenRLHF's 8B PPO example packs actor + reference and critic + reward in pairs
    (--colocate_actor_ref, --colocate_critic_reward): actor 2, critic 2, 2 vLLM engines of
    TP 2, on 8 GPUs. The planner has no pool shared by critic and reward, so review reads the
    reward's 2 GPUs as its own pool, names the flag as not mapped and refuses to cost 10 GPUs
    that are not whole nodes (exit 1), rather than inventing a layout."""
    name = "openrlhf-train_ppo_llama_ray.sh"
    done = CliRunner().invoke(cli, ["review", str(FIXTURES / name), "--accelerator",
                                    "a100-sxm-80gb"])  # fmt: skip
    assert done.exit_code == 1
    assert "rollout 4, train 2, critic 2, reward 2" in done.output
    assert "colocate_critic_reward" in done.output
    assert done.output.strip().count("\n") == 0


def test_variables_only_a_command_sets_are_named() -> None:
    # EXPERIMENT_NAME="qwen2.5-3b_baseline_$(now)" and PROJECT_DIR="$(pwd)" feed the launch
    got = _read("verl-run_qwen2.5-3b_gsm8k_multiturn.sh")
    assert got["unknown_variables"] == ["EXPERIMENT_NAME", "PROJECT_DIR"]


def test_the_openrlhf_version_is_read_from_the_flags() -> None:
    assert _read("openrlhf-train_ppo_llama_ray_70b.sh")["mapping"].endswith("c250c21a")
    assert _read("openrlhf-train_reinforce_baseline_ray_agent_async.sh")["mapping"] == (
        "openrlhf-0.11.0"
    )


def test_changes_are_ranked_by_predicted_gain() -> None:
    got = _read("verl-run_qwen2.5-32b.sh")
    gains = [c["change_percent"] for c in got["changes"] if c["change_percent"] is not None]
    assert gains == sorted(gains)
    for c in got["changes"]:
        assert c["text"].startswith(c["field"].replace(".", " "))


def test_shell_expansion_as_bash(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text(
        "A=${UNSET:-4}\nB=$((A * 2))\nARGS=(\n  x.tp=$B  # comment\n  \"x.q='a b'\"\n)\n"
        'python3 -m verl.trainer.main_ppo \\\n  x.tp=1 ${ARGS[@]} +x.new=${A} "$@"\n'
    )
    words, _ = command_arguments(script.read_text(), "verl.trainer.main_ppo")
    assert words == ["x.tp=1", "x.tp=8", "x.q='a b'", "+x.new=4"]


def test_unknown_model_path_suggests_policy(tmp_path: Path) -> None:
    text = (FIXTURES / "verl-run_qwen2.5-32b.sh").read_text()
    script = tmp_path / "run.sh"
    script.write_text(text.replace("Qwen2.5-32B-Instruct", "my-own-model"))
    with pytest.raises(ReviewError, match="--policy"):
        review(script, hardware=Hardware("a100-sxm-80gb"))
    done = CliRunner().invoke(cli, ["review", str(script), "--accelerator", "a100-sxm-80gb"])
    assert done.exit_code == 2
    assert "--policy" in done.output and "Traceback" not in done.output


def test_a_scenario_file_is_named_as_one_not_as_a_launch() -> None:
    scenario = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
    with pytest.raises(ReviewError, match="is an rlmguide scenario, not a framework's launch"):
        review(scenario, hardware=Hardware("h100-sxm-80gb"))
    done = CliRunner().invoke(cli, ["review", str(scenario)])
    assert done.exit_code == 2
    assert "rlmguide recommend" in done.output and "Traceback" not in done.output


def _with_reward_model(tmp_path: Path, folder: str) -> Path:
    """verl's 32B launch with a reward model switched on at `folder`."""
    text = (FIXTURES / "verl-run_qwen2.5-32b.sh").read_text()
    entry = "python3 -m verl.trainer.main_ppo \\\n"
    rm = f"    reward_model.enable=True reward_model.model.path=/models/{folder} \\\n"
    script = tmp_path / "run.sh"
    script.write_text(text.replace(entry, entry + rm, 1))
    return script


def test_a_reward_model_with_a_record_is_costed_as_itself(tmp_path: Path) -> None:
    script = _with_reward_model(tmp_path, "Skywork-Reward-Llama-3.1-8B")
    got = review(script, hardware=Hardware("a100-sxm-80gb"))
    assert got["scenario"]["models"]["reward"] == "skywork-reward-llama-3.1-8b"
    assert not [a for a in got["assumed"] if a["field"] == "models.reward"]


@pytest.mark.parametrize(
    ("folder", "why"),
    [
        ("FsfairX-LLaMA3-RM-v0.1", "fsfairx-llama3-rm-v0.1 has no architecture read"),
        ("my-own-rm", "matches no model record"),
    ],
)
def test_a_reward_model_that_cannot_be_costed_takes_the_policys_shape_and_says_so(
    tmp_path: Path, folder: str, why: str
) -> None:
    got = review(_with_reward_model(tmp_path, folder), hardware=Hardware("a100-sxm-80gb"))
    assert got["scenario"]["models"]["reward"] == "qwen2.5-32b"
    (note,) = [a for a in got["assumed"] if a["field"] == "models.reward"]
    assert note["value"] == "qwen2.5-32b" and why in note["why"]


def test_unreadable_file_is_one_line_exit_2(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["review", str(tmp_path / "none.sh"), "--accelerator", "x"])
    assert done.exit_code == 2
    assert done.output.strip().count("\n") == 0


def test_review_json_and_table_from_a_real_process() -> None:
    script = FIXTURES / "verl-run_qwen2.5-3b_gsm8k_multiturn.sh"
    args = [
        sys.executable,
        "-m",
        "rlmguide",
        "review",
        str(script),
        "--accelerator",
        "h100-sxm-80gb",
    ]
    done = subprocess.run(
        [*args, "--format", "json"], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["framework"] == "verl" and data["rollout_engine"] == "sglang"
    table = CliRunner().invoke(cli, args[3:], catch_exceptions=False)
    assert table.exit_code == 0
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size" in table.output


def test_tensor_parallel_training_without_sequence_parallelism_is_costed_so(
    tmp_path: Path,
) -> None:
    # NeMo-RL's base config leaves sequence parallelism off; a launch that keeps the default
    # with tp > 1 keeps the norms whole on every tensor rank, and review costs it so: more
    # activations per GPU than the same launch with it on, nothing else.
    example = REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml"
    out = tmp_path / "run.sh"
    plan = [
        "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
        "--set", "plan.rollout.tp=4", "--set", "plan.train.tp=4",
        "--set", "plan.train.zero=3", "--set", "plan.train.recompute=full",
    ]  # fmt: skip
    done = CliRunner().invoke(
        cli, ["export", str(example), "--framework", "nemo-rl", "--out", str(out), *plan]
    )
    assert done.exit_code == 0, done.output
    hardware = Hardware("h100-sxm-80gb", 8, 8)
    on = review(out, "nemo-rl", policy="qwen2.5-32b", hardware=hardware)
    lines = out.read_text().splitlines()
    out.write_text("\n".join(x for x in lines if "sequence_parallel" not in x) + "\n")
    off = review(out, "nemo-rl", policy="qwen2.5-32b", hardware=hardware)
    assert on["estimate"]["train"]["sequence_parallel"] is True
    assert off["estimate"]["train"]["sequence_parallel"] is False
    assert off["estimate"]["train"]["tp"] == on["estimate"]["train"]["tp"] == 4
    acts = [r["estimate"]["memory_breakdown_gib"]["training"]["activations"] for r in (on, off)]
    assert acts[1] > acts[0]
    assert off["estimate"]["step_seconds"] == pytest.approx(on["estimate"]["step_seconds"])


@pytest.mark.parametrize("algorithm", ["grpo", "dapo"])
def test_nemo_rl_exports_the_group_mean_baseline_and_review_reads_it_back(
    tmp_path: Path, algorithm: str
) -> None:
    # GRPO's and DAPO's baseline is the mean of the whole group (kb/records/algorithms); NeMo-RL
    # 7ea279abf leaves each sample out of its own (grpo_math_1B.yaml L9, L42; utils.py
    # L149-L166): with a group of 8 the advantage scales by 8/7. The export writes the key off,
    # review reads it as the algorithm's, and a launch that keeps the default is flagged.
    example = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
    out = tmp_path / "run.sh"
    done = CliRunner().invoke(
        cli,
        ["export", str(example), "--framework", "nemo-rl", "--out", str(out),
         "--set", f"workload.algorithm={algorithm}"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "grpo.use_leave_one_out_baseline=False" in out.read_text()
    hardware = Hardware("h100-sxm-80gb")
    written = review(out, "nemo-rl", hardware=hardware)
    # adv_estimator grpo names both; DAPO's switches (dynamic sampling, the overlong shaping) tell
    # it (rlmguide.review.family), where it read back as GRPO before
    read_as = written["scenario"]["workload"]["algorithm"]
    assert read_as == algorithm
    assert written["algorithm_keys"] == []
    read = [u for u in written["understood"] if u["key"] == "grpo.use_leave_one_out_baseline"]
    assert [(u["value"], u["field"]) for u in read] == [(False, "workload.algorithm")]
    lines = out.read_text().splitlines()
    out.write_text("\n".join(x for x in lines if "use_leave_one_out" not in x) + "\n")
    kept = review(out, "nemo-rl", hardware=hardware)
    assert [(a["key"], a["launch"], a["default"], a["export"]) for a in kept["algorithm_keys"]] == [
        ("grpo.use_leave_one_out_baseline", True, True, False)
    ]
    shown = CliRunner().invoke(cli, ["review", str(out), "--accelerator", "h100-sxm-80gb"])
    assert f"Runs otherwise than {read_as}" in shown.output


def test_a_default_of_no_entry_is_a_mapping_error() -> None:
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots

    from rlmguide.export.mapping import MappingError, compile_mapping

    mappings = load_catalog(record_roots(), ("mapping",)).of("mapping").values()
    verl = next(m for m in mappings if m.framework == "verl")
    broken = verl.model_copy(update={"config_defaults": {"trainer.no_such_key": 1}})
    with pytest.raises(MappingError, match=r"config_defaults\.trainer\.no_such_key"):
        compile_mapping(broken)


# -- slime launch scripts ----------------------------------------------------------------------

SLIME_LAUNCH = """#!/bin/bash
set -e
SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"
source "${SCRIPT_DIR}/models/tiny.sh"
[ -f "${SCRIPT_DIR}/no-such-env.sh" ] && source "${SCRIPT_DIR}/no-such-env.sh"
if command -v no-such-tool-here >/dev/null 2>&1; then
    DETECTED=$(no-such-tool-here -L | wc -l)
else
    DETECTED=0
fi
NUM_GPUS=${NUM_GPUS:-${DETECTED}}
if [ -z "$NUM_GPUS" ] || [ "$NUM_GPUS" -le 0 ]; then
    NUM_GPUS=8
elif [ "$NUM_GPUS" -gt 64 ]; then
    NUM_GPUS=64
fi
if [[ "${MODE:-sync}" == "sy"* ]]; then ENTRY=train.py; else ENTRY=train_async.py; fi
PERF=(
   --tensor-model-parallel-size $(( NUM_GPUS / 4 ))  # a comment
   --sequence-parallel
)
python3 ${ENTRY} --actor-num-gpus-per-node ${NUM_GPUS} --colocate "${MODEL_ARGS[@]}" ${PERF[@]} "$@"
"""


def _slime_tree(tmp_path: Path) -> Path:
    scripts = tmp_path / "scripts"
    (scripts / "models").mkdir(parents=True)
    (scripts / "models" / "tiny.sh").write_text(
        'MODEL_ARGS=(\n   --num-layers 4\n   --rotary-base "${ROTARY:-1000000}"\n)\n'
    )
    (scripts / "run.sh").write_text(SLIME_LAUNCH)
    return scripts / "run.sh"


def test_a_slime_launch_is_read_as_bash_runs_it(tmp_path: Path) -> None:
    """Sourcing through the BASH_SOURCE idiom, `if`/`elif`/`else` on tests, `&&` chains,
    defaults and arithmetic: the words review reads are the words bash passes (python3 replaced
    by a stub that prints its arguments)."""
    script = _slime_tree(tmp_path)
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text('#!/bin/sh\nshift\nprintf "%s\\n" "$@"\n')
    stub.chmod(0o755)
    env = {"PATH": f"{stub.parent}:/usr/bin:/bin"}
    ran = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=True)
    words, shell = command_arguments(script.read_text(), "train", path=script)
    assert words == ran.stdout.splitlines()
    assert words == [
        "--actor-num-gpus-per-node", "8", "--colocate", "--num-layers", "4",
        "--rotary-base", "1000000", "--tensor-model-parallel-size", "2", "--sequence-parallel",
    ]  # fmt: skip
    assert shell.unsourced == []  # the `[ -f ... ] &&` guard kept the missing file unread


def test_the_environment_and_a_missing_source_are_followed(tmp_path: Path) -> None:
    script = _slime_tree(tmp_path)
    env = {"NUM_GPUS": "100", "MODE": "async"}
    words, _ = command_arguments(script.read_text(), "train_async", env, path=script)
    assert words[:2] == ["--actor-num-gpus-per-node", "64"]  # the elif branch
    moved = script.read_text().replace("python3 ${ENTRY}", "python3 /root/slime/${ENTRY}")
    assert (
        command_arguments(moved, "train", path=script)[0]
        == command_arguments(script.read_text(), "train", path=script)[0]
    )
    (tmp_path / "scripts" / "models" / "tiny.sh").unlink()
    words, shell = command_arguments(script.read_text(), "train", path=script)
    assert shell.unsourced == [f"{script.parent}/models/tiny.sh"]
    assert "--num-layers" not in words


def test_slime_keys_outside_the_plan_are_named() -> None:
    name = SLIME + "run-qwen3-30B-A3B.sh"
    got = _read(name)
    keys = {u["key"] for u in got["understood"]} | {u["key"] for u in got["unmapped"]}
    words, _ = command_arguments((FIXTURES / name).read_text(), "train", path=FIXTURES / name)
    assert keys >= {x[2:] for x in words if x.startswith("--")}
    unmapped = {u["key"] for u in got["unmapped"]}
    assert "num-experts" in unmapped
    # the memory settings are read into the plan's terms: the engine's fraction and the
    # micro-batch the training memory holds
    for key in ("rollout-num-gpus-per-engine", "sglang-mem-fraction-static", "max-tokens-per-gpu"):
        assert key not in unmapped
    # the model's architecture came from models/qwen3-30B-A3B.sh, sourced by the script
    assert any(u["key"] == "moe-router-topk" for u in got["unmapped"])
    assert got["unknown_variables"] == ["NVLINK_COUNT"]


def test_a_slime_script_without_a_prompt_bound_is_read_on_an_assumption() -> None:
    script = str(FIXTURES / SLIME / "run-qwen3-4B.sh")
    args = ["review", script, "--accelerator", "h100-sxm-80gb"]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert "rests on assumed" in done.output and "workload.prompt_tokens" in done.output
    done = CliRunner().invoke(cli, [*args, "--format", "json"])
    assumed = {a["field"]: a for a in json.loads(done.output)["assumed"]}
    slime = sorted(i for i, d in _deployments().items() if d.framework == "slime")
    assert sorted(assumed["workload.prompt_tokens"]["source"]) == slime
    # a length given on the command line is the user's, not an assumption
    done = CliRunner().invoke(cli, [*args, "--prompt-tokens", "2048", "--format", "json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert "workload.prompt_tokens" not in {a["field"] for a in data["assumed"]}
    assert (data["framework"], data["entry_point"]) == ("slime", "python3 train.py")
    assert data["unsourced"] == [] and data["unknown_variables"] == ["NVLINK_COUNT"]
    fields = {(u["key"], u["field"]) for u in data["understood"]}
    assert ("rollout-num-gpus-per-engine", "plan.rollout.tp") in fields
    # --colocate places the rollout on the actor's GPUs and forces phase offload
    assert {("colocate", "plan.placement"), ("colocate", "plan.train.offload_phase")} <= fields


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    num_gpus=st.one_of(st.none(), st.integers(-3, 130).map(str), st.sampled_from(["", "x", "08"])),
    mode=st.one_of(st.none(), st.sampled_from(["sync", "sy", "async", "", "syn*"])),
)
def test_conditions_choose_the_branch_bash_chooses(
    tmp_path: Path, num_gpus: str | None, mode: str | None
) -> None:
    """For any NUM_GPUS and MODE in the environment (unset, empty, numbers, text), the reader
    takes the `if`/`elif`/`else` branches bash takes: the same words reach the launch."""
    script = tmp_path / "scripts" / "run.sh"
    if not script.exists():
        _slime_tree(tmp_path)
    stub = tmp_path / "bin" / "python3"
    if not stub.exists():
        stub.parent.mkdir()
        stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
        stub.chmod(0o755)
    given = {k: v for k, v in (("NUM_GPUS", num_gpus), ("MODE", mode)) if v is not None}
    env = {"PATH": f"{stub.parent}:/usr/bin:/bin", **given}
    ran = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
    if "error token is" in ran.stderr:
        # bash's arithmetic fails (08 is no octal number): bash drops that assignment and goes
        # on; the reader refuses the script instead of reading a launch without it
        with pytest.raises(ShellError, match="not a number in base 8"):
            command_arguments(script.read_text(), "train", given, path=script)
        return
    assert ran.returncode == 0, ran.stderr
    entry, *words = ran.stdout.splitlines()
    module = Path(entry).stem
    got, _ = command_arguments(script.read_text(), module, given, path=script)
    assert got == words


def test_a_change_inside_the_tie_band_is_within_noise() -> None:
    from rlmguide.review import changes

    reviewed = {"step_seconds": 100.0, "placement": "colocated", "execution": "sync",
                "rollout": {"gpus": 8, "tp": 2, "ep": 1},
                "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 3,
                          "recompute": "full"}}  # fmt: skip
    top = {**reviewed, "rollout": {**reviewed["rollout"], "tp": 4},
           "train": {**reviewed["train"], "recompute": "none"}}  # fmt: skip
    seconds = {"rollout.tp": 90.0, "train.recompute": 70.0}  # 10% and 30% faster
    found = {c["field"]: c for c in changes(reviewed, top, lambda f, v: seconds[f])}
    assert (
        found["rollout.tp"]["within_noise"] and "within the 20% tie" in found["rollout.tp"]["text"]
    )
    assert not found["train.recompute"]["within_noise"]


def test_a_model_sized_apart_from_the_actor_reads_as_a_pool_of_its_own(tmp_path: Path) -> None:
    """OpenRLHF's reference shares the actor's GPUs only where sized like them: a reference of
    8 GPUs beside an actor of 16 is a pool of its own, and the actor keeps its 16."""
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m openrlhf.cli.train_ppo_ray --actor.num_nodes 2 --actor.num_gpus_per_node 8 "
        "--ref.num_nodes 1 --ref.num_gpus_per_node 8 --vllm.num_engines 4 "
        "--vllm.tensor_parallel_size 2 --actor.model_name_or_path Qwen/Qwen2.5-7B "
        "--ds.zero_stage 3 --rollout.batch_size 128 --rollout.n_samples_per_prompt 8 "
        "--train.batch_size 1024 --data.max_len 2048 --data.prompt_max_len 1024 "
        "--rollout.max_new_tokens 1024 --algo.advantage.estimator reinforce_baseline\n"
    )
    plan = review(script, hardware=Hardware("h100-sxm-80gb"))["scenario"]["plan"]
    assert plan["train"]["gpus"] == 16
    assert plan["pools"]["reference"] == 8


def export_32b(framework: str, out: Path, *plan: str) -> None:
    """The Qwen2.5-32B example exported for `framework` to `out` with the `plan` assignments."""
    example = REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml"
    done = CliRunner().invoke(
        cli, ["export", str(example), "--framework", framework, "--out", str(out), *sets(*plan)]
    )
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize(
    ("framework", "key"),
    [
        ("verl", "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size"),
        ("slime", "--num-virtual-stages-per-pipeline-rank"),
        ("roll", "virtual_pipeline_model_parallel_size"),
    ],
)
def test_a_launch_that_interleaves_its_pipeline_is_costed_so(
    framework: str, key: str, tmp_path: Path
) -> None:
    # The launch's virtual pipeline size is the plan's virtual_stages: 64 layers over 2 stages
    # of 2 chunks. Without the key the same launch runs the plain 1F1B schedule, whose
    # warm-up and drain bubble is twice as long; nothing else about the launch changes.
    out = tmp_path / ("run.yaml" if framework == "roll" else "run.sh")  # ROLL launches a config
    export_32b(framework, out, "plan.placement=colocated", "plan.execution=sync",
               "plan.rollout.tp=4", "plan.train.tp=4", "plan.train.pp=2", "plan.train.zero=1",
               "plan.train.recompute=full", "plan.train.virtual_stages=2")  # fmt: skip
    hardware = Hardware("h100-sxm-80gb", 8, 8)
    interleaved = review(out, framework, policy="qwen2.5-32b", hardware=hardware)
    text = out.read_text()
    assert key in text
    out.write_text("\n".join(x for x in text.splitlines() if key not in x) + "\n")
    plain = review(out, framework, policy="qwen2.5-32b", hardware=hardware)
    assert interleaved["estimate"]["train"]["virtual_stages"] == 2
    assert plain["estimate"]["train"]["virtual_stages"] == 1
    assert interleaved["estimate"]["train"]["pp"] == plain["estimate"]["train"]["pp"] == 2
    assert interleaved["estimate"]["step_seconds"] < plain["estimate"]["step_seconds"]


@pytest.mark.parametrize("framework", ["verl", "slime"])
def test_a_launchs_stage_counts_are_the_plans_split(framework: str, tmp_path: Path) -> None:
    # Qwen2.5-32B's 64 layers over 6 stages, 9 on the first and 11 on the last as the launch
    # gives them (not the 10 | 4 x 11 | 10 export would choose): read back, the estimate
    # costs that split.
    out = tmp_path / "run.sh"
    export_32b(framework, out, "cluster.nodes=6", "plan.placement=colocated",
               "plan.execution=sync", "plan.rollout.tp=4", "plan.train.tp=4", "plan.train.pp=6",
               "plan.train.first_stage_layers=9", "plan.train.last_stage_layers=11")  # fmt: skip
    got = review(out, framework, policy="qwen2.5-32b", hardware=Hardware("h100-sxm-80gb", 6, 8))
    train = got["estimate"]["train"]
    assert (train["pp"], train["first_stage_layers"], train["last_stage_layers"]) == (6, 9, 11)


def test_megatrons_account_for_switches_are_read_as_the_stage_split() -> None:
    from rlmguide.review.review import account_for_split

    key = "actor_rollout_ref.actor.megatron.override_transformer_config."
    both = {key + "account_for_embedding_in_pipeline_split": True,
            key + "account_for_loss_in_pipeline_split": "True"}  # fmt: skip
    assert account_for_split(both, 94, 8) == (11, 11)  # (94 + 2) / 8 = 12, one fewer at each end
    assert account_for_split(both, 94, 7) is None  # 96 / 7: Megatron refuses it
    embedding = {"--account-for-embedding-in-pipeline-split": True}  # slime's flag spelling
    assert account_for_split(embedding, 63, 8) == (7, 8)
    critic = {"critic.megatron.override_transformer_config.account_for_loss_in_pipeline_split": 1}
    assert account_for_split(critic, 94, 8) is None  # the critic's, not the policy's


def test_a_launch_with_the_account_for_switches_is_costed_and_starts(tmp_path: Path) -> None:
    # The verl launch of Qwen2.5-32B (64 layers) over 6 stages with Megatron's account_for
    # switches in place of the stage counts: (64 + 2) / 6 = 11 a stage, 10 at each end; the
    # start-up check that wants counts where pp does not divide the layers is satisfied.
    example = REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml"
    out = tmp_path / "run.sh"
    plan = [
        "--set", "cluster.nodes=6", "--set", "plan.placement=colocated",
        "--set", "plan.execution=sync", "--set", "plan.rollout.tp=4", "--set", "plan.train.tp=4",
        "--set", "plan.train.pp=6",
    ]  # fmt: skip
    done = CliRunner().invoke(
        cli, ["export", str(example), "--framework", "verl", "--out", str(out), *plan]
    )
    assert done.exit_code == 0, done.output
    key = "+actor_rollout_ref.actor.megatron.override_transformer_config."
    text = out.read_text()
    for word, stage in (("embedding", "first"), ("loss", "last")):
        count = f"{key}num_layers_in_{stage}_pipeline_stage=10"
        assert count in text
        text = text.replace(count, f"{key}account_for_{word}_in_pipeline_split=True")
    out.write_text(text)
    got = review(out, "verl", policy="qwen2.5-32b", hardware=Hardware("h100-sxm-80gb", 6, 8))
    train = got["estimate"]["train"]
    assert (train["pp"], train["first_stage_layers"], train["last_stage_layers"]) == (6, 10, 10)
    refused = {c["constraint"] for c in got["startup"]}
    assert "megatron-pipeline-stages-split-the-layers" not in refused
