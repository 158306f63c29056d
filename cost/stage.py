"""The cost of one stage over all plans, and the Brent bound that binds it.

Every stage formula returns its work time W/p (the stage's work spread perfectly over its
GPUs at the achieved rates), its depth D (the critical path no GPU count shortens) and its time
T, built so that max(W/p, D) <= T <= W/p + D holds by construction. The bound is "depth" when D
exceeds W/p, otherwise the resource that dominates W/p.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from rlmguide.cost.arrays import FloatArray, IntArray

STAGES = ("rollout", "assessment", "training", "weight_sync", "switch")
BOUNDS = ("compute", "memory-bandwidth", "scale-up", "scale-out", "depth", "environment")
DEPTH = BOUNDS.index("depth")
ENVIRONMENT = BOUNDS.index("environment")
"""Agentic rollouts: the environment pool (sandboxes, CPU slots) is the resource whose work
binds (cost.agentic)."""


@dataclass(frozen=True, slots=True)
class StageCost:
    seconds: FloatArray
    work_seconds: FloatArray
    depth_seconds: FloatArray
    work_flop: FloatArray
    hbm_bytes: FloatArray
    link_bytes: FloatArray
    gpus: FloatArray
    compute_seconds: FloatArray
    """Parts of the work time attributed to each resource (they pick the bound)."""
    hbm_seconds: FloatArray
    scale_up_seconds: FloatArray
    scale_out_seconds: FloatArray
    environment_seconds: FloatArray | None = None
    """Work time of the environment pool (agentic rollouts); zero for every other stage."""

    def __post_init__(self) -> None:
        if self.environment_seconds is None:
            object.__setattr__(self, "environment_seconds", np.zeros_like(self.seconds))

    @property
    def lower_seconds(self) -> FloatArray:
        return self.brent_at(slice(None))[0]

    @property
    def upper_seconds(self) -> FloatArray:
        return self.brent_at(slice(None))[1]

    def brent_at(self, rows: Any) -> tuple[FloatArray, FloatArray]:
        """Brent's bounds max(W/p, D) and W/p + D of some plans only."""
        work, depth = self.work_seconds[rows], self.depth_seconds[rows]
        return np.maximum(work, depth), work + depth

    @property
    def bound(self) -> IntArray:
        """Index into BOUNDS per plan."""
        return self.bound_at(slice(None))

    def bound_at(self, rows: Any) -> IntArray:
        """The bound of some plans only (one row of millions is shown at a time)."""
        resources = np.stack(
            [
                self.compute_seconds[rows],
                self.hbm_seconds[rows],
                self.scale_up_seconds[rows],
                self.scale_out_seconds[rows],
                self.environment_seconds[rows],  # type: ignore[index]
            ]
        )
        depth_bound = self.depth_seconds[rows] > self.work_seconds[rows]
        busiest = np.argmax(resources, axis=0)
        busiest = np.where(busiest == len(resources) - 1, ENVIRONMENT, busiest)
        return np.where(depth_bound, DEPTH, busiest)

    def __add__(self, other: StageCost) -> StageCost:
        """Two parts run one after the other on the same GPUs (actor then critic): times,
        work, depth and traffic add (a sum of Brent-bounded parts is Brent-bounded)."""
        summed = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name != "gpus"
        }
        return StageCost(gpus=np.maximum(self.gpus, other.gpus), **summed)

    def beside(self, other: StageCost) -> StageCost:
        """Two parts run at once on different GPUs (a model on its own pool): the slower
        sets the time, depth and work time; FLOPs, traffic and GPUs add up."""
        slower = self.seconds >= other.seconds
        values = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name in ("work_flop", "hbm_bytes", "link_bytes", "gpus"):
                values[f.name] = a + b
            elif f.name in ("seconds", "work_seconds", "depth_seconds"):
                values[f.name] = np.maximum(a, b)
            else:
                values[f.name] = np.where(slower, a, b)
        return StageCost(**values)

    def pipelined(self, other: StageCost) -> StageCost:
        """Two parts interleaved on the same GPUs (intra-stage fusion of the actor's and the
        critic's updates, survey §4.3): each one's pipeline bubbles are filled with the other's
        micro-batches, so the work adds up but the depth is the longer chain, and the time is
        at least either part's and at least the summed work: max(T_a, T_b, W_a + W_b). It lies
        between max(W, D) and W + D (Brent) and never exceeds T_a + T_b."""
        summed = self + other
        seconds = np.maximum(
            np.maximum(self.seconds, other.seconds), self.work_seconds + other.work_seconds
        )
        depth = np.maximum(self.depth_seconds, other.depth_seconds)
        values = {f.name: getattr(summed, f.name) for f in fields(self)}
        return StageCost(**{**values, "seconds": seconds, "depth_seconds": depth})

    def repeated(self, times: int) -> StageCost:
        """The same part run `times` times one after the other on the same GPUs (Safe-RLHF's
        second scorer and second value model: the same passes over the same batch)."""
        summed = self
        for _ in range(times - 1):
            summed = summed + self
        return summed

    def concat(self, other: StageCost) -> StageCost:
        """This stage's plans, then `other`'s."""
        return StageCost(
            **{
                f.name: np.concatenate([getattr(self, f.name), getattr(other, f.name)])
                for f in fields(self)
            }
        )

    def take(self, rows: np.ndarray) -> StageCost:
        return StageCost(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})


def chain(stages: list[StageCost]) -> StageCost:
    """Stages run one after another (at least one)."""
    total = stages[0]
    for stage in stages[1:]:
        total = total + stage
    return total


def choose(condition: np.ndarray, a: StageCost, b: StageCost) -> StageCost:
    """Per plan, stage `a` where the condition holds, else `b`."""
    return StageCost(
        **{f.name: np.where(condition, getattr(a, f.name), getattr(b, f.name)) for f in fields(a)}
    )


def idle_stage(n: int, gpus: FloatArray | None = None) -> StageCost:
    """A stage that does not run (no critic, a verifier reward, no switch)."""
    zero = np.zeros(n)
    return StageCost(
        seconds=zero,
        work_seconds=zero,
        depth_seconds=zero,
        work_flop=zero,
        hbm_bytes=zero,
        link_bytes=zero,
        gpus=zero if gpus is None else gpus,
        compute_seconds=zero,
        hbm_seconds=zero,
        scale_up_seconds=zero,
        scale_out_seconds=zero,
    )
