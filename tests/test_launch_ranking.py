"""The ranking's launch check: frameworks judged per batch of rows agree with one row at a
time, and plans every released runner's export refuses leave the ranking."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conftest import REPO
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.recommend import judges_of, recommend, recommender_for
from rlmguide.rules.scenario import read_scenario, resolve

from rlmguide.report import print_report

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
EXAMPLES = REPO / "examples"


def test_frameworks_of_a_batch_equal_those_of_each_row_alone() -> None:
    resolved = resolve(read_scenario(EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml"), CATALOG.records)
    recommender = recommender_for(resolved, CATALOG)
    costs, _ = recommender.run()
    rows = list(range(0, len(costs), max(1, len(costs) // 40)))
    together = recommender.frameworks_of(rows)
    alone = {}
    for row in rows:
        recommender._frameworks_of.clear()
        alone[row] = recommender.frameworks_of([row])[row]
    assert together == alone
    # the batch is not trivially uniform: the sampled rows differ in who runs them
    assert len({tuple(v) for v in together.values()}) > 1


def test_plans_every_mapped_runner_refuses_leave_the_ranking() -> None:
    """With a launch check that refuses every framework with a mapping, the plans shown are
    ones a released framework without a mapping runs (DeepSeek-V3 on 4,096 H800s has both)."""
    resolved = resolve(read_scenario(EXAMPLES / "grpo-deepseek-v3-4096xh800.yaml"), CATALOG.records)
    seen: list[int] = []

    def refuse_all(recommender: Any, row: int, plan: Any, framework: str) -> str:
        seen.append(row)
        return "refused by the test"

    recommender = recommender_for(resolved, CATALOG, launch_check=refuse_all)
    result = recommend(recommender, 3)
    mapped = recommender.mapped
    for plan in result["plans"]:
        assert plan["launchable_by"], plan["rank"]
        assert not mapped & set(plan["launchable_by"]), plan["launchable_by"]
    assert seen  # the check ran on the rows the ranking reached


def test_a_ranking_no_runner_launches_says_so_and_names_each_refusal(
    capsys: Any,
) -> None:
    """Where every released runner of the best plans refuses them at export and no mapped
    framework's own ranking gives a plan its export writes, the ranking still shows (the
    plans that fit, none launchable) and says why, each runner's refusal named. Every
    released framework counts as mapped here and the check refuses each: no setup in the
    knowledge base reaches this today (the last one, PPO of DeepSeek-V3 on 128 H100s, now
    refuses outright: test_launchable)."""
    resolved = resolve(read_scenario(EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml"), CATALOG.records)
    judges = judges_of(CATALOG)
    every = replace(judges, mapped=frozenset(f.id for f in judges.frameworks if f.released))

    def refuse_all(recommender: Any, row: int, plan: Any, framework: str) -> str:
        return f"{framework}'s export is refused by the test"

    result = recommend(recommender_for(resolved, CATALOG, every, launch_check=refuse_all), 2)
    said = result["no_launchable_plan"]
    best = result["plans"][0]
    assert said.startswith("no launchable plan: every runner of the best plan that fits")
    assert best["launch_refused_by"] and not best["launchable_by"]
    for framework, why in best["launch_refused_by"].items():
        assert why == f"{framework}'s export is refused by the test"
        assert f"{framework}: {why}" in said
    assert "no mapped framework's own ranking gives a plan its export writes" in said
    assert "ranked_for" not in result
    print_report(result, "table", timing=False)
    shown = " ".join(capsys.readouterr().out.split())
    assert "no launchable plan: every runner" in shown
