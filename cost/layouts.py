"""The rollout and training layouts of a plan table as float arrays, ready for the formulas."""

from __future__ import annotations

from dataclasses import dataclass

from cost.arrays import FloatArray, IntArray, floats
from cost.plans import PlanTable


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
    """Megatron order, innermost first: tp, cp, dp, pp; ep is carved out of dp x cp with the
    experts' own tensor parallelism equal to tp; ZeRO shards over dp x cp."""

    gpus: FloatArray
    tp: FloatArray
    pp: FloatArray
    cp: FloatArray
    ep: FloatArray
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
        return self.dp * self.cp / self.ep
