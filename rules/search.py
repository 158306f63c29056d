"""Candidate plans: every pool split, per-pool layout and execution mode the scenario allows.

Layouts are enumerated per pool first (rollout layouts for each rollout pool size, training
layouts for each training pool size), so that rules and the cost core can judge and rank a
pool's layouts once, however many splits and execution modes share that pool size.
Whatever the scenario's `plan:` fixes is held fixed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from rlmguide.cost.assessment import FROZEN_ROLES
from rlmguide.cost.plans import (
    DISAGGREGATED,
    ONE_POOL,
    PARTIALLY_COLOCATED,
    PlanTable,
    expert_ranks,
    shares_gpus,
    tp_lays_out_heads,
    used_gpus,
)
from rlmguide.kb.schema import Architecture, Offload, Plan
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
    # Colocated pools of different sizes overlap (a framework constraint may refuse it). One
    # pool smaller than the GPUs left is asked for by fixing the placement: verl's trainer on
    # one node of 8 beside a reward model's own 4 GPUs on a second node, the rest unused.
    # (a fixed pool of all the GPUs left is the first split already: not a second candidate)
    part = given[0] == given[1] != gpus and plan.placement in ("colocated", "partially-colocated")
    if all(given) and (given[0] != given[1] or part) and max(given) <= gpus:  # type: ignore[type-var]
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
    elif plan.max_staleness == 0 and placement not in ONE_POOL:
        # The on-policy stream is run only where the plan fixes it (not searched).
        options = [("async", 0)]
    return options


def _choices(fixed: int | None, options: list[int]) -> list[int]:
    return [fixed] if fixed is not None else options


def _heads_split(tps: list[int], models: Sequence[Architecture | None]) -> list[int]:
    """The degrees of `tps` that lay out every model's attention heads: anything else stops the
    engine or the trainer at model build (cost.plans.kv_heads_uneven). The rules
    rollout-tp-divides-heads and tp-divides-heads say the same over the policy's facts: left
    to them, such degrees are only costed to be rejected, and a degree the scenario fixes still
    reaches them, which name the degrees that would do."""
    keep = np.array(tps)
    for arch in models:
        if arch is not None:
            keep = keep[tp_lays_out_heads(arch, keep)]
    return [int(t) for t in keep]


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
    tps = _choices(fixed.tp, _heads_split(powers_of_two(min(gpus, span)), (resolved.policy,)))
    pps = _choices(fixed.pp, [p for p in (1, 2, 4) if p <= gpus])
    eps = _choices(fixed.ep, powers_of_two(min(gpus, moe.experts)) if moe else [1])
    attention_dp, cp = fixed.attention_dp or 1, fixed.cp or 1
    # A pipeline stage's experts spread over that stage's ranks, tp x dp = gpus / pp
    # (cost.plans.plan_problems: ep divides tp * dp): a wider ep would leave part of the
    # experts on no GPU and cost.memory.rollout_weight_bytes would count the engine's
    # weights short (tp 2, pp 4, ep 8 on 8 GPUs: 44 of DeepSeek-V3's 156 GiB per GPU).
    rows = [
        (tp, pp, ep, gpus // (tp * pp), attention_dp, cp)
        for tp, pp, ep in itertools.product(tps, pps, eps)
        if gpus % (tp * pp) == 0 and (gpus // pp) % ep == 0 and tp % (attention_dp * cp) == 0
    ]
    return _columns(ROLLOUT_LAYOUT_COLUMNS, rows, gpus)


NO_OFFLOAD = Offload()
PHASE_OFFLOAD = Offload(phase=True, frozen=True)
"""What verl's colocated recipes do: trained state parked during the rollout, the reference
parked while training."""
HEAVY_OFFLOADS = (
    Offload(phase=True, optimizer=1.0, frozen=True),
    Offload(phase=True, optimizer=1.0, params=True, frozen=True),
)
"""Tried only where nothing fits without them: a CPU optimizer (DeepSpeed adam_offload,
Megatron optimizer_cpu_offload) and streamed parameters (FSDP2 offload_policy). Streaming
carries the whole CPU optimizer it implies (Offload.params), spelled out as the frameworks
spell it: FSDP2's CPUOffloadPolicy keeps parameters, gradients and the optimizer step on the
host at once (verl's FSDP engine, constraint verl-fsdp-cpu-optimizer-only-with-offload-policy-v0.8;
SkyRL's and NeMo-RL's cpu_offload), each mapping writes that one switch from both facts, and
review reads such a launch back as optimizer 1 with params. The cost is the same either way
(cost.memory and cost.training count a streamed model's optimizer on the host whatever its
share says)."""


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
    tps = _choices(
        fixed.tp,
        _heads_split(
            powers_of_two(min(gpus, 2 * resolved.scenario.cluster.gpus_per_node)),
            (resolved.policy, resolved.critic),
        ),
    )
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


def stage_split(layers: int, pp: np.ndarray) -> np.ndarray:
    """Decoder layers of the first and of the last pipeline stage under Megatron's
    account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split: the
    embedding and the loss each take a layer's place, (layers + 2) / pp a stage, where pp > 2
    divides layers + 2 (megatron/core/transformer/transformer_config.py at 55ac7082,
    L1434-L1480, refuses other splits); 0 (even stages) elsewhere. Where it applies the
    middle stages hold ceil(layers / pp), the layers even stages are costed at, and the two
    ends one fewer: the fullest stage, which sets the pace, is the same and no stage holds
    more, so the search takes it instead of trying both."""
    stages = (layers + 2) // np.maximum(pp, 1)
    return np.where((pp > 2) & ((layers + 2) % np.maximum(pp, 1) == 0), stages - 1, 0)


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


POOL_SHARE = 2
"""A model's own pool is searched up to 1/POOL_SHARE of the cluster: a model that needs
more would leave the actor's rollout and training fewer GPUs than itself (the bundled LLM
judge example gives its 72B judge 8 of 16 GPUs)."""


def own_pool_sizes(cluster_gpus: int) -> list[int]:
    """Sizes tried for a model's own pool where the scenario leaves it open: powers of two
    up to 1/POOL_SHARE of the cluster (a bounded set: 12 sizes on 4,096 GPUs)."""
    return powers_of_two(max(1, cluster_gpus // POOL_SHARE))


def pool_variants(
    base: PlanTable,
    roles: Sequence[str],
    sizes: Sequence[int],
    assessment_tp: Sequence[int],
    cluster_gpus: int,
    *,
    per_size: int,
    one_pool: bool = True,
    rollout_fixed: bool = False,
    train_fixed: bool = False,
) -> PlanTable:
    """`base`'s plans (best first) with `roles` (each alone, then all of them) moved to pools
    of their own of each size, the first `per_size` plans that allow it for each size, donor
    pool and layout: the GPUs come from what the cluster leaves free, then from the shared pool
    of a one-pool plan (which becomes partially colocated, survey §4.2) or from either pool of
    a disaggregated one (`rollout_fixed`/`train_fixed`: the scenario fixes that pool's size,
    it gives none; `one_pool` false: one-pool plans are left alone). Only whole
    factorisations are kept: the shrunk pool's degrees divide it, and each own pool divides
    by the degrees it runs (the training layout's tp x pp x cp for the critic; for the
    frozen models, the base's assessment layout and each of `assessment_tp` at pp 1, the
    data-parallel replicas of survey §3.1.1, or the training layout's where the base has
    none). The model checks (heads, experts) are left to `plans.valid_rows`."""
    subsets = [(role,) for role in roles] + ([tuple(roles)] if len(roles) > 1 else [])
    free = cluster_gpus - used_gpus(base)
    shared = shares_gpus(base.placement)
    train_unit = base.train_tp * base.train_pp * base.train_cp
    rollout_unit = base.rollout_tp * base.rollout_pp
    main = np.maximum(base.rollout_gpus, base.train_gpus)
    picked: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {
        name: []
        for name in ("rollout_gpus", "train_gpus", "placement", "critic_gpus",
                     "reference_gpus", "reward_gpus", "assess_tp", "assess_pp")
    }  # fmt: skip
    frozen_layouts = [(base.assess_tp, base.assess_pp)] + [
        (np.full(len(base), t), np.ones(len(base), dtype=np.int64)) for t in assessment_tp
    ]
    for subset in subsets:
        holds_frozen = any(role in FROZEN_ROLES for role in subset)
        for size in sizes:
            take = np.maximum(len(subset) * size - free, 0)
            donors = []
            if one_pool and not (rollout_fixed or train_fixed):
                rest = main - take
                donors.append((shared, np.minimum(base.rollout_gpus, rest),
                               np.minimum(base.train_gpus, rest), PARTIALLY_COLOCATED))  # fmt: skip
            if not rollout_fixed:
                donors.append((~shared, base.rollout_gpus - take, base.train_gpus, DISAGGREGATED))
            if not train_fixed:
                donors.append((~shared, base.rollout_gpus, base.train_gpus - take, DISAGGREGATED))
            for applies, r_gpus, t_gpus, placement in donors:
                whole = (
                    applies
                    & (r_gpus >= 1) & (t_gpus >= 1)
                    & (r_gpus % rollout_unit == 0) & (t_gpus % train_unit == 0)
                    & ("critic" not in subset or (size % train_unit == 0) & ~base.critic_shared)
                )  # fmt: skip
                for a_tp, a_pp in frozen_layouts if holds_frozen else frozen_layouts[:1]:
                    units = np.where(a_tp > 0, a_tp * a_pp, train_unit)
                    ok = whole & (~holds_frozen | (size % units == 0))
                    rows = np.flatnonzero(ok & np.all(
                        [getattr(base, f"{role}_gpus") == 0 for role in subset], axis=0
                    ))[:per_size]  # fmt: skip
                    if not rows.size:
                        continue
                    picked.append(rows)
                    columns["rollout_gpus"].append(r_gpus[rows])
                    columns["train_gpus"].append(t_gpus[rows])
                    columns["placement"].append(np.full(rows.size, placement))
                    for role in ("critic", "reference", "reward"):
                        own = getattr(base, f"{role}_gpus")[rows]
                        columns[f"{role}_gpus"].append(
                            np.full(rows.size, size) if role in subset else own
                        )
                    columns["assess_tp"].append(a_tp[rows])
                    columns["assess_pp"].append(a_pp[rows])
    if not picked:
        return base.take(np.zeros(0, dtype=np.int64))
    table = base.take(np.concatenate(picked))
    new = {name: np.concatenate(parts).astype(np.int64) for name, parts in columns.items()}
    return replace(
        table,
        **new,
        rollout_dp=new["rollout_gpus"] // (table.rollout_tp * table.rollout_pp),
        train_dp=new["train_gpus"] // (table.train_tp * table.train_pp * table.train_cp),
    )
