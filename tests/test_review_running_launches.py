"""Review reads a launch as the framework runs it (rv14): each budget sizes the model that
uses it, each placement is the one the code makes, each engine's memory is the launch's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from rlmguide.review import Hardware, review

FIXTURES = REPO / "tests" / "fixtures" / "review"
H100 = Hardware("h100-sxm-80gb")


def _uses(result: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [u for u in result["understood"] if u["key"].lstrip("+") == key]


@pytest.fixture(scope="module")
def ppo() -> dict[str, Any]:
    return review(FIXTURES / "verl-b178a3c-ppo-critic-budget.sh", hardware=H100)


def test_the_critic_s_budget_is_the_critic_s_not_the_actor_s(ppo: dict[str, Any]) -> None:
    # verl hands critic.ppo_max_token_len_per_gpu to the critic alone (dp_critic.py L212 at
    # b178a3cd): the actor's micro-batch is its own key's 24000, and the critic's 98304 is
    # read as the critic's, never as the actor's fact
    (actor,) = _uses(ppo, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu")
    (critic,) = _uses(ppo, "critic.ppo_max_token_len_per_gpu")
    assert actor["field"] == "launch.micro_batch_tokens" and actor["field_value"] == 24000
    assert critic["field"] == "launch.critic_micro_batch_tokens"
    assert critic["field_value"] == 98304
    assert ppo["scenario"]["plan"]["train"]["micro_batch_tokens"] == 24000
    rows = {r["setting"]: r for r in ppo["memory_keys"]}
    critic_row, actor_row = (
        rows[f"{who} micro-batch tokens (over CP)"] for who in ("critic", "training")
    )
    # the plan trains the critic beside the actor at the actor's costed micro-batch
    assert critic_row["plan"] == actor_row["plan"] < 98304
    assert critic_row["launch"] == 98304
    assert critic_row["verdict"].startswith("above what the activations were costed at")


ROLL_PACKING = FIXTURES / "roll-8eb27cc-packing" / "rlvr_config_sequence_packing.yaml"


def test_roll_s_load_balance_packing_cuts_each_pass_at_its_own_budget() -> None:
    # ROLL's packed Qwen2.5-7B example: load_balance packing on Megatron for the actor and the
    # reference, 8192 tokens a micro-batch for training and for the forward passes
    # (sequence_packing.py L162-L190 at 8eb27cc2), not infer_batch_size (4 and 8) sequences
    # padded to 2048 + 4096 tokens, whose 49152-token logits the GPUs do not hold
    got = review(ROLL_PACKING, hardware=H100)
    train = got["scenario"]["plan"]["train"]
    assert (train["micro_batch_tokens"], train["forward_micro_batch_tokens"]) == (8192, 8192)
    assert got["estimate"]["feasible"]
    budgets = {u["key"]: u["field"] for u in got["understood"] if "max_packed" in u["key"]}
    assert budgets == {
        "actor_train.sequence_packing_args.max_packed_sequence_length_train": (
            "launch.micro_batch_tokens"
        ),
        "actor_train.sequence_packing_args.max_packed_sequence_length_forward": (
            "plan.train.forward_micro_batch_tokens"
        ),
        "reference.sequence_packing_args.max_packed_sequence_length_forward": (
            "plan.train.forward_micro_batch_tokens"
        ),
    }


def test_roll_s_default_packing_caps_no_tokens(tmp_path: Any) -> None:
    # the default algorithm, none, cuts micro-batches of the role's sequence count
    # (sequence_packing.py L71-L83): the budgets are not read, the counts are
    text = ROLL_PACKING.read_text()
    assert text.count("algorithm: load_balance") == 2
    path = tmp_path / ROLL_PACKING.name
    path.write_text(text.replace("algorithm: load_balance", "algorithm: none"))
    got = review(path, hardware=H100)
    train = got["scenario"]["plan"]["train"]
    longest = 2048 + 4096
    assert (train["micro_batch_tokens"], train["forward_micro_batch_tokens"]) == (
        1 * longest,
        8 * longest,
    )
    assert not [u for u in got["understood"] if "max_packed" in u["key"]]


def _without(launch: Path, flag: str, tmp_path: Path) -> Path:
    """A copy of `launch` without its one line setting `flag` (a user's edit)."""
    line = f"   {flag} \\\n"
    text = launch.read_text()
    assert text.count(line) == 1, flag
    edited = tmp_path / launch.name
    edited.write_text(text.replace(line, ""))
    return edited


def test_openrlhf_s_colocate_all_without_engine_sleep_is_colocated_and_keeps_the_engine(
    tmp_path: Path,
) -> None:
    # OpenRLHF's hybrid-engine PPO without --vllm.enable_sleep (the edit a user makes to the
    # example): --train.colocate_all still puts the engines in the actor's placement group
    # (train_ppo_ray.py L41-L75 at 3c3be623), and without the switch they never sleep
    # (samples_generator.py L66-L120): colocated, the engines' 0.5 of the GPU held while the
    # models train
    shipped = FIXTURES / "wild" / "openrlhf-3c3be62-train_ppo_ray_hybrid_engine.sh"
    got = review(_without(shipped, "--vllm.enable_sleep", tmp_path), hardware=H100)
    assert got["scenario"]["plan"]["placement"] == "colocated"
    assert all(u["key"] != "train.colocate_all" for u in got["unmapped"])
    (row,) = [r for r in got["memory_keys"] if r["setting"].startswith("GiB the rollout engine")]
    hbm = 81559 / 1024  # the H100's memory as its driver reports it
    assert row["launch"] == pytest.approx(0.5 * hbm, abs=0.05)
    train = got["estimate"]["memory_gib_per_gpu"]["train"]
    assert row["plan"] == pytest.approx(hbm - train, abs=0.05)
    # the trainer's peak and the engine's share overflow the GPU
    assert train + 0.5 * hbm > hbm
    assert "out of memory when training starts" in row["verdict"]


def test_openrlhf_s_sleeping_colocated_launch_keeps_no_engine() -> None:
    # the example as it ships (--vllm.enable_sleep): the engines sleep while the models train
    got = review(
        FIXTURES / "wild" / "openrlhf-3c3be62-train_ppo_ray_hybrid_engine.sh", hardware=H100
    )
    assert got["scenario"]["plan"]["placement"] == "colocated"
    assert not [r for r in got["memory_keys"] if r["setting"].startswith("GiB the rollout engine")]


def test_openrlhf_0_8_s_flat_spelling_reads_alike(tmp_path: Path) -> None:
    # the same reading before the 0.11 regrouping: --colocate_all_models without
    # --vllm_enable_sleep (train_ppo_ray.py L30-L69 at c250c21a)
    shipped = FIXTURES / "openrlhf-train_reinforce_llama_ray_hybrid_engine.sh"
    path = _without(shipped, "--vllm_enable_sleep", tmp_path)
    for launch, kept in ((shipped, False), (path, True)):
        got = review(launch, hardware=H100)
        assert got["scenario"]["plan"]["placement"] == "colocated"
        rows = [r for r in got["memory_keys"] if r["setting"].startswith("GiB the rollout engine")]
        assert bool(rows) is kept
        if kept:
            assert rows[0]["launch"] == pytest.approx(0.6 * 81559 / 1024, abs=0.05)


REWARD_LOOP = FIXTURES / "verl-b178a3c-ppo-reward-loop-colocate.sh"


def test_verl_0_7_s_reward_engine_memory_is_the_launch_s(tmp_path: Any) -> None:
    # verl's reward-loop example at b178a3cd serves its reward model on vLLM on the trainer's
    # GPUs at reward_model.rollout.gpu_memory_utilization 0.8 (_generated_ppo_trainer.yaml
    # L537-L543): read as the reward engine's share, which it takes again beside the trainer
    # each time it wakes to score (reward_loop.py L281-L311)
    got = review(REWARD_LOOP, hardware=H100)
    (use,) = _uses(got, "reward_model.rollout.gpu_memory_utilization")
    assert (use["field"], use["field_value"]) == ("launch.reward_engine_memory_fraction", 0.8)
    assert all(u["key"] != use["key"] for u in got["unmapped"])
    resident = got["estimate"]["memory_breakdown_gib"]["rollout"]["trainer_state"]
    hbm = 81559 / 1024
    wakes = "verl-reward-engine-wakes-beside-the-trainer"
    # 0.8 of the GPU's 79.6 GiB is 63.7 GiB, beside the trainer's 12.2 GiB resident: it wakes
    assert 0.8 * hbm <= hbm - resident
    assert wakes not in {s.get("constraint") for s in got["startup"]}
    # 0.9 is 71.7 GiB, more than the 67.4 GiB the trainer leaves: the wake-up runs out
    assert 0.9 * hbm > hbm - resident
    path = tmp_path / REWARD_LOOP.name
    text = REWARD_LOOP.read_text()
    path.write_text(
        text.replace("rollout.gpu_memory_utilization=0.8", "rollout.gpu_memory_utilization=0.9")
    )
    got = review(path, hardware=H100)
    assert wakes in {s.get("constraint") for s in got["startup"]}
