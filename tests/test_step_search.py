"""Search-based assessment (completions from each response's states) and chained process
reward models: lengths by hand, what is scored, laws of the cost, and the scenario's errors."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, Scoring, evaluate
from rlmguide.cost.batch import Batch
from rlmguide.cost.step_search import StepSearch
from rlmguide.kb.schema import Search
from test_cost_specs import H100, QWEN25_7B, one_plan, random_plans, workload
from test_scenario_input import SMALL, assert_clean_bad_input, invoke

FIXED = [
    "plan.placement=colocated", "plan.execution=sync", "plan.rollout.tp=1", "plan.train.tp=1",
    "plan.train.zero=3", "plan.train.recompute=full",
]  # fmt: skip

# workload(): 512 prompts x 16 responses of 1024 prompt + 4096 mean (16,384 longest) tokens
RESPONSES = 512 * 16


def searched(**search: object) -> object:
    return workload().model_copy(update={"search": Search(**search)})  # type: ignore[arg-type]


def test_levels_all_at_once_by_hand() -> None:
    # depth 4: states after 0, 1, 2 and 3 of the 4 steps; mean prefix 4096 x (0+1+2+3)/16
    # = 1536 tokens, mean remainder 4096 - 1536 = 2560 = 4096 x 5/8; 8192 responses x 4
    # states, each a group of 9 completions sharing its prefix
    batch = Batch.of(workload(), Needs())
    (level,) = StepSearch(depth=4, branching=9).levels(batch)
    assert level.prompts == RESPONSES * 4 and level.generated_per_prompt == 9
    assert level.prompt_tokens == 1024 + 1536
    assert level.response_tokens == 2560 == 4096 * 5 / 8
    assert level.longest_response == 16384
    assert level.generated_sequences == RESPONSES * 36


def test_levels_one_after_another_by_hand() -> None:
    batch = Batch.of(workload(), Needs())
    levels = StepSearch(depth=4, branching=2, sequential=True).levels(batch)
    assert [lv.prompt_tokens for lv in levels] == [1024, 2048, 3072, 4096]
    assert [lv.response_tokens for lv in levels] == [4096, 3072, 2048, 1024]
    assert [lv.longest_response for lv in levels] == [16384, 12288, 8192, 4096]
    assert all(lv.generated_sequences == RESPONSES * 2 for lv in levels)
    # every completion ends where a response ends: prefix + remainder = a response
    assert all(lv.prompt_tokens + lv.response_tokens == 1024 + 4096 for lv in levels)


def test_vineppo_branching_comes_from_the_algorithm() -> None:
    needs = Needs(needs_reference=True, value_rollouts_per_state=9)
    search = StepSearch.of(searched(depth=6), needs)  # type: ignore[arg-type]
    assert search == StepSearch(6, 9, False)
    assert search.completions_per_response == 54
    assert StepSearch.of(workload(), needs) is None
    given = StepSearch.of(searched(depth=6, branching=4), needs)  # type: ignore[arg-type]
    assert given is not None and given.branching == 4


def test_a_reward_model_scores_every_completion() -> None:
    # depth 2 x branching 3: 6 completions per response, each of a response's length, so
    # the reward model's forward work is 7x the responses' alone; the other passes are not.
    kw = {"reward": QWEN25_7B, "needs": Needs(needs_reference=False), "old_log_probs": False}
    plain = evaluate(H100, QWEN25_7B, workload(), one_plan(), **kw)  # type: ignore[arg-type]
    wl = searched(depth=2, branching=3)
    more = evaluate(H100, QWEN25_7B, wl, one_plan(), **kw)  # type: ignore[arg-type]
    flop = [r.stages["assessment"].work_flop[0] for r in (plain, more)]
    assert flop[1] == pytest.approx(7 * flop[0])
    # a verifier scores on CPUs: the assessment is the same with or without the search
    kw = {"needs": Needs(), "old_log_probs": True}
    a = evaluate(H100, QWEN25_7B, workload(), one_plan(), **kw)  # type: ignore[arg-type]
    b = evaluate(H100, QWEN25_7B, wl, one_plan(), **kw)  # type: ignore[arg-type]
    assert b.stages["assessment"].seconds[0] == pytest.approx(a.stages["assessment"].seconds[0])


def test_the_search_decodes_after_the_responses() -> None:
    # The rollout stage is the responses' decode plus the search's: its work grows by the
    # completions' tokens (6 per response, 4096 tokens each on average) and its depth by the
    # search's longest chain; training and weight sync do not change.
    wl = searched(depth=2, branching=3)
    a = evaluate(H100, QWEN25_7B, workload(), one_plan())
    b = evaluate(H100, QWEN25_7B, wl, one_plan())  # type: ignore[arg-type]
    ra, rb = a.stages["rollout"], b.stages["rollout"]
    assert rb.seconds[0] > ra.seconds[0] and rb.depth_seconds[0] > ra.depth_seconds[0]
    assert rb.work_flop[0] > 6 * ra.work_flop[0]
    for name in ("training", "weight_sync"):
        assert b.stages[name].seconds[0] == pytest.approx(a.stages[name].seconds[0])


@pytest.mark.parametrize("seed", [5, 17])
def test_search_time_grows_with_branching_and_depth(seed: int) -> None:
    plans = random_plans(seed, QWEN25_7B, 30)
    wl = workload(prompts_per_step=32)

    def rollout(**search: object) -> np.ndarray:
        w = wl.model_copy(update={"search": Search(**search)})  # type: ignore[arg-type]
        return evaluate(H100, QWEN25_7B, w, plans).stages["rollout"].seconds

    for series in (
        [rollout(depth=4, branching=k) for k in (1, 3, 9)],
        [rollout(depth=d, branching=4) for d in (1, 4, 16)],
    ):
        for low, high in itertools.pairwise(series):
            assert np.all(high > low)


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(1, 12), branching=st.integers(1, 12))
def test_a_tree_search_lasts_at_least_its_deepest_level(depth: int, branching: int) -> None:
    """Levels one after another: the depth (critical path) is the sum of the levels', at
    least the all-at-once search's longest chain; the stage stays Brent-bounded."""
    wl = workload(prompts_per_step=8)
    plan = one_plan()
    at_once = evaluate(
        H100, QWEN25_7B, wl.model_copy(update={"search": Search(depth=depth, branching=branching)}),
        plan,
    ).stages["rollout"]  # fmt: skip
    chained = evaluate(
        H100, QWEN25_7B,
        wl.model_copy(update={"search": Search(depth=depth, branching=branching, sequential=True)}),
        plan,
    ).stages["rollout"]  # fmt: skip
    assert chained.depth_seconds[0] >= at_once.depth_seconds[0] * (1 - 1e-9)
    for stage in (at_once, chained):
        assert stage.lower_seconds[0] <= stage.seconds[0] * (1 + 1e-9)
        assert stage.seconds[0] <= stage.upper_seconds[0] * (1 + 1e-9)


def test_a_chained_prm_does_the_same_work_in_a_longer_chain() -> None:
    # Sequential verification runs the per-prefix passes one after another: the same matmul
    # FLOPs (4 passes over prefixes of k/4 of the response), a depth of the 4 passes' depths
    # in a row, so at least as long as the batched passes. Attention is costed at each
    # prefix's own length, not at their mean: a little more, since it grows with length.
    kw = {"reward": QWEN25_7B, "needs": Needs(needs_reference=False), "old_log_probs": False}
    batched = Scoring("process-reward-model", steps_per_response=4, per_prefix=True)
    chained = Scoring("process-reward-model", steps_per_response=4, per_prefix=True, chained=True)
    plan = one_plan(train_pp=2, train_gpus=8)
    a = evaluate(H100, QWEN25_7B, workload(), plan, scoring=batched, **kw)  # type: ignore[arg-type]
    b = evaluate(H100, QWEN25_7B, workload(), plan, scoring=chained, **kw)  # type: ignore[arg-type]
    sa, sb = a.stages["assessment"], b.stages["assessment"]
    assert sa.work_flop[0] <= sb.work_flop[0] <= 1.01 * sa.work_flop[0]
    assert sb.depth_seconds[0] > sa.depth_seconds[0]
    assert sb.seconds[0] >= sa.seconds[0] * (1 - 1e-9)


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        (
            ["workload.algorithm=vineppo", "models.reward=verifier"],
            "workload.search: VinePPO values each state of a response by 9 completions",
        ),
        (["workload.search={depth: 4}"], "(GRPO) has no default number of completions per state"),
        (
            ["workload.algorithm=dpo", "models.reward=none", "workload.samples_per_prompt=2",
             "workload.search={depth: 4}"],
            "is offline and generates nothing to search from",
        ),
        (
            ["workload.search={depth: 4, branching: 2}", "workload.agent={turns: 3}"],
            "a search from the states of a multi-turn episode is not modelled",
        ),
        (["workload.search={depth: 0, branching: 2}"], "workload.search.depth"),
        (
            ["workload.search={depth: 100000, branching: 2, sequential: true}"],
            "workload.search.depth: 100,000 is outside the supported range 1 to 1,024",
        ),
        (
            ["workload.search={depth: 2, branching: 5000}"],
            "workload.search.branching: 5,000 is outside the supported range 1 to 1,024",
        ),
        (
            ["models.reward={kind: process-reward-model, model: qwen2.5-1.5b, "
             "scoring: sequential, steps_per_response: 65536}"],
            "at most 1,024 steps_per_response, not 65,536",
        ),
        (
            ["models.reward={kind: process-reward-model, model: qwen2.5-1.5b, "
             "scoring: sequential}"],
            "scoring sequential needs steps_per_response",
        ),
    ],
)  # fmt: skip
def test_a_search_the_scenario_cannot_hold_is_one_clear_line(
    assignments: list[str], expected: str
) -> None:
    args = [a for assignment in assignments for a in ("--set", assignment)]
    code, out = invoke("recommend", SMALL, *args)
    assert_clean_bad_input(code, out, expected)


def test_estimate_costs_a_vineppo_search_on_the_rollout_engine() -> None:
    fixed = [a for pair in FIXED for a in ("--set", pair)]
    base = ["estimate", SMALL, *fixed, "--format", "json"]
    code, out = invoke(*base)
    assert code == 0, out
    vine = ["--set", "workload.algorithm=vineppo", "--set", "workload.search={depth: 4}"]
    code, searched_out = invoke(*base, *vine)
    assert code == 0, searched_out

    def stages(text: str) -> dict[str, float]:
        plan = json.loads(text)["plans"][0]
        return {s["name"]: s["seconds"] for s in plan["stages"]}

    plain, vine_stages = stages(out), stages(searched_out)
    # 36 completions per response decode after the responses: the rollout is longer; the
    # training pool's stages are GRPO's (VinePPO trains no critic either)
    assert vine_stages["rollout"] > 2 * plain["rollout"]
    assert vine_stages["training"] == pytest.approx(plain["training"], rel=0.2)
