"""The rollout and training layouts of a plan table as float arrays, ready for the formulas."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cost.arrays import FloatArray, IntArray, floats
from cost.collectives import Fabric, Link, group_link
from cost.plans import PlanTable, expert_ranks


@dataclass(frozen=True, slots=True)
class RolloutLayout:
    """Inference replicas of tp x pp GPUs; dp replicas; experts over ep ranks."""

    gpus: FloatArray
    tp: FloatArray
    pp: FloatArray
    ep: FloatArray
    dp: FloatArray

    @classmethod
    def of(cls, table: PlanTable) -> RolloutLayout:
        return cls(
            gpus=floats(table.rollout_gpus),
            tp=floats(table.rollout_tp),
            pp=floats(table.rollout_pp),
            ep=floats(table.rollout_ep),
            dp=floats(table.rollout_dp),
        )


@dataclass(frozen=True, slots=True)
class TrainLayout:
    """Megatron order, innermost first: tp, cp, dp, pp; ZeRO shards over dp x cp. Expert
    layers fold the same tp x cp x dp ranks into etp x ep x expert-dp (MoE parallel folding);
    etp = tp is the classic layout, where ep is carved out of dp x cp."""

    gpus: FloatArray
    tp: FloatArray
    pp: FloatArray
    cp: FloatArray
    ep: FloatArray
    etp: FloatArray
    dp: FloatArray
    zero: IntArray
    recompute: IntArray

    @classmethod
    def of(cls, table: PlanTable) -> TrainLayout:
        return cls(
            gpus=floats(table.train_gpus),
            tp=floats(table.train_tp),
            pp=floats(table.train_pp),
            cp=floats(table.train_cp),
            ep=floats(table.train_ep),
            etp=floats(table.train_etp),
            dp=floats(table.train_dp),
            zero=table.train_zero,
            recompute=table.train_recompute,
        )

    @property
    def shard_group(self) -> FloatArray:
        """Ranks that hold the same dense weights: ZeRO and gradient reduction run over them."""
        return self.dp * self.cp

    @property
    def expert_shard_group(self) -> FloatArray:
        """Ranks that hold the same experts (expert data parallelism)."""
        return expert_ranks(self.dp, self.cp, self.tp, self.etp) / self.ep


@dataclass(frozen=True, slots=True)
class TrainLinks:
    """The process groups of a training layout and the link each uses (ranks innermost
    first: tp, cp, dp, pp; experts over ep ranks strided by etp)."""

    tp: Link
    cp: Link
    ep: Link
    shard: Link
    """dp x cp ranks holding the same dense weights: gradients and ZeRO shards."""
    expert_shard: Link
    pp: Link
    """Neighbouring pipeline stages (a group of 2, or of 1 without pipelining)."""

    @classmethod
    def of(cls, fabric: Fabric, layout: TrainLayout) -> TrainLinks:
        tp, cp, ep, dp, pp = layout.tp, layout.cp, layout.ep, layout.dp, layout.pp
        return cls(
            tp=group_link(fabric, tp, 1.0),
            cp=group_link(fabric, cp, tp),
            ep=group_link(fabric, ep, layout.etp),
            shard=group_link(fabric, layout.shard_group, tp),
            expert_shard=group_link(fabric, layout.expert_shard_group, layout.etp * ep),
            pp=group_link(fabric, np.where(pp > 1, 2.0, 1.0), tp * cp * dp),
        )
