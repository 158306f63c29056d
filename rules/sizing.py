"""Choose the cluster size: search node counts, keep the time-cost frontier, pick one plan.

Each node count is its own recommendation (the same scenario on that many nodes); its top plan
is costed for the run (rules.runcost). The frontier holds the sizes no other size beats on both
time (run days, or step seconds without a run length) and cost (the run's price, or GPU-hours
without a price). `time` picks the fastest size within the budget, `cost` the cheapest within
the deadline; both are on the frontier, since a plan that beats them on both would meet the same
constraints and have been picked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlmguide.cost.plans import PlanError
from rlmguide.kb.load import Catalog
from rlmguide.rules.scenario import Resolved
from rlmguide.rules.search import powers_of_two

EXHAUSTIVE_UP_TO = 16
"""Every node count up to this many is searched; above it the powers of two and the maximum."""


SIZE_KEYS = (
    "step_seconds", "gpu_hours_per_step", "cost_per_step", "run_days", "run_gpu_hours",
    "run_cost", "energy_kwh", "currency",
)  # fmt: skip
"""What each searched size reports of its top plan."""


class SizingError(ValueError):
    """A constraint no searched size meets; the message says which binds and by how much."""


def node_counts(max_nodes: int) -> list[int]:
    """1..16, then the powers of two up to `max_nodes`, and `max_nodes` itself. For M <= N,
    the counts of M are among those of N whenever M is in this grid (M <= 16 or a power of
    two), so a larger maximum never raises the best time over them."""
    grid = set(range(1, min(max_nodes, EXHAUSTIVE_UP_TO) + 1)) | set(powers_of_two(max_nodes))
    return sorted(grid | {max_nodes})


@dataclass(frozen=True)
class Objective:
    name: str
    """`time` or `cost`."""
    deadline_days: float | None = None
    budget: float | None = None


def axes(plans: list[dict[str, Any]]) -> tuple[str, str]:
    """The time and cost keys plans can be compared on: run totals where the run's length
    is known, per-step ones otherwise; a price where every plan has one, GPU-hours otherwise
    (an unpriced part makes prices incomparable)."""
    run = plans[0].get("run_days") is not None
    time_key = "run_days" if run else "step_seconds"
    priced = all(plan.get("cost_per_step") is not None for plan in plans)
    cost_key = ("run_cost" if run else "cost_per_step") if priced else (
        "run_gpu_hours" if run else "gpu_hours_per_step"
    )  # fmt: skip
    return time_key, cost_key


def objective_axes(objective: Objective, time_key: str, cost_key: str) -> dict[str, Any]:
    """The objective and the axes its frontier is drawn on, as the JSON summaries give them."""
    return {
        "objective": objective.name,
        "deadline_days": objective.deadline_days,
        "budget": objective.budget,
        "time_axis": time_key,
        "cost_axis": cost_key,
    }


def frontier(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the non-dominated points (lower is better on both), fastest first; of equal
    points the first is kept."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1], i))
    kept: list[int] = []
    for i in order:
        if not kept or points[i][1] < points[kept[-1]][1]:
            kept.append(i)
    return kept


def _nodes(count: int) -> str:
    return f"{count} node" + ("" if count == 1 else "s")


def _choose(
    sizes: list[dict[str, Any]],
    objective: Objective,
    time_key: str,
    cost_key: str,
    label: Callable[[dict[str, Any]], str] = lambda s: _nodes(s["nodes"]),
    kind: str = "size",
) -> tuple[int, str]:
    """The chosen size's index and why; SizingError when the constraints exclude every size.
    `label` names a size and `kind` what is chosen (rules.mixed chooses among the parts of a
    mixed cluster with it)."""
    unit = "days" if time_key == "run_days" else "s per step"
    deadline, budget = objective.deadline_days, objective.budget
    if deadline is not None and time_key != "run_days":
        raise SizingError("a deadline needs the run's length (workload.steps or a budget)")
    fastest = min(range(len(sizes)), key=lambda i: (sizes[i][time_key], sizes[i][cost_key]))
    cheapest = min(range(len(sizes)), key=lambda i: (sizes[i][cost_key], sizes[i][time_key]))
    in_time = [i for i, s in enumerate(sizes) if deadline is None or s[time_key] <= deadline]
    in_budget = [i for i, s in enumerate(sizes) if budget is None or s[cost_key] <= budget]
    if not in_time:
        f = sizes[fastest]
        raise SizingError(
            f"the deadline binds: no searched {kind} finishes within {deadline:g} days; the "
            f"fastest ({label(f)}) takes {f[time_key]:.3g} {unit}"
        )
    if not in_budget:
        c = sizes[cheapest]
        raise SizingError(
            f"the budget binds: no searched {kind} costs at most {budget:g}; the cheapest "
            f"({label(c)}) costs {c[cost_key]:.4g}"
        )
    both = sorted(set(in_time) & set(in_budget))
    if not both:
        c = min(in_time, key=lambda i: sizes[i][cost_key])
        raise SizingError(
            f"the deadline and the budget bind together: within {deadline:g} days the "
            f"cheapest {kind} ({label(sizes[c])}) costs {sizes[c][cost_key]:.4g}, over "
            f"the budget of {budget:g}"
        )
    if objective.name == "time":
        pick = min(both, key=lambda i: (sizes[i][time_key], sizes[i][cost_key]))
        why = f"the fastest searched {kind} ({time_key})"
    else:
        pick = min(both, key=lambda i: (sizes[i][cost_key], sizes[i][time_key]))
        why = f"the cheapest searched {kind} ({cost_key})"
    limits = []
    if deadline is not None:
        limits.append(f"within {deadline:g} days")
    if budget is not None:
        limits.append(f"within the budget of {budget:g}")
    if limits:
        why = f"{why} {' and '.join(limits)}"
    other = cheapest if objective.name == "time" else fastest
    if other != pick:
        o = sizes[other]
        why += (
            f"; the {'cheapest' if objective.name == 'time' else 'fastest'} {kind} "
            f"({label(o)}) takes {o[time_key]:.3g} {unit} for {o[cost_key]:,.4g}"
        )
    return pick, why


def recommend_sizes(
    resolved: Resolved, catalog: Catalog, max_nodes: int, objective: Objective, top: int,
    **options: Any,
) -> dict[str, Any]:  # fmt: skip
    """The recommendation at the chosen node count, with its `sizing` summary."""
    from rlmguide.rules.recommend import NoFeasiblePlan, judges_of, recommend, recommender_for
    from rlmguide.rules.scenario import InputError, resolve

    judges = judges_of(catalog)

    def recommend_at(nodes: int) -> dict[str, Any]:
        s = resolved.scenario
        scenario = s.model_copy(update={"cluster": s.cluster.model_copy(update={"nodes": nodes})})
        try:
            at = resolve(scenario, catalog.records)
            return recommend(recommender_for(at, catalog, judges, **options), top)
        except (NoFeasiblePlan, InputError, PlanError) as exc:
            raise Unfit(str(exc)) from None

    result, summary = choose_size(recommend_at, max_nodes, objective)
    return {**result, "sizing": summary}


class Unfit(Exception):
    """No plan at one node count; that count is listed with the reason and skipped."""


def choose_size(
    recommend_at: Callable[[int], dict[str, Any]], max_nodes: int, objective: Objective
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Recommend at every searched node count (`recommend_at(nodes)` returns the
    recommendation JSON or raises `Unfit`), then choose. Returns the chosen count's
    recommendation and the `sizing` summary: searched counts, the sizes with their top plan's
    totals, the frontier, the chosen one and why."""
    started = time.perf_counter()
    counts = node_counts(max_nodes)
    results: dict[int, dict[str, Any]] = {}
    sizes: list[dict[str, Any]] = []
    infeasible: list[dict[str, Any]] = []
    for nodes in counts:
        try:
            result = recommend_at(nodes)
        except Unfit as exc:
            infeasible.append({"nodes": nodes, "reason": str(exc)})
            continue
        results[nodes] = result
        best = result["plans"][0]
        row = {"nodes": nodes, "gpus": best["gpus_billed"], "placement": best["placement"],
               "execution": best["execution"]}  # fmt: skip
        row.update({k: best.get(k) for k in SIZE_KEYS})
        sizes.append(row)
    if not sizes:
        raise SizingError(
            f"no feasible plan on any searched size ({', '.join(map(str, counts))} nodes); "
            f"at {max_nodes} nodes: {infeasible[-1]['reason']}"
        )
    time_key, cost_key = axes([results[sizes[0]["nodes"]]["plans"][0]])
    kept = frontier([(s[time_key], s[cost_key]) for s in sizes])
    pick, why = _choose(sizes, objective, time_key, cost_key)
    for i, s in enumerate(sizes):
        s["on_frontier"] = i in kept
        s["chosen"] = i == pick
    chosen = sizes[pick]
    summary = {
        **objective_axes(objective, time_key, cost_key),
        "searched_nodes": counts,
        "grid": f"every count 1..{max_nodes}"
        if max_nodes <= EXHAUSTIVE_UP_TO
        else f"every count 1..{EXHAUSTIVE_UP_TO}, then powers of two and {max_nodes}",
        "sizes": sizes,
        "frontier": [sizes[i] for i in kept],
        "chosen_nodes": chosen["nodes"],
        "why": why,
        "infeasible": infeasible,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return results[chosen["nodes"]], summary
