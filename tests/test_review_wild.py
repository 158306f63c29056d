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
NEMO = "nemo-rl-7ea279a/examples/configs/recipes/llm/"
SLIME_W = "slime-624b824/scripts/"
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
    # verl at b178a3cd5: the keys a launch leaves out take verl/trainer/config/
    # _generated_ppo_trainer.yaml's values (FSDP: strategy fsdp, fully sharded: ZeRO 3; Ulysses
    # 1; no offload; rollout.n 1, rollout TP 2, expert parallel 1) or, with
    # --config-name=ppo_megatron_trainer.yaml, _generated_ppo_megatron_trainer.yaml's (TP/PP/CP/EP
    # 1, use_distributed_optimizer true: ZeRO 1; override_transformer_config's
    # recompute_granularity null: no recomputation, which verl's Megatron workers add nowhere).
    # main_ppo is colocated and synchronous: rollout on the trainer's GPUs.
    # Megatron: 1 node x 8; TP 2 x PP 2 for the actor (and the reference, not offloaded); rollout
    # TP 2 on vllm; 1024 prompts x 5, mini-batch 256 -> 4 steps; prompt 1024, response 1024
    "verl-b178a3c-run_qwen2-7b_math_megatron.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 2, "pp": 2, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": OFF,
        "workload": ("grpo", 1024, 5, 1024, 1024, 4),
        "policy": "qwen2-7b",
        "engine": "vllm",
    },
    # GSPO on Megatron: trainer.nnodes 2 x 8; vLLM engines of tensor_model_parallel_size 1 x
    # data_parallel_size 4 (replica.py: an engine spans tp x dp GPUs, its dp ranks attention
    # groups), expert parallel 4 over the engine (RolloutConfig asserts EP = TP x DP); Megatron
    # TP 4, EP 4, expert TP 1, full recompute (override_transformer_config); param, grad and
    # optimizer offload between phases, the reference's parameters offloaded; 256 prompts x 16,
    # mini-batch 32 -> 8 steps; prompt 2048, response 8192; Qwen3-30B-A3B-Base
    "verl-b178a3c-test_gspo_qwen30b_a3b_ep.sh": {
        "gpus": 16,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 16, "tp": 4, "ep": 4, "attention_dp": 4},
        "train": {"gpus": 16, "tp": 4, "pp": 1, "cp": 1, "ep": 4, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("gspo", 256, 16, 2048, 8192, 8),
        "policy": "qwen3-30b-a3b",
        "engine": "vllm",
    },
    # GMPO (policy_loss.loss_mode geo_mean under the GRPO estimator) on FSDP: no strategy key, so
    # the YAML's `fsdp`, fully sharded on a one-dimensional mesh (get_sharding_strategy; fsdp_size
    # 32 of 64 ranks makes it hybrid: still ZeRO 3 within each group of 32); Ulysses 4, gradient
    # checkpointing on; param and optimizer offload, the reference's parameters offloaded; vLLM
    # TP 4; 8 nodes x 8; 512 prompts x 16, mini-batch 32 -> 16 steps; prompt 2048, response 8192
    "verl-b178a3c-test_dapo_qwen3_30b_math.sh": {
        "gpus": 64,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 64, "tp": 4},
        "train": {"gpus": 64, "tp": 1, "pp": 1, "cp": 4, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("gmpo", 512, 16, 2048, 8192, 16),
        "policy": "qwen3-30b-a3b",
        "engine": "vllm",
    },
    # MoE on Megatron: trainer.nnodes 3 x 8; TP 4 x PP 3 x EP 4 (expert TP 1), so 2 data-parallel
    # replicas; rollout TP 4, rollout EP at its default 1; 192 prompts x 5, mini-batch 64 -> 3
    # steps; prompt 1024, response 2048; moonshotai/Moonlight-16B-A3B
    "verl-b178a3c-run_moonlight16b_math_megatron.sh": {
        "gpus": 24,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 24, "tp": 4, "ep": 1},
        "train": {"gpus": 24, "tp": 4, "pp": 3, "cp": 1, "ep": 4, "zero": 1, "recompute": "none"},
        "offload": OFF,
        "workload": ("grpo", 192, 5, 1024, 2048, 3),
        "policy": "moonlight-16b-a3b",
        "engine": "vllm",
    },
    # PPO (adv_estimator gae) on FSDP: the critic is a model of its own (critic.model.path) on
    # the same 8 GPUs; rollout TP 4; gradient checkpointing on; no offload; rollout.n unset (1);
    # 1024 prompts, mini-batch 256 -> 4 steps; prompt 512, response 512
    "verl-b178a3c-run_deepseek7b_llm_ppo.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 4},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": OFF,
        "workload": ("ppo", 1024, 1, 512, 512, 4),
        "policy": "deepseek-llm-7b",
        "engine": "vllm",
        "critic": "separate",
        "pools": {},
    },
    # PPO on Megatron (--config-name='ppo_megatron_trainer'): actor TP 2 x PP 2, the critic on the
    # same 8 GPUs; rollout TP 4; 1024 prompts x 1, mini-batch 256 -> 4 steps; prompt 1024,
    # response 512
    "verl-b178a3c-run_qwen2-7b_math_gsm8k_megatron_ppo.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 4},
        "train": {"gpus": 8, "tp": 2, "pp": 2, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": OFF,
        "workload": ("ppo", 1024, 1, 1024, 512, 4),
        "policy": "qwen2-7b",
        "engine": "vllm",
        "critic": "separate",
        "pools": {},
    },
    # FSDP, 1 node x 8, rollout TP 2; the reference's parameters offloaded
    # (ref.fsdp_config.param_offload=True); 1024 x 5, mini-batch 256 -> 4; 512 + 1024; Qwen3-8B
    "verl-b178a3c-run_qwen3-8b.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "frozen": True},
        "workload": ("grpo", 1024, 5, 512, 1024, 4),
        "policy": "qwen3-8b",
        "engine": "vllm",
    },
    # one-step-off entry point (verl.experimental.one_step_off_policy.main_ppo): trainer 1 x 6
    # (NGPUS_PER_NODE 8 less n_gpus_rollout 2), rollout 1 x 2 of TP 2; strategy fsdp2 (ZeRO 3);
    # reference offloaded; 1152 prompts x 5, mini-batch 192 -> 6 steps; 512 + 1024;
    # Qwen2.5-3B-Instruct (MODEL_PATH's default)
    "verl-b178a3c-one_step_off-grpo_3b_gsm8k_fsdp2_2_6.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "one-step-off"),
        "rollout": {"gpus": 2, "tp": 2},
        "train": {"gpus": 6, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "frozen": True},
        "workload": ("grpo", 1152, 5, 512, 1024, 6),
        "policy": "qwen2.5-3b",
        "engine": "vllm",
    },
    # the DAPO recipe (recipe.dapo.main_dapo, dapo_trainer.yaml over ppo_trainer): NNODES 16 x 8,
    # colocated and synchronous; rollout TP 4 (gen_tp); FSDP (ZeRO 3) with Ulysses 8 (sp_size);
    # offload=True puts the actor's parameters and optimizer on the host between phases and
    # the reference's parameters there; filter_groups on with clip-higher 0.28: DAPO; 512 prompts
    # (train_prompt_bsz; gen_prompt_bsz 1536 is what is sampled to fill them) x 16, mini-batch 32
    # -> 16 steps; prompt 2048, response 20480; Qwen2.5-32B
    "verl-recipe-21892b9-run_dapo_qwen2.5_32b.sh": {
        "gpus": 128,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 128, "tp": 4},
        "train": {"gpus": 128, "tp": 1, "pp": 1, "cp": 8, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("dapo", 512, 16, 2048, 20480, 16),
        "policy": "qwen2.5-32b",
        "engine": "vllm",
    },
    # OpenRLHF 0.11 (3c3be62, openrlhf/cli/train_ppo_ray.py): --train.colocate_all puts actor,
    # reference and the 4 vLLM engines of TP 2 on the same 8 GPUs; ZeRO 3 (--ds.zero_stage 3),
    # DeepSpeed TP and ring attention at their default 1 (L353, L506); gradient checkpointing on;
    # --ds.enable_sleep parks the actor's state during generation (ppo_actor.py L580), the
    # reference stays (no --ref offload flag); group_norm advantage with dynamic filtering and
    # clip-higher 0.27: DAPO; 128 prompts x 8 = 1024 samples, train batch 128 -> 8 steps;
    # --data.max_len 2048 bounds prompt + response together and --rollout.max_new_tokens is
    # unset (each response gets what its prompt leaves): neither length is stated
    "openrlhf-3c3be62-train_dapo_ray_hybrid_engine.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True},
        "workload": ("dapo", 128, 8, None, None, 8),
        "policy": "llama-3-8b",
        "engine": "vllm",
    },
    # PPO on the hybrid engine: actor, critic (ppo_critic.py; its path defaults to the reward
    # model's), reference and reward model all on the same 8 GPUs under colocate_all; the actor
    # and critic sleep (phase offload); advantage estimator at its default gae; 1024 prompts x 1,
    # train batch 128 -> 8 steps; lengths as above (max_len 2048 only)
    "openrlhf-3c3be62-train_ppo_ray_hybrid_engine.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True},
        "workload": ("ppo", 1024, 1, None, None, 8),
        "policy": "llama-3-8b",
        "engine": "vllm",
        "critic": "separate",
        "pools": {},
    },
    # OpenRLHF 0.8.9 (c250c21a): --async_train (ppo_trainer_async.py: a queue of one batch, so
    # generation runs one step ahead: one-step-off); no colocation flag, so every model has
    # GPUs of its own: actor 4, reference 1, reward model 1, 2 engines of TP 1 (8 GPUs);
    # ZeRO 3, DeepSpeed TP and ring attention at their default 1 (L299, L403); gradient
    # checkpointing; no sleep flags; reinforce_baseline; 128 prompts x 8, train batch 128 ->
    # 8 steps; prompt 1024, response 1024 (--prompt_max_len, --generate_max_len)
    "openrlhf-c250c21a-train_reinforce_baseline_llama_ray_async.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "one-step-off"),
        "rollout": {"gpus": 2, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": OFF,
        "workload": ("reinforce-plus-plus-baseline", 128, 8, 1024, 1024, 8),
        "policy": "llama-3-8b",
        "engine": "vllm",
        "pools": {"reference": 1, "reward": 1},
    },
    # NeMo-RL at 7ea279abf: each recipe over examples/configs/grpo_math_1B.yaml (its defaults:),
    # the keys it leaves out at that file's values: 32 prompts x 16, train_global_batch_size
    # 512; DTensor v2 (FSDP2: ZeRO 3) TP 1 CP 1 without activation checkpointing, or with
    # megatron_cfg.enabled Megatron TP/PP/CP/EP 1 with the distributed optimizer (ZeRO 1) and
    # activation_checkpointing false (setup.py L1071: recompute only when it is on); vLLM TP 1, EP
    # 1; generation colocated (the policy is offloaded for it: phase offload); the reference's
    # weights kept on the host (megatron/setup.py L2159, the DTensor workers' state dict) and
    # built only with a KL penalty (grpo.py L1145; base 0.01); cluster 1 node of 1 GPU.
    # policy.max_total_sequence_length bounds prompt + response together and max_new_tokens is
    # that whole bound, so neither length is stated on its own (both assumed).
    # generation on 1 node of 8 of its own (colocated.enabled false, its resources), training on
    # the other node; synchronous (async_grpo off); 64 prompts x 32 = 2048 over 512 -> 4 steps
    NEMO + "grpo-llama3.1-8b-instruct-2n8g-fsdp2tp1-noncolocated.yaml": {
        "gpus": 16,
        "placement": ("disaggregated", "sync"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "none"},
        "offload": {**OFF, "frozen": True},
        "workload": ("grpo", 64, 32, None, None, 4),
        "policy": "llama-3.1-8b",
        "engine": "vllm",
    },
    # MoE on Megatron: 4 nodes x 8 colocated; Megatron PP 4 EP 4 (TP 1, CP 1, ETP 1 from the
    # base); vLLM TP 1, EP 1; KL penalty 0.04 (reference); 32 x 16 over 512 -> 1 step
    NEMO + "grpo-moonlight-16ba3b-4n8g-megatron.yaml": {
        "gpus": 32,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 32, "tp": 1, "ep": 1},
        "train": {"gpus": 32, "tp": 1, "pp": 4, "cp": 1, "ep": 4, "zero": 1, "recompute": "none"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 32, 16, None, None, 1),
        "policy": "moonlight-16b-a3b",
        "engine": "vllm",
    },
    # Megatron on 1 node x 8 (cluster.gpus_per_node 8, num_nodes 1 from the base), colocated;
    # every degree at the base's 1; 32 x 16 over 512 -> 1; total sequence 512
    NEMO + "grpo-llama3.2-1b-instruct-1n8g-megatron.yaml": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 32, 16, None, None, 1),
        "policy": "llama-3.2-1b",
        "engine": "vllm",
    },
    # DTensor v1 (_v2 false) with cpu_offload (FSDP2's CPUOffloadPolicy: parameters and the
    # optimizer step on the host, dtensor/parallelize.py L513-L521) and activation
    # checkpointing; KL penalty 0, so no reference (grpo.py L1145); 128 prompts x 8 over a
    # global batch of 64 -> 16 steps; 1 node x 8 colocated; sequence 8192
    NEMO + "grpo-deepscaler-1.5b-8K.yaml": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        # frozen: NeMo-RL keeps frozen models on the host by itself (its mapping's implied
        # offload_frozen), which review's costing applies to the launch's fixed offload too
        "offload": {**OFF, "phase": True, "optimizer": 1.0, "params": True, "frozen": True},
        "workload": ("grpo", 128, 8, None, None, 16),
        "policy": "deepseek-r1-distill-qwen-1.5b",
        "engine": "vllm",
    },
    # slime at 624b824 (the scripts' settings as the older fixtures of tests/test_review.py read
    # them): ray start --num-gpus 8, actor 1 x 8 with --colocate, so rollout on the same GPUs
    # and Megatron offloaded between phases (arguments.py L1939-L1949: offload_train on);
    # Megatron's distributed optimizer forced (megatron_utils/arguments.py L153: ZeRO 1);
    # recompute full (--recompute-granularity full); --use-kl-loss builds the reference even at
    # coefficient 0 (ray/placement_group.py L178), held on the host; no prompt bound is given
    # (assumed). --optimizer-cpu-offload runs Adam on the host (Megatron's
    # optimizer_offload_fraction default 1.0). Engines of --rollout-num-gpus-per-engine GPUs
    # (plain TP). 32 prompts x 8 over a global batch of 256 -> 1 step; responses 8192
    SLIME_W + "run-qwen3-32B.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 8},
        "train": {"gpus": 8, "tp": 8, "pp": 1, "cp": 1, "ep": 1, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True, "optimizer": 1.0, "frozen": True},
        "workload": ("grpo", 32, 8, None, 8192, 1),
        "policy": "qwen3-32b",
        "engine": "sglang",
    },
    # MoE: one 8-GPU engine (no --sglang-ep-size: EP 1); Megatron TP 4 EP 8 ETP 1; DAPO's
    # dynamic-sampling filter and clip-higher 0.28 but the sequence-mean loss (no
    # --calculate-per-token-loss), read as GRPO as tests/test_review.py reads run-deepseek-r1.sh;
    # 128 prompts x 8 in --num-steps-per-rollout 4 optimizer steps; responses 4096
    SLIME_W + "run-moonlight-16B-A3B.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 8, "ep": 1},
        "train": {"gpus": 8, "tp": 4, "pp": 1, "cp": 1, "ep": 8, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True, "optimizer": 1.0, "frozen": True},
        "workload": ("grpo", 128, 8, None, 4096, 4),
        "policy": "moonlight-16b-a3b",
        "engine": "sglang",
    },
    # engines of 1 GPU with EAGLE speculative decoding; Megatron TP 2 with MTP training; Adam on
    # the GPUs; 32 x 8 over 256 -> 1; responses 8192; MiMo-7B-RL (models/mimo-7B-rl.sh)
    SLIME_W + "run-mimo-7B-rl-eagle.sh": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 8, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 32, 8, None, 8192, 1),
        "policy": "mimo-7b",
        "engine": "sglang",
    },
    # SkyRL (as above): examples.train.async.main_async, the one-step off-policy trainer
    # (examples/train/async/README.md); colocate_all false: 4 engines of TP 1 on GPUs of their
    # own beside the policy's 4; the reference (use_kl_loss) colocated with the policy
    # (colocate_policy_ref, default true; trainer.py L717-L760) and swapped with its state;
    # FSDP2, checkpointing on; 1024 x 5, mini-batch 256 -> 4; 512 + 1024
    "skyrl-a956457/async_run_gsm8k.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "one-step-off"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 1024, 5, 512, 1024, 4),
        "policy": "qwen2.5-1.5b",
        "engine": "vllm",
    },
    # 2 nodes x 8 colocate_all; 2 engines of TP 8 (EP at its default 1); Megatron TP 2 EP 8 ETP 1,
    # PP and CP 1; ZeRO 1 and full recomputation (SkyRL's Megatron defaults, as above); KL loss:
    # reference parked with the policy; 128 x 5, mini-batch 64 -> 2; 512 + 1024; the model
    # downloaded to $HOME/moonlight16b (Moonlight-16B-A3B)
    "skyrl-a956457/run_megatron_moonlight.sh": {
        "gpus": 16,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 16, "tp": 8, "ep": 1},
        "train": {"gpus": 16, "tp": 2, "pp": 1, "cp": 1, "ep": 8, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("grpo", 128, 5, 512, 1024, 2),
        "policy": "moonlight-16b-a3b",
        "engine": "vllm",
    },
    # the DAPO entry point on FSDP: 2 nodes x 8 colocate_all; 4 engines of TP 4; Ulysses 4
    # (trainer.policy.sequence_parallel_size); no KL loss, so no reference; clip-higher 0.28 and
    # the legacy token-mean loss: DAPO; 512 x 16, mini-batch 32 -> 16; 2048 + 20480; Qwen2.5-32B
    "skyrl-a956457/run_dapo_qwen2.5_32b_aime.sh": {
        "gpus": 16,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 16, "tp": 4},
        "train": {"gpus": 16, "tp": 1, "pp": 1, "cp": 4, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True},
        "workload": ("dapo", 512, 16, 2048, 20480, 16),
        "policy": "qwen2.5-32b",
        "engine": "vllm",
    },
    # RLOO (advantage_estimator rloo) with the KL term in the reward (use_kl_in_reward builds
    # the reference, trainer.py L653); 4 GPUs colocate_all, 4 engines of TP 1; GSM8K's rule
    # reward (environment.env_class gsm8k); 1024 x 5, mini-batch 256 -> 4; 512 + 1024
    "skyrl-a956457/run_rloo.sh": {
        "gpus": 4,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("rloo", 1024, 5, 512, 1024, 4),
        "policy": "qwen2.5-1.5b",
        "engine": "vllm",
    },
    # AReaL (as above): PPO, the critic (is_critic, the actor's architecture) on the actor's GPUs
    # (scheduling_strategy colocation, target actor); actor megatron:d4p1t1 beside
    # sglang:d4p1t1; max_head_offpolicyness 2; gradient checkpointing on (Megatron: recompute at
    # MegatronEngineConfig's granularity full, megatron_engine.py L520-L522); Megatron's
    # distributed optimizer (ZeRO 1); kl_ctl 0: no reference; 256 prompts x 1, one minibatch;
    # prompts up to 1024 (train_dataset.max_length), responses 1024
    "areal-4aef98d/run_gsm8k_ppo_megatron.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 1, "recompute": "full"},
        "offload": OFF,
        "workload": ("ppo", 256, 1, 1024, 1024, 1),
        "policy": "qwen2.5-1.5b",
        "engine": "sglang",
        "critic": "separate",
        "pools": {},
    },
    # DAPO (eps_clip_higher 0.28, the overlong penalty, dynamic batch size): fsdp:d4 beside
    # sglang:d4 (TP 1); staleness 2; FSDP2 (ZeRO 3) with checkpointing; no reference; 256 x 4,
    # one minibatch; prompts up to 1024, responses 4096; Qwen2.5-1.5B
    "areal-4aef98d/run_gsm8k_dapo_dynamic_bs.sh": {
        "gpus": 8,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 4, "tp": 1},
        "train": {"gpus": 4, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
        "offload": OFF,
        "workload": ("dapo", 256, 4, 1024, 4096, 1),
        "policy": "qwen2.5-1.5b",
        "engine": "sglang",
    },
    # ROLL at 8eb27cc2 (one YAML config, RLVRConfig's dataclasses): actor_train on
    # list(range(0,16)), actor_infer on list(range(16,24)) (no shared device: GPUs of its own), 24
    # GPUs; vLLM without tensor_parallel_size is one GPU per engine (worker_config.py L283-L292);
    # async_generation_ratio 1: generation one batch ahead, streamed (async, staleness 1); Megatron
    # TP 2 with the distributed optimizer (ZeRO 1), no recompute_granularity (mcore_adapter's
    # default None: none);
    # the trainer is parked before every rollout whatever the placement (rlvr_pipeline.py L505-L507)
    # and the reference, loaded by init_kl_coef's default 0.2 (base_config.py L535, L653-L656),
    # after each call (base_worker.py L130-L142); adv_estimator reinforce with whitened advantages
    # (ROLL's Reinforce++); 64 prompts x 8; per_device_train_batch_size 1 x 64 accumulation steps on
    # each of 16 / 2 = 8 ranks is 512 samples: the whole step, one optimizer step; prompts 2048,
    # responses 8192
    "roll-8eb27cc/qwen2.5-7b-rlvr_config_amd_async.yaml": {
        "gpus": 24,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 16, "tp": 2, "pp": 1, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("reinforce-plus-plus", 64, 8, 2048, 8192, 1),
        "policy": "qwen2.5-7b",
        "engine": "vllm",
    },
    # the same run on SGLang: num_gpus_per_worker left at 1, so tensor_parallel_size defaults to one
    # GPU (sglang_strategy.py L77); the model from a local folder named Qwen2.5-7B
    "roll-8eb27cc/qwen2.5-7b-rlvr_config_async.yaml": {
        "gpus": 24,
        "placement": ("disaggregated", "async"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 16, "tp": 2, "pp": 1, "cp": 1, "zero": 1, "recompute": "none"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("reinforce-plus-plus", 64, 8, 2048, 8192, 1),
        "policy": "qwen2.5-7b",
        "engine": "sglang",
    },
    # every role on list(range(0,8)): colocated, synchronous (no async_generation_ratio); vLLM one
    # GPU per engine; Megatron TP 1 with the distributed optimizer and full recompute, parked before
    # every rollout; 8 prompts x 8 = 64 samples, 1 x 8 accumulation steps on 8 ranks: one step
    "roll-8eb27cc/qwen2.5-7b-rlvr_rollout_mock_dump.yaml": {
        "gpus": 8,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 8, "tp": 1},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 1, "recompute": "full"},
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("reinforce-plus-plus", 8, 8, 2048, 4096, 1),
        "policy": "qwen2.5-7b",
        "engine": "vllm",
    },
    # 64 GPUs shared by every role; vLLM engines of TP 8; Megatron TP 2, PP 8 (virtual stages 6), EP
    # 4, the distributed optimizer, selective recompute; 32 prompts x 8 = 256 samples, 1 x 64 steps
    # on 64 / (2 x 8) = 4 ranks: one optimizer step; prompts 2048, responses 4096
    "roll-8eb27cc/qwen3-235ba22b-rlvr_config_140GB.yaml": {
        "gpus": 64,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 64, "tp": 8},
        "train": {
            "gpus": 64,
            "tp": 2,
            "pp": 8,
            "virtual_stages": 6,
            "cp": 1,
            "ep": 4,
            "zero": 1,
            "recompute": "selective",
        },
        "offload": {**OFF, "phase": True, "frozen": True},
        "workload": ("reinforce-plus-plus", 32, 8, 2048, 4096, 1),
        "policy": "qwen3-235b-a22b",
        "engine": "vllm",
    },
    # 32 GPUs shared; vLLM TP 2; FSDP2 over all 32 (fsdp_size 32, reshard_after_forward: ZeRO 3)
    # with Ulysses 4, gradient checkpointing on; FSDP2's offload between phases moves the weights
    # only (fsdp2_strategy.py L948-L967), not a phase offload, and the reference is offloaded after
    # each call; 16 prompts x 8 = 128 samples, 1 x 4 steps on 32 / 4 = 8 ranks: 4 optimizer steps
    "roll-8eb27cc/qwen3-30ba3b-rlvr_fsdp2.yaml": {
        "gpus": 32,
        "placement": ("colocated", "sync"),
        "rollout": {"gpus": 32, "tp": 2},
        "train": {"gpus": 32, "tp": 1, "pp": 1, "cp": 4, "zero": 3, "recompute": "full"},
        "offload": {**OFF, "frozen": True},
        "workload": ("reinforce-plus-plus", 16, 8, 2048, 4096, 4),
        "policy": "qwen3-30b-a3b",
        "engine": "vllm",
    },
}
NOT_YET: dict[str, str] = {}
"""Fixtures review does not read right yet, each with why (strict: one that starts to read
right fails until it is taken off)."""
WORKLOAD = ("algorithm", "prompts_per_step", "samples_per_prompt", "prompt_tokens")
WORKLOAD += ("max_response_tokens", "minibatches_per_step")
ACCELERATOR = {"openrlhf": "a100-sxm-80gb"}
"""The accelerator each fixture is reviewed on: the one its framework's example names where
it names one (OpenRLHF's scripts are A100 runs), else the H100."""


def accelerator(name: str) -> str:
    return ACCELERATOR.get(name.split("-", 1)[0], "h100-sxm-80gb")


FIELD_ORDER = ("gpus", "placement", "execution", "rollout.gpus", "rollout.tp", "rollout.ep")
FIELD_ORDER += ("rollout.attention_dp",)
FIELD_ORDER += ("train.gpus", "train.tp", "train.pp", "train.virtual_stages", "train.cp")
FIELD_ORDER += ("train.ep", "zero", "recompute")
FIELD_ORDER += ("offload", "critic", "pools", *WORKLOAD, "policy", "engine")
"""The fields of a reading, in the order the benchmark prints them."""


def fields_read(wanted: dict[str, Any], got: dict[str, Any] | None) -> dict[str, tuple[Any, Any]]:
    """Each field of the reading against review's output (None: review refused the file):
    field -> (wanted, got)."""
    if got is None:
        return {k: (v, "refused") for k, (v, _) in fields_read(wanted, _NOTHING).items()}
    scenario, plan = got["scenario"], got["estimate"]
    cluster = scenario["cluster"]
    out: dict[str, tuple[Any, Any]] = {
        "gpus": (wanted["gpus"], cluster["nodes"] * cluster["gpus_per_node"]),
        "placement": (wanted["placement"][0], plan.get("placement")),
        "execution": (wanted["placement"][1], plan.get("execution")),
    }
    for pool in ("rollout", "train"):
        for k, v in wanted[pool].items():
            out[k if k in ("zero", "recompute") else f"{pool}.{k}"] = (v, plan[pool].get(k))
    out["offload"] = (wanted["offload"], plan["train"].get("offload"))
    pools = {k: v for k, v in plan["pools"].items() if v}
    if "critic" in wanted:  # a value model of its own, on the pools given
        out["critic"] = ((wanted["critic"], wanted["pools"]), (plan.get("critic"), pools))
    elif "pools" in wanted:  # models on GPUs of their own beside the actor (no critic)
        out["pools"] = (wanted["pools"], pools)
    for field, value in zip(WORKLOAD, wanted["workload"], strict=True):
        if value is None:  # the launch does not say it: assumed, and said so
            said = f"workload.{field}" in got["rests_on_assumptions"]
            out[field] = ("assumed", "assumed" if said else scenario["workload"].get(field))
        else:
            out[field] = (value, scenario["workload"].get(field))
    out["policy"] = (wanted["policy"], scenario["models"].get("policy"))
    out["engine"] = (wanted["engine"], got.get("rollout_engine"))
    return out


_NOTHING: dict[str, Any] = {
    "scenario": {"cluster": {"nodes": 0, "gpus_per_node": 0}, "workload": {}, "models": {}},
    "estimate": {"rollout": {}, "train": {}, "pools": {}},
    "rests_on_assumptions": [],
}
"""An output with nothing read, to list a refused file's fields."""


def misread(name: str) -> dict[str, tuple[Any, Any]]:
    """The fields review reads wrong on one fixture (empty when it reads it all right)."""
    got = review(WILD / name, hardware=Hardware(accelerator(name)))
    return {k: (a, b) for k, (a, b) in fields_read(READINGS[name], got).items() if a != b}


def _case(name: str) -> Any:
    marks = [pytest.mark.xfail(reason=NOT_YET[name], strict=True)] if name in NOT_YET else []
    return pytest.param(name, id=Path(name).stem, marks=marks)


@pytest.mark.parametrize("name", [_case(n) for n in sorted(READINGS)])
def test_review_reads_a_launch_from_the_wild(name: str) -> None:
    assert misread(name) == {}


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


def test_slime_async_with_colocate_names_the_start_up_stop(tmp_path: Path) -> None:
    """train_async.py asserts that --colocate is not set (L11 at 624b824a; the fifth audit's
    r2): the fully-async example with --colocate added names that stop, though the entry point
    runs disaggregated; without its rollout pool it is refused in one line naming the stop,
    not a split of the cluster."""
    source = ASYNC / "run-qwen2.5-0.5B-fully_async.sh"
    text = source.read_text().replace('"${SCRIPT_DIR}/../..', f'"{WILD / "slime-624b824"}')
    assert "--actor-num-nodes 1 \\" in text
    text = text.replace("--actor-num-nodes 1 \\", "--actor-num-nodes 1 --colocate \\")
    path = tmp_path / "run.sh"
    path.write_text(text)
    got = review(path, hardware=Hardware("h100-sxm-80gb"))
    assert [s["constraint"] for s in got["startup"]] == ["slime-async-not-colocated"]
    pool = '   --rollout-num-gpus "${ROLLOUT_GPUS}" \\\n'
    assert pool in text
    path.write_text(text.replace(pool, ""))
    with pytest.raises(NotCostable, match=r"constraint slime-async-not-colocated: train_async\.py"):
        review(path, hardware=Hardware("h100-sxm-80gb"))
    done = CliRunner().invoke(cli, ["review", str(path), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 1 and done.output.count("\n") == 1
