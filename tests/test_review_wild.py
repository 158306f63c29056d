"""Launch files as people write them, held apart from the ones review was built on
(tests/fixtures/review/wild/, each written for this project from the settings of a file at a
pinned commit of its framework's repository, the address in its header). Each reading is what
an engineer writes down from the file and the framework's code at that commit; review must
reproduce it with nothing but --accelerator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review import Hardware, NotCostable, ReviewError, review

WILD = Path(__file__).parent / "fixtures" / "review" / "wild"
ASYNC = WILD / "slime-624b824" / "examples" / "fully_async"
OFF = {"phase": False, "optimizer": 0.0, "params": False, "frozen": False}

READINGS: dict[str, dict[str, Any]] = {
    # trainer 1 node x 8, colocated sync (main_ppo); rollout TP 2 on sglang (named in a shell
    # variable); FSDP (verl's default strategy, fully sharded: ZeRO 3), Ulysses 1, gradient
    # checkpointing on; the reference's parameters offloaded; 1024 prompts x 5, mini-batch 256
    # prompts -> 4 optimizer steps; prompt 512, response 1024; Qwen2-7B-Instruct
    "verl-b178a3c-run_qwen2-7b_seq_balance.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "frozen": True},
        "workload": ("grpo", 1024, 5, 512, 1024, 4),
        "policy": "qwen2-7b",
        "engine": "sglang",
    },
    # NUM_GPUS 4, ACTOR_GPUS 1, rollout the other 3 (arithmetic), SGLang engines of 1 GPU;
    # train_async.py with the fully-async rollout function (samples in flight across steps:
    # async, not one-step-off); Megatron TP/PP/CP 1, no recompute flag; KL loss loads the
    # reference (kept as a host copy); 8 prompts x 4, global batch 32 -> 1 optimizer step;
    # response 1024, no prompt bound (assumed); Qwen2.5-0.5B-Instruct
    "slime-624b824/examples/fully_async/run-qwen2.5-0.5B-fully_async.sh": {
        "gpus": 4,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 3, "tp": 1},
        "train": {"gpus": 1, "tp": 1, "pp": 1, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": {**OFF, "frozen": True},
        "workload": ("grpo", 8, 4, None, 1024, 1),
        "policy": "qwen2.5-0.5b",
        "engine": "sglang",
    },
    # SkyRL at a9564572e (skyrl/train/config/config.py, utils.py validate_cfg). NUM_GPUS 4
    # (`: "${NUM_GPUS:=4}"`); colocate_all, so the 4 engines of TP 1 share the policy's 4 GPUs
    # (validate_cfg asserts it, L455-L465), synchronous (main_base); FSDP2 (strategy fsdp,
    # reshard_after_forward true by default: ZeRO 3), Ulysses 1, gradient checkpointing on by
    # default (config.py); colocate_all parks the policy's weights and Adam on the host during
    # generation, and use_kl_loss loads a reference parked likewise; 1024 prompts x 5,
    # mini-batch 256 prompts -> 4 optimizer steps; prompt 512, response 1024; the engine named
    # in a variable (vllm)
    "skyrl-a956457/run_gsm8k.sh": {
        "gpus": 4,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 1024, 5, 512, 1024, 4),
        "policy": "qwen2.5-1.5b",
        "engine": "vllm",
    },
    # the same layout as run_gsm8k.sh with GAE: the critic (the policy's architecture, given
    # by trainer.critic.model.path) shares the 4 GPUs under colocate_all (trainer.py
    # L764-L774 builds it in the shared placement group only then), parked with the policy
    "skyrl-a956457/run_ppo.sh": {
        "gpus": 4,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("ppo", 1024, 5, 512, 1024, 4),
        "policy": "qwen2.5-1.5b",
        "engine": "vllm",
        "critic": "separate",
        "pools": {},
    },
    # 2 engines of TP 1 on GPUs of their own beside 2 policy GPUs (colocate_all false), the
    # fully async trainer with staleness 4; FSDP2 as above; colocate_policy_ref (default true)
    # with the KL loss's reference swaps policy state and reference on the 2 training GPUs;
    # train and mini-batch both MINI_BATCH_SIZE 256 -> 1 optimizer step; 5 samples
    "skyrl-a956457/fully_async_run_gsm8k.sh": {
        "gpus": 4,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 2, "tp": 1},
        "train": {"gpus": 2, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 256, 5, 512, 1024, 1),
        "policy": "qwen2.5-1.5b",
        "engine": "vllm",
    },
    # 1 node x 8, colocate_all, 4 engines of TP 2 (eager); the DAPO entry point with Megatron
    # TP 4 x PP 2 x CP 1 (one data-parallel replica), expert TP null; Megatron always shards
    # Adam (megatron_worker.py L616-L618: ZeRO 1) and recomputes whole layers by default
    # (DEFAULT_TRANSFORMER_CONFIG_KWARGS); no KL loss, so no reference; clip-higher 0.28 and the
    # token-mean loss: DAPO; 512 prompts x 16, mini-batch 32 -> 16 steps; 2k prompt, 8k response
    "skyrl-a956457/run_megatron_dapo_qwen3_4b.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 4, "pp": 2, "cp": 1, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True},
        "workload": ("dapo", 512, 16, 2048, 8192, 16),
        "policy": "qwen3-4b",
        "engine": "vllm",
    },
    # 2 nodes x 8, colocate_all, 2 engines of TP 8 (no engine EP set); Megatron TP 4, EP 8,
    # expert TP 1 on the Qwen3-30B-A3B MoE; the legacy token-mean loss (which the mapping does
    # not write) and clip-higher 0.28: DAPO; batches as the 4B recipe
    "skyrl-a956457/run_dapo_qwen3_30b_a3b_megatron_aime.sh": {
        "gpus": 16,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 16, "tp": 8, "ep": 1},
        "train": {"gpus": 16, "tp": 4, "pp": 1, "cp": 1, "ep": 8, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True},
        "workload": ("dapo", 512, 16, 2048, 8192, 16),
        "policy": "qwen3-30b-a3b",
        "engine": "vllm",
    },
    # AReaL at 4aef98d (areal/api/cli_args.py): the base config beside the launch, as in a
    # checkout. rollout.backend sglang:d4p1t1 is 4 engines of TP 1, actor.backend fsdp:d4p1t1
    # 4 FSDP ranks on GPUs of their own (alloc_mode.py's grammar); max_head_offpolicyness 2:
    # asynchronous, two versions of lag; FSDP2 shards everything (parallel.py L389-L396:
    # ZeRO 3), gradient checkpointing on; kl_ctl 0, so no reference is built (rl_trainer.py
    # L178-L181); 256 prompts x 4, one minibatch; prompts up to 1024, responses 1024
    "areal-4aef98d/run_gsm8k_grpo.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": OFF,
        "workload": ("grpo", 256, 4, 1024, 1024, 1),
        "policy": "qwen2.5-1.5b",
        "engine": "sglang",
    },
    # the Megatron config: megatron:d4p1t1, Megatron's distributed optimizer (AReaL's DDP
    # default, ZeRO 1), gradient checkpointing off (no recompute); the rest as above
    "areal-4aef98d/run_gsm8k_grpo_megatron.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": OFF,
        "workload": ("grpo", 256, 4, 1024, 1024, 1),
        "policy": "qwen2.5-1.5b",
        "engine": "sglang",
    },
}
NOT_YET: dict[str, str] = {}
"""Fixtures review does not read right yet, each with why (strict: one that starts to read
right fails until it is taken off)."""


def _case(name: str) -> Any:
    marks = [pytest.mark.xfail(reason=NOT_YET[name], strict=True)] if name in NOT_YET else []
    return pytest.param(name, id=Path(name).stem, marks=marks)


@pytest.mark.parametrize("name", [_case(n) for n in sorted(READINGS)])
def test_review_reads_a_launch_from_the_wild(name: str) -> None:
    wanted = READINGS[name]
    got = review(WILD / name, hardware=Hardware("h100-sxm-80gb"))
    scenario, plan = got["scenario"], got["estimate"]
    cluster = scenario["cluster"]
    assert cluster["nodes"] * cluster["gpus_per_node"] == wanted["gpus"]
    assert (plan["placement"], plan["execution"]) == wanted["placement"]
    assert {k: plan["rollout"][k] for k in wanted["rollout"]} == wanted["rollout"]
    assert {k: plan["train"][k] for k in wanted["train"]} == wanted["train"]
    assert plan["train"]["offload"] == wanted["offload"]
    if "critic" in wanted:  # a value model of its own, on the pools given
        assert plan["critic"] == wanted["critic"]
        assert {k: v for k, v in plan["pools"].items() if v} == wanted["pools"]
    names = ("algorithm", "prompts_per_step", "samples_per_prompt", "prompt_tokens")
    names += ("max_response_tokens", "minibatches_per_step")
    for field, value in zip(names, wanted["workload"], strict=True):
        if value is None:  # the launch does not say it: assumed, and said so
            assert f"workload.{field}" in got["rests_on_assumptions"]
        else:
            assert scenario["workload"][field] == value, field
    assert scenario["models"]["policy"] == wanted["policy"]
    assert got["rollout_engine"] == wanted["engine"]


def test_a_slurm_launch_inside_bash_c_is_read_to_its_pools() -> None:
    """OpenRLHF's train_ppo_ray_slurm.sh: the job is submitted inside `srun ... bash -c "..."`.
    Its pools are read (actor 4 with the reference, critic 4 with the reward model, 4 vLLM
    engines of TP 2); the critic and reward model sharing GPUs is a layout the planner has no
    pool for, so the request fails in one line naming the flag, rather than costing another."""
    path = WILD / "openrlhf-3c3be62-train_ppo_ray_slurm.sh"
    with pytest.raises(NotCostable, match=r"train\.colocate_critic_reward") as caught:
        review(path, hardware=Hardware("a100-sxm-80gb"))
    assert "rollout 8, train 4, critic 4, reward 4" in str(caught.value)
    done = CliRunner().invoke(cli, ["review", str(path), "--accelerator", "a100-sxm-80gb"])
    assert done.exit_code == 1 and done.output.count("\n") == 1


def test_a_hybrid_model_no_record_has_is_named_not_costed_as_dense() -> None:
    """slime's Qwen3.5-9B fully-async example: the model record of Qwen3.5-9B holds no shapes
    (no config.json was found at a pinned version), the checkpoint is not on this machine and
    the model script's layers come from a plugin spec (linear attention mixed in): review says
    exactly that, in one line."""
    path = ASYNC / "run-qwen3.5-9B-fully_async.sh"
    with pytest.raises(ReviewError) as caught:
        review(path, hardware=Hardware("h100-sxm-80gb"))
    message = str(caught.value)
    assert "'/root/models/Qwen3.5-9B' matches model record qwen3.5-9b, which has no" in message
    assert "no /root/models/Qwen3.5-9B/config.json on this machine" in message
    assert "custom spec slime_plugins.models.qwen3_5.get_qwen3_5_spec" in message
    assert "scripts/models/qwen3.5-9B.sh:5" in message
    done = CliRunner().invoke(cli, ["review", str(path), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 2 and done.output.count("\n") == 1
