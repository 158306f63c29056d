"""Review refuses by name a command-line launch of a pipeline no launch maps.

`Mapping.other_pipelines` was checked for YAML recipes only (ROLL's agentic configs), so a
command line that starts another pipeline was read as the mapped one: verl 0.8's on-policy
distillation (distillation.enabled=True, a teacher on its own pool, verl/trainer/main_ppo.py
L178-L186 at 7aed6b2) read as GRPO and stopped on "GRPO needs at least 2" samples, and slime's
vision-language example (--multimodal-keys, slime/utils/arguments.py L661-L668 at 624b824) was
costed as a text-only Qwen3.5-35B-A3B.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO
from launch_support import catalogs

from rlmguide.cli import cli
from rlmguide.review.review import ReviewError, refuse_other_pipeline

FIXTURES = REPO / "tests" / "fixtures" / "review"


@pytest.mark.parametrize(
    ("launch", "key"),
    [
        ("verl-7aed6b2-opd_run_qwen3_8b_fsdp.sh", "distillation.enabled"),
        ("slime-624b824/examples/geo3k_vlm/run_geo3k_qwen35.sh", "multimodal-keys"),
    ],
)
def test_command_line_of_another_pipeline_is_refused_by_name(launch, key):
    done = CliRunner().invoke(
        cli, ["review", str(FIXTURES / launch), "--accelerator", "h100-sxm-80gb"]
    )
    assert done.exit_code == 2, done.output
    assert f"sets {key}: a recipe of" in done.output


def test_a_switch_set_off_starts_no_other_pipeline():
    verl = catalogs()[1]["verl-0.8.0"]
    path = Path("launch.sh")
    for off in (False, "false", "False"):
        refuse_other_pipeline(verl, {"distillation.enabled": off}, path)
    with pytest.raises(ReviewError, match="distillation"):
        refuse_other_pipeline(verl, {"distillation.enabled": True}, path)
