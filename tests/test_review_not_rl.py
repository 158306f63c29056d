"""Review refuses, by what they are, launches that are not RL (or RL-shaped loops it cannot
cost), naming the code that marks them (Mapping.other_trainings).

Before, ROLL's SFT and DPO recipes and NeMo-RL's SFT, DPO and reward-model configs were read as
RLVR or GRPO runs at the framework's defaults (32 prompts x 16 samples of GRPO for an SFT run),
their shell launches were called unknown commands, and ROLL's offline distillation recipe was
read as AReaL's (its `student`/`teacher` keys were nobody's) and stopped on a missing model path.
NeMo-RL's on-policy distillation is an RL-shaped loop (the student generates, a teacher of its
own size computes top-k logits over the student's sequences, the student trains on the KL to
them: nemo_rl/algorithms/distillation.py L786-L853, L892-L913, L921-L926 at 7ea279abf), but the
plan costs frozen scoring models with a scalar head, not a teacher's vocabulary logits, and no
launch reads its batch keys: it is refused with that reason rather than costed as GRPO.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import REPO

from rlmguide.cli import cli

NOT_RL = REPO / "tests" / "fixtures" / "review" / "not-rl"


def _refusal(name: str) -> str:
    done = CliRunner().invoke(cli, ["review", str(NOT_RL / name), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 2, done.output
    return " ".join(done.output.split())


@pytest.mark.parametrize(
    ("name", "what", "evidence"),
    [
        ("roll-sft.yaml", "an SFT launch", "it sets sft_train"),
        ("roll-sft.sh", "an SFT launch", "it runs python examples/start_sft_pipeline.py"),
        ("roll-dpo.yaml", "a DPO launch", "it sets chosen_key"),
        ("nemo-rl-sft.yaml", "an SFT launch", "it sets sft"),
        ("nemo-rl-dpo.yaml", "a DPO launch", "it sets dpo"),
        ("nemo-rl-rm.yaml", "a reward-model training launch", "it sets rm"),
    ],
)
def test_a_launch_that_is_not_rl_is_refused_with_its_evidence(name, what, evidence):
    said = _refusal(name)
    assert f"{name}: this is {what} (" in said
    assert f"; {evidence}); review reads RL launches" in said
    # the code that builds the pipeline, at the mapping's commit
    assert " L" in said and (" at 8eb27cc2" in said or " at 7ea279abf" in said)


def test_roll_sft_is_named_by_the_pipeline_its_entry_point_builds():
    said = _refusal("roll-sft.yaml")
    assert "examples/start_sft_pipeline.py L27-L30 builds SFTPipeline from SFTConfig" in said


@pytest.mark.parametrize(
    ("name", "evidence"),
    [
        ("nemo-rl-distillation.yaml", "it sets distillation"),
        ("nemo-rl-distillation.sh", "it runs uv run python examples/run_distillation.py"),
        ("nemo-rl-grpo-opd.yaml", "it sets on_policy_distillation.enabled"),
    ],
)
def test_on_policy_distillation_is_refused_with_what_the_plan_cannot_cost(name, evidence):
    said = _refusal(name)
    assert "this is an on-policy distillation launch" in said
    assert f"; {evidence}); review cannot cost it:" in said


def test_a_grpo_config_with_distillation_switched_off_is_still_read():
    """NeMo-RL's base GRPO config carries `on_policy_distillation: null`: not a distillation."""
    done = CliRunner().invoke(
        cli,
        [
            "review",
            str(
                REPO
                / "tests/fixtures/review/wild/nemo-rl-7ea279a/examples/configs/grpo_math_1B.yaml"
            ),
            "--accelerator",
            "h100-sxm-80gb",
            "--format",
            "json",
        ],
    )
    assert done.exit_code == 0, done.output
