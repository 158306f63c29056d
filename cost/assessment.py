"""Assessment: the forward passes between generation and training, on the training GPUs.

Reference log-probs (for the KL term), old log-probs of the behaviour policy, critic values
and reward-model scores, each a forward pass over prompt + response tokens, compute-bound, in
micro-batches through the training layout's pipeline: (m + pp - 1) micro-batch times for m
micro-batches per data-parallel rank. A rule-based verifier runs on CPUs and costs no GPU time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cost.architecture import ModelFigures
from cost.arrays import BoolArray
from cost.batch import Batch
from cost.efficiency import EfficiencyFactors
from cost.hardware import Hardware
from cost.layouts import TrainLayout, TrainLinks
from cost.memory import default_micro_tokens
from cost.model_pass import flops_per_token, forward_counts
from cost.overheads import Overheads
from cost.stage import StageCost, choose, idle_stage
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
        expert_loop_seconds=overheads.expert_loop_seconds,
    )


@dataclass(frozen=True, slots=True)
class OwnPool:
    """A model's own pool (OpenRLHF's critic, reference or reward GPUs) and which plans use it."""

    layout: TrainLayout
    links: TrainLinks
    apart: BoolArray


def assessment_stage(
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
    pools: dict[str, OwnPool] | None = None,
) -> StageCost:
    """The passes run one after another on the training GPUs; a model on its own pool runs
    its pass there, beside the others, and the slowest pool sets the stage's time. With LoRA
    the reference is the base model inside the actor: its pass still runs (adapters off)."""
    trained = float(batch.trained_sequences)
    passes: list[tuple[str, ModelFigures, float]] = []
    if needs_reference:
        passes.append(("reference", policy, trained))
    if old_log_probs:
        passes.append(("actor", policy, trained))
    if critic is not None:
        passes.append(("critic", critic, trained))
    if reward is not None:
        # The reward model also scores responses that are generated but not trained on.
        passes.append(("reward", reward, float(batch.generated_sequences)))
    n = layout.gpus.shape[0]
    pools = pools or {}
    shared = idle_stage(n, layout.gpus)
    apart: list[StageCost] = []
    for role, fig, sequences in passes:
        here = forward_stage(fig, sequences, layout, links, batch, hw, eff, overheads)
        own = pools.get(role)
        if own is None:
            shared = shared + here
            continue
        there = forward_stage(fig, sequences, own.layout, own.links, batch, hw, eff, overheads)
        shared = shared + choose(own.apart, idle_stage(n), here)
        apart.append(choose(own.apart, there, idle_stage(n)))
    for stage in apart:
        shared = shared.beside(stage)
    return shared
