"""plan.assessment: the frozen models' own layout (survey §3.1.1, Table 9's hybrid row).

Input: the field's bounds and divisibility, one-line errors, the exporters' refusal. Cost:
hand-worked time and memory terms, and laws (unset is today's plan; a larger tensor degree
never raises the frozen weights per GPU)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, PlanError, check_plans, evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.assessment import relayout_stage
from rlmguide.cost.batch import Batch
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout, TrainLinks
from rlmguide.cost.memory import frozen_weight_bytes, reshard_bytes, training_memory
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.survey_plan import PlanShape, plan_iteration
from rlmguide.cost.units import GIB
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, random_plans, workload
from test_survey_model import ITERATION, PPO

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


# -- cost ------------------------------------------------------------------------------------

P = float(QWEN7B_PARAMS)  # 7,615,616,512 parameters, all dense
FORWARD_FLOP_PER_TOKEN = 16_258_837_504
"""Qwen2.5-7B forward over a 5,120-token sequence: 2P + 401,408 x 2,560 (attention at the
mean causal context) = 15,231,233,024 + 1,027,604,480."""
HW = Hardware.of(H100, 8, DEFAULT_OVERHEADS)
FORWARD_RATE = 989e12 * 0.45  # H100 bf16 dense x the default forward_compute share


def test_reference_pass_by_hand_as_data_parallel_replicas() -> None:
    # workload(): 512 x 16 = 8,192 sequences of 1,024 + 4,096 tokens. Trained at tp 4 (ZeRO-1)
    # on 8 GPUs; the reference at tp 1 is 8 replicas of one GPU: no tensor collectives, no
    # pipeline, no ZeRO gathers, so its time is the compute of 8,192 / 8 = 1,024 sequences:
    # 1,024 x 5,120 x 16,258,837,504 / (989e12 x 0.45) = 191.54 s
    plans = one_plan(train_tp=4, train_zero=1, assess_tp=1, assess_pp=1)
    costs = evaluate(H100, QWEN25_7B, workload(), plans)
    seconds = 1_024 * 5_120 * FORWARD_FLOP_PER_TOKEN / FORWARD_RATE
    assert costs.assessment_parts["reference"][0] == pytest.approx(seconds, rel=1e-9)
    assert seconds == pytest.approx(191.54, abs=0.01)
    # the training layout's reference pass pays tp 4's all-reduces on top of the same compute
    trained = evaluate(H100, QWEN25_7B, workload(), one_plan(train_tp=4, train_zero=1))
    assert trained.assessment_parts["reference"][0] > seconds
    # the old log-probs stay in the training layout
    assert costs.assessment_parts["actor"][0] == trained.assessment_parts["actor"][0]


def test_reference_pass_by_hand_through_a_pipeline() -> None:
    # tp 1, pp 2 on 8 GPUs: 4 replicas of 2 stages; 8,192 / 4 = 2,048 sequences per replica,
    # one sequence per micro-batch under pipelining (the bubble's rule): m = 2,048 micro-
    # batches through (m + pp - 1) = 2,049 slots of one stage's time. A stage holds 14 of the
    # 28 layers: compute 5,120 x 16,258,837,504 x 0.5 / (989e12 x 0.45) = 0.093524 s, plus
    # one send of the micro-batch's activations to the next stage over NVLink.
    plans = one_plan(assess_tp=1, assess_pp=2)
    costs = evaluate(H100, QWEN25_7B, workload(), plans)
    compute = 5_120 * FORWARD_FLOP_PER_TOKEN * 0.5 / FORWARD_RATE
    seconds = costs.assessment_parts["reference"][0]
    assert 2_049 * compute < seconds < 2_049 * compute * 1.01
    assert compute == pytest.approx(0.093524, rel=1e-4)


def test_reshard_buffer_by_hand() -> None:
    # Trained with ZeRO-3 on 8 GPUs (tp 1): each rank keeps 1/8 of the reference's weights
    # between steps; re-laid at tp 2 for the assessment, the buffer holds its tp shard:
    # 2 bytes x 7,615,616,512 / 2 = 7,615,616,512 bytes (7.09 GiB).
    fig = ModelFigures.of(QWEN25_7B)
    layout = TrainLayout.of(one_plan())
    frozen = [(fig, np.ones(1, dtype=bool), 2.0)]
    two = layout.assessed(np.array([2.0]), np.array([1.0]))
    assert reshard_bytes(frozen, layout, two)[0] == pytest.approx(2 * P / 2)
    # at tp 1 each replica holds the whole model: 2 x P
    one = layout.assessed(np.array([1.0]), np.array([1.0]))
    assert reshard_bytes(frozen, layout, one)[0] == pytest.approx(2 * P)
    # trained at tp 2 with ZeRO-1 (weights whole per tensor group), tp 2 re-lays nothing
    same = TrainLayout.of(one_plan(train_tp=2, train_zero=1))
    assert reshard_bytes(frozen, same, same.assessed(np.array([2.0]), np.array([1.0])))[0] == 0


def test_assessment_memory_by_hand() -> None:
    # The assessment phase of the training GPUs: the same plan with the reference re-laid at
    # tp 1 holds its whole weights (2P bytes) on top; its forward now keeps no ZeRO-3
    # gathered layers of the reference, which the actor's forward in ZeRO-3 still holds (the
    # largest pass's gathers count), so the phase grows by exactly M_reshard = 2P bytes.
    fig = ModelFigures.of(QWEN25_7B)
    layout = TrainLayout.of(one_plan())
    batch = Batch.of(workload(), Needs())
    everywhere = np.ones(1, dtype=bool)
    frozen = [(fig, everywhere, 2.0)]
    args = ([(fig, everywhere)], frozen, layout, batch, 80 * GIB, DEFAULT_OVERHEADS)
    base = training_memory(*args)
    relaid = training_memory(*args, layout.assessed(np.array([1.0]), np.array([1.0])))
    assert relaid.assessment[0] - base.assessment[0] == pytest.approx(2 * P)
    assert relaid.training[0] == base.training[0]


@settings(max_examples=25, deadline=None)
@given(
    small=st.sampled_from([1, 2, 4]),
    factor=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4]),
)
def test_larger_assessment_tp_never_raises_frozen_weight_bytes(
    small: int, factor: int, pp: int
) -> None:
    fig = ModelFigures.of(QWEN25_7B)
    layout = TrainLayout.of(one_plan(rollout_gpus=16, train_gpus=16))
    weights = [
        frozen_weight_bytes(fig, layout.assessed(np.array([float(t)]), np.array([float(pp)])))[0]
        for t in (small, small * factor)
    ]
    assert weights[1] <= weights[0]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_assessment_layout_equal_to_training_layout_changes_nothing(seed: int) -> None:
    # Where the training layout already holds the frozen weights whole per tp x pp group
    # (ZeRO below 3, no cp, no ep), naming that layout for the assessment is today's plan.
    table = random_plans(seed, QWEN25_7B, 12)
    table = table.take(
        np.flatnonzero((table.train_zero < 3) & (table.train_cp == 1) & (table.train_ep == 1))
    )
    if not len(table):
        return
    same = replace(table, assess_tp=table.train_tp, assess_pp=table.train_pp)
    a = evaluate(H100, QWEN25_7B, workload(), table)
    b = evaluate(H100, QWEN25_7B, workload(), same)
    assert np.array_equal(a.step_seconds, b.step_seconds)
    assert np.array_equal(a.memory_train_gib, b.memory_train_gib)
    assert "reshard" not in b.memory_terms_gib["training"]


def test_own_pool_holds_the_tp_shard_without_zero(tmp_path: Path) -> None:
    # PPO, 7B policy and reference, 1.5B reward model; the reference on 4 GPUs of its own.
    # Trained with ZeRO-3, the reference's own pool shards it over its 4 ranks today
    # (2P / 4 bytes); at tp 2 it holds its tp shard, 2P / 2 bytes, no ZeRO.
    path = scenario(tmp_path, "{tp: 2}")
    text = (
        Path(path)
        .read_text()
        .replace(
            "  rollout: {gpus: 16, tp: 2}\n  train: {gpus: 16,",
            "  placement: partially-colocated\n  rollout: {gpus: 12, tp: 2}\n  train: {gpus: 12,",
        )
        .replace("  placement: colocated\n", "")
        + "  pools: {reference: 4}\n"
    )
    Path(path).write_text(text)
    plan = estimate(path)
    frozen = plan["memory_breakdown_gib"]["reference"]["frozen_models"]  # type: ignore[index]
    assert frozen == pytest.approx(2 * P / 2 / GIB)
    assert plan["assessment"]["reference_dp"] == 2  # type: ignore[index]


def test_survey_model_adds_the_frozen_models_re_laid() -> None:
    # The canonical PPO of tests/test_survey_model.py on one group: M_T^Σ = 14368 is its
    # peak; re-laying the reference (1664 elements) and the reward model (1672) into their own
    # layout for the assessment holds both beside it: 14368 + 1664 + 1672 = 17704.
    relaid = plan_iteration(PPO, ITERATION, PlanShape(frozen_tp=1.0, frozen_resharded=True))
    assert relaid.groups["trainer"] == 14368 + 1664 + 1672
    assert relaid.rows == ("hybrid",)
    # On pools of their own nothing is re-laid on the trainer's group.
    both = frozenset({"reference", "reward"})
    apart = plan_iteration(PPO, ITERATION, PlanShape(apart=both, frozen_resharded=True))
    plain = plan_iteration(PPO, ITERATION, PlanShape(apart=both))
    assert apart.groups == plain.groups and apart.rows == ("disaggregated",)
    # The frozen passes take their own tp's depth, the critic keeps the training one's.
    mixed = plan_iteration(PPO, ITERATION, PlanShape(frozen_tp=2.0))
    at_two = plan_iteration(PPO, ITERATION, PlanShape(assessment_tp=2.0))
    depth = {p.name: p.depth for p in mixed.assessment}
    assert depth["reference"] == {p.name: p.depth for p in at_two.assessment}["reference"]
    assert depth["critic"] == {p.name: p.depth for p in relaid.assessment}["critic"]
    assert depth["reference"] < depth["critic"]


def test_estimate_survey_names_the_hybrid_row_and_grows_the_trainer(tmp_path: Path) -> None:
    # The plain PPO plan trains in ZeRO-3 at tp 1, with a rollout at tp 2: already hybrid
    # (the actor is resharded for the rollout). Its assessment layout at tp 2 re-lays the
    # 7B reference and the 1.5B reward model too: the trainer's group grows by exactly their
    # weights, the assessment's parts for them.
    plain = estimate(scenario(tmp_path, None), "--survey")["survey_model"]
    own = estimate(scenario(tmp_path, "{tp: 2}"), "--survey")["survey_model"]
    assert own["configuration_rows"] == plain["configuration_rows"] == ["hybrid"]  # type: ignore[index]
    grown = (
        own["table9"][-1]["memory_elements_by_group"]["trainer"]
        - (  # type: ignore[index]
            plain["table9"][-1]["memory_elements_by_group"]["trainer"]  # type: ignore[index]
        )
    )
    assert grown > 0


# -- search and frameworks -------------------------------------------------------------------


def test_the_search_tries_the_frozen_models_layouts_as_what_ifs(tmp_path: Path) -> None:
    # No framework in the KB claims frozen-model-layout, so the layouts are tried on the best
    # plan and shown with what they would gain, never ranked. tp 8 does not split the 7B
    # reference's 28 heads; 1, 2 and 4 do (and the 1.5B reward model's 12).
    code, out = invoke("recommend", scenario(tmp_path, None), "--what-if", "--format", "json")
    assert code == 0, out
    result = json.loads(out)
    best = result["plans"][0]
    assert "assessment" not in best
    tried = [w for w in result["what_if"] if "frozen-model-layout" in w["techniques"]]
    assert sorted(w["assessment"]["tp"] for w in tried) == [1, 2, 4]
    for w in tried:
        assert w["assessment"]["dp"] * w["assessment"]["tp"] == best["train"]["gpus"]
        assert w["over_step_seconds"] == best["step_seconds"]


def test_no_framework_exports_a_layout_it_does_not_claim(tmp_path: Path) -> None:
    code, out = invoke("export", scenario(tmp_path, "{tp: 2}"), "--framework", "verl")
    assert code == 1, out
    assert "does not claim frozen-model-layout (plan.assessment: tp 2, pp 1)" in out
    code, out = invoke("export", scenario(tmp_path, None), "--framework", "verl")
    assert code == 0, out


def test_estimate_labels_no_framework_for_a_layout_none_claims(tmp_path: Path) -> None:
    plan = estimate(scenario(tmp_path, "{tp: 2}"))
    assert plan["frameworks"] == []
    assert estimate(scenario(tmp_path, None))["frameworks"]


def test_relayout_time_by_hand() -> None:
    # ZeRO-3 over 8 GPUs holds 2P / 8 bytes of the reference per rank; at tp 1 a rank needs
    # all 2P: it receives 2P x 7/8 = 13,327,328,896 bytes over the ZeRO group's NVLink, one
    # collective, on every GPU (link bytes 8 x that).
    fig = ModelFigures.of(QWEN25_7B)
    plans = one_plan()
    layout = TrainLayout.of(plans)
    links = TrainLinks.of(Fabric.of(HW, EfficiencyFactors(), DEFAULT_OVERHEADS), layout)
    frozen = [(fig, np.ones(1, dtype=bool), 2.0)]
    stage = relayout_stage(frozen, layout, links, layout.assessed(np.ones(1), np.ones(1)))
    received = 2 * P * 7 / 8
    assert received == 13_327_328_896
    assert stage.link_bytes[0] == pytest.approx(8 * received)
    shard = links.shard
    assert stage.seconds[0] == pytest.approx(shard.latency[0] + received / shard.bytes_per_s[0])
    # and the assessment stage of the plan carries it beside the passes
    base = evaluate(H100, QWEN25_7B, workload(), plans)
    relaid = evaluate(H100, QWEN25_7B, workload(), one_plan(assess_tp=1, assess_pp=1))
    passes = relaid.assessment_parts["reference"][0] - base.assessment_parts["reference"][0]
    grown = relaid.stages["assessment"].seconds[0] - base.stages["assessment"].seconds[0]
    assert grown == pytest.approx(passes + stage.seconds[0])
