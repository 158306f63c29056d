"""The plan to export: the scenario's own when it fixes one, else the best plan the framework
can run with one of the launches its mapping knows.

The framework's claims and constraint records decide what it can run (the planner's
`--framework` restriction, rules.recommend `only=`); the mapping adds only which execution
modes and placements it has an entry point for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlmguide.export.mapping import NotExpressible
from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.rules.recommend import NoFeasiblePlan, Recommender, recommend, recommender_for
from rlmguide.rules.scenario import Resolved, fill_plan_defaults, resolve

COMPLETE = ("placement", "execution", "rollout.tp", "train.tp", "train.zero", "train.recompute")
"""The plan fields that make a scenario's plan complete (as `estimate` requires)."""


@dataclass(frozen=True)
class Found:
    """The chosen plan: its row in the recommender's result and the result itself."""

    recommender: Recommender
    result: dict[str, Any]

    @property
    def row(self) -> int:
        return self.recommender.ranked_rows[0]

    @property
    def plan(self) -> dict[str, Any]:
        return dict(self.result["plans"][0])


def _get(plan: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        plan = getattr(plan, part)
    return plan


def is_complete(resolved: Resolved) -> bool:
    plan = resolved.scenario.plan
    if any(_get(plan, name) is None for name in COMPLETE):
        return False
    return plan.placement != "disaggregated" or None not in (plan.rollout.gpus, plan.train.gpus)


def find_plan(
    resolved: Resolved, catalog: Catalog, framework: str, mapping: MappingRecord
) -> Found:
    """The top plan `framework` can run on the backends and engines `mapping` covers and with
    one of its launches; NotExpressible names why there is none (the binding constraint of
    each launch tried). A plan the scenario fixes completely is exported as written, even
    where the cost model predicts it does not fit (as `estimate` costs it)."""
    plan = resolved.scenario.plan
    launches = sorted({(x.execution, x.placement) for x in mapping.launches})
    wanted = [
        (execution, placement)
        for execution, placement in launches
        if plan.execution in (None, execution) and plan.placement in (None, placement)
    ]
    if not wanted:
        known = ", ".join(f"{e} {p}" for e, p in launches)
        raise NotExpressible(
            f"{framework} ({mapping.id}) has no entry point for "
            f"{plan.execution or 'any'} execution on {plan.placement or 'any'} placement; "
            f"it launches: {known}"
        )
    complete = is_complete(resolved)
    found: list[Found] = []
    refusals: list[str] = []
    for execution, placement in wanted:
        fixed = plan.model_copy(update={"execution": execution, "placement": placement})
        scenario = resolved.scenario.model_copy(update={"plan": fixed})
        one = resolve(scenario, catalog.records)
        if complete:
            one, _ = fill_plan_defaults(one)
        try:
            recommender = recommender_for(
                one,
                catalog,
                only=framework,
                within=mapping.components,
                enforce_memory=not complete,
            )
            result = recommend(recommender, 1)
        except NoFeasiblePlan as exc:
            refusals.append(f"{execution} {placement}: {exc}")
            continue
        found.append(Found(recommender, result))
    if not found:
        raise NotExpressible(f"{framework} cannot run this scenario: " + "; ".join(refusals))
    return min(found, key=lambda f: f.plan["step_seconds"])
