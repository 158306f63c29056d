"""Asynchronous execution at staleness 0, the on-policy stream (verl fully_async_policy's
stream off-policy pipeline), end to end: the scenario accepts it only where it belongs, and on
a published run's setting the step time falls as the plan allows more overlap."""

from __future__ import annotations

import itertools
from dataclasses import replace

from click.testing import CliRunner
from conftest import REPO
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.fidelity import cases, predict

from rlmguide.cli import cli

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT]).records
STREAM_CASE = next(
    c for c in cases(CATALOG) if c.id == "verl-fully-async-qwen2.5-math-7b-stream-64-64"
)
SMALL = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")


def step_with(execution: str, staleness: int | None) -> float:
    scenario = STREAM_CASE.scenario
    plan = scenario.plan.model_copy(update={"execution": execution, "max_staleness": staleness})
    case = replace(STREAM_CASE, scenario=scenario.model_copy(update={"plan": plan}))
    predicted = predict(case, CATALOG).predicted
    assert predicted is not None
    return predicted


def test_the_published_stream_is_recorded_and_priced_as_the_on_policy_stream() -> None:
    plan = STREAM_CASE.scenario.plan
    assert (plan.execution, plan.max_staleness) == ("async", 0)
    # verl's table: the stream (231 s) beats the pools taking turns; staleness 0.5 with
    # partial rollouts on the same 64 + 64 GPUs (150.6 s) beats the stream.
    sync, stream, stale = step_with("sync", None), step_with("async", 0), step_with("async", 1)
    assert stale < stream < sync


def test_staleness_zero_is_on_policy_and_only_asynchronous() -> None:
    on_policy = ["--set", "workload.max_staleness=0", "--set", "plan.placement=disaggregated"]
    result = CliRunner().invoke(
        cli,
        ["recommend", SMALL, *on_policy, "--set", "plan.execution=async",
         "--set", "plan.max_staleness=0", "--format", "json", "--top", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert '"max_staleness": 0' in result.output and "one batch per step, drained" in result.output
    for execution in ("one-step-off", "partial-rollout"):
        refused = CliRunner().invoke(
            cli,
            ["recommend", SMALL, "--set", f"plan.execution={execution}",
             "--set", "plan.max_staleness=0", "--set", "plan.placement=disaggregated"],
        )  # fmt: skip
        assert refused.exit_code == 2
        assert "only asynchronous execution" in refused.output


def test_more_staleness_never_slows_a_published_setting() -> None:
    """Sync, then async at 0, 1, 2 and 4 on the published setting (its fastest plan each):
    every mode allows what the one before it does, so the step never grows."""
    steps = [step_with("sync", None)] + [step_with("async", k) for k in (0, 1, 2, 4)]
    for slower, faster in itertools.pairwise(steps):
        assert faster <= slower * (1 + 1e-9), steps
