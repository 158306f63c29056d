"""A calibrated plan in the survey's model (cost.survey_plan, cost.survey_assessment): the
Table 9 rows it combines, its own iteration composed where it runs each model, Assessment's
passes as the plan asks for them (reference override, recomputed log-probs, an LLM judge's
verdict decode, a process reward model's prefixes), numbers worked by hand on the canonical
model of tests/test_survey_model.py; and `estimate --survey` / `recommend --survey` agreeing
with the calibrated plan on which models and stages exist, one scenario per configuration."""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from rlmguide.cost.step_search import StepSearch
from rlmguide.cost.survey_assessment import Scorer
from rlmguide.cost.survey_iteration import Layouts, Models, configurations
from rlmguide.cost.survey_iteration import generation as survey_generation
from rlmguide.cost.survey_model import generation_depth, generation_flops
from rlmguide.cost.survey_plan import PlanShape, plan_iteration, table9_rows
from test_survey_model import ITERATION, PPO, SHAPE

from rlmguide.api import Scenario, estimate, recommend
from rlmguide.cli import cli

REPO = Path(__file__).parent.parent
SHARED_FUSED = REPO / "examples" / "ppo-qwen2.5-7b-shared-critic-fused-16xh100.yaml"
JUDGE = REPO / "examples" / "grpo-qwen2.5-7b-llm-judge-16xh100.yaml"
DPO = REPO / "examples" / "dpo-qwen2.5-7b-8xh100.yaml"
MIXED = REPO / "examples" / "grpo-qwen2.5-7b-mixed-16xa100-8xh100.yaml"

# Canonical PPO, B K = 4 sequences of m = 8: D_f = 41 per assessed model, D_tr = 87 per trained
# one, D_G = 4 * 35 + 2 log2(840) (test_survey_model). M_G = 2688; the assessment models'
# weights 1664 (reference) + 1672 (reward) + 1672 (critic) and one pass's buffer 4*8*8 = 256:
# M_A = 5264; M_T^Σ = 14368, the actor's training 4*1664 + 32*16 = 7168, the critic's 7200.
D_G = 4 * 35 + 2 * math.log2(840)
ALL_APART = frozenset({"critic", "reference", "reward"})


def rows(models: Models = PPO) -> dict[str, Any]:
    return {c.name: c for c in configurations(models, ITERATION, Layouts(2.0, 2.0))}


def test_the_rows_a_plan_combines() -> None:
    assert table9_rows(PlanShape()) == ("baseline",)
    assert table9_rows(PlanShape(shared=True)) == ("shared actor-critic",)
    assert table9_rows(PlanShape(shared=True, inter_fusion=True)) == (
        "shared actor-critic",
        "stage fusion",
    )
    assert table9_rows(PlanShape(apart=frozenset({"reward"}))) == ("disaggregated",)
    assert table9_rows(PlanShape(resharded=True, intra_fusion=True)) == ("hybrid", "stage fusion")
    both = PlanShape(rollout_apart=True, lagging=True, overlapped=True)
    assert table9_rows(both) == ("disaggregated", "asynchronous")
    every = PlanShape(shared=True, rollout_apart=True, lagging=True, inter_fusion=True)
    assert table9_rows(every) == ("shared actor-critic", "combined")


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("baseline", PlanShape()),
        ("shared actor-critic", PlanShape(shared=True)),
        # Table 9's disaggregation: every model, and the critic's training, on a group of its own.
        ("disaggregated", PlanShape(rollout_apart=True, apart=ALL_APART)),
        # TP 2 for generation and assessment, the training layout without TP.
        ("hybrid", PlanShape(resharded=True, generation_tp=2.0, assessment_tp=2.0)),
    ],
)
def test_a_plan_of_one_row_is_that_row(name: str, shape: PlanShape) -> None:
    own = plan_iteration(PPO, ITERATION, shape)
    row = rows()[name]
    assert own.name == name
    assert (own.work, own.depth, own.memory) == pytest.approx((row.work, row.depth, row.memory))


def test_fused_and_overlapped_plans_by_hand() -> None:
    # Colocated, both fusions: max(D_G, 41 + 41 + 41) + max(87, 87); the group holds
    # max(M_G + M_A, M_T^Σ) = max(2688 + 5264, 14368).
    fused = plan_iteration(PPO, ITERATION, PlanShape(inter_fusion=True, intra_fusion=True))
    assert fused.depth == pytest.approx(D_G + 87)
    assert fused.memory == 14368
    # Table 9's fusion row keeps every assessment model live beside generation (B.4.6):
    # max(M_G + M_A^Σ, M_T^max) = max(7952, 7200).
    assert rows()["stage fusion"].memory == 2688 + 5264
    # Disaggregated, one-step-off: the trainer assesses and trains while the rollout group
    # generates: max(D_G, 123 + 174); the rollout group holds M_G and the shadow copy 1664.
    lag = PlanShape(rollout_apart=True, lagging=True, overlapped=True)
    overlapped = plan_iteration(PPO, ITERATION, lag)
    assert overlapped.depth == pytest.approx(max(D_G, 123 + 174))
    assert overlapped.groups == {"generation": 2688 + 1664, "trainer": 14368}
    # Combined: every model apart, fused, lagging: max(D_G, 41 + 87).
    combined = PlanShape(
        rollout_apart=True, apart=ALL_APART, inter_fusion=True, intra_fusion=True,
        lagging=True, overlapped=True,
    )  # fmt: skip
    assert plan_iteration(PPO, ITERATION, combined).depth == pytest.approx(D_G)
    # A hybrid layout on one group adds M_reshard = |π_θ| = 1664 to Table 9's peak.
    assert rows()["hybrid"].memory == 14368 + 1664


def test_shared_and_fused_is_its_own_row() -> None:
    shape = PlanShape(shared=True, inter_fusion=True)
    own = plan_iteration(PPO, ITERATION, shape)
    assert own.rows == ("shared actor-critic", "stage fusion")
    # The shared row's work (no separate critic), the fused row's depth with one trained model:
    # max(D_G, 41 + 41 + 41) + 87.
    assert own.work == pytest.approx(rows()["shared actor-critic"].work)
    assert own.depth == pytest.approx(D_G + 87)
    assert [p.name for p in own.training] == ["actor"]
    assert own.depth < rows()["shared actor-critic"].depth


def test_recomputed_log_probs_add_the_actors_pass_and_carry_the_value_head() -> None:
    recomputing = Models(SHAPE, SHAPE, SHAPE, SHAPE, old_log_probs=True)
    plain = plan_iteration(PPO, ITERATION, PlanShape())
    more = plan_iteration(recomputing, ITERATION, PlanShape())
    # B.4.1: + B K (S+T) C_f(π_θ) = 32 x (2*2(256 + 512 + 64) + 2*16*8) = 32 x 3584.
    assert more.work - plain.work == pytest.approx(32 * 3584)
    assert more.assessment_depth - plain.assessment_depth == pytest.approx(41)
    assert [p.name for p in more.assessment] == ["reference", "actor", "critic", "reward"]
    # Shared critic: the value head rides on the actor's pass, 2d = 16 FLOPs a token and the
    # head's reduction log2 8 = 3, no weights of its own.
    shared = plan_iteration(recomputing, ITERATION, PlanShape(shared=True))
    head = next(p for p in shared.assessment if p.name == "critic")
    assert (head.work, head.depth, head.weights) == (32 * 16, 3.0, 0.0)


def test_llm_judge_writes_its_verdict() -> None:
    # Two calls per response, 4 rubric tokens, 3 verdict tokens: each call prefills
    # c = 4 + 4 + 4 = 12 tokens, 2L c(4d² + 2d d_ff + c d) + 2Vd = 4*12*(768 + 96) + 256
    # = 41728, and decodes 2 more: 2*2*2*768 + 4*2*8(2*12 + 3) + 2*2*128 = 8384.
    judge = Scorer("llm-judge", calls=2, rubric_tokens=4, verdict_tokens=3)
    models = Models(SHAPE, reward=SHAPE, scorer=judge)
    (reward,) = plan_iteration(models, ITERATION, PlanShape()).assessment
    assert reward.work == 4 * 2 * (41728 + 8384)
    # D_gen(12, 3) = 3 x 35 + 2 log2(12 x 13 x 14)
    assert reward.depth == pytest.approx(105 + 2 * math.log2(12 * 13 * 14))
    # weights 1664; the KV cache of the 8 verdicts: 8 x 2 x 8 x 2 layers x 15 tokens
    assert reward.memory == 1664 + 8 * 2 * 8 * 2 * 15


def test_process_reward_model_scores_each_prefix() -> None:
    # Two steps: prefixes of 4 + 2 = 6 and 4 + 4 = 8 tokens, C_f = 4(768 + 8m) + 16/m a token:
    # 6 x (3264 + 16/6) + 8 x (3328 + 2) = 19600 + 26640 a response, for 4 responses.
    prm = Scorer("process-reward-model", steps=2, per_prefix=True)
    models = Models(SHAPE, reward=SHAPE, scorer=prm)
    (reward,) = plan_iteration(models, ITERATION, PlanShape()).assessment
    assert reward.work == pytest.approx(4 * (19600 + 26640))
    assert reward.depth == pytest.approx(41)  # the prefixes run side by side
    one_pass = plan_iteration(Models(SHAPE, reward=SHAPE), ITERATION, PlanShape()).assessment[0]
    assert one_pass.work < reward.work


def test_a_chained_process_reward_model_adds_its_prefixes_depths() -> None:
    # The same two prefixes of 6 and 8 tokens, verified one after the other: the same work,
    # a depth of both passes' (D_f at 6 tokens and at 8), the live buffer of one prefix.
    side = Scorer("process-reward-model", steps=2, per_prefix=True)
    chained = Scorer("process-reward-model", steps=2, per_prefix=True, chained=True)
    a, b = (
        plan_iteration(Models(SHAPE, reward=SHAPE, scorer=s), ITERATION, PlanShape()).assessment[0]
        for s in (side, chained)
    )
    assert b.work == pytest.approx(a.work)
    assert b.depth > a.depth == pytest.approx(41)
    assert b.memory < a.memory


def test_a_search_adds_its_completions_to_generation_and_scoring() -> None:
    # One state (the prompt) and one completion: the response generated again from the
    # prompt, so generation's work doubles and its depth too; a reward model scores both.
    once = StepSearch(depth=1, branching=1)
    searched = replace(ITERATION, search=once)
    models = Models(SHAPE, reward=SHAPE)
    plain = plan_iteration(models, ITERATION, PlanShape())
    more = plan_iteration(models, searched, PlanShape())
    assert more.generation.work == pytest.approx(2 * plain.generation.work)
    assert more.generation.depth == pytest.approx(2 * plain.generation.depth)
    assert more.assessment[0].work == pytest.approx(2 * plain.assessment[0].work)
    # depth 2, branching 3, one level after the other: states after 0 and 2 of 4 tokens,
    # 3 completions of 4 and of 2 tokens per response
    deeper = replace(ITERATION, search=StepSearch(depth=2, branching=3, sequential=True))
    gen = survey_generation(SHAPE, deeper)
    expected = 4 * (
        float(generation_flops(SHAPE, 4, 4))
        + 3 * float(generation_flops(SHAPE, 4, 4))
        + 3 * float(generation_flops(SHAPE, 6, 2))
    )
    assert gen[0] == pytest.approx(expected)
    assert gen[1] == pytest.approx(
        2 * float(generation_depth(SHAPE, 4, 4)) + float(generation_depth(SHAPE, 6, 2))
    )


def test_a_smaller_reference_costs_less() -> None:
    small = type(SHAPE)(layers=1, hidden=8, ffn=32, heads=2, vocab=16)
    own = plan_iteration(Models(SHAPE, reference=small), ITERATION, PlanShape())
    full = plan_iteration(Models(SHAPE, reference=SHAPE), ITERATION, PlanShape())
    # one layer fewer: 32 tokens x 2(4*64 + 2*8*32 + 8*8) = 32 x 1664 FLOPs less
    assert full.work - own.work == pytest.approx(32 * 1664)


# -- the calibrated plan and the survey block agree --------------------------------------------


def _scenario(path: Path, **changes: Any) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = copy.deepcopy(data)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        here = out
        for part in parents:
            here = here.setdefault(part, {})
        here[last] = value
    return out


PLAIN = {"plan__critic": "separate", "plan__fusion": "none"}
# One layout for both stages: TP 1 rollouts beside a ZeRO-1 trainer (parameters whole).
ONE_LAYOUT = {
    "plan__rollout": {"gpus": 16, "tp": 1},
    "plan__train": {"gpus": 16, "tp": 1, "zero": 1, "recompute": "full"},
}
CONFIGURATIONS = {
    "baseline": _scenario(SHARED_FUSED, **PLAIN, **ONE_LAYOUT),
    "shared actor-critic": _scenario(SHARED_FUSED, plan__fusion="none", **ONE_LAYOUT),
    "disaggregated": _scenario(
        SHARED_FUSED, **PLAIN, plan__placement="disaggregated",
        plan__rollout={"gpus": 8, "tp": 2}, plan__train={"gpus": 8, "tp": 1, "zero": 3,
                                                         "recompute": "full"},
    ),
    "hybrid": _scenario(SHARED_FUSED, **PLAIN),
    "hybrid + stage fusion": _scenario(SHARED_FUSED, plan__critic="separate",
                                       plan__fusion="both"),
    "disaggregated + asynchronous": _scenario(
        SHARED_FUSED, **PLAIN, plan__placement="disaggregated", plan__execution="one-step-off",
        plan__rollout={"gpus": 8, "tp": 2}, plan__train={"gpus": 8, "tp": 1, "zero": 3,
                                                         "recompute": "full"},
    ),
    "combined": _scenario(
        SHARED_FUSED, plan__critic="separate", plan__fusion="inter-stage",
        plan__placement="disaggregated", plan__execution="one-step-off",
        plan__rollout={"gpus": 8, "tp": 2}, plan__train={"gpus": 8, "tp": 1, "zero": 3,
                                                         "recompute": "full"},
    ),
    "shared actor-critic + hybrid + stage fusion": _scenario(SHARED_FUSED),
    "disaggregated + hybrid": _scenario(
        SHARED_FUSED, **PLAIN, plan__placement="partially-colocated",
        plan__pools={"reward": 2}, plan__rollout={"gpus": 14, "tp": 2},
        plan__train={"gpus": 14, "tp": 1, "zero": 3, "recompute": "full"},
    ),
}  # fmt: skip


def agree(block: dict[str, Any], plan: dict[str, Any]) -> None:
    """The survey block runs the models the calibrated plan runs, stage by stage, and has a
    stage exactly where the calibrated plan does work."""
    by_stage = dict(block["models"])
    calibrated = by_stage.pop("calibrated")
    if block["offline"]:
        # Table 4 counts DPO's policy forward in Assessment, the calibrated plan in training.
        assert calibrated["assessment"] == [m for m in by_stage["assessment"] if m != "actor"]
        assert by_stage["training"] == calibrated["training"] == ["actor"]
    else:
        assert by_stage == calibrated
    survey = {s["name"]: s["work_flop"] for s in block["stages"]}
    mapped = {"rollout": "generation", "assessment": "assessment", "training": "training"}
    for s in plan["stages"]:
        if s["name"] in mapped:
            assert (s["work_flop"] > 0) == (survey.get(mapped[s["name"]], 0.0) > 0), s["name"]


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_estimate_survey_follows_each_configuration(name: str) -> None:
    found = estimate(Scenario.model_validate(CONFIGURATIONS[name]), survey=True)
    (plan,) = found.model_dump(mode="json")["plans"]
    block = plan["survey_model"]
    assert block["configuration"] == name
    own = [r for r in block["table9"] if r["configuration"].startswith("this plan")]
    assert own and own[0]["configuration"] == f"this plan: {name}"
    marked = {r["configuration"] for r in block["table9"] if r["this_plan"]}
    assert marked == {*block["configuration_rows"], own[0]["configuration"]}
    agree(block, plan)


def test_the_issue_s_shared_critic_plan_no_longer_reads_as_unshared() -> None:
    """A shared critic in the survey block costs what the shared row costs, not the unshared
    Assessment and Training (issue 27: 1.663e16 and 4.538e16 for the bundled example)."""
    block = estimate(SHARED_FUSED, survey=True).plans[0].model_dump()["survey_model"]
    stages = {s["name"]: s for s in block["stages"]}
    assert [p["model"] for p in stages["training"]["parts"]] == ["actor"]
    shared = next(r for r in block["table9"] if r["configuration"] == "shared actor-critic")
    mine = next(r for r in block["table9"] if r["configuration"].startswith("this plan"))
    assert mine["work_flop"] == pytest.approx(shared["work_flop"])
    baseline = next(r for r in block["table9"] if r["configuration"] == "baseline")
    assert mine["work_flop"] < baseline["work_flop"]


# The judge's example leaves the plan to the search; these fix the rest of it.
JUDGE_PLAN = {
    "plan__placement": "colocated",
    "plan__execution": "sync",
    "plan__rollout": {"gpus": 8, "tp": 1},
    "plan__train": {"gpus": 8, "tp": 1, "zero": 3, "recompute": "full"},
}


@pytest.mark.parametrize(
    ("path", "changes"),
    [
        (JUDGE, JUDGE_PLAN),
        (JUDGE, {**JUDGE_PLAN, "models__reward": "qwen2.5-1.5b"}),
        (SHARED_FUSED, {"models__reward": {"kind": "process-reward-model",
                                           "model": "qwen2.5-1.5b", "steps_per_response": 8,
                                           "scoring": "per-prefix"}}),
        (DPO, {"plan__train": {"tp": 1, "zero": 3, "recompute": "none"}}),
    ],
)  # fmt: skip
def test_estimate_survey_follows_the_reward_and_the_reference(
    path: Path, changes: dict[str, Any]
) -> None:
    data = _scenario(path, **changes)
    found = estimate(Scenario.model_validate(data), survey=True).model_dump(mode="json")
    (plan,) = found["plans"]
    block = plan["survey_model"]
    agree(block, plan)
    if path == JUDGE and changes == JUDGE_PLAN:
        # The judge (72B) on its own pool writes its verdicts: its part is a generation, far
        # more than the 1.5B reference's forward, and it runs apart.
        parts = {p["model"]: p for p in block["stages"][1]["parts"]}
        assert parts["reward"]["own_group"] and not parts["reference"]["own_group"]
        assert parts["reward"]["work_flop"] > 20 * parts["reference"]["work_flop"]


def test_recommend_survey_on_every_shown_plan_and_on_a_mixed_cluster() -> None:
    found = recommend(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml", top=2, survey=True)
    plans = found.model_dump(mode="json")["plans"]
    assert len(plans) >= 2
    for plan in plans:
        agree(plan["survey_model"], plan)
    mixed = recommend(MIXED, top=1, survey=True).model_dump(mode="json")
    for plan in mixed["plans"]:
        block = plan["survey_model"]
        agree(block, plan)
        if plan["parts"]["rollout"] != plan["parts"]["train"]:
            # across parts the trainer recomputes the old log-probs (rules.mixed)
            assert "actor" in block["models"]["assessment"]
    text = CliRunner().invoke(cli, ["recommend", str(MIXED), "--top", "1", "--survey"])
    assert text.exit_code == 0, text.output
    assert "survey model of plan 1" in text.output
