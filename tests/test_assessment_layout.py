"""plan.assessment: the frozen models' own layout (survey §3.1.1, Table 9's hybrid row).

Input: the field's bounds and divisibility, one-line errors, the exporters' refusal. Cost:
hand-worked time and memory terms, and laws (unset is today's plan; a larger tensor degree
never raises the frozen weights per GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from rlmguide.cost import PlanError, check_plans, evaluate
from test_cost_specs import H100, QWEN25_7B, one_plan, workload

from rlmguide.cli import cli
from rlmguide.export.mapping import NEUTRAL

EXAMPLE = REPO / "examples" / "ppo-qwen2.5-7b-shared-critic-fused-16xh100.yaml"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def scenario(tmp_path: Path, assessment: str | None) -> str:
    """The bundled PPO example (7B policy, 1.5B reward model, 16 H100) as a plain plan: a
    separate critic, no fusion, and the given plan.assessment line."""
    text = (
        EXAMPLE.read_text().replace("  critic: shared\n", "").replace("  fusion: inter-stage\n", "")
    )
    if assessment is not None:
        text += f"  assessment: {assessment}\n"
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return str(path)


def estimate(path: str, *options: str) -> dict[str, object]:
    code, out = invoke("estimate", path, "--format", "json", *options)
    assert code == 0, out
    plan: dict[str, object] = json.loads(out)["plans"][0]
    return plan


def test_cli_estimate_shows_the_layout_and_unset_shows_none(tmp_path: Path) -> None:
    # 16 training GPUs at tp 2: 8 replicas of the 1.5B reward model and the 7B reference
    plan = estimate(scenario(tmp_path, "{tp: 2}"))
    assert plan["assessment"] == {"tp": 2, "pp": 1, "dp": 8}
    assert "assessment" not in estimate(scenario(tmp_path, None))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{tp: 3}", "plan.assessment.tp: 3 does not divide the reference model's 28 attention"),
        ("{tp: 7}", "plan.assessment: tp x pp = 7 does not divide the 16 GPUs the reference"),
        ("{pp: 29}", "plan.assessment.pp: 29 pipeline stages exceed the reference model's 28"),
        ("{tp: 0}", "plan.assessment.tp"),
        ("{tp: 2048}", "plan.assessment.tp: 2,048 is outside the supported range 1 to 1,024"),
        ("{dp: 2}", "plan.assessment.dp"),
    ],
)
def test_bad_assessment_layout_is_one_line(tmp_path: Path, value: str, message: str) -> None:
    code, out = invoke("estimate", scenario(tmp_path, value))
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert message in out


def test_assessment_layout_without_frozen_models_is_refused() -> None:
    # DAPO drops the KL term and the example scores with a verifier: no frozen model.
    code, out = invoke(
        "estimate", str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"),
        "--set", "workload.algorithm=dapo", "--set", "plan.assessment.tp=1",
    )  # fmt: skip
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert "plan.assessment: lays out the frozen models" in out


def test_cost_table_checks_divisibility() -> None:
    # tp 4 splits the 28 heads and 4 KV heads, but not the 6 training GPUs
    plans = one_plan(rollout_gpus=6, train_gpus=6, assess_tp=4, assess_pp=1)
    with pytest.raises(PlanError, match=r"plan\.assessment: tp \* pp does not divide"):
        check_plans(plans, QWEN25_7B, frozen=[("reference", QWEN25_7B)])
    with pytest.raises(PlanError, match="both set"):
        one_plan(assess_tp=2, assess_pp=0)


def test_exporters_refuse_an_assessment_layout_they_cannot_write() -> None:
    # A launch that says nothing runs the frozen models in the training layout.
    assert NEUTRAL["plan.assessment.tp"] == 0 and NEUTRAL["plan.assessment.pp"] == 0


def test_unset_is_the_training_layout() -> None:
    # Columns 0/0 are the plan without the field: every number equal.
    base = evaluate(H100, QWEN25_7B, workload(), one_plan())
    same = evaluate(H100, QWEN25_7B, workload(), one_plan(assess_tp=0, assess_pp=0))
    assert np.array_equal(base.step_seconds, same.step_seconds)
    assert np.array_equal(base.memory_train_gib, same.memory_train_gib)
