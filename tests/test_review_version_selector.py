"""Review reads a launch with the version whose entry point its fixed options select.

verl 0.8's Qwen3-30B-A3B example (examples/grpo_trainer/run_qwen3_30b_a3b_megatron.sh at
7aed6b2) selects Megatron with `model_engine=megatron`, a config group verl 0.7 does not have
(verl/trainer/config/ppo_trainer.yaml L10 at 7aed6b2; none at b178a3c), so it starts on 0.8 only.
0.7's mapping has rows for more of its keys (the legacy reward_model.reward_kwargs.* among
them), and the version was picked by the count of known keys: the launch was read as 0.7 and its
start-up stop cited 0.7's code (rollout.py L257-L260 at b178a3c) instead of 0.8's (L300-L303).
"""

from __future__ import annotations

from click.testing import CliRunner
from conftest import REPO
from launch_support import catalogs

from rlmguide.cli import cli
from rlmguide.review.budget import Budget
from rlmguide.review.review import parse_launch, pick_version

FIXTURES = REPO / "tests" / "fixtures" / "review"
QWEN3_MOE_08 = FIXTURES / "verl-7aed6b2-run_qwen3_30b_a3b_megatron.sh"


def _picked(path) -> str:
    module, config, own, _ = parse_launch(path.read_text(), catalogs()[1], None, path, Budget())
    return pick_version(own, config, module).id


def test_model_engine_selects_verl_08_over_more_known_keys():
    assert _picked(QWEN3_MOE_08) == "verl-0.8.0"


def test_config_name_still_selects_verl_07():
    # 0.7's Megatron entry point is `--config-name=ppo_megatron_trainer(.yaml)`; its examples
    # at b178a3c write it both ways
    for name in (
        "verl-run_qwen3moe-30b_megatron_96gb.sh",
        "verl-run_deepseek671b_math_megatron_96gb.sh",
    ):
        assert _picked(FIXTURES / name) == "verl-0.7.0-125-gb178a3cd5"


def test_stop_cites_the_selected_versions_code():
    # as shipped (INFER_BACKEND=vllm) rollout EP 2 != TP 4 x DP 1: RolloutConfig asserts it
    # (verl/workers/config/rollout.py L300-L303 at 7aed6b2)
    done = CliRunner().invoke(cli, ["review", str(QWEN3_MOE_08), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 1, done.output
    assert "verl-rollout-expert-parallel-spans-engine-v0.8" in done.output
    assert "L300-L303 at 7aed6b230776" in done.output
