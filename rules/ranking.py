"""Ranking: by predicted step time, ties broken toward the simpler plan, distinct plans only.

Two plans on the same cluster share most of the model's error (the same efficiencies, the same
decode floor), so what decides between them is their paired difference, not their absolute
bands. A difference below `TIE_FRACTION` of the faster plan's step time is a tie, and a tie
goes to the simpler plan: synchronous before one-step-off before partial rollouts before
asynchronous, less staleness, fewer of Table 9's configurations (shared critic, fusion), one
pool before two, whole-node and power-of-two splits, no
offload before phase offload before a CPU optimizer, no rollout pipeline before one, then the
smaller rollout engine (its tensor group, or its expert group where experts spread wider; or,
for one framework, the engine nearest its default size), an engine without expert parallelism
beyond its tensor group before one with it, and for one framework the training family it
defaults to for the model's size.
Rows that differ only in staleness or prefix caching are one plan for the reader: the best
row stands for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.plans import (
    ASYNC,
    ONE_STEP_OFF,
    PARTIAL_ROLLOUT,
    SYNC,
    PlanTable,
    inter_stage,
    intra_stage,
    model_parallel,
    shares_gpus,
)

TIE_FRACTION = 0.2
"""Paired differences below 20% of the faster plan's step are ties: the model's own error on
differences. Measured on the published pairs of one model on one accelerator (sync against
one-step-off, two cluster sizes; rules.fidelity.paired, printed by bench/fidelity.py): the
predicted ratio between the two runs is off from the reported one by a median factor of
1.21 (five pairs, 1.14 to 2.05), smaller than the absolute error would suggest, but not
smaller than that."""

EXECUTION_ORDER = {SYNC: 0, ONE_STEP_OFF: 1, PARTIAL_ROLLOUT: 2, ASYNC: 3}


def _engine(table: PlanTable) -> tuple[np.ndarray, np.ndarray]:
    """A rollout engine's GPUs (its tensor group, or its expert group where experts spread
    wider, times its pipeline) and whether experts spread beyond the tensor group."""
    engine = np.maximum(table.rollout_tp, table.rollout_ep) * table.rollout_pp
    return engine, table.rollout_ep > table.rollout_tp


def complexity(
    table: PlanTable,
    gpus_per_node: int,
    default_rollout_tp: int | None = None,
    default_model_parallel: bool | None = None,
) -> np.ndarray:
    """A score per plan, lower is simpler, built from the tie-break order (most significant
    first): execution mode, staleness, pools, split shape, offload, rollout pipeline, rollout
    engine size, then the training family. With a framework's defaults (the search runs for
    it alone), the engine closest to its `default_rollout_tp` in powers of two is the simpler,
    and so is the training family it defaults to for this model (`default_model_parallel`)."""
    execution = np.zeros(len(table), dtype=np.int64)
    for code, order in EXECUTION_ORDER.items():
        execution[table.execution == code] = order
    staleness = np.where(table.execution == SYNC, 0, np.minimum(table.staleness, 15))
    pools = (~shares_gpus(table.placement)).astype(np.int64)
    pools += (table.critic_gpus > 0) + (table.reference_gpus > 0) + (table.reward_gpus > 0)
    rollout = table.rollout_gpus
    odd_split = ~shares_gpus(table.placement) & (
        (rollout % gpus_per_node != 0) | (rollout & (rollout - 1) != 0)
    )
    offload = np.where(
        table.offload_params | (table.offload_optimizer > 0), 2, table.offload_phase.astype(int)
    )
    # Least significant: a rollout engine no larger than needed (a model that fits at a smaller
    # tensor group runs at it by default: vLLM's and verl's tensor_parallel_size 1). An engine
    # whose experts spread beyond its tensor group spans its expert group, and of two engines
    # of one size the one without expert parallelism beyond tp is the simpler to run.
    engine, wide_ep = _engine(table)
    rollout_degree = np.log2(engine).astype(np.int64)
    if default_rollout_tp is not None:
        rollout_degree = np.abs(rollout_degree - int(np.log2(default_rollout_tp)))
    family_off = np.zeros(len(table), dtype=bool)
    if default_model_parallel is not None:
        family = model_parallel(table.train_tp, table.train_pp, table.train_ep, table.train_zero)
        family_off = family != default_model_parallel
    # Table 9's configurations: each departure from a separate critic and no fusion is one
    # more mechanism to run and trust.
    configuration = (
        table.critic_shared.astype(np.int64) + inter_stage(table.fusion) + intra_stage(table.fusion)
    )
    parts = (
        execution, staleness, configuration, np.minimum(pools, 3), odd_split, offload,
        table.rollout_pp > 1, np.minimum(rollout_degree, 31), wide_ep, family_off,
    )  # fmt: skip
    score = np.zeros(len(table), dtype=np.int64)
    for part, width in zip(parts, (4, 16, 4, 4, 2, 3, 2, 32, 2, 2), strict=True):
        score = score * width + np.asarray(part, dtype=np.int64)
    return score


def rollout_shape(table: PlanTable) -> np.ndarray:
    """The rollout engine's part of `complexity`, one code per plan: pipelined or not, the
    engine's size (tensor or expert group times pipeline) and experts spread beyond its tensor
    group. Of two layouts with one shape, a tie keeps the faster."""
    engine, wide_ep = _engine(table)
    return (table.rollout_pp > 1) * 4096 + engine.astype(np.int64) * 2 + wide_ep


FOLDED = ("staleness", "prefix_caching")
"""Plan fields a reader does not tell apart: rows differing only there are one plan."""


def same_plan(table: PlanTable, row: int) -> np.ndarray:
    """Rows that differ from `row` only in staleness or prefix caching."""
    same = np.ones(len(table), dtype=bool)
    for name in table.__dataclass_fields__:
        if name not in FOLDED:
            column = getattr(table, name)
            same &= column == column[row]
    return same


@dataclass(frozen=True)
class Ranked:
    rows: list[int]
    """Chosen rows, best first."""
    fastest: list[int]
    """For each chosen row, the fastest row it was chosen over as the simpler of a tie (itself
    where it is the fastest)."""
    folded: list[list[int]]
    """For each chosen row, the rows of the same plan it stands for."""


def rank(costs: CostTable, top: int, scores: np.ndarray) -> Ranked:
    """The `top` distinct plans: repeatedly, among the plans within the tie of the fastest one
    left, the simplest by `scores` (`complexity` of each plan), then the fastest of those."""
    seconds = costs.step_seconds
    order = np.argsort(seconds, kind="stable")
    sorted_seconds = seconds[order]
    score = scores[order]
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    gone = np.zeros(len(order), dtype=bool)
    rows: list[int] = []
    fastest: list[int] = []
    folded: list[list[int]] = []
    while len(rows) < top and not gone.all():
        first = int(np.argmin(gone))  # the fastest plan left
        end = int(
            np.searchsorted(sorted_seconds, sorted_seconds[first] * (1 + TIE_FRACTION), "right")
        )
        window = np.flatnonzero(~gone[first:end]) + first
        pick = int(window[np.lexsort((sorted_seconds[window], score[window]))[0]])
        row = int(order[pick])
        same = position[same_plan(costs.plans, row)]
        same = same[~gone[same]]
        rows.append(row)
        fastest.append(int(order[first]))
        folded.append(sorted(int(order[k]) for k in same))
        gone[same] = True
    return Ranked(rows, fastest, folded)
