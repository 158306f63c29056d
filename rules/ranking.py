"""Ranking: by predicted step time, ties broken toward the simpler plan, distinct plans only.

Two plans on the same cluster share most of the model's error (the same efficiencies, the same
decode floor), so what decides between them is their paired difference, not their absolute
bands. A difference below `TIE_FRACTION` of the faster plan's step time is a tie, and a tie
goes to the simpler plan: synchronous before one-step-off before partial rollouts before
asynchronous, less staleness, fewer of Table 9's configurations (shared critic, fusion), one
pool before two, whole-node and power-of-two splits, no offload before phase offload before a
CPU optimizer, no rollout pipeline before one, then fewer parallel degrees: every doubling of
the rollout engine (its tensor group, or its expert group where experts spread wider; or, for
one framework, its distance from the engine size it defaults to) and of training's tensor,
pipeline, context and (for a dense model) expert groups counts one, a group that spans nodes
counts each doubling beyond the node once more, and a mixture of experts trained without
expert parallelism counts one, as the frameworks' own MoE launches train with expert groups
of 4 to 32 (every Megatron MoE deployment record: slime, NeMo-RL and verl; a test keeps it
so); then an engine without expert parallelism beyond its tensor group, and for one
framework the training family it defaults to
for the model's size.

The plan a tie passed over is shown right after the plan that won it, so every tie is
anchored on a plan in the list. Rows a reader does not tell apart are one row: those that
differ only in staleness or prefix caching, and those within `NEAR_FRACTION` of each other
with the same placement, execution mode and rollout layout (training variants, listed as
"also").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
differences, from the same calibration as the band on every step time (cost.band). Measured
on the published pairs of one model on one cluster within one source record (sync against
one-step-off and async, precisions, pool splits; rules.fidelity.paired, printed by
bench/fidelity.py): the predicted ratio between the two runs is off from the reported one by
a median factor of 1.17 (19 pairs) when the tie was set, 1.18 (25 pairs) on 2026-12-06 at the
earlier 4 ms / 40 ms / 50 us constants and 1.19 (25 pairs) at the fitted ones
(cost.overheads.decode_step_seconds): smaller than the absolute error would suggest, but not
smaller than that."""


def within_tie(seconds: float, other: float) -> bool:
    """Whether two plans' step times are a tie of the ranking: the slower no more than
    `TIE_FRACTION` beyond the faster (the window `Ranking.ranking` picks the simpler plan
    from), so review and ranking judge one difference alike."""
    return max(seconds, other) <= (1 + TIE_FRACTION) * min(seconds, other)


NEAR_FRACTION = 0.02
"""Rows of one placement, execution mode and rollout layout whose step times differ by less
than 2% are shown as one row: a tenth of the tie, well inside the model's error, so a list
of training variants that close says nothing the first of them does not."""

EXECUTION_ORDER = {SYNC: 0, ONE_STEP_OFF: 1, PARTIAL_ROLLOUT: 2, ASYNC: 3}


def _engine(table: PlanTable) -> tuple[np.ndarray, np.ndarray]:
    """A rollout engine's GPUs (its tensor group, or its expert group where experts spread
    wider, times its pipeline) and whether experts spread beyond the tensor group."""
    engine = np.maximum(table.rollout_tp, table.rollout_ep) * table.rollout_pp
    return engine, table.rollout_ep > table.rollout_tp


def _doublings(size: np.ndarray) -> np.ndarray:
    """How many doublings make a group of `size` (a pipeline of 12 stages counts 4)."""
    return np.ceil(np.log2(np.maximum(size, 1))).astype(np.int64)


def degrees(
    table: PlanTable,
    gpus_per_node: int,
    default_rollout_tp: int | None = None,
    moe: bool = False,
) -> np.ndarray:
    """The parallel degrees a plan runs, per plan (see the module's docstring)."""
    node = int(np.log2(max(gpus_per_node, 1)))
    engine, _ = _engine(table)
    rollout = _doublings(engine)
    spans = np.maximum(rollout - node, 0)
    if default_rollout_tp is not None:
        rollout = np.abs(rollout - int(np.log2(default_rollout_tp)))
    train = _doublings(table.train_tp) + _doublings(table.train_pp) + _doublings(table.train_cp)
    spans = spans + np.maximum(_doublings(table.train_tp) - node, 0)
    # A mixture of experts: an expert group is the frameworks' way, its absence costs one.
    train = train + ((table.train_ep == 1) if moe else _doublings(table.train_ep))
    return np.asarray(rollout + train + spans, dtype=np.int64)


def complexity(
    table: PlanTable,
    gpus_per_node: int,
    default_rollout_tp: int | None = None,
    default_model_parallel: bool | None = None,
    moe: bool = False,
) -> np.ndarray:
    """A score per plan, lower is simpler, built from the tie-break order (most significant
    first): execution mode, staleness, Table 9's configurations, pools, split shape, offload,
    rollout pipeline, parallel degrees (`degrees`), wide rollout expert parallelism, then the
    training family. With a framework's defaults (the search runs for it alone), the engine
    closest to its `default_rollout_tp` in powers of two is the simpler, and so is the
    training family it defaults to for this model (`default_model_parallel`)."""
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
    _, wide_ep = _engine(table)
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
        table.rollout_pp > 1,
        np.minimum(degrees(table, gpus_per_node, default_rollout_tp, moe), 127),
        wide_ep, family_off,
    )  # fmt: skip
    score = np.zeros(len(table), dtype=np.int64)
    for part, width in zip(parts, (4, 16, 4, 4, 2, 3, 2, 128, 2, 2), strict=True):
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
CHOICE = (
    "placement", "execution", "rollout_gpus", "rollout_tp", "rollout_pp", "rollout_ep",
    "rollout_attention_dp", "rollout_cp", "critic_gpus", "reference_gpus", "reward_gpus",
)  # fmt: skip
"""The fields that make two plans distinct choices for a reader: where each model runs, how
the steps overlap and the rollout engine. Rows that share them and are within NEAR_FRACTION
are one row."""


def _same(table: PlanTable, row: int, fields: Any, among: np.ndarray | None = None) -> np.ndarray:
    """Where the rows (those of `among`, else all) equal row `row` in every one of `fields`."""
    same = np.ones(len(table) if among is None else len(among), dtype=bool)
    for name in fields:
        column = getattr(table, name)
        same &= (column if among is None else column[among]) == column[row]
    return same


@dataclass(frozen=True)
class Place:
    """One row of the ranking."""

    row: int
    anchor: int
    """The fastest row of the tie this row was chosen in (itself where it is the fastest)."""
    folded: list[int]
    """Rows of the same plan it stands for (staleness, prefix caching), itself included."""
    also: list[int]
    """Near-identical rows (same choice, within NEAR_FRACTION) shown with it: the fastest
    ALSO_SHOWN of the distinct ones."""
    also_count: int
    """How many distinct near-identical plans it stands for."""


def ranking(
    costs: CostTable, scores: np.ndarray, eligible: np.ndarray | None = None
) -> Iterator[Place]:
    """The distinct plans best first among the `eligible` rows (default all): repeatedly,
    among the plans within the tie of the fastest one left, the simplest by `scores`
    (`complexity`), then the fastest of those; where that is not the fastest, the fastest
    follows it, so the plan a tie passed over is in the list."""
    return Ranker(costs, scores).ranking(eligible)


class Ranker:
    """`ranking` and `rank` of one costed table, for many `eligible` masks: the time order,
    and each row's same-plan and near-identical rows once taken, are worked out once
    (recommend ranks again each time the launch check moves plans out of the ranking)."""

    def __init__(self, costs: CostTable, scores: np.ndarray) -> None:
        self.costs = costs
        self.seconds = costs.step_seconds
        self.order = np.argsort(self.seconds, kind="stable")
        self.sorted_seconds = self.seconds[self.order]
        self.score = scores[self.order]
        self.position = np.empty(len(self.order), dtype=np.int64)
        self.position[self.order] = np.arange(len(self.order))
        self._groups: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._distinct: dict[tuple[int, ...], tuple[list[int], int]] = {}

    def _group(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """The time-order positions of the rows of `row`'s plan (those that differ from it
        only in staleness or prefix caching) and of those near it (same CHOICE, within
        NEAR_FRACTION), eligible or not."""
        found = self._groups.get(row)
        if found is None:
            plans, seconds = self.costs.plans, self.seconds
            choice = np.flatnonzero(_same(plans, row, CHOICE))
            # a row of the same plan makes the same choice: the other fields are compared
            # on those rows only
            rest = [f for f in plans.__dataclass_fields__ if f not in FOLDED and f not in CHOICE]
            same = choice[_same(plans, row, rest, choice)]
            near = choice[np.abs(seconds[choice] - seconds[row]) < NEAR_FRACTION * seconds[row]]
            found = self._groups[row] = (self.position[same], self.position[near])
        return found

    def _shown(self, also: list[int]) -> tuple[list[int], int]:
        """`_distinct` of near-identical rows, once per set of them."""
        key = tuple(also)
        if key not in self._distinct:
            self._distinct[key] = _distinct(self.costs.plans, also, self.seconds)
        shown, count = self._distinct[key]
        return list(shown), count

    def ranking(self, eligible: np.ndarray | None = None) -> Iterator[Place]:
        """`ranking` among the `eligible` rows."""
        order, sorted_seconds, score = self.order, self.sorted_seconds, self.score
        gone = np.zeros(len(order), dtype=bool)
        if eligible is not None:
            gone |= ~np.asarray(eligible, dtype=bool)[order]

        def take(k: int, anchor: int) -> Place:
            row = int(order[k])
            same, near_at = self._group(row)
            same, near_at = same[~gone[same]], near_at[~gone[near_at]]
            also = [int(order[a]) for a in sorted(set(near_at.tolist()) - set(same.tolist()))]
            gone[same] = True
            gone[near_at] = True
            shown, count = self._shown(also)
            return Place(row, int(order[anchor]), sorted(int(order[j]) for j in same), shown, count)

        while not gone.all():
            first = int(np.argmin(gone))  # the fastest plan left
            end = int(
                np.searchsorted(sorted_seconds, sorted_seconds[first] * (1 + TIE_FRACTION), "right")
            )
            window = np.flatnonzero(~gone[first:end]) + first
            # the simplest, then the fastest: positions run in time order, so the first of
            # the lowest score (no sort of the window)
            pick = int(window[np.argmin(score[window])])
            yield take(pick, first)
            if pick != first and not gone[first]:
                yield take(first, first)

    def contenders(self, ranked: Ranked, eligible: np.ndarray, count: int) -> np.ndarray:
        """Of the `eligible` rows no slower than the tie of `ranked`'s slowest anchor (every
        row its places could have been picked from), the `count` fastest and the `count`
        simplest (by score, then time). A place is the simplest plan of its tie or the
        fastest plan left, so the places of the rankings that follow as plans leave the
        ranking are mostly among them."""
        slowest = max(self.seconds[place.anchor] for place in ranked.places)
        end = int(np.searchsorted(self.sorted_seconds, slowest * (1 + TIE_FRACTION), "right"))
        at = np.flatnonzero(np.asarray(eligible, dtype=bool)[self.order[:end]])
        simplest = at[np.argsort(self.score[at], kind="stable")[:count]]
        return self.order[np.union1d(at[:count], simplest)]

    def rank(self, top: int, eligible: np.ndarray | None = None) -> Ranked:
        """`rank` among the `eligible` rows."""
        places: list[Place] = []
        for place in self.ranking(eligible):
            if len(places) >= top and (top == 1 or place.row != places[-1].anchor):
                break
            places.append(place)
            if len(places) > top:
                break
        return Ranked(places)


ALSO_SHOWN = 5
"""Near-identical plans listed with a row (the rest are counted)."""


def _distinct(table: PlanTable, rows: list[int], seconds: np.ndarray) -> tuple[list[int], int]:
    """Of near-identical rows, one per plan (staleness and prefix-caching variants left out):
    the fastest ALSO_SHOWN, and how many there are."""
    if not rows:
        return [], 0
    index = np.asarray(rows, dtype=np.int64)
    among = table.take(index)  # judged among themselves: the full table may hold millions
    columns = [
        np.asarray(getattr(among, name), dtype=np.float64)
        for name in table.__dataclass_fields__
        if name not in FOLDED
    ]
    _, first = np.unique(np.stack(columns, axis=1), axis=0, return_index=True)
    distinct = index[first]
    distinct = distinct[np.argsort(seconds[distinct], kind="stable")]
    return [int(r) for r in distinct[:ALSO_SHOWN]], len(distinct)


@dataclass(frozen=True)
class Ranked:
    places: list[Place]

    @property
    def rows(self) -> list[int]:
        """Chosen rows, best first."""
        return [p.row for p in self.places]


def rank(
    costs: CostTable, top: int, scores: np.ndarray, eligible: np.ndarray | None = None
) -> Ranked:
    """The `top` first places of `ranking`, and, in a list of more than one, the place after
    them where the last one won a tie over it (so that the plan a tie passed over is shown;
    a single plan, as `estimate` and the atlas ask for, names it in its `tie`)."""
    return Ranker(costs, scores).rank(top, eligible)
