"""Does a rule fire on a scenario? The judge of every rule's example cases.

A rule fires on a scenario when it fires on at least one candidate plan: a `require` rule
when it rejects a candidate, a `prefer` or `advise` rule when a feasible plan satisfies it.
"""

from __future__ import annotations

from collections.abc import Iterable

from rlmguide.kb.schema import Framework, Scenario
from rlmguide.kb.schema.records import Record
from rlmguide.rules.engine import CompiledRule
from rlmguide.rules.recommend import NoFeasiblePlan, Recommender
from rlmguide.rules.scenario import resolve


def fires_on(
    rule: CompiledRule,
    scenario: Scenario,
    catalog: dict[str, dict[str, Record]],
    rules: list[CompiledRule],
    frameworks: Iterable[Framework] = (),
) -> bool:
    recommender = Recommender(resolve(scenario, catalog), rules, frameworks)
    try:
        _, fired = recommender.run()
    except NoFeasiblePlan:
        return rule.record.effect == "require" and recommender.search.rejected[rule.id] > 0
    if rule.record.effect == "require":
        return recommender.search.rejected[rule.id] > 0
    # Rules about generation are left out of offline scenarios (Recommender): they never fire.
    return rule.id in fired and bool(fired[rule.id].any())
