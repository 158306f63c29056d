"""Mixed accelerators: plans on each part of a mixed cluster and across two parts.

A mixed cluster (`cluster.parts`) lists nodes of different accelerators, each part with its
price, and the link between the parts. The options searched are:

- every part alone: the ordinary search (colocated and disaggregated plans) on that part's
  accelerator, billed at that part's price;
- every ordered pair of parts: rollout on the whole of one part and training on the whole of
  the other (disaggregated; a colocated plan shares its GPUs, so it needs one part). Memory
  and speed of each pool are checked with its own part's accelerator (cost.mixed), weight sync
  crosses the link between the parts (staged through host memory or over RDMA where the
  vendors differ), old log-probs are recomputed on the trainer (the rollout engine runs other
  kernels on other hardware, so its log-probs are not the trainer's), and both parts are
  billed, each at its price.

StreamRL (arXiv:2504.15930) and HetRL (arXiv:2512.12476) run RL this way, with generation on
one kind of GPU and training on another. Each option's top plan is costed per part; the
options' time-cost frontier is kept and the objective picks one (rules.sizing's chooser).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from itertools import permutations
from typing import Any

from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.mixed import across, link_gbps
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.plans import PlanError, PlanTable
from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Cluster, ClusterPart, Scenario, Workload
from rlmguide.rules.facts import scenario_facts
from rlmguide.rules.recommend import (
    NoFeasiblePlan,
    Recommender,
    _cost,
    judges_of,
    normalised,
    recommend,
    recommender_for,
)
from rlmguide.rules.runcost import BilledPart, billed_part, run_steps, run_terms
from rlmguide.rules.scenario import InputError, Resolved, assumed_host_memory_note, resolve
from rlmguide.rules.search import Split
from rlmguide.rules.sizing import (
    SIZE_KEYS,
    Objective,
    SizingError,
    _choose,
    axes,
    frontier,
    objective_axes,
)

SOURCES = {
    "cross_part_plans": ["arxiv-2504.15930", "arxiv-2512.12476"],
    "cross_vendor_sync": ["arxiv-2601.22585"],
}
"""Where the cross-part design and the cross-vendor transport come from."""


@dataclass(frozen=True)
class Part:
    name: str
    resolved: Resolved
    """The scenario on this part alone."""
    vendor: str | None
    """The accelerator record's vendor (None for an inline accelerator)."""
    network_gbps: float
    """The part's own network per GPU."""
    host_gbytes_per_s: float
    """The part's host-to-GPU copy rate per GPU."""

    @property
    def gpus(self) -> int:
        return self.resolved.scenario.cluster.gpus

    def assumed_host_memory(self) -> str | None:
        """The part's note where its host memory is assumed (neither the part nor its
        accelerator record gives one), named by the part; None else."""
        r = self.resolved
        note = assumed_host_memory_note(r.scenario.cluster, r.accelerator, r.accelerator_id)
        return f"part {self.name}: {note}" if note else None


@dataclass(frozen=True)
class MixedResolved:
    """A mixed-cluster scenario: its parts, each resolved alone, and the link between them."""

    scenario: Scenario
    parts: tuple[Part, ...]
    link_gbps: float
    """Gbit/s per GPU between two parts (given, or the slower part's network)."""
    link_origin: str
    unavailable: tuple[tuple[str, str], ...] = ()
    """Parts whose scenario does not resolve alone (a fixed field beyond its GPUs), and why."""


def part_cluster(part: ClusterPart) -> Cluster:
    """A part as a single-accelerator cluster, with only the fields the part gives set."""
    given = {name: getattr(part, name) for name in part.model_fields_set if name != "name"}
    return Cluster.model_validate(given)


def resolve_mixed(scenario: Scenario, catalog: Catalog) -> MixedResolved:
    """Resolve every part of a mixed cluster as its own scenario; an `InputError` names the
    part and field that are wrong."""
    cluster = scenario.cluster
    assert cluster.parts is not None
    if scenario.plan.pools.total:
        raise InputError(
            "plan.pools: models on pools of their own are not planned on a mixed cluster; "
            "remove plan.pools, or plan one part alone"
        )
    parts: list[Part] = []
    unavailable: list[tuple[str, str]] = []
    first_error: str | None = None
    for i, given in enumerate(cluster.parts):
        alone = scenario.model_copy(update={"cluster": part_cluster(given)})
        try:
            resolved = resolve(alone, catalog.records)
        except InputError as exc:
            where = f"cluster.parts[{i}] ({given.name})"
            if str(exc).startswith("cluster."):
                raise InputError(f"{where}: {str(exc).removeprefix('cluster.')}") from None
            # A fixed plan field this part cannot host leaves the other parts searchable.
            unavailable.append((given.name, str(exc)))
            first_error = first_error or f"{where}: {exc}"
            continue
        accelerator = resolved.accelerator
        hw_network = (
            resolved.scenario.cluster.scale_out_gbps_per_gpu
            or accelerator.scale_out_gbits_per_s
            or DEFAULT_OVERHEADS.fallback_scale_out_gbits_per_s
        )
        host = (
            resolved.scenario.cluster.host_link_gbytes_per_s
            or accelerator.host_link_gbytes_per_s
            or DEFAULT_OVERHEADS.host_bytes_per_s / 1e9
        )
        parts.append(
            Part(given.name, resolved, getattr(accelerator, "vendor", None), hw_network, host)
        )
    if not parts:
        raise InputError(first_error or "cluster.parts: no part resolves")
    if cluster.link_gbps_between_parts is not None:
        link, origin = cluster.link_gbps_between_parts, "cluster.link_gbps_between_parts"
    else:
        link = min(p.network_gbps for p in parts)
        origin = "default: the slower part's network per GPU (link_gbps_between_parts unset)"
    return MixedResolved(scenario, tuple(parts), link, origin, tuple(unavailable))


def _with_workload(resolved: Resolved, workload: Workload) -> Resolved:
    return replace(resolved, scenario=resolved.scenario.model_copy(update={"workload": workload}))


class PartRecommender(Recommender):
    """The ordinary search on one part, billed as that part."""

    def __init__(self, part: Part, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.part = part

    def billed(self) -> list[BilledPart]:
        return [billed_part(self.part.resolved, self.part.name)]


@dataclass(frozen=True)
class Crossing:
    """Rollout on one part, training on another, and how weights cross between them."""

    rollout: Part
    train: Part
    link_gbps: float
    """The rate per GPU the weight sync gets (cost.mixed.link_gbps)."""
    transport: str
    """`nccl` (one vendor), `host-staged` or `rdma` (between vendors)."""


def crossing(mixed: MixedResolved, rollout: Part, train: Part) -> Crossing:
    same = rollout.vendor is not None and rollout.vendor == train.vendor
    staged = mixed.scenario.cluster.cross_vendor_sync == "host-staged"
    rate = link_gbps(
        mixed.link_gbps, same, staged, (train.host_gbytes_per_s, rollout.host_gbytes_per_s)
    )
    transport = "nccl" if same else mixed.scenario.cluster.cross_vendor_sync
    return Crossing(rollout, train, rate, transport)


def crossing_resolved(cross: Crossing) -> Resolved:
    """The scenario the search judges cross-part plans by: the training part's (its rules,
    facts and fixed fields), with room for the rollout part's GPUs beside its own, and old
    log-probs recomputed on the trainer."""
    base = cross.train.resolved
    s = base.scenario
    per_node = s.cluster.gpus_per_node
    nodes = s.cluster.nodes + math.ceil(cross.rollout.gpus / per_node)
    workload = s.workload.model_copy(update={"recompute_old_logprobs": True})
    scenario = s.model_copy(
        update={"cluster": s.cluster.model_copy(update={"nodes": nodes}), "workload": workload}
    )
    notes = list(base.notes)
    # The trainer's part says its own; the rollout pool's nodes are the other part's.
    if rollout_host := cross.rollout.assumed_host_memory():
        notes.append(rollout_host)
    if not s.workload.recompute_old_logprobs:
        notes.append(
            "across parts the trainer recomputes the old log-probs: the rollout part's engine "
            "runs other kernels on other hardware, so its log-probs are not the trainer's"
        )
    return replace(base, scenario=scenario, notes=tuple(notes))


def option_resolved(mixed: MixedResolved, rollout: str, train: str) -> Resolved:
    """The scenario the option (rollout part, training part) was judged by."""
    parts = {p.name: p for p in mixed.parts}
    ro, tr = parts[rollout], parts[train]
    return ro.resolved if ro is tr else crossing_resolved(crossing(mixed, ro, tr))


ROLLOUT_PART_FACTS = (
    "cluster.gpus_per_node", "cluster.memory_gib", "cluster.scale_up_domain",
    "cluster.scale_out_gbps_per_gpu",
)  # fmt: skip
"""Cluster facts a rollout pool on another part reads from that part."""


class CrossingRecommender(Recommender):
    """Disaggregated plans with rollout on the whole of one part and training on the whole of
    another: each pool laid out and costed on its own part's accelerator."""

    def __init__(self, cross: Crossing, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cross = cross
        rollout = scenario_facts(cross.rollout.resolved)
        self.rollout_facts = {name: rollout[name] for name in ROLLOUT_PART_FACTS}
        """The rollout part's node, domain, memory and network: what the rules and framework
        constraints on the rollout pool read (plan.rollout.tp <= cluster.scale_up_domain)."""
        if self.launch_check is not None:
            # export writes one accelerator's cluster (rules.scenario.resolve refuses parts),
            # so no mapped framework's launch writes a plan across parts: README's
            # launchable_by lists a mapped framework only where its export writes the plan
            self.launch_check = self._refused_across_parts

    def _refused_across_parts(
        self, _recommender: Recommender, _row: int, _plan: Any, framework: str
    ) -> str:
        return (
            f"{framework}'s export writes a cluster of one accelerator and refuses a mixed one "
            f"(cluster.parts), and this plan needs two: rollout on part "
            f"{self.cross.rollout.name}, training on part {self.cross.train.name}"
        )

    def _reject(self, env: Any, size: int, level: str, weight: Any) -> Any:
        if level == "rollout":
            env = {**env, **self.rollout_facts}
        return super()._reject(env, size, level, weight)

    def splits(self) -> list[Split]:
        plan = self.resolved.scenario.plan
        split = Split("disaggregated", self.cross.rollout.gpus, self.cross.train.gpus)
        if plan.placement == "colocated":
            return []
        if plan.rollout.gpus not in (None, split.rollout_gpus):
            return []
        if plan.train.gpus not in (None, split.train_gpus):
            return []
        return [split]

    def pool_resolved(self, pool: str) -> Resolved:
        return self.cross.rollout.resolved if pool == "rollout" else self.cross.train.resolved

    def cost(self, resolved: Resolved, table: PlanTable) -> CostTable:
        workload = resolved.scenario.workload
        rollout = _with_workload(self.cross.rollout.resolved, workload)
        trainer = _with_workload(self.cross.train.resolved, workload)
        # The weight sync is the trainer's broadcast, over the link between the parts; its
        # ZeRO-3 regather and the copy into the engine are costed at the training part's
        # NVLink and HBM rates (the copy is a small share of the stage).
        cluster = trainer.scenario.cluster.model_copy(
            update={"scale_out_gbps_per_gpu": self.cross.link_gbps}
        )
        sync = replace(trainer, scenario=trainer.scenario.model_copy(update={"cluster": cluster}))
        return across(
            _cost(rollout, table, self.overheads),
            _cost(trainer, table, self.overheads),
            _cost(sync, table, self.overheads),
            minibatches=workload.minibatches_per_step,
            epochs=workload.epochs,
        )

    def billed(self) -> list[BilledPart]:
        return [
            billed_part(self.cross.rollout.resolved, self.cross.rollout.name),
            billed_part(self.cross.train.resolved, self.cross.train.name),
        ]


def _label(option: dict[str, Any]) -> str:
    if option["rollout_part"] == option["train_part"]:
        return f"part {option['rollout_part']}"
    return f"rollout on {option['rollout_part']}, training on {option['train_part']}"


def recommend_mixed(
    mixed: MixedResolved, catalog: Catalog, top: int, objective: Objective, **options: Any
) -> dict[str, Any]:
    """Recommend on every part and every (rollout part, training part) pair, then choose one
    option by `objective`. Returns the chosen option's recommendation with a `mixed` summary:
    each option's top plan with its per-part billing, the frontier, the choice and why."""
    started = time.perf_counter()
    # (rollout part, training part, the scenario judged, the recommender, the crossing)
    runs: list[tuple[Part, Part, Resolved, Any, Crossing | None]] = []
    for part in mixed.parts:

        def alone(*args: Any, part: Part = part, **kw: Any) -> Recommender:
            return PartRecommender(part, *args, **kw)

        runs.append((part, part, part.resolved, alone, None))
    for ro, tr in permutations(mixed.parts, 2):
        cross = crossing(mixed, ro, tr)

        def both(*args: Any, cross: Crossing = cross, **kw: Any) -> Recommender:
            return CrossingRecommender(cross, *args, **kw)

        runs.append((ro, tr, crossing_resolved(cross), both, cross))
    results: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    infeasible: list[dict[str, Any]] = [
        {"rollout_part": name, "train_part": name, "reason": why} for name, why in mixed.unavailable
    ]
    judges = judges_of(catalog)
    for ro, tr, resolved, factory, cross in runs:
        names = {"rollout_part": ro.name, "train_part": tr.name}
        try:
            recommender = recommender_for(resolved, catalog, judges, factory, **options)
            if cross is not None:
                # a mapped framework's own ranking of plans across parts is refused at export
                # as this one's are (CrossingRecommender), so none is asked
                recommender.narrowed = None
            result = recommend(recommender, top)
        except (NoFeasiblePlan, PlanError) as exc:
            infeasible.append({**names, "reason": str(exc)})
            continue
        sync = None
        if cross is not None:
            cited = SOURCES["cross_vendor_sync"] if cross.transport != "nccl" else []
            sync = {"transport": cross.transport, "gbps_per_gpu": cross.link_gbps,
                    "sources": cited}  # fmt: skip
        for plan in result["plans"]:
            plan["parts"] = {"rollout": ro.name, "train": tr.name}
            if sync is not None:
                plan["weight_sync_between_parts"] = sync
        best = result["plans"][0]
        rows.append(
            {
                **names,
                "gpus": best["gpus_billed"],
                "placement": best["placement"],
                "execution": best["execution"],
                **{k: best.get(k) for k in SIZE_KEYS},
                "billing": best["billing"],
                "weight_sync_between_parts": sync,
            }
        )
        results.append(result)
    if not rows:
        raise SizingError(
            "no feasible plan on any part or pair of parts; "
            + "; ".join(f"{_label(x)}: {x['reason']}" for x in infeasible[:3])
        )
    time_key, cost_key = axes(rows)
    kept = frontier([(r[time_key], r[cost_key]) for r in rows])
    pick, why = _choose(rows, objective, time_key, cost_key, _label, "option")
    for i, r in enumerate(rows):
        r["label"] = _label(r)
        r["on_frontier"] = i in kept
        r["chosen"] = i == pick
    notes = []
    if not cost_key.startswith(("run_cost", "cost")):
        unpriced = [p.name for p in mixed.parts if billed_part(p.resolved).rate is None]
        notes.append(
            f"no price for {', '.join(unpriced)} (set its price_per_gpu_hour), so the options "
            "are compared on GPU-hours"
        )
    # Each part's host memory, where it is assumed, as a single-kind cluster says it.
    notes.extend(note for p in mixed.parts if (note := p.assumed_host_memory()))
    summary = {
        **objective_axes(objective, time_key, cost_key),
        "link_gbps_per_gpu": mixed.link_gbps,
        "link_origin": mixed.link_origin,
        "options": rows,
        "frontier": [rows[i]["label"] for i in kept],
        "chosen": rows[pick]["label"],
        "why": why,
        "infeasible": [{**x, "label": _label(x)} for x in infeasible],
        "notes": notes,
        "sources": SOURCES,
        "seconds": round(time.perf_counter() - started, 3),
    }
    # The scenario as given (its parts), not the one the chosen option was judged by.
    scenario = normalised(replace(mixed.parts[0].resolved, scenario=mixed.scenario))
    return {**results[pick], "scenario": scenario, "mixed": summary}


def check_mixed_flags(mixed: MixedResolved, sizing: dict[str, Any]) -> None:
    """What the flags of a size search mean on a mixed cluster; InputError when they
    cannot apply."""
    if sizing.get("max_nodes") is not None:
        raise InputError(
            "--max-nodes searches node counts of one accelerator; a mixed cluster's parts "
            "are searched as given (set each part's nodes)"
        )
    first = mixed.parts[0].resolved
    if sizing.get("deadline") is not None and run_steps(first, run_terms(first)) is None:
        raise InputError(
            "--deadline needs the run's length: set workload.steps (or trained_samples or "
            "trained_tokens)"
        )
    if sizing.get("budget") is not None:
        unpriced = [p.name for p in mixed.parts if billed_part(p.resolved).rate is None]
        if unpriced:
            raise InputError(
                f"--budget needs a price on every part: {', '.join(unpriced)} has none in the "
                "knowledge base; set its price_per_gpu_hour"
            )
