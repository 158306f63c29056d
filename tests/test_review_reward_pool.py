"""Review costs verl's reward model on the pool of its own the launch gives it.

verl 0.8 puts the reward model on GPUs apart from the trainer's when
`reward.reward_model.enable_resource_pool` is on, sized by its own nnodes x n_gpus_per_node
(main_ppo.py L166-L173 at 7aed6b2), whether or not actor and rollout share their GPUs. Review
dropped every model pool of a colocated launch (right for OpenRLHF's colocate_all, where every
model joins the actor's placement group: train_ppo_ray.py L40-L49, L105-L106 at 3c3be62), so the
reward model was costed on the trainer's 8 GPUs and its own 4 were missing (rv11, defect B).
The fixture is verl's Skywork reward-model example with the pool switched on."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from launch_support import review_json

from rlmguide.cli import cli

FIXTURES = Path(__file__).parent / "fixtures" / "review"
LAUNCH = FIXTURES / "verl-7aed6b2-mistral_nemo_12b_skyworkrm-reward-pool.sh"
H100 = ("--accelerator", "h100-sxm-80gb")
GIB = 2**30
# Skywork-Reward-Llama-3.1-8B (kb/records/models/skywork-reward-llama-3.1-8b.yaml): 32 layers of
# hidden 4096, 8 KV heads of 128, MLP 14336, vocabulary 128257; q and o 4096 x 4096, k and v
# 4096 x 1024, gate, up and down 4096 x 14336, two norms a layer; the embedding, the final norm
# and the score head (hidden x 1)
LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
REWARD_PARAMS = 32 * LAYER + 128257 * 4096 + 4096 + 4096


def test_the_reward_model_is_counted_by_hand() -> None:
    assert REWARD_PARAMS == 7_504_932_864


@pytest.fixture(scope="module")
def own() -> dict:
    return review_json(LAUNCH, *H100)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The example as upstream ships it: the reward model on the trainer's GPUs."""
    text = LAUNCH.read_text()
    lines = [line for line in text.splitlines() if "reward.reward_model.n" not in line]
    lines = [line for line in lines if "enable_resource_pool" not in line]
    path = tmp_path_factory.mktemp("shared") / LAUNCH.name
    path.write_text("\n".join(lines) + "\n")
    return review_json(path, *H100)


def test_the_pool_is_read_beside_the_colocated_trainer(own: dict) -> None:
    plan = own["scenario"]["plan"]
    assert (plan["placement"], plan["pools"]) == ("colocated", {"reward": 4})
    assert (plan["train"]["gpus"], plan["rollout"]["gpus"]) == (8, 8)
    # 8 + 4 GPUs take two nodes of 8
    assert own["scenario"]["cluster"] | {"accelerator": None} == {
        "accelerator": None,
        "nodes": 2,
        "gpus_per_node": 8,
    }
    unmapped = {u["key"] for u in own["unmapped"]}
    assert "reward.reward_model.enable_resource_pool" not in unmapped


def test_the_reward_weights_sit_on_its_own_four_gpus(own: dict, shared: dict) -> None:
    reward = own["estimate"]["memory_breakdown_gib"]["reward"]
    # bf16 weights sharded over the pool's 4 GPUs
    assert reward["frozen_models"] == pytest.approx(REWARD_PARAMS * 2 / 4 / GIB, rel=1e-9)
    training = own["estimate"]["memory_breakdown_gib"]["training"]
    on_trainer = shared["estimate"]["memory_breakdown_gib"]["training"]
    # the trainer's GPUs no longer hold an eighth of the reward model
    moved = on_trainer["frozen_models"] - training["frozen_models"]
    assert moved == pytest.approx(REWARD_PARAMS * 2 / 8 / GIB, rel=1e-9)
    assert "reward" not in shared["estimate"]["memory_breakdown_gib"]


def test_the_reward_forward_runs_on_four_gpus_beside_the_trainer(own: dict, shared: dict) -> None:
    seconds = own["estimate"]["assessment_seconds_by_model"]
    alone = shared["estimate"]["assessment_seconds_by_model"]
    # the same forward over half the GPUs
    assert seconds["reward"] == pytest.approx(2 * alone["reward"], rel=1e-6)
    stage = next(s for s in own["estimate"]["stages"] if s["name"] == "assessment")
    # the trainer's forwards and the reward model's run side by side on 8 + 4 GPUs
    assert stage["gpus"] == 12
    trainer = sum(v for model, v in seconds.items() if model != "reward")
    assert stage["seconds"] == pytest.approx(max(seconds["reward"], trainer), rel=1e-6)


def test_a_fixed_colocated_pool_may_leave_gpus_unused(tmp_path: Path) -> None:
    """The scenario the review writes: the trainer's 8 GPUs fixed on 16 beside a reward pool of
    4; before, the search offered the colocated split only on all 12 GPUs the pools leave."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "cluster: {accelerator: h100-sxm-80gb, nodes: 2, gpus_per_node: 8}\n"
        "models: {policy: llama-3.1-8b, reward: skywork-reward-llama-3.1-8b}\n"
        "workload: {algorithm: grpo, prompts_per_step: 64, samples_per_prompt: 4,\n"
        "  prompt_tokens: 512, response_tokens: 1024}\n"
        "plan: {placement: colocated, execution: sync, pools: {reward: 4},\n"
        "  rollout: {gpus: 8, tp: 1}, train: {gpus: 8, tp: 1, zero: 3, recompute: full}}\n"
    )
    done = CliRunner().invoke(cli, ["estimate", str(scenario), "--format", "json"])
    assert done.exit_code == 0, done.output
