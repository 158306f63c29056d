"""Review reads a launch as the framework runs it (rv14): each budget sizes the model that
uses it, each placement is the one the code makes, each engine's memory is the launch's."""

from __future__ import annotations

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
