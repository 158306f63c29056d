"""The ranking's tie on hand-built plan lists: within TIE_FRACTION of the fastest plan the
simplest wins and the fastest follows it; beyond the tie the fastest wins. And the execution
modes a framework's code runs: a stream that never drains a batch is asynchronous, so a
framework without a drained one-step overlap gets no one-step-off plan."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost.plans import PlanTable
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Plan
from rlmguide.rules.ranking import TIE_FRACTION, Ranker, complexity
from rlmguide.rules.recommend import recommend, recommender_for
from rlmguide.rules.scenario import resolve

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])

TRAIN = {"tp": 1, "zero": 3, "recompute": "full"}
PLANS = [
    Plan(placement="colocated", execution="sync", rollout={"gpus": 8, "tp": 1},
         train={"gpus": 8, **TRAIN}),
    Plan(placement="disaggregated", execution="sync", rollout={"gpus": 4, "tp": 1},
         train={"gpus": 4, **TRAIN}),
    Plan(placement="disaggregated", execution="one-step-off", max_staleness=1,
         rollout={"gpus": 4, "tp": 1}, train={"gpus": 4, **TRAIN}),
    Plan(placement="disaggregated", execution="async", max_staleness=1,
         rollout={"gpus": 4, "tp": 1}, train={"gpus": 4, **TRAIN}),
]  # fmt: skip
"""Simplest first: one pool before two, then sync, one-step-off, async (rules.ranking)."""


def ranked(seconds: list[float]) -> list[int]:
    table = PlanTable.from_plans(PLANS)
    costs: Any = SimpleNamespace(plans=table, step_seconds=np.asarray(seconds, dtype=float))
    return Ranker(costs, complexity(table, gpus_per_node=8)).rank(len(PLANS)).rows


def test_the_hand_built_list_is_ordered_simplest_first() -> None:
    scores = complexity(PlanTable.from_plans(PLANS), gpus_per_node=8)
    assert list(np.argsort(scores, kind="stable")) == [0, 1, 2, 3]


def test_within_the_tie_the_simpler_plan_wins_and_the_faster_follows() -> None:
    # async 15% faster than colocated sync: a tie, which the simpler plan wins
    assert ranked([115.0, 300.0, 300.0, 100.0])[:2] == [0, 3]
    # 25% faster: beyond the tie, the faster plan wins outright
    assert ranked([125.0, 300.0, 300.0, 100.0])[0] == 3
    # the tie is measured from the fastest plan's time: 1.2 x 100 is still a tie
    assert ranked([100.0 * (1 + TIE_FRACTION), 300.0, 300.0, 100.0])[:2] == [0, 3]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1.0, 100.0), min_size=len(PLANS), max_size=len(PLANS)))
def test_the_first_plan_is_the_simplest_within_the_tie_of_the_fastest(seconds: list[float]) -> None:
    rows = ranked(seconds)
    times = np.asarray(seconds)
    fastest = int(np.argmin(times))
    tied = [i for i in range(len(PLANS)) if times[i] <= (1 + TIE_FRACTION) * times.min()]
    # PLANS is simplest first, so the simplest plan of the tie is its lowest index
    assert rows[0] == min(tied)
    assert times[rows[0]] <= (1 + TIE_FRACTION) * times[fastest]
    if rows[0] != fastest:
        assert rows[1] == fastest  # the plan the tie passed over is shown right after


def _searched(deployment_id: str) -> Any:
    """A deployment's scenario with the plan left to the search (bench_experts.searched)."""
    d: Any = CATALOG.of("deployment")[deployment_id]
    return resolve(d.scenario.model_copy(update={"plan": type(d.scenario.plan)()}), CATALOG.records)


def test_a_stream_that_never_drains_gets_no_one_step_off_plans() -> None:
    """prime-rl's orchestrator keeps max_inflight episodes in flight across weight updates at
    any max_off_policy_steps: its one-step-off-policy claim is 'no', so its lagging plans are
    asynchronous (the framework record cites the code)."""
    scenario = _searched("prime-rl-qwen3-1.7b-wordle-multiturn-async-8xh100")
    result = recommend(recommender_for(scenario, CATALOG, only="prime-rl"), 5)
    executions = {p["execution"] for p in result["plans"]}
    assert "one-step-off" not in executions and "async" in executions
    claims = {c.feature: c.support for c in CATALOG.of("framework")["prime-rl"].claims}
    assert claims["one-step-off-policy"] == "no" and claims["asynchronous-execution"] == "yes"


def test_rolls_async_pipeline_is_recorded_as_asynchronous() -> None:
    """ROLL aborts the requests in flight at each model update and resends their partial
    outputs under the new weights: its one-step-ahead run streams (async, staleness 1), which
    the cost core prices without the drained batch's tail."""
    d: Any = CATALOG.of("deployment")["roll-qwen2.5-7b-rlvr-async-24xh800"]
    assert d.scenario.plan.execution == "async" and d.scenario.plan.max_staleness == 1
    claims = {c.feature: c.support for c in CATALOG.of("framework")["roll"].claims}
    assert claims["one-step-off-policy"] == "no"
