"""Plans across two parts of a mixed cluster: rollout on one accelerator, training on another.

The same plan table is costed three times by `cost.evaluate`: on the rollout part's hardware
(its rollout stage and rollout memory are kept), on the training part's hardware (assessment,
training, offload traffic and the trainer's memory), and once more for the weight sync, whose
broadcast crosses the link between the parts. `across` puts the kept pieces together and
composes the step again with `cost.compose.compose_step`, so the placement and execution rules
are the ones every other plan follows.

The link rate depends on whether one collective group can span both parts. Between GPUs of
one vendor NCCL broadcasts at the link's rate. NCCL and RCCL do not interoperate (HetCCL,
arXiv:2601.22585, section 1), so between vendors the weights are staged through host memory
(device to host, the network, host to device: pipelined bucket by bucket, the slowest of the
three sets the rate) unless a cross-vendor RDMA path is available, as HetCCL builds.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rlmguide.cost.compose import compose_step
from rlmguide.cost.evaluate import CostTable, bottleneck
from rlmguide.cost.plans import COLOCATED
from rlmguide.cost.rollout import Stream

TRAINER_POOLS = ("training", "critic", "reference", "reward", "host")
"""The pools of `CostTable.pool_overflow_gib` that live on the training part."""


def link_gbps(
    link_gbps_per_gpu: float,
    same_vendor: bool,
    staged: bool,
    host_gbytes_per_s: tuple[float, float],
) -> float:
    """The rate per GPU (Gbit/s) a cross-part weight sync gets: the link's, or between
    vendors staged through host memory the slowest of the link and the two host links (the
    trainer's device-to-host copy and the rollout's host-to-device copy, GB/s each)."""
    if same_vendor or not staged:
        return link_gbps_per_gpu
    return min(link_gbps_per_gpu, *(8.0 * rate for rate in host_gbytes_per_s))


def across(
    rollout_side: CostTable,
    trainer_side: CostTable,
    sync_side: CostTable,
    *,
    minibatches: int,
    epochs: int,
) -> CostTable:
    """One cost table for disaggregated plans whose pools sit on different parts: the three
    tables cost the same plans (row i is plan i in each) on the rollout part's hardware, the
    training part's hardware, and the training part's hardware with the link between the
    parts as its network (the weight sync). `minibatches` and `epochs` are the workload's,
    as `cost.evaluate` passes them to the composition."""
    plans = trainer_side.plans
    if np.any(plans.placement == COLOCATED):
        raise ValueError("a colocated plan shares its GPUs, so it cannot span two parts")
    stages = {
        "rollout": rollout_side.stages["rollout"],
        "assessment": trainer_side.stages["assessment"],
        "training": trainer_side.stages["training"],
        "weight_sync": sync_side.stages["weight_sync"],
        "switch": trainer_side.stages["switch"],
    }
    timing = compose_step(
        plans.placement,
        plans.execution,
        plans.staleness,
        *(stages[name] for name in ("rollout", "assessment", "training", "weight_sync")),
        stages["switch"],
        plans.fusion,
        stream=Stream(
            rollout_side.stream_concurrency,
            rollout_side.stream_produce_seconds,
            rollout_side.stream_sequence_seconds,
        ),
        minibatches=float(minibatches),
        epochs=float(epochs),
    )
    step = timing.step.seconds
    # Each pool is judged against its own part's memory.
    overflows = {"rollout": rollout_side.pool_overflow_gib["rollout"]}
    overflows.update(
        {k: v for k, v in trainer_side.pool_overflow_gib.items() if k in TRAINER_POOLS}
    )
    overflow = np.maximum(np.max(np.stack(list(overflows.values())), axis=0), 0.0)
    # Positive overflows below a byte are rounding (as in cost.evaluate).
    overflow = np.where(overflow > 1e-9, overflow, 0.0)
    terms = {"rollout": rollout_side.memory_terms_gib["rollout"]}
    terms.update({k: v for k, v in trainer_side.memory_terms_gib.items() if k != "rollout"})
    trained_tokens = trainer_side.tokens_per_second * trainer_side.step_seconds
    colocated = np.zeros(len(plans), dtype=bool)
    return replace(
        trainer_side,
        stages=stages,
        step_seconds=step,
        step_lower_seconds=timing.step.lower,
        step_upper_seconds=timing.step.upper,
        tokens_per_second=trained_tokens / step,
        memory_rollout_gib=rollout_side.memory_rollout_gib,
        feasible=overflow <= 0.0,
        overflow_gib=overflow,
        bottleneck=bottleneck(stages, colocated, timing),
        rollout_concurrency=rollout_side.rollout_concurrency,
        engine_concurrency=rollout_side.engine_concurrency,
        rollout_min_token_seconds=rollout_side.rollout_min_token_seconds,
        rollout_idle_seconds=timing.rollout_idle,
        train_idle_seconds=timing.train_idle,
        overlap_seconds=timing.overlap,
        overlap_share=timing.hidden_share,
        stream_concurrency=rollout_side.stream_concurrency,
        stream_produce_seconds=rollout_side.stream_produce_seconds,
        stream_sequence_seconds=rollout_side.stream_sequence_seconds,
        memory_terms_gib=terms,
        pool_overflow_gib=overflows,
        rollout_memory_fraction=rollout_side.rollout_memory_fraction,
        headroom_gib={**trainer_side.headroom_gib, "rollout": rollout_side.headroom_gib["rollout"]},
    )
