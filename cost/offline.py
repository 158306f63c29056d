"""The iteration of offline preference optimisation (DPO and its family): no generation.

The survey's Table 4 and Appendix B.2.2 give DPO's work per minibatch of B_pairs preference
pairs as Theta(B_pairs (S+T) [C_f(policy) + C_f(reference) + C_b(policy)]) and its depth as
Theta(max{D_f(policy), D_f(reference), D_b(policy)}): the pairs come with the dataset, so there
is no T-step decode chain, no reward model and no critic. In the cost core an offline step is
the assessment (the frozen reference's forward over both responses of every pair; none for
reference-free ORPO and SimPO) and the training (the policy's forward and backward over both
responses), one after the other on the same GPUs. Nothing is generated, so the rollout and the
weight sync do not run; the switch keeps only what the trainer's own offload moves.

A pair is two trained sequences of one prompt (`Batch.group` = 2, `generated_per_prompt` = 0).
"""

from __future__ import annotations

import numpy as np
from rlmguide.cost.compose import Span, StepTime, seq
from rlmguide.cost.stage import StageCost, idle_stage

NO_GENERATION = ("rollout", "weight_sync")
"""Stages an offline plan does not run (and its output does not show)."""


def no_generation(n: int) -> tuple[StageCost, StageCost]:
    """The rollout and the weight sync of n offline plans: nothing runs."""
    return idle_stage(n), idle_stage(n)


def offline_step(assessment: StageCost, training: StageCost, switch: StageCost) -> StepTime:
    """One iteration on the trainer's GPUs: reference forward, then the policy's forward and
    backward, plus whatever the trainer's offload moves; no pool ever waits for another."""
    step = seq(Span.of(assessment), Span.of(training), Span.of(switch))
    zero = np.zeros_like(step.seconds)
    return StepTime(
        step=step,
        rollout_idle=zero,
        train_idle=zero,
        overlap=zero,
        hidden_share=zero,
        engine_streams=np.zeros(len(zero), dtype=bool),
    )
