"""Review verdicts the fourth audit (/work/notes/audit4/report.md, defects 3-5) found wrong:
launches whose micro-batch does not divide a GPU's share of the mini-batch, verl's KL
estimator under its old names, and a verl launch that names no training backend.

The launches are written here by hand; each number is worked out in its test's docstring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from launch_support import review_json
from test_startup import _check

GIVEN = ("--accelerator", "h100-sxm-80gb")

VERL = """python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=96 \\
    data.max_prompt_length=1024 \\
    data.max_response_length=4096 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=48 \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.n=5 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=2 {extra}
"""
"""verl GRPO on 16 GPUs: 96 prompts x 5 = 480 responses a step in mini-batches of 48 prompts,
240 responses over 16 data-parallel ranks: 15 a rank."""

SKYRL = """uv run --isolated --extra fsdp -m skyrl.train.entrypoints.main_base \\
    trainer.algorithm.advantage_estimator=grpo \\
    trainer.policy.model.path=Qwen/Qwen2.5-7B-Instruct \\
    trainer.placement.colocate_all=true \\
    trainer.strategy=fsdp \\
    trainer.placement.policy_num_gpus_per_node=8 \\
    generator.inference_engine.num_engines=4 \\
    generator.inference_engine.tensor_parallel_size=2 \\
    trainer.train_batch_size=96 \\
    trainer.policy_mini_batch_size=48 \\
    trainer.max_prompt_length=512 \\
    generator.sampling_params.max_generate_length=4096 \\
    generator.n_samples_per_prompt=5 \\
    environment.env_class=gsm8k {extra}
"""
"""SkyRL GRPO on 8 GPUs: mini-batches of 48 prompts x 5 = 240 samples over 8 ranks, 30 a rank."""


def review(tmp_path: Path, template: str, *extra: str) -> dict[str, Any]:
    path = tmp_path / "launch.sh"
    path.write_text(template.format(extra=" ".join(extra)))
    return review_json(path, *GIVEN)


def startup(done: dict[str, Any]) -> list[str]:
    return [c["constraint"] for c in done["startup"]]


# -- the micro-batch divides a GPU's share of the mini-batch ---------------------------------


@pytest.mark.parametrize(
    ("template", "extra", "tripped"),
    [
        # verl 0.8's engine (verl/workers/engine/utils.py L89-L93): 15 % 4 = 3
        (VERL, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
         ["verl-engine-micro-batch-divides-local-mini-batch"]),
        # 15 % 3 = 0
        (VERL, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", []),
        # by tokens the micro-batch count is not used (engine/utils.py L74-L87)
        (VERL, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 "
         "actor_rollout_ref.actor.use_dynamic_bsz=True "
         "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384", []),
        # SkyRL's validate_batch_sizes (skyrl/train/utils/utils.py L112-L115): 30 % 4 = 2
        (SKYRL, "trainer.micro_train_batch_size_per_gpu=4",
         ["skyrl-micro-batch-divides-local-mini-batch"]),
        # 30 % 5 = 0
        (SKYRL, "trainer.micro_train_batch_size_per_gpu=5", []),
    ],
)  # fmt: skip
def test_review_reports_a_micro_batch_that_does_not_divide(
    tmp_path: Path, template: str, extra: str, tripped: list[str]
) -> None:
    done = review(tmp_path, template, extra)
    micro = [c for c in startup(done) if "micro-batch-divides-local" in c]
    assert micro == tripped


def test_the_micro_batch_checks_by_hand() -> None:
    """The same arithmetic over facts, for verl 0.7's FSDP worker (fsdp_workers.py L254-L258)
    and its model engine at 0.8: 480 responses in 2 mini-batches over 16 ranks are 15 a rank;
    over 8 ranks 30. Batching by tokens leaves the count unused."""
    facts = {"workload.responses_per_step": 480, "workload.minibatches_per_step": 2}
    for record in ("verl-fsdp-micro-batch-divides-local-mini-batch",
                   "verl-engine-micro-batch-divides-local-mini-batch",
                   "skyrl-micro-batch-divides-local-mini-batch"):  # fmt: skip
        check = _check(record)
        for dp, micro, tokens, holds in ((16, 4, False, False), (16, 3, False, True),
                                         (16, 5, False, True), (8, 4, False, False),
                                         (8, 6, False, True), (16, 4, True, True)):  # fmt: skip
            given = {**facts, "plan.train.dp": dp, "launch.micro_batch_sequences": micro,
                     "launch.token_batching": tokens}  # fmt: skip
            assert bool(check.holds(given, 1)[0]) is holds, (record, dp, micro, tokens)


LOG_PROB = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
REFERENCE = "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"
TRAIN_3 = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3"
"""A training micro-batch that divides a rank's 15 responses of a mini-batch."""


@pytest.mark.parametrize(
    ("extra", "tripped"),
    [
        # verl 0.8's engine cuts a rank's share of the whole step, 480 / 16 = 30 responses, into
        # forward micro-batches (engine/utils.py L89-L93): 30 % 4 = 2 for the old log-probs
        (f"{LOG_PROB}=4 {REFERENCE}=5", ["verl-engine-log-prob-micro-batch-divides-local-batch"]),
        # and for the reference's
        (f"{LOG_PROB}=5 {REFERENCE}=4", ["verl-engine-reference-micro-batch-divides-local-batch"]),
        # 30 % 5 = 0 and 30 % 6 = 0
        (f"{LOG_PROB}=5 {REFERENCE}=6", []),
        # batched by tokens the sizes are not used (engine/utils.py L74-L87)
        (f"{LOG_PROB}=4 {REFERENCE}=4 actor_rollout_ref.actor.use_dynamic_bsz=True "
         "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384", []),
    ],
)  # fmt: skip
def test_review_reports_a_log_prob_micro_batch_that_does_not_divide(
    tmp_path: Path, extra: str, tripped: list[str]
) -> None:
    done = review(tmp_path, VERL, TRAIN_3, extra)
    assert done["mapping"] == "verl-0.8.0"
    micro = [c for c in startup(done) if "micro-batch-divides-local" in c]
    assert micro == tripped


def test_the_log_prob_micro_batch_checks_by_hand() -> None:
    """480 responses over 16 ranks are 30 a rank, over 8 ranks 60: a forward micro-batch of 4
    divides 60, not 30; unset (0) is the per-GPU check's (verl-engine-reads-per-gpu-micro-
    batch-v0.8); the reference's applies only where there is a reference."""
    for record, fact in (
        ("verl-engine-log-prob-micro-batch-divides-local-batch", "launch.log_prob_micro_batch"),
        ("verl-engine-reference-micro-batch-divides-local-batch", "launch.ref_micro_batch"),
    ):
        check = _check(record)
        for dp, micro, tokens, holds in ((16, 4, False, False), (8, 4, False, True),
                                         (16, 6, False, True), (16, 0, False, True),
                                         (16, 4, True, True)):  # fmt: skip
            given = {"workload.responses_per_step": 480, "plan.train.dp": dp, fact: micro,
                     "launch.token_batching": tokens, "workload.needs_reference": True}  # fmt: skip
            assert bool(check.holds(given, 1)[0]) is holds, (record, dp, micro, tokens)
    unreferenced = {"workload.responses_per_step": 480, "plan.train.dp": 16,
                    "launch.ref_micro_batch": 4, "launch.token_batching": False,
                    "workload.needs_reference": False}  # fmt: skip
    check = _check("verl-engine-reference-micro-batch-divides-local-batch")
    assert bool(check.holds(unreferenced, 1)[0])


# -- verl's KL estimator by its old names ----------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "estimator", "verdict"),
    [
        # kl_penalty_forward runs low_var_kl and k3 in one branch (core_algos.py L2177 at 0.8)
        ("actor_rollout_ref.actor.kl_loss_type=low_var_kl", "k3", "as the record"),
        ("actor_rollout_ref.actor.kl_loss_type=k3", "k3", "as the record"),
        # kl is k1 (L2166): not GRPO's k3
        ("actor_rollout_ref.actor.kl_loss_type=kl", "k1", "differs from the record"),
        # the key left out runs its default, low_var_kl (_generated_ppo_trainer.yaml L91)
        ("", "k3", "as the record"),
        # a KL in the reward runs kl_penalty's default instead, kl (L771): k1
        (
            "actor_rollout_ref.actor.use_kl_loss=False algorithm.use_kl_in_reward=True",
            "k1",
            "differs from the record",
        ),
    ],
)
def test_review_reads_verls_kl_aliases(
    tmp_path: Path, extra: str, estimator: str, verdict: str
) -> None:
    done = review(tmp_path, VERL, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", extra)
    (row,) = [r for r in done["algorithm_settings"] if r["setting"] == "estimator of that KL"]
    assert (row["launch"], row["record"]) == (estimator, "k3")
    assert row["verdict"].startswith(verdict)


# -- the entry point's own backend -----------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "backend"),
    [
        # main_ppo composes ppo_trainer, whose actor is dp_actor with strategy fsdp
        # (verl/trainer/config/ppo_trainer.yaml L10-L14, actor/dp_actor.yaml L26 at 0.8): the
        # reference's log-prob micro-batch, a key the Megatron entries also read, is no sign
        ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16", "pytorch-fsdp"),
        (
            "model_engine=megatron actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
            "megatron-lm",
        ),
    ],
)
def test_review_takes_the_entry_points_backend_when_no_key_names_one(
    tmp_path: Path, extra: str, backend: str
) -> None:
    done = review(tmp_path, VERL, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", extra)
    assert done["training_backend"] == backend
