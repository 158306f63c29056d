"""`rlmguide review` of launch files as users write them (held-out audit 3): hand-written
fixtures under tests/fixtures/review/user/, in the style of the frameworks' examples, that
the review once misread (micro-batches counted in sequences, OpenRLHF's KL side, NeMo-RL's
shell launch over its base config, keys the framework refuses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from rlmguide.review import Hardware, review

USER = REPO / "tests" / "fixtures" / "review" / "user"
WILD = REPO / "tests" / "fixtures" / "review" / "wild"
H100 = Hardware("h100-sxm-80gb")


def _edited(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = (USER / name).read_text()
    assert old in text, old
    out = tmp_path / name
    out.write_text(text.replace(old, new))
    return out


def _micro_row(result: dict[str, Any]) -> dict[str, Any]:
    (row,) = [r for r in result["memory_keys"] if r["setting"].startswith("training micro")]
    return row


def test_verl_micro_batches_in_sequences_are_costed_at_the_length_caps() -> None:
    # use_dynamic_bsz off (verl's default): 24 sequences of up to 1024 + 7168 tokens a
    # micro-batch, not the unused ppo_max_token_len_per_gpu (16384 by default)
    got = review(USER / "verl-grpo-sequence-micro-batch.sh", hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 24 * 8192
    row = _micro_row(got)
    assert row["launch"] == 24 * 8192 and row["verdict"].startswith("above")
    assert not got["estimate"]["feasible"]  # ~196k tokens of Qwen3-8B activations and logits
    keys = {u["key"]: u for u in got["understood"]}
    assert keys["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"]["value"] == 24
    unmapped = {u["key"] for u in got["unmapped"]}
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" not in unmapped


def test_verl_token_budget_holds_only_with_dynamic_batching(tmp_path: Path) -> None:
    name = "verl-grpo-sequence-micro-batch.sh"
    dynamic = _edited(
        tmp_path,
        name,
        "ppo_micro_batch_size_per_gpu=24",
        "use_dynamic_bsz=True actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192",
    )
    got = review(dynamic, hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 8192
    assert _micro_row(got)["launch"] == 8192


V07_HEADER = "#!/usr/bin/env bash\n# Mapping verl-0.7.0-125-gb178a3cd5: verl at b178a3cd5."


def _verl_07(tmp_path: Path, old: str, new: str) -> Path:
    """The sequence micro-batch launch with `old` replaced, read as verl 0.7 (its header)."""
    path = _edited(tmp_path, "verl-grpo-sequence-micro-batch.sh", old, new)
    text = path.read_text()
    path.write_text(text.replace("#!/usr/bin/env bash", V07_HEADER, 1))
    return path


def test_verl_global_micro_batch_is_divided_over_the_data_parallel_ranks(tmp_path: Path) -> None:
    # verl 0.7's legacy FSDP worker sets ppo_micro_batch_size_per_gpu to the global 384 over
    # its 16 GPUs / Ulysses 1 (fsdp_workers.py L247-L252 at b178a3cd5): 24 sequences, as the
    # per-GPU key gives them
    path = _verl_07(tmp_path, "ppo_micro_batch_size_per_gpu=24", "ppo_micro_batch_size=384")
    got = review(path, hardware=H100)
    assert got["mapping"] == "verl-0.7.0-125-gb178a3cd5"
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 24 * 8192
    assert _micro_row(got)["launch"] == 24 * 8192
    keys = {u["key"]: u for u in got["understood"]}
    actor = "actor_rollout_ref.actor.ppo_micro_batch_size"
    assert keys[actor]["field"] == f"{actor}_per_gpu"
    assert (keys[actor]["value"], keys[actor]["field_value"]) == (384, 24)
    assert actor not in {u["key"] for u in got["unmapped"]}
    # the global form is read as the per-GPU one, and the launch stops where that one would:
    # 64 prompts x 8 responses / 16 ranks = 32 a rank, which 24 does not divide (fsdp_workers.py
    # L254-L258 at b178a3cd5)
    stops = {s["constraint"] for s in got["startup"] if "micro-batch" in s["title"]}
    assert stops == {"verl-fsdp-micro-batch-divides-local-mini-batch"}, stops


def test_verl_megatron_global_micro_batches_over_dp_without_tp_pp(tmp_path: Path) -> None:
    # verl's Megatron example (TP 2 x PP 2 on 8 GPUs) with the global forms: the legacy worker
    # divides them by Megatron's data-parallel size, 2 (megatron_workers.py L356-L368 at
    # b178a3cd5), so the reference has its micro-batch and the actor's is 4 x 2,048 tokens
    text = (WILD / "verl-b178a3c-run_qwen2-7b_math_megatron.sh").read_text()
    for role, key in (
        ("actor", "ppo_micro"),
        ("rollout", "log_prob_micro"),
        ("ref", "log_prob_micro"),
    ):
        old = f"actor_rollout_ref.{role}.{key}_batch_size_per_gpu=4"
        assert old in text
        text = text.replace(old, f"actor_rollout_ref.{role}.{key}_batch_size=8")
    path = tmp_path / "megatron.sh"
    path.write_text(text)
    got = review(path, hardware=H100)
    assert got["mapping"] == "verl-0.7.0-125-gb178a3cd5"
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 4 * 2048
    keys = {u["key"]: u["field_value"] for u in got["understood"]}
    assert keys["actor_rollout_ref.ref.log_prob_micro_batch_size"] == 4
    assert keys["actor_rollout_ref.rollout.log_prob_micro_batch_size"] == 4
    tripped = {s["constraint"] for s in got["startup"]}
    assert "verl-megatron-reference-micro-batch-set" not in tripped
    assert "verl-micro-batch-in-one-form" not in tripped


def test_verl_refuses_a_micro_batch_given_in_both_forms(tmp_path: Path) -> None:
    both = "ppo_micro_batch_size_per_gpu=24 actor_rollout_ref.actor.ppo_micro_batch_size=384"
    path = _verl_07(tmp_path, "ppo_micro_batch_size_per_gpu=24", both)
    got = review(path, hardware=H100)
    assert "verl-micro-batch-in-one-form" in {s["constraint"] for s in got["startup"]}
    # the per-GPU key stands: verl would not start, so nothing is divided
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 24 * 8192
    newest = _edited(
        tmp_path, "verl-grpo-sequence-micro-batch.sh", "ppo_micro_batch_size_per_gpu=24", both
    )
    got = review(newest, hardware=H100)
    assert got["mapping"] == "verl-0.8.0"
    assert "verl-micro-batch-in-one-form-v0.8" in {s["constraint"] for s in got["startup"]}


def test_verl_08_does_not_start_on_a_global_micro_batch(tmp_path: Path) -> None:
    # verl 0.8's engine workers assert the per-GPU keys and divide no global one
    # (engine_workers.py L573-L578 at 7aed6b23): the launch would stop, and it is not divided
    path = _edited(
        tmp_path,
        "verl-grpo-sequence-micro-batch.sh",
        "ppo_micro_batch_size_per_gpu=24",
        "ppo_micro_batch_size=384",
    )
    got = review(path, hardware=H100)
    assert got["mapping"] == "verl-0.8.0"
    assert "verl-engine-reads-per-gpu-micro-batch-v0.8" in {s["constraint"] for s in got["startup"]}
    assert "micro_batch_tokens" not in got["scenario"]["plan"]["train"]
    assert "actor_rollout_ref.actor.ppo_micro_batch_size" in {u["key"] for u in got["unmapped"]}
    # the per-GPU key passes that check; 24 sequences still do not divide a rank's 32
    # (verl/workers/engine/utils.py L89-L93 at 7aed6b23)
    got = review(USER / "verl-grpo-sequence-micro-batch.sh", hardware=H100)
    stops = {s["constraint"] for s in got["startup"] if "micro-batch" in s["title"]}
    assert stops == {"verl-engine-micro-batch-divides-local-mini-batch"}, stops


def test_a_small_sequence_micro_batch_is_no_false_alarm(tmp_path: Path) -> None:
    one = _edited(
        tmp_path,
        "verl-grpo-sequence-micro-batch.sh",
        "ppo_micro_batch_size_per_gpu=24",
        "ppo_micro_batch_size_per_gpu=1",
    )
    got = review(one, hardware=H100)
    row = _micro_row(got)
    assert row["launch"] == 8192 and row["verdict"] == "as the plan needs"
    assert got["estimate"]["feasible"]


def test_skyrl_micro_batches_in_samples_are_costed() -> None:
    # trainer.max_tokens_per_microbatch left at -1 (off): 16 samples of 1024 + 7168 tokens
    got = review(USER / "skyrl-grpo-micro-batch.sh", hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 16 * 8192
    assert _micro_row(got)["launch"] == 16 * 8192


def test_skyrl_token_budget_when_positive(tmp_path: Path) -> None:
    budget = _edited(
        tmp_path,
        "skyrl-grpo-micro-batch.sh",
        "trainer.micro_train_batch_size_per_gpu=16",
        "trainer.max_tokens_per_microbatch=12288",
    )
    got = review(budget, hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 12288


def test_openrlhf_micro_batches_in_samples_are_costed() -> None:
    # no --train.dynamic_batch_enable: 6 samples of up to --data.max_len 4096 tokens
    got = review(USER / "openrlhf-reinforce-baseline-micro-batch.sh", hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 6 * 4096
    assert _micro_row(got)["launch"] == 6 * 4096


@pytest.mark.parametrize(
    ("old", "new", "side"),
    [
        ("--algo.kl.use_loss", "--algo.kl.use_loss", "loss"),
        # the switch left off (its default, train_ppo_ray.py L484-L486 at 3c3be623) with
        # --algo.kl.init_coef 0.001: a reward penalty, as OpenRLHF runs it
        ("--algo.kl.use_loss", "", "reward"),
    ],
)
def test_openrlhf_kl_in_the_loss_is_read(tmp_path: Path, old: str, new: str, side: Any) -> None:
    path = _edited(tmp_path, "openrlhf-reinforce-baseline-micro-batch.sh", old, new)
    got = review(path, hardware=H100)
    (row,) = [r for r in got["algorithm_settings"] if r["setting"].startswith("KL penalty")]
    assert row["launch"] == side
    if side == "loss":  # REINFORCE++-baseline's record puts it in the reward
        assert row["verdict"].startswith("differs from the record")
    else:
        assert row["verdict"] == "as the record"


def test_nemo_rl_dynamic_batching_budget_is_the_micro_batch(tmp_path: Path) -> None:
    # dynamic batching on (packing off, as NeMo-RL asserts): its train_mb_tokens cuts the
    # micro-batches (lm_policy.py L513-L521 at 7ea279ab), not the unused packing budget
    edited = _edited(
        tmp_path,
        "nemo-rl-grpo-shell.sh",
        "  logger.wandb_enabled=True",
        "  policy.sequence_packing.enabled=false \\\n"
        "  policy.sequence_packing.train_mb_tokens=16384 \\\n"
        "  policy.dynamic_batching.enabled=true \\\n"
        "  policy.dynamic_batching.train_mb_tokens=6144 \\\n"
        "  policy.dynamic_batching.logprob_mb_tokens=12288 \\\n"
        "  logger.wandb_enabled=True",
    )
    got = review(edited, hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 6144
    assert _micro_row(got)["launch"] == 6144
    keys = {u["key"]: u for u in got["understood"]}
    assert keys["policy.dynamic_batching.train_mb_tokens"]["field"] == "launch.micro_batch_tokens"
    unmapped = {u["key"] for u in got["unmapped"]}
    assert (
        not {"policy.dynamic_batching.train_mb_tokens", "policy.dynamic_batching.logprob_mb_tokens"}
        & unmapped
    )


def test_nemo_rl_shell_launch_reads_its_base_config_defaults() -> None:
    # colocated generation, 16 generations per prompt and DTensor come from grpo_math_1B.yaml
    got = review(USER / "nemo-rl-grpo-shell.sh", hardware=H100)
    scenario = got["scenario"]
    assert scenario["cluster"]["nodes"] * scenario["cluster"]["gpus_per_node"] == 16
    assert scenario["plan"]["placement"] == "colocated"
    assert scenario["plan"]["train"]["gpus"] == 16
    assert scenario["workload"]["samples_per_prompt"] == 16
    assert got["training_backend"] == "pytorch-fsdp"
    defaults = {u["key"] for u in got["understood"] if u["default"]}
    assert {"policy.generation.colocated.enabled", "grpo.num_generations_per_prompt"} <= defaults
    assert got["estimate"]["feasible"]


def test_nemo_rl_unreadable_gpu_count_is_named(tmp_path: Path) -> None:
    from rlmguide.review import ReviewError

    unset = _edited(tmp_path, "nemo-rl-grpo-shell.sh", "gpus_per_node=8", "gpus_per_node=$GPUS")
    with pytest.raises(ReviewError, match=r"cluster\.gpus_per_node"):
        review(unset, hardware=H100)


def test_nemo_rl_defaults_are_its_base_config_at_the_commit() -> None:
    """Each default of the NeMo-RL mapping is the value grpo_math_1B.yaml gives the key at the
    mapping's commit (tests/fixtures/frameworks/nemo-rl-grpo_math_1B.yaml); the value model's and
    PPO's own keys (value.*, ppo.*) are ppo_math_1B.yaml's, a base config this fixture is not."""
    import yaml
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots

    from rlmguide.review.recipe import flatten

    base = REPO / "tests" / "fixtures" / "frameworks" / "nemo-rl-grpo_math_1B.yaml"
    declared = flatten(yaml.safe_load(base.read_text()))
    mapping = load_catalog(record_roots(), ("mapping",)).of("mapping")[
        "nemo-rl-0.1.0-1338-g7ea279abf"
    ]
    grpo_base = {
        k: v for k, v in mapping.config_defaults.items() if not k.startswith(("value.", "ppo."))
    }
    assert len(grpo_base) < len(mapping.config_defaults)
    for key, value in grpo_base.items():
        assert key in declared, key
        assert declared[key] == value, key


def _stops(result: dict[str, Any]) -> list[str]:
    return [c["title"] for c in result["startup"] if c["constraint"] == "unknown-key"]


def test_verl_key_hydra_refuses_is_a_startup_stop(tmp_path: Path) -> None:
    typo = _edited(
        tmp_path,
        "verl-grpo-sequence-micro-batch.sh",
        "rollout.gpu_memory_utilization=0.6",
        "rollout.gpu_mem_utilization=0.6 +actor_rollout_ref.model.override_config.foo=1",
    )
    got = review(typo, hardware=H100)
    assert _stops(got) == [
        "start-up error: actor_rollout_ref.rollout.gpu_mem_utilization is not a key of verl at "
        "7aed6b230; the closest key is actor_rollout_ref.rollout.gpu_memory_utilization"
    ]


def test_a_verl_launch_of_known_keys_has_no_stop() -> None:
    assert _stops(review(USER / "verl-grpo-sequence-micro-batch.sh", hardware=H100)) == []


def test_openrlhf_flag_argparse_refuses_is_a_startup_stop(tmp_path: Path) -> None:
    flags = _edited(
        tmp_path,
        "openrlhf-reinforce-baseline-micro-batch.sh",
        "--ds.zero_stage 3",
        "--ds.zero_stage 3 --data.prompt_max_len 1024 --ds.packing",
    )
    got = review(flags, hardware=H100)
    # --ds.packing is a unique prefix of --ds.packing_samples: argparse takes it
    assert _stops(got) == [
        "start-up error: data.prompt_max_len is not a key of openrlhf at 3c3be6234; the "
        "closest key is data.max_len"
    ]
    assert _stops(review(USER / "openrlhf-reinforce-baseline-micro-batch.sh", hardware=H100)) == []


def test_openrlhf_flat_use_kl_loss_is_read() -> None:
    # OpenRLHF's own async REINFORCE++-baseline script (c250c21a, flat flags) sets --use_kl_loss
    wild = REPO / "tests" / "fixtures" / "review" / "wild"
    got = review(
        wild / "openrlhf-c250c21a-train_reinforce_baseline_llama_ray_async.sh", hardware=H100
    )
    assert got["mapping"] == "openrlhf-0.8.9.post1-5-gc250c21a"
    (row,) = [r for r in got["algorithm_settings"] if r["setting"].startswith("KL penalty")]
    assert row["launch"] == "loss"


def test_nemo_rl_without_packing_costs_its_micro_batch_in_sequences(tmp_path: Path) -> None:
    # packing off, no dynamic batching: 2 sequences of up to the 4096-token bound
    unpacked = _edited(
        tmp_path,
        "nemo-rl-grpo-shell.sh",
        "logger.wandb_enabled=True",
        "policy.sequence_packing.enabled=False policy.train_micro_batch_size=2",
    )
    got = review(unpacked, hardware=H100)
    assert got["scenario"]["plan"]["train"]["micro_batch_tokens"] == 2 * 4096


@pytest.mark.parametrize("sleep", [True, False])
def test_openrlhf_async_beside_the_hybrid_engine_switches_is_async(
    tmp_path: Path, sleep: bool
) -> None:
    # --train.async_enable selects OpenRLHF's async trainer whatever else is given: its vLLM
    # engines get no shared placement group (train_ppo_ray.py L75 at 3c3be623), and with
    # --vllm.enable_sleep it stops at start-up (L670-L671)
    name = "openrlhf-011-async-vllm-sleep.sh"
    path = USER / name if sleep else _edited(tmp_path, name, " --vllm.enable_sleep", "")
    got = review(path, hardware=H100)
    plan = got["scenario"]["plan"]
    assert plan["execution"] != "sync" and plan["placement"] == "disaggregated"
    stops = {s["constraint"] for s in got["startup"]}
    assert ("openrlhf-async-refuses-vllm-sleep" in stops) == sleep
