"""Table 9's configurations (survey §4.1-§4.3): shared actor-critic, inter- and intra-stage
fusion, partial co-location and concurrent assessment; orderings as properties, numbers worked
by hand, and the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, PlanTable, evaluate
from rlmguide.cost.compose import compose_step, fused_assessment
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.plans import (
    COLOCATED,
    DISAGGREGATED,
    FUSION_BOTH,
    FUSION_INTER,
    FUSION_INTRA,
    FUSION_NONE,
    PARTIAL_ROLLOUT,
    SYNC,
    PlanError,
)
from rlmguide.cost.rollout import Stream
from rlmguide.cost.training import value_head_stage
from test_cost_compose import PREP, ROLLOUT, STREAM, SWITCH, SYNC_STAGE, TRAIN, stage
from test_cost_laws import run, scenarios, within
from test_cost_specs import H100, QWEN25_7B, one_plan, workload

from rlmguide.cli import cli

EXAMPLE = (
    Path(__file__).parent.parent / "examples" / "ppo-qwen2.5-7b-shared-critic-fused-16xh100.yaml"
)
PPO = Needs(needs_critic=True)


def variant(plans: PlanTable, **columns: object) -> PlanTable:
    """The same plans with some columns set for every row."""
    n = len(plans)
    values = {k: np.full(n, v) for k, v in columns.items()}
    return dataclasses.replace(plans, **values)


def with_critic(scenario: tuple) -> tuple:  # type: ignore[type-arg]
    accelerator, arch, wl, needs, plans = scenario
    return accelerator, arch, wl, dataclasses.replace(needs, needs_critic=True), plans


# -- numbers worked by hand ------------------------------------------------------------------


def test_fused_assessment_fills_the_tail_on_one_pool_and_runs_beside_on_two() -> None:
    # Rollout 100 s (work 60, depth 50); assessment 20 s of work: on one pool the assessment
    # fits in the 40 s the tail leaves idle, max(100, 20, 60 + 20) = 100; on separate pools
    # max(100, 20) = 100.
    one, two = np.array([True]), np.array([False])
    assert fused_assessment(ROLLOUT, PREP, one).seconds[0] == 100
    assert fused_assessment(ROLLOUT, PREP, two).seconds[0] == 100
    # 50 s of assessment work no longer fits the idle tail: max(100, 50, 60 + 50) = 110 on one
    # pool; beside it on its own pool, max(100, 50) = 100.
    heavy = stage(50, 50, 2)
    assert fused_assessment(ROLLOUT, heavy, one).seconds[0] == 110
    assert fused_assessment(ROLLOUT, heavy, two).seconds[0] == 100
    # Brent: lower max(60 + 50, 50, 2) = 110, upper the sequential bound 160 + 52 = 212.
    span = fused_assessment(ROLLOUT, heavy, one)
    assert (span.lower[0], span.upper[0]) == (110, (60 + 50) + (50 + 2))


def test_inter_stage_fusion_in_a_step_worked_by_hand() -> None:
    # Stages as in test_cost_compose: unfused 100 + 20 + 50 + 5 + 3 = 178; fused, the
    # assessment hides in the rollout's tail: 100 + 50 + 5 + 3 = 158, in either placement.
    for placement in (COLOCATED, DISAGGREGATED):
        steps = []
        for fusion in (FUSION_NONE, FUSION_INTER):
            timing = compose_step(
                np.array([placement]), np.array([SYNC]), np.array([1]),
                ROLLOUT, PREP, TRAIN, SYNC_STAGE, SWITCH, np.array([fusion]), stream=STREAM,
            )  # fmt: skip
            steps.append(float(timing.step.seconds[0]))
        assert steps == [178, 158]


def test_pipelined_updates_worked_by_hand() -> None:
    # Actor T 8 (W 6, D 4), critic T 5 (W 3, D 3): in turn 13 s; pipelined max(8, 5, 6 + 3)
    # = 9 s, depth max(4, 3) = 4, work 9: inside Brent's max(9, 4) <= 9 <= 9 + 4.
    actor, critic = stage(8, 6, 4), stage(5, 3, 3)
    fused = actor.pipelined(critic)
    assert (actor + critic).seconds[0] == 13
    assert (fused.seconds[0], fused.work_seconds[0], fused.depth_seconds[0]) == (9, 9, 4)


def test_value_head_flops_worked_by_hand() -> None:
    # Qwen2.5-7B's hidden is 3,584: training the head over 1e6 tokens is 3 passes x 2 x 3,584
    # x 1e6 = 2.1504e10 FLOPs; on 8 H100s (989 TFLOP/s) at a rate of 0.5 that is 2.1504e10 /
    # (8 x 989e12 x 0.5) = 5.4358e-6 s.
    layout = TrainLayout.of(one_plan())
    hw = Hardware.of(H100, 8, DEFAULT_OVERHEADS)
    head = value_head_stage(QWEN25_7B, 1e6, layout, hw, 0.5, passes=3.0)
    assert head.work_flop[0] == pytest.approx(2.1504e10)
    assert head.seconds[0] == pytest.approx(2.1504e10 / (8 * 989e12 * 0.5))
    assert head.depth_seconds[0] == 0


def test_shared_critic_training_is_the_actor_plus_the_head() -> None:
    # 512 x 16 responses of 1,024 + 4,096 tokens: 4.194e7 tokens trained; the head adds
    # 6 x 3,584 x 4.194e7 FLOPs to the actor's training, the critic's whole pass is gone.
    plan = one_plan(train_recompute="full")
    separate = evaluate(H100, QWEN25_7B, workload(), plan, needs=PPO)
    shared = evaluate(H100, QWEN25_7B, workload(), variant(plan, critic_shared=True), needs=PPO)
    actor = evaluate(H100, QWEN25_7B, workload(), plan, needs=Needs())
    tokens = 512 * 16 * (1024 + 4096)
    head = 6 * 3584 * tokens
    actor_flop = float(actor.stages["training"].work_flop[0])
    assert float(shared.stages["training"].work_flop[0]) == pytest.approx(actor_flop + head)
    # a separate critic is the actor's network less its 152,064 x 3,584 output projection
    # (plus the one-row head): 8 (VH - H) FLOPs a token with full recomputation
    projection = 152_064 * 3_584 - 3_584
    assert float(separate.stages["training"].work_flop[0]) == pytest.approx(
        2 * actor_flop - 8 * projection * tokens
    )
    # Assessment: the critic's forward pass becomes the head's forward on the actor's pass.
    drop = float(separate.stages["assessment"].work_flop[0]) - float(
        shared.stages["assessment"].work_flop[0]
    )
    actor_forward = float(actor.stages["assessment"].work_flop[0]) / 2  # reference + actor
    critic_forward = actor_forward - 2 * projection * tokens
    assert drop == pytest.approx(critic_forward - 2 * 3584 * tokens)


# -- the survey's orderings as properties -----------------------------------------------------


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios())
def test_shared_critic_does_less_work_and_holds_less_state(scenario: tuple) -> None:  # type: ignore[type-arg]
    scenario = with_critic(scenario)
    plans = scenario[4]
    separate = run(scenario)
    shared = run((*scenario[:4], variant(plans, critic_shared=True)))
    for name in ("assessment", "training"):
        assert np.all(shared.stages[name].work_flop < separate.stages[name].work_flop)
    assert np.all(shared.memory_train_gib <= separate.memory_train_gib + 1e-9)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios())
def test_inter_stage_fusion_never_deepens_the_step(scenario: tuple) -> None:  # type: ignore[type-arg]
    # Fusion holds the assessment beside the engine (less KV room, a slower rollout, survey
    # §4.3) and pays a sync per hand-off: over the same stages it never deepens the step by
    # more than the hand-offs' syncs.
    plans = scenario[4]
    fused = run((*scenario[:4], variant(plans, fusion=FUSION_INTER)))
    stages = [fused.stages[k] for k in ("rollout", "assessment", "training", "weight_sync")]
    stream = Stream(
        fused.stream_concurrency, fused.stream_produce_seconds, fused.stream_sequence_seconds
    )
    plain = compose_step(
        plans.placement, plans.execution, plans.staleness, *stages, fused.stages["switch"],
        stream=stream,
    ).step  # fmt: skip
    syncs = fused.fusion_handoffs * DEFAULT_OVERHEADS.scale_out_latency_seconds
    assert np.all(fused.step_seconds <= plain.seconds * (1 + 1e-12) + syncs)
    assert np.all(fused.step_lower_seconds <= plain.lower * (1 + 1e-12) + syncs)
    assert within(fused.step_lower_seconds, fused.step_seconds, fused.step_upper_seconds)
    # Where the assessment waited for the rollout, never below the longer of the two chains
    # it overlaps (overlapping modes amortise the rollout over steps).
    floor = np.maximum(fused.stages["rollout"].seconds, fused.stages["assessment"].seconds)
    waits = np.isin(plans.execution, (SYNC, PARTIAL_ROLLOUT))
    assert np.all(fused.step_seconds[waits] >= floor[waits] * (1 - 1e-12))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios(), st.sampled_from([FUSION_INTRA, FUSION_BOTH]))
def test_intra_stage_fusion_never_lengthens_training(scenario: tuple, fusion: int) -> None:  # type: ignore[type-arg]
    # Pipelined, both models' activations are live at once (cost.memory), so the search's
    # micro-batches may shrink: at the same micro-batches, fusion never lengthens training.
    scenario = with_critic(scenario)
    tokens = run(scenario).train_micro_tokens.astype(np.int64)
    same = dataclasses.replace(scenario[4], train_micro_tokens=tokens)
    plain = run((*scenario[:4], same))
    fused = run((*scenario[:4], variant(same, fusion=fusion)))
    a, b = fused.stages["training"], plain.stages["training"]
    assert np.all(a.seconds <= b.seconds * (1 + 1e-12))
    assert np.all(a.work_flop == b.work_flop)  # fusion moves no work, only depth
    assert within(a.lower_seconds, a.seconds, a.upper_seconds)
    # (both also streams the assessment, which holds memory beside the engine)
    if fusion == FUSION_INTRA:
        assert np.all(fused.step_seconds <= plain.step_seconds * (1 + 1e-12))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios())
def test_concurrent_assessment_is_no_longer_than_sequential(scenario: tuple) -> None:  # type: ignore[type-arg]
    # The reference on a pool of its own, laid out like the training pool: its pass takes the
    # same time there, and runs beside the others (the maximum) instead of after them (the sum).
    accelerator, arch, wl, needs, plans = scenario
    scenario = (accelerator, arch, wl, dataclasses.replace(needs, needs_reference=True), plans)
    sequential = run(scenario)
    concurrent = run((*scenario[:4], dataclasses.replace(plans, reference_gpus=plans.train_gpus)))
    seq_a, con_a = sequential.stages["assessment"], concurrent.stages["assessment"]
    assert np.all(con_a.seconds <= seq_a.seconds * (1 + 1e-12))
    parts = sequential.assessment_parts
    rest = seq_a.seconds - parts["reference"]
    assert np.allclose(con_a.seconds, np.maximum(rest, parts["reference"]), rtol=1e-9)


# -- plan checks -----------------------------------------------------------------------------


def test_configurations_that_do_not_apply_are_refused() -> None:
    grpo = Needs()
    with pytest.raises(PlanError, match="shared actor-critic needs an algorithm with a critic"):
        evaluate(H100, QWEN25_7B, workload(), one_plan(critic_shared=True), needs=grpo)
    with pytest.raises(PlanError, match="intra-stage fusion"):
        evaluate(H100, QWEN25_7B, workload(), one_plan(fusion="intra-stage"), needs=grpo)
    with pytest.raises(PlanError, match="frozen models cannot be parked"):
        plan = one_plan(fusion="inter-stage", offload_frozen=True)
        evaluate(H100, QWEN25_7B, workload(), plan, needs=PPO)
    with pytest.raises(PlanError, match="partially-colocated"):
        evaluate(H100, QWEN25_7B, workload(), one_plan(placement="partially-colocated"), needs=PPO)


def test_partially_colocated_costs_like_colocated_with_frozen_models_apart() -> None:
    fields = dict(rollout_gpus=8, train_gpus=8, reference_gpus=2)
    partial = evaluate(
        H100, QWEN25_7B, workload(), one_plan(placement="partially-colocated", **fields),
        needs=PPO, nodes=2,
    )  # fmt: skip
    colocated = evaluate(H100, QWEN25_7B, workload(), one_plan(**fields), needs=PPO, nodes=2)
    assert partial.step_seconds[0] == colocated.step_seconds[0]
    assert partial.plans.row(0)["placement"] == "partially-colocated"


# -- the CLI ---------------------------------------------------------------------------------


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_estimate_a_ppo_plan_with_a_shared_critic_and_inter_stage_fusion() -> None:
    done = invoke("estimate", str(EXAMPLE), "--format", "json")
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    (plan,) = json.loads(done.output)["plans"]  # type: ignore[attr-defined]
    assert (plan["critic"], plan["fusion"]) == ("shared", "inter-stage")
    assert plan["frameworks"] == []  # no framework in the KB runs both
    plain = invoke(
        "estimate", str(EXAMPLE), "--set", "plan.critic=separate", "--set", "plan.fusion=none",
        "--format", "json",
    )  # fmt: skip
    (base,) = json.loads(plain.output)["plans"]  # type: ignore[attr-defined]
    stages = {s["name"]: s for s in plan["stages"]}
    plain_stages = {s["name"]: s for s in base["stages"]}
    # one network's training instead of two: the separate critic is the actor less its output
    # projection (7% of Qwen2.5-7B's parameters), so sharing saves a little under half
    assert stages["training"]["work_flop"] < 0.53 * plain_stages["training"]["work_flop"]
    # Fused: the assessment hides in the rollout's tail but for its last chunk, so the step
    # is rollout + the last of 3 chunks' assessment + training + weight sync, and a 200 us
    # sync per hand-off (two nodes: the scale-out latency), 3 x 200 us = 0.6 ms. The default
    # chunk is one micro-batch per rank: 16 ranks x floor(16,384 / 2,560 tokens) = 96 samples
    # of 256.
    assert (plan["fusion_chunk"], plan["overlap"]["fusion_handoffs"]) == (96, 3)
    assert plan["step_seconds"] == pytest.approx(
        stages["rollout"]["seconds"] + stages["assessment"]["seconds"] / 3
        + stages["training"]["seconds"] + stages["weight_sync"]["seconds"] + 3 * 200e-6
    )  # fmt: skip
    assert plan["step_seconds"] < base["step_seconds"]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("workload.algorithm=grpo,workload.samples_per_prompt=4", "grpo) trains no critic"),
        ("plan.fusion=intra-stage", "this plan has none"),
        ("plan.placement=partially-colocated", "give plan.pools.reference"),
    ],
)
def test_configuration_mistakes_are_one_line_errors(setting: str, message: str) -> None:
    flags = [arg for one in setting.split(",") for arg in ("--set", one)]
    done = CliRunner().invoke(cli, ["estimate", str(EXAMPLE), *flags])
    assert done.exit_code == 2
    assert message in done.output.lower()
    assert "Traceback" not in done.output


def open_configuration(tmp_path: Path) -> Path:
    """The example with the configuration (and the plan) left to the search."""
    lines = EXAMPLE.read_text().splitlines()
    kept = lines[: lines.index("plan:")]
    path = tmp_path / "ppo.yaml"
    path.write_text("\n".join(kept) + "\n")
    return path


def test_recommend_what_if_is_marked_not_runnable_and_never_a_plan(tmp_path: Path) -> None:
    scenario = str(open_configuration(tmp_path))
    done = invoke("recommend", scenario, "--what-if", "--format", "json")
    result = json.loads(done.output)  # type: ignore[attr-defined]
    assert result["what_if"], "the shared critic is run by no framework in the KB"
    for entry in result["what_if"]:
        assert entry["runnable"] is False
        assert "not a plan to launch" in entry["note"]
    shared = [w for w in result["what_if"] if w["critic"] == "shared" and w["fusion"] == "none"]
    assert shared and shared[0]["gain_percent"] > 0
    assert "flexrlhf" in shared[0]["claimed_by"]
    for plan in result["plans"]:
        assert plan["frameworks"]  # every plan shown is runnable
    # Without the flag, no what_if key.
    plain = json.loads(invoke("recommend", scenario, "--format", "json").output)  # type: ignore[attr-defined]
    assert "what_if" not in plain


def test_the_plan_s_table_9_rows_follow_its_configuration() -> None:
    done = invoke("estimate", str(EXAMPLE), "--survey", "--format", "json")
    survey = json.loads(done.output)["plans"][0]["survey_model"]  # type: ignore[attr-defined]
    # A shared critic with inter-stage fusion, colocated with the trainer's ZeRO-3 resharded
    # into the rollout's TP 2 (tests/test_survey_plan.py costs each configuration).
    rows = ["shared actor-critic", "hybrid", "stage fusion"]
    assert survey["configuration_rows"] == rows
    assert [c["configuration"] for c in survey["table9"] if c["this_plan"]] == [
        *rows,
        "this plan: " + " + ".join(rows),
    ]


def test_recommend_names_who_claims_a_fixed_configuration_no_framework_runs() -> None:
    # The example fixes a shared critic and inter-stage fusion; no framework in the KB runs
    # both with the rest of the plan, and the refusal says which framework claims each.
    done = invoke("recommend", str(EXAMPLE))
    assert done.exit_code == 1  # type: ignore[attr-defined]
    message = done.output  # type: ignore[attr-defined]
    assert message.count("\n") == 1
    assert "shared-actor-critic (plan.critic: shared) is claimed by flexrlhf" in message
    assert "inter-stage-fusion (plan.fusion: inter-stage) is claimed by " in message
    assert "recommend --what-if" in message
