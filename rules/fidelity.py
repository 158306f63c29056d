"""Calibration: the cost core's prediction for each published measurement with a setting.

A result's scenario fixes what the publication reports; the rest of the plan is searched and
the fastest plan's figure for the result's metric is the prediction. Guidelines are not
applied and memory is not enforced: a published run is evidence that its layout ran, and the
question here is only how well the time is predicted (memory overflow is reported beside it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from kb.schema import Result
from kb.schema.records import Record
from rules.recommend import NoFeasiblePlan, Recommender, recommend
from rules.scenario import InputError, resolve

STAGE_OF_METRIC = {
    "rollout_seconds": "rollout",
    "preparation_seconds": "preparation",
    "training_seconds": "training",
    "weight_sync_seconds": "weight_sync",
}
MEASURABLE = {"step_seconds", "tokens_per_second", *STAGE_OF_METRIC}


@dataclass(frozen=True)
class Comparison:
    result: Result
    predicted: float | None
    problem: str | None = None
    overflow_gib: float = 0.0

    @property
    def ratio(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.result.value


def predict(result: Result, catalog: dict[str, dict[str, Record]]) -> Comparison:
    if result.scenario is None:
        return Comparison(result, None, "no setting recorded")
    try:
        recommender = Recommender(resolve(result.scenario, catalog), [], [], enforce_memory=False)
        plan = recommend(recommender, 1)["plans"][0]
    except (NoFeasiblePlan, InputError) as exc:
        return Comparison(result, None, str(exc).splitlines()[0])
    overflow = plan["overflow_gib"]
    if result.metric == "step_seconds":
        value = plan["step_seconds"]
    elif result.metric == "tokens_per_second":
        value = plan["tokens_per_second"]
    else:
        stage = STAGE_OF_METRIC[result.metric]
        value = next(s["seconds"] for s in plan["stages"] if s["name"] == stage)
    return Comparison(result, value, overflow_gib=overflow)


def calibration(catalog: dict[str, dict[str, Record]]) -> list[Comparison]:
    results = [
        r
        for r in catalog["result"].values()
        if isinstance(r, Result) and r.scenario is not None and r.metric in MEASURABLE
    ]
    return [predict(r, catalog) for r in sorted(results, key=lambda r: r.id)]


def median_abs_log_error(comparisons: Iterable[Comparison]) -> float:
    """exp(median |ln(predicted / reported)|): 1.35 means the typical case is within 1.35x."""
    errors = sorted(abs(math.log(c.ratio)) for c in comparisons if c.ratio)
    if not errors:
        return math.nan
    mid = len(errors) // 2
    median = errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2
    return math.exp(median)
