"""Candidate plans: every pool split, per-pool layout and execution mode the scenario allows.

Layouts are enumerated per pool first (rollout layouts for each rollout pool size, training
layouts for each training pool size), so that rules and the cost core can judge and rank a
pool's layouts once, however many splits and execution modes share that pool size.
Whatever the scenario's `plan:` fixes is held fixed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from rlmguide.cost.plans import ONE_POOL, expert_ranks
from rlmguide.kb.schema import Offload, Plan
from rlmguide.rules.scenario import Resolved

MAX_STALENESS = (1, 2, 4)
RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (1, 3)
"""Searched ZeRO stages: 1 (sharded optimizer, Megatron's distributed optimizer) and 3 (FSDP).
Stages 0 and 2 are costed when a scenario fixes them; in the cost model they trade the same
traffic for more memory than stage 1, so the search leaves them out."""


def powers_of_two(limit: int) -> list[int]:
    return [1 << i for i in range(limit.bit_length()) if (1 << i) <= limit]


MAX_PP = 16
"""Pipeline stages searched at most (NeMo-RL's DeepSeek-V3 recipes run 16)."""
FINE_GRID_UP_TO_GPUS = 512
"""Up to this cluster size the search is finer: pipeline degrees that are not powers of two,
and, per disaggregated pool size, the fastest training layout of every weight-sync group
(rules.recommend), which makes the pruned search return the exhaustive best plan. Above it
the output says what was left out."""


def pipeline_degrees(gpus: int, fine: bool = True) -> list[int]:
    """Pipeline degrees up to MAX_PP: powers of two and, on a `fine` grid, the other divisors
    of `gpus`, since a cluster of 12 nodes pipelines in 12 (verl's DeepSeek-V3 recipe on 96
    GPUs runs PP 12)."""
    limit = min(gpus, MAX_PP)
    odd = {d for d in range(1, limit + 1) if gpus % d == 0} if fine else set()
    return sorted(set(powers_of_two(limit)) | odd)


@dataclass(frozen=True)
class Split:
    """How the cluster's GPUs are given to the rollout and training pools."""

    placement: str
    rollout_gpus: int
    train_gpus: int


MAX_SPLITS = 64
"""Disaggregated splits searched at most; beyond, splits step by several nodes (said in the
output)."""


def split_unit(resolved: Resolved) -> int:
    """GPUs between two searched splits: one GPU inside a node, a node across nodes, and on
    clusters of more than MAX_SPLITS nodes as many nodes as keep MAX_SPLITS splits."""
    cluster = resolved.scenario.cluster
    if cluster.nodes == 1:
        return 1
    nodes = (cluster.gpus - resolved.scenario.plan.pools.total) // cluster.gpus_per_node
    return cluster.gpus_per_node * max(1, -(-nodes // MAX_SPLITS))


def splits(resolved: Resolved) -> list[Split]:
    """Colocated on all GPUs; disaggregated at every node split (or GPU split in one node),
    and at any split the plan fixes (verl's 4 rollout : 12 training GPUs over two nodes).
    GPUs given to models' own pools are set aside first."""
    cluster, plan = resolved.scenario.cluster, resolved.scenario.plan
    gpus = cluster.gpus - plan.pools.total
    found = [Split("colocated", gpus, gpus)]
    if plan.placement == "partially-colocated":
        # The survey's partial co-location is the one-pool split with the frozen models on
        # their own small groups (plan.pools); searched under that name when it is asked for.
        found.append(Split("partially-colocated", gpus, gpus))
    unit = split_unit(resolved)
    sizes = set(range(unit, gpus, unit))
    fixed = plan.rollout.gpus or (gpus - plan.train.gpus if plan.train.gpus else None)
    if fixed and 0 < fixed < gpus:
        sizes.add(fixed)
    found += [Split("disaggregated", g, gpus - g) for g in sorted(sizes)]
    given = (plan.rollout.gpus, plan.train.gpus)
    if all(given) and given[0] != given[1] and max(given) <= gpus:  # type: ignore[type-var]
        # Colocated pools of different sizes overlap (a framework constraint may refuse it).
        found.append(Split("colocated", *given))  # type: ignore[arg-type]
        if plan.placement == "partially-colocated":
            found.append(Split("partially-colocated", *given))  # type: ignore[arg-type]
    keep = []
    for split in found:
        if plan.placement and split.placement != plan.placement:
            continue
        if plan.rollout.gpus and split.rollout_gpus != plan.rollout.gpus:
            continue
        if plan.train.gpus and split.train_gpus != plan.train.gpus:
            continue
        keep.append(split)
    return keep


def executions(placement: str, plan: Plan, tolerance: int = 1) -> list[tuple[str, int]]:
    """(execution, staleness) pairs: pools that share GPUs cannot overlap, only pause; no
    plan lags more than the workload's `tolerance` policy versions."""
    if placement in ONE_POOL:
        options = [("sync", 0), ("partial-rollout", 1)]
    else:
        options = [("sync", 0), ("one-step-off", 1), ("partial-rollout", 1)]
        options += [("async", k) for k in MAX_STALENESS]
    options = [o for o in options if o[1] <= tolerance]
    if plan.execution:
        options = [o for o in options if o[0] == plan.execution]
    if plan.max_staleness:
        options = [o for o in options if o[0] == "sync" or o[1] == plan.max_staleness]
        if plan.execution in ("async", "one-step-off", "partial-rollout"):
            options = [(plan.execution, plan.max_staleness)]
    return options


def _choices(fixed: int | None, options: list[int]) -> list[int]:
    return [fixed] if fixed is not None else options


ROLLOUT_LAYOUT_COLUMNS = ("tp", "pp", "ep", "dp", "attention_dp", "cp")


def rollout_layouts(resolved: Resolved, gpus: int) -> dict[str, np.ndarray]:
    """Every (tp, pp, ep) with a whole number of replicas on `gpus` GPUs. Engines span up to
    two nodes, and up to eight for a mixture of experts (the 32- and 64-GPU engines published
    for DeepSeek-V3/R1)."""
    if not resolved.algorithm.online:
        # Offline preference optimisation generates nothing: one layout that never runs
        # (cost.offline idles the rollout), so the search varies the trainer alone.
        return _columns(ROLLOUT_LAYOUT_COLUMNS, [(1, 1, 1, gpus, 1, 1)], gpus)
    fixed = resolved.scenario.plan.rollout
    moe = resolved.policy.moe
    span = (8 if moe else 2) * resolved.scenario.cluster.gpus_per_node
    tps = _choices(fixed.tp, powers_of_two(min(gpus, span)))
    pps = _choices(fixed.pp, [p for p in (1, 2, 4) if p <= gpus])
    eps = _choices(fixed.ep, powers_of_two(min(gpus, moe.experts)) if moe else [1])
    attention_dp, cp = fixed.attention_dp or 1, fixed.cp or 1
    rows = [
        (tp, pp, ep, gpus // (tp * pp), attention_dp, cp)
        for tp, pp, ep in itertools.product(tps, pps, eps)
        if gpus % (tp * pp) == 0 and ep <= gpus and gpus % ep == 0 and tp % (attention_dp * cp) == 0
    ]
    return _columns(ROLLOUT_LAYOUT_COLUMNS, rows, gpus)


NO_OFFLOAD = Offload()
PHASE_OFFLOAD = Offload(phase=True, frozen=True)
"""What verl's colocated recipes do: trained state parked during the rollout, the reference
parked while training."""
HEAVY_OFFLOADS = (
    Offload(phase=True, optimizer=1.0, frozen=True),
    Offload(phase=True, params=True, frozen=True),
)
"""Tried only where nothing fits without them: a CPU optimizer (DeepSpeed adam_offload,
Megatron optimizer_cpu_offload) and streamed parameters (FSDP2 offload_policy)."""


def offload_options(resolved: Resolved, choices: tuple[Offload, ...]) -> tuple[Offload, ...]:
    fixed = resolved.scenario.plan.train.offload
    return (fixed,) if fixed is not None else choices


def train_layouts(
    resolved: Resolved, gpus: int, offloads: tuple[Offload, ...] = (NO_OFFLOAD,)
) -> dict[str, np.ndarray]:
    """Every (tp, pp, cp, ep, etp, zero, recompute, offload) that factorises `gpus` GPUs
    (recompute as its code in cost.plans.RECOMPUTE).

    An MoE's experts keep the dense layers' tensor parallelism (etp = tp, ep out of dp x cp)
    or, for an ep larger than that allows, are folded whole over the tensor ranks too (etp = 1,
    ep out of tp x cp x dp), as Megatron-Core's MoE parallel folding lays them out.
    """
    fixed = resolved.scenario.plan.train
    moe, layers = resolved.policy.moe, resolved.policy.layers
    tps = _choices(fixed.tp, powers_of_two(min(gpus, 2 * resolved.scenario.cluster.gpus_per_node)))
    fine = resolved.scenario.cluster.gpus <= FINE_GRID_UP_TO_GPUS
    # An interleaved schedule needs a pipeline, and every chunk of it a layer, or the embedding
    # or the output and loss alone (Llama 3's 405B schedule; Megatron's account_for_* splits).
    chunks = fixed.virtual_stages or 1
    pps = _choices(
        fixed.pp,
        [
            p
            for p in pipeline_degrees(gpus, fine)
            if p <= layers and p * chunks <= layers + 2 and (chunks == 1 or p > 1)
        ],
    )
    cps = _choices(fixed.cp, powers_of_two(min(gpus, 8)))
    eps = _choices(fixed.ep, powers_of_two(min(gpus, moe.experts)) if moe else [1])
    zeros = _choices(fixed.zero, list(ZERO_STAGES))
    recomputes = [fixed.recompute] if fixed.recompute else list(RECOMPUTE)
    shapes = []
    for tp, pp, cp, ep in itertools.product(tps, pps, cps, eps):
        if gpus % (tp * pp * cp):
            continue
        dp = gpus // (tp * pp * cp)
        # At an ep the classic layout can host, folding only adds expert memory per GPU in
        # this model, so it is tried just where it is what makes the ep fit.
        etp = fixed.etp or (1 if moe and (dp * cp) % ep else tp)
        if tp % etp or expert_ranks(dp, cp, tp, etp) % ep:
            continue
        shapes.append((tp, pp, cp, ep, etp, dp))
    settings = [
        (z, RECOMPUTE.index(r), o.phase, o.optimizer, o.params, o.frozen)
        for z in zeros
        for r in recomputes
        for o in offloads
        if z == 3 or not o.params  # streaming needs ZeRO-3 shards
    ]
    # Every shape with every setting, shape-major, built as arrays (thousands of shapes on
    # large clusters, each with up to two dozen settings).
    n, m = len(shapes), len(settings)
    if not n or not m:
        return _columns(TRAIN_LAYOUT_COLUMNS, [], gpus)
    table: dict[str, np.ndarray] = {}
    for name, column in zip(TRAIN_LAYOUT_COLUMNS[:6], zip(*shapes, strict=True), strict=True):
        table[name] = np.repeat(np.array(column, dtype=np.int64), m)
    for name, column in zip(TRAIN_LAYOUT_COLUMNS[6:], zip(*settings, strict=True), strict=True):
        table[name] = np.tile(np.array(column), n)
    table["gpus"] = np.full(n * m, gpus, dtype=np.int64)
    return table


TRAIN_LAYOUT_COLUMNS = (
    "tp", "pp", "cp", "ep", "etp", "dp", "zero", "recompute",
    "offload_phase", "offload_optimizer", "offload_params", "offload_frozen",
)  # fmt: skip


def _columns(names: tuple[str, ...], rows: list[tuple], gpus: int) -> dict[str, np.ndarray]:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    table = {name: np.array(column) for name, column in zip(names, columns, strict=True)}
    table["gpus"] = np.full(len(rows), gpus, dtype=np.int64)
    return table


def prefix_caching_options(resolved: Resolved) -> list[bool]:
    fixed = resolved.scenario.plan.rollout.prefix_caching
    if fixed is not None:
        return [fixed]
    generates = resolved.algorithm.online and resolved.samples_per_prompt > 1
    return [True, False] if generates else [False]
