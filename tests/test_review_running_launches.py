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
