"""scenario -> facts -> candidate plans -> cost core -> rules -> ranked plans with explanations.

Disaggregated pools are independent until they are composed, so each pool size's layouts are
costed and judged once and only the fastest few per size are combined with every split and
execution mode. Colocated plans share GPUs, so their layouts are costed jointly.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cost.batch import Needs
from cost.evaluate import CostTable, evaluate
from cost.overheads import DEFAULT_OVERHEADS
from cost.plans import EXECUTIONS, PLACEMENTS, RECOMPUTE, PlanTable
from kb.schema import Framework
from rules.engine import CompiledRule
from rules.facts import STAGES, scenario_facts
from rules.scenario import Resolved
from rules.search import (
    Split,
    executions,
    prefix_caching_options,
    rollout_layouts,
    splits,
    train_layouts,
)

PREFER_WEIGHT = 0.02
"""Each preferred property a plan has is worth 2% of step time when ranking near-equal plans."""
SHORTLIST = 4
"""Layouts kept per disaggregated pool size for composition."""

EXECUTION_FEATURE = {
    "sync": "synchronous-execution",
    "one-step-off": "one-step-off-policy",
    "async": "asynchronous-execution",
    "partial-rollout": "partial-rollout",
}


class NoFeasiblePlan(Exception):
    """Every candidate was rejected; the message names the binding constraint and by how much."""


@dataclass
class Search:
    candidates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def feasible(self) -> int:
        return self.candidates - sum(self.rejected.values())


def _cost(resolved: Resolved, table: PlanTable) -> CostTable:
    s = resolved.scenario
    workload = s.workload.model_copy(
        update={
            "samples_per_prompt": resolved.samples_per_prompt,
            "max_response_tokens": resolved.max_response_tokens,
        }
    )
    return evaluate(
        resolved.accelerator,
        resolved.policy,
        workload,
        table,
        needs=Needs.of(resolved.algorithm),
        critic=resolved.critic,
        reward=resolved.reward,
        gpus_per_node=s.cluster.gpus_per_node,
        scale_out_gbps_per_gpu=s.cluster.scale_out_gbps_per_gpu,
        efficiency=s.efficiency,
        check=False,
    )


def plan_facts(table: PlanTable, costs: CostTable | None = None) -> dict[str, Any]:
    """The plan facts of every row of `table` (and the costed ones when `costs` is given)."""
    sync = table.execution == EXECUTIONS.index("sync")
    facts: dict[str, Any] = {
        "plan.placement": np.asarray(PLACEMENTS)[table.placement],
        "plan.execution": np.asarray(EXECUTIONS)[table.execution],
        "plan.max_staleness": np.where(sync, 0, table.staleness),
        "plan.prefix_caching": table.prefix_caching,
        "plan.train.recompute": np.asarray(RECOMPUTE)[table.train_recompute],
    }
    for pool in ("rollout", "train"):
        for degree in ("gpus", "tp", "pp", "ep", "dp", "cp", "zero"):
            column = getattr(table, f"{pool}_{degree}", None)
            if column is not None:
                facts[f"plan.{pool}.{degree}"] = column
    if costs is not None:
        facts["plan.step_seconds"] = costs.step_seconds
        facts["plan.memory.rollout_gib"] = costs.memory_rollout_gib
        facts["plan.memory.train_gib"] = costs.memory_train_gib
        total = np.maximum(sum(costs.stages[s].seconds for s in STAGES), 1e-12)
        for stage in STAGES:
            facts[f"plan.share.{stage}"] = costs.stages[stage].seconds / total
    return facts


def _table(rows: Mapping[str, Any]) -> PlanTable:
    return PlanTable.from_arrays(**rows)


def _reference_rollout_tp(gpus: int, per_node: int) -> int:
    tp = 1
    while tp * 2 <= min(gpus, per_node) and gpus % (tp * 2) == 0:
        tp *= 2
    return tp


class Recommender:
    def __init__(
        self,
        resolved: Resolved,
        rules: list[CompiledRule],
        frameworks: Iterable[Framework],
    ) -> None:
        self.resolved = resolved
        self.rules = rules
        self.frameworks = list(frameworks)
        self.facts = scenario_facts(resolved)
        self.usable_gib = resolved.accelerator.memory_gib * DEFAULT_OVERHEADS.usable_memory_fraction
        self.search = Search()
        self._least_overflow: dict[str, float] = {}
        self.level: dict[str, str] = {}
        for rule in rules:
            used = rule.applies.names | rule.condition.names
            pools = {
                n.split(".")[1] for n in used if n.startswith(("plan.rollout.", "plan.train."))
            }
            plan_wide = any(
                n.startswith("plan.") and not n.startswith(("plan.rollout.", "plan.train."))
                for n in used
            )
            if rule.record.effect == "require" and len(pools) == 1 and not plan_wide:
                self.level[rule.id] = pools.pop()
            else:
                self.level[rule.id] = "plan"

    # -- judging ---------------------------------------------------------------------------

    def _reject(
        self, env: Mapping[str, Any], size: int, level: str, weight: np.ndarray
    ) -> np.ndarray:
        """Rows that pass every require rule of `level`; rejections are counted, weighted by
        how many candidate plans each row stands for."""
        alive = np.ones(size, dtype=bool)
        for rule in self.rules:
            if rule.record.effect != "require" or self.level[rule.id] != level:
                continue
            hit = rule.fires(env, size) & alive
            if hit.any():
                self.search.rejected[rule.id] += int(weight[hit].sum())
                alive &= ~hit
        return alive

    def _env(self, table: PlanTable, costs: CostTable | None = None) -> dict[str, Any]:
        return {**self.facts, **plan_facts(table, costs)}

    # -- pools -----------------------------------------------------------------------------

    def _pool_shortlist(
        self, pool: str, size: int, other: int, weight_per_row: int
    ) -> tuple[dict[str, np.ndarray], int]:
        """The fastest feasible layouts of one disaggregated pool of `size` GPUs."""
        r = self.resolved
        per_node = r.scenario.cluster.gpus_per_node
        if pool == "rollout":
            layouts = rollout_layouts(r, size)
            n = len(layouts["tp"])
            rows = dict(
                placement=np.full(n, "disaggregated"),
                execution="sync",
                rollout_gpus=size,
                rollout_tp=layouts["tp"],
                rollout_pp=layouts["pp"],
                rollout_ep=layouts["ep"],
                train_gpus=other,
                train_tp=1,
                train_zero=3,
                train_recompute="full",
            )
        else:
            layouts = train_layouts(r, size)
            n = len(layouts["tp"])
            rows = dict(
                placement=np.full(n, "disaggregated"),
                execution="sync",
                rollout_gpus=other,
                rollout_tp=_reference_rollout_tp(other, per_node),
                train_gpus=size,
                train_tp=layouts["tp"],
                train_pp=layouts["pp"],
                train_cp=layouts["cp"],
                train_ep=layouts["ep"],
                train_zero=layouts["zero"],
                train_recompute=layouts["recompute"],
            )
        if n == 0:
            return layouts, 0
        table = _table(rows)
        weight = np.full(n, weight_per_row)
        alive = self._reject(self._env(table), n, pool, weight)
        if not alive.any():
            return {k: v[:0] for k, v in layouts.items()}, n
        costs = _cost(r, table)
        if pool == "rollout":
            seconds = costs.stages["rollout"].seconds
            memory = costs.memory_rollout_gib
        else:
            seconds = costs.stages["training"].seconds + costs.stages["preparation"].seconds
            memory = costs.memory_train_gib
        fits = memory <= self.usable_gib
        overflow = alive & ~fits
        self.search.rejected["memory"] += int(weight[overflow].sum())
        self._note_overflow(memory[alive] - self.usable_gib, pool)
        ok = np.flatnonzero(alive & fits)
        best = ok[np.argsort(seconds[ok], kind="stable")[:SHORTLIST]]
        return {k: v[best] for k, v in layouts.items()}, n

    def _note_overflow(self, excess: np.ndarray, pool: str) -> None:
        if excess.size:
            least = float(excess.min())
            current = self._least_overflow.get(pool)
            if current is None or least < current:
                self._least_overflow[pool] = least

    # -- candidates ------------------------------------------------------------------------

    def _colocated_rows(self, split: Split) -> list[dict[str, Any]]:
        r = self.resolved
        ro, tr = rollout_layouts(r, split.rollout_gpus), train_layouts(r, split.train_gpus)
        modes = executions("colocated", r.scenario.plan)
        prefixes = prefix_caching_options(r)
        nr, nt = len(ro["tp"]), len(tr["tp"])
        if not nr or not nt or not modes:
            return []
        ri, ti = np.meshgrid(np.arange(nr), np.arange(nt), indexing="ij")
        ri, ti = ri.ravel(), ti.ravel()
        out = []
        for (execution, staleness), prefix in ((m, p) for m in modes for p in prefixes):
            out.append(
                self._combine(
                    "colocated",
                    execution,
                    staleness,
                    prefix,
                    split,
                    {k: v[ri] for k, v in ro.items()},
                    {k: v[ti] for k, v in tr.items()},
                )
            )
        return out

    @staticmethod
    def _combine(
        placement: str,
        execution: str,
        staleness: int,
        prefix: bool,
        split: Split,
        ro: Mapping[str, np.ndarray],
        tr: Mapping[str, np.ndarray],
    ) -> dict[str, Any]:
        return dict(
            placement=np.full(len(ro["tp"]), placement),
            execution=execution,
            staleness=max(staleness, 1),
            prefix_caching=prefix,
            rollout_gpus=split.rollout_gpus,
            rollout_tp=ro["tp"],
            rollout_pp=ro["pp"],
            rollout_ep=ro["ep"],
            train_gpus=split.train_gpus,
            train_tp=tr["tp"],
            train_pp=tr["pp"],
            train_cp=tr["cp"],
            train_ep=tr["ep"],
            train_zero=tr["zero"],
            train_recompute=tr["recompute"],
        )

    def _disaggregated_rows(self, split: Split) -> list[dict[str, Any]]:
        r = self.resolved
        modes = executions("disaggregated", r.scenario.plan)
        prefixes = prefix_caching_options(r)
        per_layout = len(modes) * len(prefixes)
        n_train = len(train_layouts(r, split.train_gpus)["tp"])
        n_roll = len(rollout_layouts(r, split.rollout_gpus)["tp"])
        self.search.candidates += n_roll * n_train * per_layout
        ro, _ = self._pool_shortlist(
            "rollout", split.rollout_gpus, split.train_gpus, n_train * per_layout
        )
        if not len(ro["tp"]):
            return []
        tr, _ = self._pool_shortlist(
            "train", split.train_gpus, split.rollout_gpus, len(ro["tp"]) * per_layout
        )
        nr, nt = len(ro["tp"]), len(tr["tp"])
        # Layouts left out of the shortlists are feasible but slower: they stay counted as
        # feasible candidates, never as rejections.
        if not nt:
            return []
        ri, ti = np.meshgrid(np.arange(nr), np.arange(nt), indexing="ij")
        ri, ti = ri.ravel(), ti.ravel()
        return [
            self._combine(
                "disaggregated",
                execution,
                staleness,
                prefix,
                split,
                {k: v[ri] for k, v in ro.items()},
                {k: v[ti] for k, v in tr.items()},
            )
            for (execution, staleness) in modes
            for prefix in prefixes
        ]

    # -- the whole search ------------------------------------------------------------------

    def run(self) -> tuple[CostTable, dict[str, np.ndarray]]:
        start = time.perf_counter()
        n_scenario_rejects = self._scenario_rejection()
        rows: list[dict[str, Any]] = []
        colocated_rows = 0
        for split in splits(self.resolved):
            if split.placement == "colocated":
                produced = self._colocated_rows(split)
                colocated_rows += sum(len(p["placement"]) for p in produced)
            else:
                produced = self._disaggregated_rows(split)
            rows += produced
        self.search.candidates += colocated_rows
        if n_scenario_rejects is not None:
            self.search.rejected[n_scenario_rejects] += self.search.candidates - sum(
                self.search.rejected.values()
            )
            rows = []
        if not rows:
            self.search.seconds = time.perf_counter() - start
            raise NoFeasiblePlan(self._binding())
        merged = {
            k: np.concatenate(
                [np.broadcast_to(np.asarray(p[k]), (len(p["placement"]),)) for p in rows]
            )
            for k in rows[0]
        }
        table = _table(merged)
        n = len(table)
        colocated = table.placement == PLACEMENTS.index("colocated")
        env = self._env(table)
        alive = np.ones(n, dtype=bool)
        for level in ("rollout", "train"):
            # Disaggregated rows were judged per pool already; colocated ones are judged here.
            alive &= self._reject(env, n, level, colocated.astype(int)) | ~colocated
        keep = np.flatnonzero(alive)
        table = table.take(keep)
        costs = _cost(self.resolved, table)
        env = self._env(table, costs)
        n = len(table)
        alive = self._reject(env, n, "plan", np.ones(n, dtype=int))
        fits = costs.feasible
        colocated = table.placement == PLACEMENTS.index("colocated")
        self.search.rejected["memory"] += int((alive & ~fits & colocated).sum())
        # A disaggregated combination of two fitting pools can still overflow (weight-sync
        # buffers); it is rejected too but was never counted as a candidate of its own.
        self._note_overflow(costs.overflow_gib[alive & ~fits], "plan")
        ok = np.flatnonzero(alive & fits)
        self.search.seconds = time.perf_counter() - start
        if not ok.size:
            raise NoFeasiblePlan(self._binding())
        costs = costs.take(ok)
        fired = {
            rule.id: rule.fires({**self.facts, **plan_facts(costs.plans, costs)}, len(ok))
            for rule in self.rules
        }
        return costs, fired

    def _scenario_rejection(self) -> str | None:
        for rule in self.rules:
            if (
                rule.record.effect == "require"
                and rule.scenario_only
                and bool(np.all(rule.fires(self.facts, 1)))
            ):
                return rule.id
        return None

    def _binding(self) -> str:
        r = self.resolved
        if not self.search.rejected:
            return "no candidate plan fits the fixed plan fields of the scenario"
        reason, count = self.search.rejected.most_common(1)[0]
        if reason == "memory":
            state = self.facts["model.state_gib"]
            capacity = r.gpus * self.usable_gib
            smallest = math.ceil(state / self.usable_gib)
            over = min(self._least_overflow.values()) if self._least_overflow else float("nan")
            return (
                f"no plan fits in memory: the closest layout needs {over:.1f} GiB more per GPU "
                f"than the {self.usable_gib:.1f} GiB usable; the policy's weights, gradients and "
                f"Adam states alone need {state:,.0f} GiB, the cluster offers {r.gpus} x "
                f"{self.usable_gib:.1f} = {capacity:,.0f} GiB; smallest cluster that could hold "
                f"them: {smallest} GPUs"
            )
        rule = next(x for x in self.rules if x.id == reason)
        return (
            f"rule {reason} ({rule.record.title}) rejects {count} of "
            f"{self.search.candidates} candidates: {rule.record.statement}"
        )

    # -- output ----------------------------------------------------------------------------

    def frameworks_for(self, plan: Mapping[str, Any]) -> list[str]:
        needed: list[set[str]] = [
            {self.resolved.algorithm.id},
            {f"{plan['placement']}-placement"},
            {EXECUTION_FEATURE[plan["execution"]]},
        ]
        train, rollout = plan["train"], plan["rollout"]
        for key, feature in (
            ("tp", "tensor-parallelism"),
            ("pp", "pipeline-parallelism"),
            ("cp", "context-parallelism"),
            ("ep", "expert-parallelism"),
        ):
            if train[key] > 1:
                needed.append({feature})
        if rollout["tp"] > 1:
            needed.append({"rollout-tensor-parallelism"})
        if rollout["ep"] > 1:
            needed.append({"rollout-expert-parallelism"})
        if train["zero"] == 3:
            needed.append({"zero-3", "fsdp"})
        supported = []
        for fw in self.frameworks:
            claimed = {c.feature for c in fw.claims if c.support in ("yes", "partial")}
            if all(group & claimed for group in needed):
                supported.append(fw.id)
        return sorted(supported)


def rank(
    costs: CostTable, fired: Mapping[str, np.ndarray], rules: list[CompiledRule]
) -> np.ndarray:
    """Row order, best first: step time discounted by the prefer rules each plan satisfies."""
    prefers = [fired[r.id] for r in rules if r.record.effect == "prefer"]
    count = np.sum(prefers, axis=0) if prefers else np.zeros(len(costs))
    key = costs.step_seconds / (1.0 + PREFER_WEIGHT * count)
    return np.lexsort((costs.step_seconds, key))


def _move_notes(costs: CostTable, order: np.ndarray, best: int) -> list[str]:
    """What would change the answer: the bottleneck's share, and the best plan of each other
    placement and execution mode with its difference."""
    row = costs.row(best)
    stages = {s["name"]: s["seconds"] for s in row["stages"]}
    total = sum(stages.values()) or 1.0
    bottleneck = row["bottleneck"]
    notes = [
        f"{bottleneck} is {100 * stages[bottleneck] / total:.0f}% of the stage time "
        f"({stages[bottleneck]:.1f} s of {total:.1f} s summed over stages); "
        f"its bound is {next(s['bound'] for s in row['stages'] if s['name'] == bottleneck)}"
    ]
    step = row["step_seconds"]
    seen = {(row["placement"], row["execution"])}
    for i in order:
        other = costs.plans.row(int(i))
        key = (other["placement"], other["execution"])
        if key in seen:
            continue
        seen.add(key)
        alt = float(costs.step_seconds[i])
        change = 100 * (alt - step) / step
        notes.append(
            f"best {key[1]} {key[0]} plan (rollout {other['rollout']['gpus']} GPUs, train "
            f"{other['train']['gpus']} GPUs): {alt:.1f} s per step ({change:+.0f}%)"
        )
    return notes


def recommend(recommender: Recommender, top: int) -> dict[str, Any]:
    """Run the search and shape the result as DESIGN.md's JSON."""
    resolved = recommender.resolved
    costs, fired = recommender.run()
    order = rank(costs, fired, recommender.rules)
    by_id = {r.id: r for r in recommender.rules}
    plans = []
    for position, i in enumerate(order[:top], start=1):
        i = int(i)
        plan = costs.row(i)
        if plan["execution"] == "sync":
            plan["max_staleness"] = 0
        plan["rules"] = [
            {
                "id": rid,
                "effect": by_id[rid].record.effect,
                "title": by_id[rid].record.title,
                "statement": by_id[rid].record.statement,
                "sources": list(by_id[rid].record.sources),
            }
            for rid, hits in fired.items()
            if hits[i] and by_id[rid].record.effect != "require"
        ]
        plan["frameworks"] = recommender.frameworks_for(plan)
        plans.append({"rank": position, **plan})
    search = recommender.search
    return {
        "scenario": normalised(resolved),
        "search": {
            "candidates": search.candidates,
            "feasible": search.feasible,
            "seconds": round(search.seconds, 4),
        },
        "rejected": [{"reason": k, "count": v} for k, v in search.rejected.most_common()],
        "plans": plans,
        "notes": _move_notes(costs, order, int(order[0])),
    }


def normalised(resolved: Resolved) -> dict[str, Any]:
    """The scenario as understood: ids kept, defaults filled in."""
    data = resolved.scenario.model_dump(mode="json")
    data["workload"]["samples_per_prompt"] = resolved.samples_per_prompt
    data["workload"]["max_response_tokens"] = resolved.max_response_tokens
    if resolved.critic is not None and data["models"]["critic"] is None:
        data["models"]["critic"] = "same as policy"
    return data
