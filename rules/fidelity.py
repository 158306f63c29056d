"""Calibration: the cost core's prediction for each published measurement with a setting.

A result's scenario fixes what the publication reports; the rest of the plan is searched and
the fastest plan's figure for the result's metric is the prediction. A deployment with a
published step time is costed as written (its plan is complete). Guidelines are not applied
and memory is not enforced: a published run is evidence that its layout ran, and the question
here is only how well the time is predicted (memory overflow is reported beside it). The
exception is a run whose batch was the largest that fit (Result.batch "largest-fitting"):
only memory says what that batch was, so it is found with memory enforced.

`leave_group_out` judges the fitted constants honestly: the cases of one source (one
publication, all its versions: a table's rows share their workload, cluster and framework, so
a constant fitted on one row predicts its neighbours) are predicted with the grid point that
fits every other source best, never with one chosen with them in view. Grouped by framework it
asks the harder question of a framework the constants never saw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, Overheads, for_framework
from rlmguide.kb.schema import Deployment, Result, Scenario
from rlmguide.kb.schema.records import Record
from rlmguide.rules.recommend import NoFeasiblePlan, Recommender
from rlmguide.rules.scenario import InputError, fill_plan_defaults, resolve

STAGE_OF_METRIC = {
    "rollout_seconds": "rollout",
    "assessment_seconds": "assessment",
    "training_seconds": "training",
    "weight_sync_seconds": "weight_sync",
}
MEASURABLE = {"step_seconds", "tokens_per_second", *STAGE_OF_METRIC}
VERSIONED = re.compile(r"-v\d+(\.\d+)*$")
"""A source id ending in a version (docs-nemo-rl-performance-summary-v0.5): one publication."""


def source_group(source: str) -> str:
    """The publication a source record belongs to: its versions are one source."""
    return VERSIONED.sub("", source)


RESPONSE_BANDS = (
    (2_048, "responses up to 2k tokens"),
    (8_192, "responses up to 8k tokens"),
    (32_768, "responses up to 32k tokens"),
    (math.inf, "responses over 32k tokens"),
)
"""Upper bounds (longest response, tokens) of the rollout-length bands figures are read by."""


@dataclass(frozen=True)
class Case:
    """A published figure with the setting to predict it from."""

    id: str
    kind: str
    """The record kind the figure comes from: result or deployment."""
    metric: str
    value: float
    unit: str
    scenario: Scenario
    complete: bool
    """The scenario fixes the whole plan (a deployment): cost it as written."""
    source: str
    """The source record of the figure (a deployment's step_source)."""
    framework: str
    """The framework that ran it ("none" for plain pre-training measurements)."""
    largest_fitting_batch: bool = False
    """The run used the largest per-GPU batch that fit, up to the scenario's (Result.batch)."""
    unordered_with: frozenset[str] = frozenset()
    """Figures of the same source this one is not ranked against (Result.unordered_with)."""

    @property
    def group(self) -> str:
        return source_group(self.source)

    @property
    def execution(self) -> str:
        """The execution mode the publication ran ("training" for a training-stage figure)."""
        if self.metric == "training_seconds":
            return "training"
        return self.scenario.plan.execution or "searched"

    @property
    def response_band(self) -> str:
        """The band of the longest response (the rollout's decode chain), so the figures can be
        read per rollout length as well as per execution mode (survey §7.12)."""
        work = self.scenario.workload
        longest = work.max_response_tokens or work.response_tokens
        for top, name in RESPONSE_BANDS:
            if longest <= top:
                return name
        return RESPONSE_BANDS[-1][1]


@dataclass(frozen=True)
class Comparison:
    result: Case
    predicted: float | None
    problem: str | None = None
    overflow_gib: float = 0.0
    stages: tuple[tuple[str, float], ...] = ()
    """The predicted plan's stage seconds (rollout, assessment, training, weight_sync, ...)
    and, last, the seconds its execution mode runs concurrently ("overlap"): where a published
    ordering is missed, which term carries the miss."""

    @property
    def ratio(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.result.value


def cases(catalog: dict[str, dict[str, Record]]) -> list[Case]:
    """Every result with a setting and a time metric, and every deployment with a published
    step time, by id."""
    found = [
        Case(
            r.id,
            "result",
            r.metric,
            r.value,
            r.unit,
            r.scenario,
            False,
            r.source,
            r.framework or "none",
            r.batch == "largest-fitting",
            frozenset(r.unordered_with),
        )
        for r in catalog["result"].values()
        if isinstance(r, Result) and r.scenario is not None and r.metric in MEASURABLE
    ]
    found += [
        Case(
            d.id,
            "deployment",
            "step_seconds",
            d.step_seconds,
            "s",
            d.scenario,
            True,
            d.step_source or d.source,
            d.framework,
        )
        for d in catalog.get("deployment", {}).values()
        if isinstance(d, Deployment) and d.step_seconds is not None
    ]
    return sorted(found, key=lambda c: c.id)


def predict(
    result: Case,
    catalog: dict[str, dict[str, Record]],
    overheads: Overheads = DEFAULT_OVERHEADS,
    *,
    own_constants: bool = True,
    batches: dict[tuple[str, bool], int] | None = None,
) -> Comparison:
    """The fastest plan's figure for the case's metric. With `own_constants` the constants the
    framework that ran it sets for itself apply (cost.overheads.for_framework: read from its
    code, not fitted); the physics is every plan's alike otherwise. `batches` keeps the largest
    fitting batch found per case (Result.batch "largest-fitting") for calls whose overheads
    differ only in the fitted constants (overheads.FITTED, latencies that leave memory alone),
    as the calibration grid's do."""
    try:

        def costed(scenario: Scenario, enforce_memory: bool = False) -> CostTable:
            resolved = resolve(scenario, catalog)
            if result.complete:
                resolved, _ = fill_plan_defaults(resolved)
            own = overheads
            if own_constants:
                own = for_framework(
                    overheads,
                    result.framework,
                    resolved.accelerator.capacity_gib,
                    resolved.accelerator_id,
                )
            recommender = Recommender(
                resolved, [], [], enforce_memory=enforce_memory, overheads=own
            )
            return recommender.run()[0]

        costs = None
        if result.largest_fitting_batch:
            key = (result.id, own_constants)
            known = None if batches is None else batches.get(key)
            if known is None:
                known, costs = largest_batch_that_fits(result.scenario, costed)
                if batches is not None:
                    batches[key] = known
            elif known:
                costs = costed(_at_batch(result.scenario, known), True)
        if costs is None:
            costs = costed(result.scenario)
        # The fastest candidate, not the ranking's pick: a tie broken toward the simpler plan
        # is a recommendation, while the prediction is the physics of the fields left open.
        plan = costs.row(int(np.argmin(costs.step_seconds)))
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
    stages = tuple((s["name"], s["seconds"]) for s in plan["stages"])
    stages += (("overlap", plan["overlap"]["seconds"]),)
    return Comparison(result, value, overflow_gib=overflow, stages=stages)


def _at_batch(scenario: Scenario, per_gpu: int) -> Scenario:
    """`scenario` with `per_gpu` prompts (and their samples) on every GPU, one micro-batch
    per GPU."""
    work, cluster = scenario.workload, scenario.cluster
    sequence = (work.samples_per_prompt or 1) * (work.prompt_tokens + work.response_tokens)
    train = scenario.plan.train.model_copy(update={"micro_batch_tokens": per_gpu * sequence})
    return scenario.model_copy(
        update={
            "workload": work.model_copy(
                update={"prompts_per_step": per_gpu * cluster.nodes * cluster.gpus_per_node}
            ),
            "plan": scenario.plan.model_copy(update={"train": train}),
        }
    )


def largest_batch_that_fits(
    scenario: Scenario, costed: Callable[[Scenario, bool], CostTable]
) -> tuple[int, CostTable | None]:
    """The largest batch of prompts per GPU (up to the scenario's prompts_per_step over the
    cluster) whose plans fit in memory, trained as one micro-batch per GPU (Result.batch
    "largest-fitting"), and its candidates; (0, None) when not even one prompt per GPU fits,
    and the stated batch is costed without memory then. Memory grows with the batch, so the
    largest fitting one is found by bisection."""
    cluster = scenario.cluster
    top = scenario.workload.prompts_per_step // (cluster.nodes * cluster.gpus_per_node)
    found: tuple[int, CostTable | None] = (0, None)
    low, high = 1, top
    while low <= high:
        mid = (low + high) // 2
        try:
            found, low = (mid, costed(_at_batch(scenario, mid), True)), mid + 1
        except NoFeasiblePlan:
            high = mid - 1
    return found


def calibration(
    catalog: dict[str, dict[str, Record]],
    overheads: Overheads = DEFAULT_OVERHEADS,
    batches: dict[tuple[str, bool], int] | None = None,
) -> list[Comparison]:
    return [predict(c, catalog, overheads, batches=batches) for c in cases(catalog)]


def leave_group_out(
    table: list[list[Comparison]], key: Callable[[Case], str] = lambda c: c.group
) -> tuple[list[Comparison], list[int]]:
    """`table[g][i]` is case i predicted at grid point g. The cases sharing a `key` (a source,
    by default) are predicted at the grid point with the lowest median error over the cases
    of every other key; returns those comparisons and the grid index chosen for each case.
    Grid points whose medians are equal (one case can be the median at several points, its
    prediction untouched by the constant that differs) are told apart by the mean error, so that
    the choice does not fall to the grid's order."""
    keys = [key(c.result) for c in table[0]]
    best: dict[str, int] = {}
    for k in set(keys):
        scores = [
            (
                median_abs_log_error(kept := [c for c, o in zip(row, keys, strict=True) if o != k]),
                mean_abs_log_error(kept),
            )
            for row in table
        ]
        best[k] = min(range(len(table)), key=lambda g: scores[g])
    chosen = [best[k] for k in keys]
    return [table[g][i] for i, g in enumerate(chosen)], chosen


def mean_abs_log_error(comparisons: Iterable[Comparison]) -> float:
    """mean |ln(predicted / reported)|: the tie-break between grid points of equal median error."""
    errors = [abs(math.log(c.ratio)) for c in comparisons if c.ratio]
    return sum(errors) / len(errors) if errors else math.nan


def median_abs_log_error(comparisons: Iterable[Comparison]) -> float:
    """exp(median |ln(predicted / reported)|): 1.35 means the typical case is within 1.35x."""
    errors = sorted(abs(math.log(c.ratio)) for c in comparisons if c.ratio)
    if not errors:
        return math.nan
    mid = len(errors) // 2
    median = errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2
    return math.exp(median)


@dataclass(frozen=True)
class Pair:
    """Two published figures of one model on one cluster and metric, from different plans:
    how far the predicted ratio between them is from the reported one."""

    first: Comparison
    second: Comparison

    @property
    def factor(self) -> float:
        """exp(|ln(predicted ratio / reported ratio)|): 1.2 means the model misjudges which of
        the two is faster, and by how much, by a factor of 1.2."""
        a, b = self.first, self.second
        predicted = a.predicted / b.predicted  # type: ignore[operator]
        reported = a.result.value / b.result.value
        return math.exp(abs(math.log(predicted / reported)))


def paired(comparisons: Iterable[Comparison]) -> list[Pair]:
    """Every pair of predicted published results (not deployments, which repeat results) of
    the same model and metric on one cluster in one source record whose plans differ: the
    evidence for how large a predicted difference between two plans of one cluster must be
    to be believed. One record is one software stack (a table's versions are not: a newer
    release speeds a plan up that the model costs alike), as the plans a search compares are."""
    scored = [c for c in comparisons if c.ratio and c.result.kind == "result"]
    pairs = []
    for i, a in enumerate(scored):
        for b in scored[i + 1 :]:
            sa, sb = a.result.scenario, b.result.scenario
            if (
                a.result.metric == b.result.metric
                and a.result.source == b.result.source
                and sa.models.policy == sb.models.policy
                and sa.cluster == sb.cluster
                and sa.plan != sb.plan
            ):
                pairs.append(Pair(a, b))
    return pairs


@dataclass(frozen=True)
class Ordering:
    """Two published figures of one model and metric in one source record (one version of a
    table) that the source itself says differ by more than the tie (more GPUs, another
    execution mode, another accelerator): `faster` was reported below `slower`."""

    faster: Comparison
    slower: Comparison

    @property
    def reproduced(self) -> bool:
        return self.faster.predicted < self.slower.predicted  # type: ignore[operator]

    @property
    def set_aside(self) -> bool:
        """Either record says the source cannot support this ordering (Result.unordered_with):
        it is listed, not scored."""
        a, b = self.faster.result, self.slower.result
        return a.id in b.unordered_with or b.id in a.unordered_with


def orderings(comparisons: Iterable[Comparison], tie: float) -> list[Ordering]:
    """Every published ordering (A faster than B for the same model in the same source record,
    by more than `tie` of the faster) among the predicted results, and whether the prediction
    keeps it. Figures of different models are not an ordering a source claims."""
    scored = [c for c in comparisons if c.ratio and c.result.kind == "result"]
    found = []
    for i, a in enumerate(scored):
        for b in scored[i + 1 :]:
            ra, rb = a.result, b.result
            if (ra.source, ra.metric, ra.scenario.models.policy) != (
                rb.source,
                rb.metric,
                rb.scenario.models.policy,
            ):
                continue
            fast, slow = (a, b) if a.result.value < b.result.value else (b, a)
            if slow.result.value > fast.result.value * (1 + tie):
                found.append(Ordering(fast, slow))
    return found


OVERLAPPING = frozenset({"one-step-off", "async"})
"""Execution modes whose rollout overlaps training (cost.compose)."""


@dataclass(frozen=True)
class ModePair:
    """A synchronous run and an overlapping one (one-step-off or async) of one model on one
    accelerator in one source record: the speed-up the source reports for overlapping, and the
    one predicted."""

    sync: Comparison
    overlapped: Comparison

    @property
    def reported(self) -> float:
        return self.sync.result.value / self.overlapped.result.value

    @property
    def predicted(self) -> float:
        return self.sync.predicted / self.overlapped.predicted  # type: ignore[operator]

    @property
    def equal_gpus(self) -> bool:
        a, b = self.sync.result.scenario.cluster, self.overlapped.result.scenario.cluster
        return a.nodes * a.gpus_per_node == b.nodes * b.gpus_per_node


def mode_pairs(comparisons: Iterable[Comparison]) -> list[ModePair]:
    """Every published pair of RL step times, one synchronous and one overlapping, of the same
    model on the same accelerator in one source record (one software stack), GPU counts equal
    or not: what the source says overlapping gains, to judge the pipeline the cost core
    composes (cost.compose) by."""
    scored = [
        c
        for c in comparisons
        if c.ratio and c.result.kind == "result" and c.result.metric == "step_seconds"
    ]
    syncs = [c for c in scored if c.result.execution == "sync"]
    overlapped = [c for c in scored if c.result.execution in OVERLAPPING]
    return [
        ModePair(s, o)
        for s in syncs
        for o in overlapped
        if s.result.source == o.result.source
        and s.result.scenario.models.policy == o.result.scenario.models.policy
        and s.result.scenario.cluster.accelerator == o.result.scenario.cluster.accelerator
    ]
