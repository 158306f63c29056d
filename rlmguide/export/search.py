"""The plan to export: the scenario's own when it fixes one, else the plan `rlmguide recommend
--framework ID` ranks first among those the mapping can launch.

The framework's claims and constraint records decide what it can run (the planner's
`--framework` restriction, rules.recommend `only=`), ranked with the planner's tie rule; the
mapping's launch (export.writer.Writer) refuses what it cannot write: an execution mode or
placement it has no entry point for, training backends and rollout engines it does not cover,
a fact no key writes, a start-up check the launch would trip. The plan written says its rank
in that ranking and which better-ranked plans the mapping could not launch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rlmguide.export.mapping import NotExpressible
from rlmguide.export.writer import Writer
from rlmguide.kb.load import Catalog
from rlmguide.rules.recommend import (
    Judges,
    NoFeasiblePlan,
    Recommender,
    recommend,
    recommender_for,
)
from rlmguide.rules.scenario import Resolved, fill_plan_defaults

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

    @property
    def rank(self) -> int:
        """The plan's rank in `rlmguide recommend --framework ID`."""
        return int(self.result["plans"][0]["rank"])


def _get(plan: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        plan = getattr(plan, part)
    return plan


def is_complete(resolved: Resolved) -> bool:
    plan = resolved.scenario.plan
    if any(_get(plan, name) is None for name in COMPLETE):
        return False
    return plan.placement != "disaggregated" or None not in (plan.rollout.gpus, plan.train.gpus)


def _offload_open(resolved: Resolved) -> Resolved:
    plan = resolved.scenario.plan
    train = plan.train.model_copy(update={"offload": None})
    scenario = resolved.scenario.model_copy(
        update={"plan": plan.model_copy(update={"train": train})}
    )
    return replace(resolved, scenario=scenario)


def _refused_mode(recommender: Recommender, framework: str, plan: Any) -> str:
    """The framework's constraint records that refuse the execution and placement the scenario
    fixes, for its workload, where one does (its code refusing the mode says why the mapping
    has no launch, or why no plan of that mode runs: SkyRL's fully async trainer and several
    mini-batches a step)."""
    given = {"plan.execution": plan.execution, "plan.placement": plan.placement}
    env = {
        name: np.array([value])
        for name, value in {**recommender.facts, **given}.items()
        if value is not None  # a mode the scenario leaves open refuses nothing yet
    }
    refusing = dict.fromkeys(  # once each: a component's constraint is inherited per backend
        c.id
        for support in recommender.supports
        if support.id == framework
        for c in support.constraints
        if c.names <= env.keys() and not c.holds(env, 1)[0]
    )
    return f" (constraint {', '.join(refusing)})" if refusing else ""


def find_plan(
    resolved: Resolved,
    catalog: Catalog,
    framework: str,
    writer: Writer,
    judges: Judges | None = None,
) -> Found:
    """The best-ranked plan of `recommend --framework` that `writer`'s launch of the framework
    writes (Writer.refusal, the predicate `recommend`'s launchable_by uses); NotExpressible
    says why there is none. A plan the scenario fixes completely is exported as written, even
    where the cost model predicts it does not fit (as `estimate` costs it). `judges` are the
    catalog's compiled rules and constraints (rules.recommend.judges_of), where a caller
    exports many scenarios: compiling them is most of a fixed plan's export."""
    mapping = writer.mappings[framework]
    plan = resolved.scenario.plan
    launches = sorted({(x.execution, x.placement) for x in mapping.launches})
    launchable = any(
        plan.execution in (None, execution) and plan.placement in (None, placement)
        for execution, placement in launches
    )
    complete = is_complete(resolved)
    one = fill_plan_defaults(resolved)[0] if complete else resolved
    if complete and resolved.scenario.plan.train.offload is None:
        # Offload left out stays the search's (none or phase offload on shared GPUs): a
        # framework whose code always parks its colocated trainer runs only the latter.
        one = _offload_open(one)
    refused = ""  # the constraints that refuse the mode the scenario fixes, if any
    try:
        recommender = recommender_for(
            one,
            catalog,
            judges,
            only=framework,
            enforce_memory=not complete,
            **mapping.costing(),
            versions={framework: mapping.id},
            # the ranking `recommend --framework` shows: plans this launch refuses leave it
            # before a tie picks its simpler plan among those left (rules.recommend)
            launch_check=writer.refusal,
        )
        refused = _refused_mode(recommender, framework, plan)
        if not launchable:
            known = ", ".join(f"{e} {p}" for e, p in launches)
            raise NotExpressible(
                f"{framework} ({mapping.id}) has no entry point for "
                f"{plan.execution or 'any'} execution on {plan.placement or 'any'} placement; "
                f"it launches: {known}{refused}"
            )

        def refuses(row: int, costed: dict[str, Any]) -> str | None:
            return writer.refusal(recommender, row, costed, framework)

        result = recommend(recommender, 1, first=refuses)
    except NoFeasiblePlan as exc:
        raise NotExpressible(f"{framework} cannot run this scenario: {exc}{refused}") from None
    return Found(recommender, result)
