"""Preparation: the forward passes between generation and training, on the training GPUs.

Reference log-probs (for the KL term), old log-probs of the behaviour policy, critic values
and reward-model scores, each a forward pass over prompt + response tokens, compute-bound, in
micro-batches through the training layout's pipeline: (m + pp - 1) micro-batch times for m
micro-batches per data-parallel rank. A rule-based verifier runs on CPUs and costs no GPU time.
"""

from __future__ import annotations

import numpy as np

from cost.architecture import ModelFigures
from cost.batch import Batch
from cost.efficiency import EfficiencyFactors
from cost.hardware import Hardware
from cost.layouts import TrainLayout, TrainLinks
from cost.memory import default_micro_tokens
from cost.model_pass import flops_per_token, forward_counts
from cost.overheads import Overheads
from cost.stage import StageCost, idle_stage
from cost.training import micro_batches, pipeline_stage


def forward_stage(
    fig: ModelFigures,
    sequences: float,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> StageCost:
    """One model's forward pass over `sequences` sequences, all in one pipeline flush."""
    n = layout.gpus.shape[0]
    counts = forward_counts(n)
    # Forward passes keep no activations: they run at the configured budget.
    micro = micro_batches(sequences, layout, batch, default_micro_tokens(layout, batch, overheads))
    tokens = batch.sequence_tokens
    zero = np.zeros(n)
    return pipeline_stage(
        fig,
        layout,
        links,
        hw.flops * eff.forward_compute,
        counts,
        micro,
        batch,
        rounds=1.0,
        per_round_seconds=zero,
        per_round_up=zero,
        per_round_out=zero,
        per_round_hbm_seconds=zero,
        per_round_hbm_bytes=zero,
        per_round_link_bytes=zero,
        work_flop=sequences * tokens * flops_per_token(fig, counts, tokens),
    )


def preparation_stage(
    policy: ModelFigures,
    critic: ModelFigures | None,
    reward: ModelFigures | None,
    needs_reference: bool,
    old_log_probs: bool,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> StageCost:
    """The passes run one after another on the training GPUs."""
    trained = float(batch.trained_sequences)
    passes: list[tuple[ModelFigures, float]] = []
    if needs_reference:
        passes.append((policy, trained))
    if old_log_probs:
        passes.append((policy, trained))
    if critic is not None:
        passes.append((critic, trained))
    if reward is not None:
        # The reward model also scores responses that are generated but not trained on.
        passes.append((reward, float(batch.generated_sequences)))
    stage = idle_stage(layout.gpus.shape[0], layout.gpus)
    for fig, sequences in passes:
        stage = stage + forward_stage(fig, sequences, layout, links, batch, hw, eff, overheads)
    return stage
