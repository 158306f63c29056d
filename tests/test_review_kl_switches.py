"""verl builds the reference only where algorithm.use_kl_in_reward or actor.use_kl_loss is on
(need_reference_policy, verl/trainer/ppo/utils.py L72-L76 at b178a3cd; L75-L79 at 7aed6b23).
Review read use_kl_in_reward only as a reward KL (True), so a PPO launch with both switches
off was costed with the PPO record's reference and stopped at the Megatron reference worker's
micro-batch assert (verl-megatron-reference-micro-batch-set), which no reference worker runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from launch_support import review_json

PPO = (
    Path(__file__).parent
    / "fixtures"
    / "review"
    / "wild"
    / "verl-b178a3c-run_qwen2-7b_math_gsm8k_megatron_ppo.sh"
)
STOP = "verl-megatron-reference-micro-batch-set"


def _review(tmp_path: Path, old: str, new: str) -> dict:
    text = PPO.read_text()
    assert old in text
    launch = tmp_path / PPO.name
    launch.write_text(text.replace(old, new))
    return review_json(launch, "--accelerator", "h100-sxm-80gb")


def _frozen_gib(got: dict) -> float:
    return got["estimate"]["memory_breakdown_gib"]["training"]["frozen_models"]


def test_both_switches_off_load_no_reference(tmp_path: Path) -> None:
    got = _review(tmp_path, "use_kl_in_reward=False", "use_kl_in_reward=False")
    assert got["mapping"] == "verl-0.7.0-125-gb178a3cd5"
    assert got["scenario"]["workload"]["no_reference"] is True
    assert _frozen_gib(got) == 0
    assert STOP not in {c.get("constraint") for c in got["startup"]}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("algorithm.use_kl_in_reward=False", "algorithm.use_kl_in_reward=True"),
        ("actor.use_kl_loss=False", "actor.use_kl_loss=True"),
        # a switch left out is read at the PPO record: the reference stays
        ("    algorithm.use_kl_in_reward=False \\\n", ""),
    ],
)
def test_either_switch_on_keeps_the_reference(tmp_path: Path, old: str, new: str) -> None:
    got = _review(tmp_path, old, new)
    assert "no_reference" not in got["scenario"]["workload"]
    # Qwen2-7B's 7.62e9 bf16 parameters over the actor's TP 2 x PP 2: 15.23 GB / 4 = 3.55 GiB
    assert _frozen_gib(got) == pytest.approx(7.615616512e9 * 2 / 4 / 2**30, rel=0.01)
    assert STOP in {c.get("constraint") for c in got["startup"]}
