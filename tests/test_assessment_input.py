"""Reward kinds, the reference model and old log-probs in the scenario and on the CLI."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from test_scenario_input import SMALL, assert_clean_bad_input, invoke

JUDGE = str(REPO / "examples" / "grpo-qwen2.5-7b-llm-judge-16xh100.yaml")
FIXED = [
    "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
    "--set", "plan.rollout.tp=1", "--set", "plan.train.tp=1", "--set", "plan.train.zero=3",
    "--set", "plan.train.recompute=full",
]  # fmt: skip


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("models.reward={kind: llm-judge, model: qwen2.5-7b}", "needs verdict_tokens"),
        ("models.reward={kind: verifier, model: qwen2.5-7b}", "runs no model: remove model"),
        ("models.reward={kind: reward-model}", "kind reward-model needs the model"),
        (
            "models.reward={kind: reward-model, model: qwen2.5-7b, verdict_tokens: 8}",
            "verdict_tokens only apply to kind llm-judge, not reward-model",
        ),
        (
            "models.reward={kind: llm-judge, model: qwen2.5-7b, verdict_tokens: 8, "
            "steps_per_response: 4}",
            "steps_per_response only apply to kind process-reward-model",
        ),
        (
            "models.reward={kind: process-reward-model, model: qwen2.5-7b, scoring: per-prefix}",
            "per-prefix needs steps_per_response",
        ),
        ("models.reward={kind: judge, model: qwen2.5-7b}", "models.reward.kind: Input should"),
        (
            "models.reward={kind: llm-judge, model: qwen2.5-7b, verdict_tokens: 8, "
            "calls_per_response: 65}",
            "models.reward.calls_per_response: 65 is outside the supported range 1 to 64",
        ),
        ("models.reference={precision: int4}", "models.reference.precision: Input should be"),
        ("models.reference=qwen2.5-7bx", "models.reference: unknown model 'qwen2.5-7bx'"),
        ("workload.recompute_old_logprobs=sometimes", "workload.recompute_old_logprobs"),
        (
            "models.reward={kind: llm-judge, model: qwen2.5-7b, verdict_tokens: 130000}",
            "138704 tokens, beyond its context of 131072",  # 512 + 8192 + 0 + 130000
        ),
    ],
)
def test_bad_reward_and_reference_are_one_clear_line(assignment: str, expected: str) -> None:
    code, out = invoke("recommend", SMALL, "--set", assignment)
    assert_clean_bad_input(code, out, expected)


def test_a_reference_the_algorithm_or_lora_does_not_use_is_refused() -> None:
    code, out = invoke(
        "recommend",
        SMALL,
        "--set",
        "workload.algorithm=dapo",
        "--set",
        "models.reference=qwen2.5-1.5b",
    )
    assert_clean_bad_input(code, out, "DAPO", "needs no reference model")
    code, out = invoke(
        "recommend", SMALL, "--set", "plan.train.lora_rank=16", "--set",
        "models.reference={model: qwen2.5-1.5b}",
    )  # fmt: skip
    assert_clean_bad_input(code, out, "with LoRA the reference is the frozen base")


def plan_of(*args: str) -> dict:
    code, out = invoke("estimate", SMALL, *FIXED, "--format", "json", *args)
    assert code == 0, out
    return json.loads(out)["plans"][0]


def test_estimate_shows_each_models_part_of_the_assessment() -> None:
    base = plan_of()
    assert set(base["assessment_seconds_by_model"]) == {"reference", "actor"}
    # The rollout engine's log-probs: the actor's pass is gone, the reference's unchanged.
    trusted = plan_of("--set", "workload.recompute_old_logprobs=false")
    assert set(trusted["assessment_seconds_by_model"]) == {"reference"}
    assert trusted["assessment_seconds_by_model"]["reference"] == pytest.approx(
        base["assessment_seconds_by_model"]["reference"]
    )
    # A bare model id and the same model by kind cost the same.
    bare = plan_of("--set", "models.reward=qwen2.5-7b")
    kind = plan_of("--set", "models.reward={kind: reward-model, model: qwen2.5-7b}")
    assert bare["assessment_seconds_by_model"] == kind["assessment_seconds_by_model"]
    # A judge writing verdicts costs more than one forward pass of the same model.
    judge = plan_of(
        "--set", "models.reward={kind: llm-judge, model: qwen2.5-7b, verdict_tokens: 128}"
    )
    assert (
        judge["assessment_seconds_by_model"]["reward"]
        > bare["assessment_seconds_by_model"]["reward"]
    )
    # A smaller fp8 reference: a shorter reference pass and fewer frozen weights.
    small = plan_of("--set", "models.reference={model: qwen2.5-1.5b, precision: fp8}")
    assert (
        small["assessment_seconds_by_model"]["reference"]
        < base["assessment_seconds_by_model"]["reference"]
    )
    frozen = [p["memory_breakdown_gib"]["training"]["frozen_models"] for p in (base, small)]
    assert frozen[1] < frozen[0] / 4


def test_the_llm_judge_example_recommends_plans_with_the_judge_apart() -> None:
    code, out = invoke("recommend", JUDGE, "--format", "json")
    assert code == 0, out
    document = json.loads(out)
    assert document["scenario"]["models"]["reward"]["kind"] == "llm-judge"
    best = document["plans"][0]
    assert best["pools"]["reward"] == 8
    parts = best["assessment_seconds_by_model"]
    assert set(parts) == {"reference", "reward"}  # old log-probs are the rollout engine's
    assessment = next(s for s in best["stages"] if s["name"] == "assessment")
    assert assessment["seconds"] == pytest.approx(max(parts["reward"], parts["reference"]))


def test_export_refuses_what_no_mapping_expresses_yet() -> None:
    # verl could run bypass mode, but its mapping has no key for it: refused, not dropped.
    code, out = invoke(
        "export", SMALL, "--framework", "verl", "--set", "workload.recompute_old_logprobs=false"
    )
    assert code == 1, out
    assert "workload.recompute_old_logprobs = false" in out
    code, out = invoke("export", SMALL, "--framework", "verl")
    assert code == 0, out


def test_the_table_names_each_models_part_and_where_it_runs() -> None:
    code, out = invoke("estimate", JUDGE, *FIXED)
    assert code == 0, out
    assert "assessment of plan 1 by model" in out
    assert "own 8 GPUs, beside" in out  # the judge on plan.pools.reward
    assert "actor (old log-probs)" not in out  # the rollout engine's log-probs are used
    code, out = invoke("estimate", SMALL, *FIXED)
    assert code == 0, out
    assert "actor (old log-probs)" in out
