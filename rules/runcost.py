"""Run totals on every plan: GPU-hours, days, price and energy of the whole run.

The cost core prices one steady-state step; this module supplies the run's length, the run
terms (scenario `run:` overrides over `cost.run.RunTerms`), the price (the cluster's, else the
accelerator record's cited public price, labelled as a default) and the power per GPU, and
re-costs the ranked plans at the length schedule's response lengths.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.plans import PlanTable
from rlmguide.cost.run import (
    ASSUMED,
    DEFAULT_RUN_TERMS,
    SECONDS_PER_DAY,
    RunTerms,
    energy_kwh,
    gpu_hours,
    length_schedule,
    mean_length,
    run_time,
)
from rlmguide.rules.scenario import Resolved

TERM_SOURCES = {
    "checkpoint_bytes_per_param": "arxiv-1910.02054",
    "failures_per_gpu_hour": "arxiv-2407.21783",
}
"""The run terms whose defaults are read from a source; the others are in cost.run.ASSUMED."""

DEFAULT_CURRENCY = "USD"


def run_terms(resolved: Resolved) -> RunTerms:
    """The scenario's `run:` overrides over the defaults."""
    given = resolved.scenario.run.model_dump(exclude_none=True)
    if "storage_gbytes_per_s_per_node" in given:
        given["storage_bytes_per_s_per_node"] = given.pop("storage_gbytes_per_s_per_node") * 1e9
    return replace(DEFAULT_RUN_TERMS, **given)


def price(resolved: Resolved) -> dict[str, Any] | None:
    """The price of a GPU-hour and where it comes from; None when none is known."""
    cluster = resolved.scenario.cluster
    listed = getattr(resolved.accelerator, "price", None)
    if cluster.price_per_gpu_hour is not None:
        currency = cluster.currency or (listed.currency if listed else DEFAULT_CURRENCY)
        return {"per_gpu_hour": cluster.price_per_gpu_hour, "currency": currency,
                "default": False, "origin": "cluster.price_per_gpu_hour"}  # fmt: skip
    if listed is None:
        return None
    return {
        "per_gpu_hour": listed.per_gpu_hour,
        "currency": listed.currency,
        "default": True,
        "origin": f"default: public on-demand price of {resolved.accelerator_id} "
        f"({listed.offering.split(',')[0]}, as of {listed.as_of or listed.checked})",
        "source": listed.source,
    }


@dataclass(frozen=True)
class BilledPart:
    """GPUs billed together at one price: a whole single-accelerator cluster, or one part of
    a mixed cluster that a plan uses."""

    name: str | None
    gpus: int
    rate: dict[str, Any] | None
    """`price(...)` of the part: per GPU-hour, currency and origin; None when unknown."""
    watts: float | None


def billed_part(resolved: Resolved, name: str | None = None) -> BilledPart:
    """The cluster of `resolved` as one billed part, at its price and power per GPU."""
    cluster = resolved.scenario.cluster
    watts = cluster.watts_per_gpu or resolved.accelerator.tdp_watts
    return BilledPart(name, cluster.gpus, price(resolved), watts)


def blended_rate(parts: list[BilledPart]) -> dict[str, Any] | None:
    """The price of one GPU-hour across the billed parts (their GPU-weighted mean), or None
    when some part has no known price: a bill with an unpriced part has no total."""
    if len(parts) == 1:
        return parts[0].rate
    if any(p.rate is None for p in parts):
        return None
    gpus = sum(p.gpus for p in parts)
    per_hour = sum(p.gpus * p.rate["per_gpu_hour"] for p in parts) / gpus  # type: ignore[index]
    shown = ", ".join(
        f"{p.name} {p.gpus} GPUs at {p.rate['per_gpu_hour']:g} ({p.rate['origin']})"  # type: ignore[index]
        for p in parts
    )
    return {
        "per_gpu_hour": per_hour,
        "currency": parts[0].rate["currency"],  # type: ignore[index]
        "default": any(p.rate["default"] for p in parts),  # type: ignore[index]
        "origin": f"GPU-weighted mean over the parts: {shown}",
    }


def run_steps(resolved: Resolved, terms: RunTerms) -> int | None:
    """RL steps of the run: given, or from a sample or token budget."""
    w = resolved.scenario.workload
    per_step = w.prompts_per_step * resolved.samples_per_prompt
    if w.steps is not None:
        return w.steps
    if w.trained_samples is not None:
        return math.ceil(w.trained_samples / per_step)
    if w.trained_tokens is not None:
        mean = mean_length(
            w.response_tokens,
            terms.response_growth,
            resolved.max_response_tokens,
            w.reasoning_budget,
        )
        return math.ceil(w.trained_tokens / (per_step * (w.prompt_tokens + mean)))
    return None


def _at_length(resolved: Resolved, tokens: float) -> Resolved:
    workload = resolved.scenario.workload.model_copy(update={"response_tokens": round(tokens)})
    return replace(resolved, scenario=resolved.scenario.model_copy(update={"workload": workload}))


Recost = Callable[[Resolved, PlanTable], CostTable]
"""Costs a plan table for a (re-lengthed) scenario, as the recommender costs its candidates."""


def _schedule_means(
    resolved: Resolved, costs: CostTable, rows: list[int], terms: RunTerms, recost: Recost
) -> tuple[np.ndarray, np.ndarray]:
    """Mean step and rollout seconds of `rows` over the run's length schedule."""
    w = resolved.scenario.workload
    lengths, weights = length_schedule(
        w.response_tokens, terms.response_growth, resolved.max_response_tokens
    )
    if len(lengths) == 1:
        return costs.step_seconds[rows], costs.stages["rollout"].seconds[rows]
    table = costs.plans.take(np.asarray(rows))
    step, rollout = np.zeros(len(rows)), np.zeros(len(rows))
    for tokens, weight in zip(lengths, weights, strict=True):
        at = recost(_at_length(resolved, tokens), table)
        step += weight * at.step_seconds
        rollout += weight * at.stages["rollout"].seconds
    return step, rollout


def add_run_totals(
    resolved: Resolved,
    costs: CostTable,
    rows: list[int],
    plans: list[dict[str, Any]],
    recost: Recost,
    parts: list[BilledPart] | None = None,
) -> dict[str, Any]:
    """Add the per-step and run totals to each plan (plans[k] is costs row rows[k]; `recost`
    prices the rows at the length schedule's other lengths); return what the totals assumed:
    steps, terms with their source or `assumption`, price, power. `parts` are the GPUs
    billed, each at its own price (default: the whole cluster at its price); with more than
    one, each plan lists its `billing` per part."""
    cluster = resolved.scenario.cluster
    terms = run_terms(resolved)
    steps = run_steps(resolved, terms)
    parts = parts or [billed_part(resolved)]
    rate = blended_rate(parts)
    per_hour = rate["per_gpu_hour"] if rate else None
    gpus = sum(p.gpus for p in parts)
    # Energy is linear in GPU-hours, so a mixed bill's power per GPU is the GPU-weighted mean.
    known = all(p.watts for p in parts)
    watts = sum(p.gpus * p.watts for p in parts) / gpus if known else None  # type: ignore[operator]
    params = resolved.policy.params_total + (resolved.critic.params_total if resolved.critic else 0)
    means = _schedule_means(resolved, costs, rows, terms, recost) if steps and rows else None
    for k, (row, plan) in enumerate(zip(rows, plans, strict=True)):
        per_step = float(gpu_hours(gpus, float(costs.step_seconds[row])))
        plan["gpus_billed"] = gpus
        plan["gpu_hours_per_step"] = per_step
        plan["cost_per_step"] = per_step * per_hour if per_hour else None
        plan["currency"] = rate["currency"] if rate else None
        plan["energy_kwh_per_step"] = (
            float(energy_kwh(per_step, watts, terms.pue)) if watts else None
        )
        totals: dict[str, Any] = dict.fromkeys(
            ("run_steps", "run_step_seconds", "run_gpu_hours", "run_days", "run_cost",
             "energy_kwh", "run_seconds_terms")
        )  # fmt: skip
        if steps and means is not None:
            train_nodes = math.ceil(plan["train"]["gpus"] / cluster.gpus_per_node)
            t = run_time(steps, float(means[0][k]), float(means[1][k]), gpus, train_nodes,
                         params, terms)  # fmt: skip
            seconds = float(t.total)
            hours = float(gpu_hours(gpus, seconds))
            totals.update(
                run_steps=steps,
                run_step_seconds=float(means[0][k]),
                run_gpu_hours=hours,
                run_days=seconds / SECONDS_PER_DAY,
                run_cost=hours * per_hour if per_hour else None,
                energy_kwh=float(energy_kwh(hours, watts, terms.pue)) if watts else None,
                run_seconds_terms={
                    "steps": float(t.steps),
                    "oversampling": float(t.oversampling),
                    "checkpoints": float(t.checkpoints),
                    "evaluation": float(t.evaluation),
                    "startup": float(t.startup),
                    "failures": float(t.failures),
                    "expected_failures": float(t.expected_failures),
                },
            )
        plan.update(totals)
        if len(parts) > 1 or parts[0].name is not None:
            plan["billing"] = _billing(parts, per_step / gpus, totals["run_gpu_hours"], gpus)
    given = resolved.scenario.run.model_dump(exclude_none=True)
    return {
        "steps": steps,
        "gpus_billed": gpus,
        "price": rate,
        "watts_per_gpu": watts,
        "watts_origin": "cluster.watts_per_gpu"
        if cluster.watts_per_gpu and len(parts) == 1
        else "accelerator TDP (GPU only; hosts and network excluded)"
        + (", GPU-weighted over the parts" if len(parts) > 1 else ""),
        "terms": {
            name: {
                "value": getattr(terms, name),
                "origin": "scenario run:"
                if name in given
                or (
                    name == "storage_bytes_per_s_per_node"
                    and "storage_gbytes_per_s_per_node" in given
                )
                else ("assumption" if name in ASSUMED else TERM_SOURCES[name]),
            }
            for name in (f.name for f in fields(terms))
        },
    }


def _billing(
    parts: list[BilledPart], step_hours: float, run_gpu_hours: float | None, gpus: int
) -> list[dict[str, Any]]:
    """Each part's GPU-hours and cost per step and per run: its GPUs are held for the whole
    step and run, busy or waiting for the other part."""
    rows = []
    for part in parts:
        per_hour = part.rate["per_gpu_hour"] if part.rate else None
        hours = part.gpus * step_hours
        run_hours = run_gpu_hours * part.gpus / gpus if run_gpu_hours is not None else None
        rows.append(
            {
                "part": part.name,
                "gpus": part.gpus,
                "price_per_gpu_hour": per_hour,
                "currency": part.rate["currency"] if part.rate else None,
                "price_origin": part.rate["origin"] if part.rate else None,
                "gpu_hours_per_step": hours,
                "cost_per_step": hours * per_hour if per_hour else None,
                "run_gpu_hours": run_hours,
                "run_cost": run_hours * per_hour if per_hour and run_hours is not None else None,
            }
        )
    return rows
