"""The entry point: resolved specs + a plan table -> a table of stage and step costs.

One code path serves one plan (a table of length 1, read back with `CostTable.row`) and a
whole search (hundreds of thousands of rows): every formula runs over arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
from rlmguide.cost.agentic import agentic_rollout_stage
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray, IntArray, floats, unique_rows
from rlmguide.cost.assessment import (
    ONE_PASS,
    Assessment,
    OwnPool,
    Reference,
    Scoring,
    assessment_stage,
    relayout_stage,
)
from rlmguide.cost.band import memory_band, step_band
from rlmguide.cost.batch import Batch, Needs, response_lengths
from rlmguide.cost.collectives import Fabric, group_link
from rlmguide.cost.compose import StepTime, compose_step
from rlmguide.cost.efficiency import EfficiencyFactors, resolve_efficiency
from rlmguide.cost.episode import Episode
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout, TrainLayout, TrainLinks
from rlmguide.cost.memory import (
    WEIGHT_BYTES,
    Frozen,
    Placed,
    TrainMemory,
    default_micro_tokens,
    rollout_memory,
    training_memory,
)
from rlmguide.cost.offline import NO_GENERATION, no_generation, offline_step
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, Overheads
from rlmguide.cost.plans import (
    ASYNC,
    PARTIAL_ROLLOUT,
    SYNC,
    PlanTable,
    check_plans,
    frozen_models,
    inter_stage,
    intra_stage,
    shares_gpus,
)
from rlmguide.cost.rollout import RolloutExtras, Stream, rollout_stage
from rlmguide.cost.stage import BOUNDS, STAGES, StageCost
from rlmguide.cost.step_search import StepSearch, search_stage
from rlmguide.cost.training import training_stage
from rlmguide.cost.units import FP8_BYTES, GIB
from rlmguide.cost.weight_sync import switch_stage, weight_sync_stage
from rlmguide.kb.schema import Efficiency, Workload
from rlmguide.kb.schema.specs import AcceleratorFigures, Architecture


@dataclass(frozen=True, slots=True)
class CostTable:
    """Costs of every plan of a table; entry i of each array belongs to plan i."""

    plans: PlanTable
    stages: dict[str, StageCost]
    """By name, in STAGES order: rollout, assessment, training, weight_sync, switch."""
    step_seconds: FloatArray
    step_lower_seconds: FloatArray
    step_upper_seconds: FloatArray
    tokens_per_second: FloatArray
    memory_rollout_gib: FloatArray
    """What a rollout GPU holds while it generates: the engine's whole budget (vLLM and SGLang
    reserve weights and KV cache at their memory fraction, filled or not) beside what stays
    resident."""
    memory_train_gib: FloatArray
    feasible: BoolArray
    overflow_gib: FloatArray
    """How far the tighter phase exceeds the usable memory per GPU (0 when it fits)."""
    offload_gib: FloatArray
    """Host memory per training GPU holding offloaded state at its peak."""
    bottleneck: IntArray
    """Index into STAGES of the longest stage."""
    rollout_concurrency: FloatArray
    engine_concurrency: FloatArray
    """Most sequences one engine decodes at once as costed: the stream's where the engine
    streams (`StepTime.engine_streams`), else the batch's; a launch capping its engines'
    running sequences below this runs slower than the plan."""
    rollout_min_token_seconds: FloatArray
    rollout_idle_seconds: FloatArray
    train_idle_seconds: FloatArray
    memory_terms_gib: dict[str, dict[str, FloatArray]]
    """Per pool (rollout, training, and critic / reference / reward on their own pools) the
    terms of its peak per GPU; `host` holds the offloaded state per node."""
    pool_overflow_gib: dict[str, FloatArray]
    """Per pool, how far its peak exceeds the usable memory (negative: room left)."""
    assessment_parts: dict[str, FloatArray]
    """Seconds of each model's part of the assessment (cost.assessment.Assessment)."""
    rollout_memory_fraction: FloatArray
    """Share of one rollout GPU's HBM the engine is budgeted: its weights, workspace (the
    activation profile, CUDA graphs, sampler) and the KV cache it may fill. What vLLM's
    gpu_memory_utilization must be set to for the plan's KV cache to exist (0 offline)."""
    train_micro_tokens: FloatArray
    """Tokens of one training micro-batch the training memory was costed at, over the
    context-parallel group (a GPU holds this / cp)."""
    headroom_gib: dict[str, FloatArray]
    """Per pool (rollout, train, and critic / reference / reward on pools of their own), the
    GiB per GPU its peak leaves free of the HBM."""
    overlap_seconds: FloatArray
    """Seconds per step the plan runs concurrently (cost.compose.StepTime.overlap)."""
    overlap_share: FloatArray
    """The overlap as a share of the shorter side (cost.compose.StepTime.hidden_share)."""
    stream_concurrency: FloatArray
    """Sequences a replica keeps in flight when it streams (cost.rollout.Stream)."""
    stream_produce_seconds: FloatArray
    stream_sequence_seconds: FloatArray
    fusion_chunk: FloatArray
    """Samples per hand-off from the rollout to the assessment where the plan fuses them
    (inter-stage), as costed (the plan's, or the default `fusion_handoffs` fills); 0 else."""
    fusion_handoffs: FloatArray
    """Hand-offs per step (1 where nothing streams)."""
    fusion_overhead_seconds: FloatArray
    """What the chunks cost a fused step: a sync per hand-off, and the assessment's time
    stretched where a chunk leaves data-parallel ranks idle (0 where nothing streams)."""
    offline: bool = False
    """Offline preference optimisation: no rollout or weight sync to show (cost.offline)."""
    agentic_parts: dict[str, FloatArray] = field(default_factory=dict)
    """Agentic episodes: the rollout's terms per plan (cost.agentic); empty for one turn."""

    def __len__(self) -> int:
        return len(self.plans)

    def take(self, rows: np.ndarray) -> CostTable:
        values: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "stages":
                values[f.name] = {k: v.take(rows) for k, v in value.items()}
            elif f.name == "memory_terms_gib":
                values[f.name] = {p: {k: v[rows] for k, v in t.items()} for p, t in value.items()}
            elif f.name in (
                "pool_overflow_gib",
                "assessment_parts",
                "headroom_gib",
                "agentic_parts",
            ):
                values[f.name] = {k: v[rows] for k, v in value.items()}
            elif f.name == "offline":
                values[f.name] = value
            else:
                values[f.name] = value.take(rows) if f.name == "plans" else value[rows]
        return CostTable(**values)

    def concat(self, other: CostTable) -> CostTable:
        """This table's plans, then `other`'s (a key one table lacks counts as 0 there)."""

        def join(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
            zeros_a, zeros_b = np.zeros(len(self)), np.zeros(len(other))
            return {k: np.concatenate([a.get(k, zeros_a), b.get(k, zeros_b)]) for k in {**a, **b}}

        values: dict[str, Any] = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name == "plans":
                values[f.name] = a.concat(b)
            elif f.name == "stages":
                values[f.name] = {k: v.concat(b[k]) for k, v in a.items()}
            elif f.name == "memory_terms_gib":
                values[f.name] = {p: join(a.get(p, {}), b.get(p, {})) for p in {**a, **b}}
            elif f.name in (
                "pool_overflow_gib",
                "assessment_parts",
                "headroom_gib",
                "agentic_parts",
            ):
                values[f.name] = join(a, b)
            elif f.name == "offline":
                if a != b:
                    raise ValueError("an offline and an online table cannot be joined")
                values[f.name] = a
            else:
                values[f.name] = np.concatenate([a, b])
        return CostTable(**values)

    def stage_row(self, name: str, i: int) -> dict[str, Any]:
        s = self.stages[name]
        lower, upper = s.brent_at(i)
        return {
            "name": name,
            "seconds": float(s.seconds[i]),
            "lower_seconds": float(lower),
            "upper_seconds": float(upper),
            "work_seconds": float(s.work_seconds[i]),
            "work_flop": float(s.work_flop[i]),
            "hbm_bytes": float(s.hbm_bytes[i]),
            "link_bytes": float(s.link_bytes[i]),
            "depth_seconds": float(s.depth_seconds[i]),
            "gpus": int(s.gpus[i]),
            "bound": BOUNDS[int(s.bound_at(i))],
        }

    def row(self, i: int) -> dict[str, Any]:
        """Plan i as the JSON of `recommend`/`estimate` (DESIGN.md) without rank, rules and
        frameworks, which the guideline engine adds; extra keys carry the feasibility."""
        moved = float(self.stages["switch"].seconds[i]) > 0.0
        names = [n for n in STAGES if n != "switch" or moved]
        plan = self.plans.row(i)
        plan["rollout"]["memory_fraction"] = float(self.rollout_memory_fraction[i])
        plan["train"]["micro_batch_tokens"] = int(self.train_micro_tokens[i])
        if plan["fusion_chunk"] is not None or self.fusion_chunk[i] > 0:
            plan["fusion_chunk"] = int(self.fusion_chunk[i])
        memory = {
            "rollout": float(self.memory_rollout_gib[i]),
            "train": float(self.memory_train_gib[i]),
        }
        # A model's own pool (critic, reference, reward) only where the plan gives it one.
        headroom = {
            k: float(v[i])
            for k, v in self.headroom_gib.items()
            if k in ("rollout", "train") or plan["pools"].get(k)
        }
        if self.offline:
            # Nothing is generated: no rollout layout, stage or memory is shown as if it ran.
            names = [n for n in names if n not in NO_GENERATION]
            plan.update(rollout=None, prefix_caching=None, offline=True)
            del memory["rollout"]
            headroom.pop("rollout", None)
        low, high = step_band(float(self.step_seconds[i]))
        # The engine's share is exact (the plan writes it as the engine's memory fraction, of
        # the HBM the figure and its headroom make up); only what stays resident beside it is
        # estimated.
        reserved: dict[str, float] = {}
        if "rollout" in memory:
            hbm_gib = memory["rollout"] + headroom["rollout"]
            reserved["rollout"] = float(self.rollout_memory_fraction[i]) * hbm_gib
        return {
            **plan,
            "step_seconds": float(self.step_seconds[i]),
            "step_seconds_band": [low, high],
            "step_lower_seconds": float(self.step_lower_seconds[i]),
            "step_upper_seconds": float(self.step_upper_seconds[i]),
            "tokens_per_second": float(self.tokens_per_second[i]),
            "stages": [self.stage_row(n, i) for n in names],
            "memory_gib_per_gpu": memory,
            "memory_gib_per_gpu_band": {
                k: list(memory_band(v, reserved.get(k, 0.0))) for k, v in memory.items()
            },
            "headroom_gib_per_gpu": headroom,
            "bottleneck": STAGES[int(self.bottleneck[i])],
            "feasible": bool(self.feasible[i]),
            "overflow_gib": float(self.overflow_gib[i]),
            "offload_gib": float(self.offload_gib[i]),
            "rollout_concurrency": int(self.rollout_concurrency[i]),
            "engine_concurrency": int(self.engine_concurrency[i]),
            "idle_seconds": {
                "rollout": float(self.rollout_idle_seconds[i]),
                "train": float(self.train_idle_seconds[i]),
            },
            "memory_breakdown_gib": {
                pool: {k: float(v[i]) for k, v in terms.items()}
                for pool, terms in self.memory_terms_gib.items()
            },
            "pool_overflow_gib": {k: float(v[i]) for k, v in self.pool_overflow_gib.items()},
            "assessment_seconds_by_model": {
                k: float(v[i]) for k, v in self.assessment_parts.items()
            },
            "overlap": self.overlap_row(i, plan),
            **({"agentic": self.agentic_row(i)} if self.agentic_parts else {}),
        }

    def overlap_row(self, i: int, plan: dict[str, Any]) -> dict[str, Any]:
        """How the plan overlaps its stages: the pipeline its execution mode runs, the seconds
        and share hidden, the batches in flight and when weights reach the engine."""
        execution, apart = plan["execution"], plan["placement"] != "colocated"
        if self.offline:
            pipeline, pushed = "offline: nothing generated", "never"
        elif apart and execution == "async" and plan["max_staleness"] == 0:
            pipeline = (
                "one batch per step, drained; each sample goes to the trainer as it "
                "completes, which updates on every mini-batch as soon as its samples are in"
            )
            pushed = "after the step's last update; the engine waits"
        elif apart and execution == "async":
            pipeline = (
                f"stream: {plan['max_staleness']} steps' worth of requests in flight, "
                f"{int(self.stream_concurrency[i])} decoding per engine; the engine keeps "
                "decoding while new weights arrive"
            )
            pushed = "after every trainer step, into the running engine"
        elif apart and execution == "one-step-off":
            pipeline = "the next batch generates while this one trains; each batch drains"
            pushed = "after every trainer step, before the next batch starts"
        elif apart:
            pipeline = "the pools take turns"
            pushed = "after every trainer step; the engine waits"
        else:
            pipeline = "one pool, stage after stage"
            pushed = "in place, after every trainer step"
        handoffs = int(self.fusion_handoffs[i])
        # the assessment waits for the rollout only there; overlapping modes already hide it
        streams = bool(plan.get("fusion_chunk")) and execution in ("sync", "partial-rollout")
        if streams:
            # inter-stage fusion: the hidden share and the hand-offs' cost are the chunk's
            pipeline += (
                f"; the assessment streams behind the rollout in {handoffs} hand-offs of "
                f"{plan['fusion_chunk']} samples: all but the last chunk's "
                f"{100.0 / handoffs:.0f}% of it hides under the decode, each hand-off pays a "
                "sync, and the assessment's buffers for one chunk sit beside the engine"
                + (" (one pool)" if not apart else "")
            )
        return {
            "seconds": float(self.overlap_seconds[i]),
            "share": float(self.overlap_share[i]),
            "pipeline": pipeline,
            "weights_pushed": pushed,
            **(
                {
                    "fusion_handoffs": handoffs,
                    "fusion_overhead_seconds": float(self.fusion_overhead_seconds[i]),
                }
                if streams
                else {}
            ),
        }

    def agentic_row(self, i: int) -> dict[str, Any]:
        parts = {k: float(v[i]) for k, v in self.agentic_parts.items()}
        return {**parts, "kv_kept": bool(parts["kv_kept"])}


TRAIN_COLUMNS = (
    "train_gpus", "train_tp", "train_pp", "train_cp", "train_ep", "train_etp", "train_zero",
    "train_shard_group", "train_frozen_shard_group", "train_ep_isolated", "train_recompute",
    "train_fp8", "train_lora_rank",
    "offload_phase",
    "offload_optimizer",
    "offload_params", "offload_frozen", "critic_gpus", "reference_gpus", "reward_gpus",
    "critic_shared", "fusion", "fusion_chunk", "train_micro_tokens", "train_fp32_gradients",
    "train_forward_micro_tokens", "train_sequence_parallel", "train_virtual_stages",
    "train_first_layers", "train_last_layers",
    "assess_tp", "assess_pp",
)  # fmt: skip
"""The plan fields the trainer's side (memory, assessment, training, offload) depends on."""
ROLLOUT_COLUMNS = (
    "rollout_gpus", "rollout_tp", "rollout_pp", "rollout_ep", "rollout_attention_dp",
    "rollout_cp", "rollout_fp8", "rollout_eager", "rollout_max_seqs",
)  # fmt: skip
SYNC_COLUMNS = (
    "train_gpus", "train_tp", "train_pp", "train_cp", "train_zero", "train_lora_rank",
    "rollout_per_tensor",
)  # fmt: skip
"""With the rollout layout and the placement, what weight sync depends on."""


@dataclass(frozen=True, slots=True)
class Assessed:
    """What the assessment runs beyond the algorithm's needs: the reference model, how the
    reward model scores and whether old log-probs are recomputed."""

    reference: Reference
    scoring: Scoring
    old_log_probs: bool | BoolArray
    """Per plan where an array (a launch that skips the pass in some execution modes)."""
    searched: int = 0
    """Completions decoded per response by a search from its states, each scored as a
    response is."""


@dataclass(frozen=True, slots=True)
class TrainerSide:
    memory: TrainMemory
    own_memory: dict[str, TrainMemory]
    assessment: Assessment
    training: StageCost
    switch: StageCost
    chunk: FloatArray
    handoffs: FloatArray
    stretch: FloatArray


def fusion_handoffs(
    plans: PlanTable, layout: TrainLayout, batch: Batch, overheads: Overheads
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Samples per hand-off and hand-offs per step of the plans with inter-stage fusion
    (0 and 1 elsewhere): the plan's chunk (plan.fusion_chunk), or one assessment micro-batch
    per data-parallel rank of the training layout (the finest chunk whose passes still run
    at the micro-batch budget), at most the whole batch; and how much longer the assessment
    takes in those chunks: a chunk of fewer samples than the data-parallel ranks the whole
    batch keeps busy leaves the others idle (micro_batches gives each rank whole
    sequences)."""
    generated = float(batch.generated_sequences)
    per_micro = np.maximum(
        np.floor(default_micro_tokens(layout, batch, overheads) / batch.sequence_tokens), 1.0
    )
    chosen = np.where(plans.fusion_chunk > 0, plans.fusion_chunk, layout.data_shards * per_micro)
    chunk = np.where(inter_stage(plans.fusion), np.minimum(chosen, max(generated, 1.0)), 0.0)
    handoffs = np.where(chunk > 0, np.ceil(generated / np.maximum(chunk, 1.0)), 1.0)
    # ranks a chunk keeps busy over those the whole batch does
    busy = np.minimum(layout.data_shards, max(generated, 1.0))
    stretch = np.where(chunk > 0, np.maximum(busy / np.maximum(chunk, 1.0), 1.0), 1.0)
    return chunk, np.maximum(handoffs, 1.0), stretch


def _trainer_side(
    plans: PlanTable,
    actor: ModelFigures,
    critic_fig: ModelFigures | None,
    reward_fig: ModelFigures | None,
    needs: Needs,
    assessed: Assessed,
    batch: Batch,
    hw: Hardware,
    fabric: Fabric,
    eff: EfficiencyFactors,
    overheads: Overheads,
    trainable: float,
) -> TrainerSide:
    """Memory, assessment, training and offload traffic of the training pool (and of the
    models' own pools), for plans that differ in their training layout."""
    t_layout = TrainLayout.of(plans)
    t_links = TrainLinks.of(fabric, t_layout)
    # The frozen models' layout (plan.assessment; the training layout where none is given,
    # the same objects when no plan gives one, so a search without it costs nothing more).
    a_layout, a_links = t_layout, t_links
    if (plans.assess_tp > 0).any():
        a_layout = t_layout.assessed(floats(plans.assess_tp), floats(plans.assess_pp))
        a_links = TrainLinks.of(fabric, a_layout)
    everywhere = np.ones(len(plans), dtype=bool)
    # Models on their own pools (OpenRLHF's critic, reference and reward GPUs); the frozen
    # ones in their layout.
    c_layout, c_links, critic_apart = _own_pool(fabric, t_layout, plans.critic_gpus)
    ref_layout, ref_links, ref_apart = _own_pool(fabric, a_layout, plans.reference_gpus)
    rm_layout, rm_links, rm_apart = _own_pool(fabric, a_layout, plans.reward_gpus)
    # A shared critic is a value head on the actor: no critic weights, gradients or states.
    separate_critic = ~plans.critic_shared
    # With LoRA the reference is the frozen base inside the actor: no second copy.
    separate_reference = needs.needs_reference & ~t_layout.lora

    # Memory of the actor's training pool (it also sizes the training micro-batches).
    ref = assessed.reference
    ref_bytes = FP8_BYTES if ref.fp8 else WEIGHT_BYTES
    # one scoring model and one value model per objective (Safe-RLHF: reward and cost)
    k = needs.objectives
    chunk, handoffs, stretch = fusion_handoffs(plans, t_layout, batch, overheads)
    trained: list[Placed] = [(actor, everywhere)]
    # A framework that runs the reference in the actor's parameters (Overheads.reference_swap)
    # does so for a parked reference of the actor's own shape, dtype and layout.
    swap = (
        overheads.reference_swap > 0
        and ref.fig == actor
        and ref_bytes == WEIGHT_BYTES
        and a_layout is t_layout
    )
    in_actor = separate_reference & ~ref_apart & (t_layout.offload_frozen if swap else False)
    frozen: list[Frozen] = [(ref.fig, separate_reference & ~ref_apart & ~in_actor, ref_bytes)]
    if critic_fig is not None:
        trained += [(critic_fig, ~critic_apart & separate_critic)] * k
    if reward_fig is not None:
        frozen += [(reward_fig, ~rm_apart, WEIGHT_BYTES)] * k
    train_mem = training_memory(
        trained, frozen, t_layout, batch, trainable, overheads, a_layout, chunk,
        intra_stage(plans.fusion), [(ref.fig, in_actor, ref_bytes)],
    )  # fmt: skip
    micro_tokens = np.maximum(train_mem.micro_tokens, batch.sequence_tokens)
    own_memory: dict[str, TrainMemory] = {}
    if critic_fig is not None and critic_apart.any():
        own_memory["critic"] = training_memory(
            [(critic_fig, critic_apart & separate_critic)] * k,
            [],
            c_layout,
            batch,
            trainable,
            overheads,
        )
    if ref_apart.any():
        own_memory["reference"] = training_memory(
            [], [(ref.fig, ref_apart & separate_reference, ref_bytes)], ref_layout, batch,
            trainable, overheads,
        )  # fmt: skip
    if reward_fig is not None and rm_apart.any():
        own_memory["reward"] = training_memory(
            [], [(reward_fig, rm_apart, WEIGHT_BYTES)] * k, rm_layout, batch, trainable, overheads
        )
    pools = {
        "reference": OwnPool(ref_layout, ref_links, ref_apart),
        "reward": OwnPool(rm_layout, rm_links, rm_apart),
        "critic": OwnPool(c_layout, c_links, critic_apart),
    }
    assessment = assessment_stage(
        actor,
        critic_fig,
        reward_fig,
        ref if needs.needs_reference else None,
        assessed.old_log_probs,
        t_layout,
        t_links,
        batch,
        hw,
        eff,
        overheads,
        pools,
        assessed.scoring,
        plans.critic_shared,
        objectives=k,
        scored_per_response=1 + assessed.searched,
        frozen_layout=(a_layout, a_links),
    )
    if train_mem.terms.get("reshard") is not None:
        # the frozen models re-laid for the assessment on the trainer's GPUs, before it
        relayout = relayout_stage(frozen, t_layout, t_links, a_layout)
        assessment = Assessment(assessment.stage + relayout, assessment.parts)
    critic_tokens = (
        np.maximum(own_memory["critic"].micro_tokens, batch.sequence_tokens)
        if "critic" in own_memory
        else micro_tokens
    )
    training = training_stage(
        actor,
        critic_fig,
        t_layout,
        t_links,
        batch,
        micro_tokens,
        hw,
        eff,
        overheads,
        critic_pool=(c_layout, c_links, critic_tokens),
        critic_apart=critic_apart,
        critic_shared=plans.critic_shared,
        intra_fused=intra_stage(plans.fusion),
        objectives=k,
    )
    switch = switch_stage(train_mem.switch, t_layout.gpus, hw)
    return TrainerSide(
        train_mem, own_memory, assessment, training, switch, chunk, handoffs, stretch
    )


def _own_pool(
    fabric: Fabric, layout: TrainLayout, gpus: IntArray
) -> tuple[TrainLayout, TrainLinks, BoolArray]:
    """A model's own pool with `layout`'s degrees (the training layout's, or the frozen
    models'; `layout`'s own pool where the plan gives the model none, so the arrays stay well
    defined)."""
    apart = gpus > 0
    own = layout.with_gpus(np.where(apart, floats(gpus), layout.gpus))
    return own, TrainLinks.of(fabric, own), apart


def engine_concurrency(extras: RolloutExtras, timing: StepTime) -> FloatArray:
    """Most sequences one engine decodes at once: where it streams, a step's batch and the
    steps it runs ahead (`cost.rollout`'s steady concurrency, up to its KV capacity) can hold
    more than the batch alone, and a launch must let the engine run that many; rounded up,
    since a stream's mean in flight may be fractional and a cap of its floor would trim it."""
    streamed = np.maximum(extras.stream.concurrency, extras.concurrency)
    return np.ceil(np.where(timing.engine_streams, streamed, extras.concurrency))


def fullest_node(pools: list[tuple[FloatArray, IntArray]], node_gpus: int) -> FloatArray:
    """Host bytes of the fullest node: its GPUs taken from the pools that park the most state
    a GPU first, each up to its own GPU count (pools: per-GPU host bytes and GPUs, per plan).
    A pool of a node or more fills a node alone; pools smaller than a node may share one
    (NeMo-RL's 4 + 4 split of one node), and whatever packing the framework chooses, no
    node holds more than this."""
    host = np.stack([h for h, _ in pools])
    gpus = np.stack([g for _, g in pools]).astype(float)
    order = np.argsort(-host, axis=0, kind="stable")
    host, gpus = np.take_along_axis(host, order, 0), np.take_along_axis(gpus, order, 0)
    before = np.cumsum(gpus, axis=0) - gpus
    return np.sum(host * np.clip(node_gpus - before, 0.0, gpus), axis=0)


def evaluate(
    accelerator: AcceleratorFigures,
    policy: Architecture,
    workload: Workload,
    plans: PlanTable,
    *,
    needs: Needs | None = None,
    critic: Architecture | None = None,
    reward: Architecture | None = None,
    scoring: Scoring = ONE_PASS,
    reference: Architecture | None = None,
    reference_fp8: bool = False,
    old_log_probs: bool | BoolArray = True,
    gpus_per_node: int = 8,
    nodes: int | None = None,
    scale_out_gbps_per_gpu: float | None = None,
    domain_gpus: int | None = None,
    host_link_gbytes_per_s: float | None = None,
    host_memory_gib_per_node: float | None = None,
    efficiency: Efficiency | EfficiencyFactors | None = None,
    overheads: Overheads = DEFAULT_OVERHEADS,
    check: bool = True,
    episode: Episode | None = None,
) -> CostTable:
    """Cost every plan of `plans` for one RL step.

    `critic` defaults to the policy's architecture when `needs` asks for a critic; `reward`
    is the reward model's architecture, or None for a rule-based verifier, and `scoring` how
    it scores (one forward per response, a process reward model's per-step passes, an LLM
    judge's verdicts). `reference` defaults to the policy's architecture, in bf16 unless
    `reference_fp8`. Without `old_log_probs` the trainer trusts the rollout engine's
    log-probs instead of recomputing them (per plan where it is an array over `plans`).
    `episode` is an agentic workload's shape with the plan's stepping (default: the
    workload's own, independent stepping). `nodes` (if given) bounds the GPUs a plan may
    use; `domain_gpus` is the scale-up domain (default: the node).
    With `check` the table's factorisations are validated first and the first problem raised
    as a `PlanError`.
    """
    needs = needs or Needs()
    eff = resolve_efficiency(efficiency)
    critic_arch = (critic or policy) if needs.needs_critic else None
    if check:
        cluster = nodes * gpus_per_node if nodes is not None else None
        frozen = frozen_models(policy, reference, reward, needs.needs_reference)
        check_plans(plans, policy, critic_arch, cluster_gpus=cluster, frozen=frozen)

    hw = Hardware.of(
        accelerator,
        gpus_per_node,
        overheads,
        scale_out_gbps_per_gpu,
        domain_gpus=domain_gpus,
        host_link_gbytes_per_s=host_link_gbytes_per_s,
        host_memory_gib_per_node=host_memory_gib_per_node,
    )
    fabric = Fabric.of(hw, eff, overheads)
    batch = Batch.of(workload, needs)
    actor = ModelFigures.of(policy)
    # A critic and an outcome reward model end in a scalar head, not the vocabulary logits.
    critic_fig = ModelFigures.of(critic_arch).scoring() if critic_arch is not None else None
    reward_fig = ModelFigures.of(reward) if reward is not None else None
    if reward_fig is not None and scoring.kind == "reward-model":
        reward_fig = reward_fig.scoring()
    reference_fig = ModelFigures.of(reference) if reference is not None else actor
    # Offline there is no behaviour policy whose log-probs could be recomputed.
    if needs.offline:
        old_log_probs = False
    search = StepSearch.of(workload, needs)
    searched = search.completions_per_response if search is not None else 0
    assessed = Assessed(Reference(reference_fig, reference_fp8), scoring, old_log_probs, searched)
    # The engine's budget on a rollout GPU; what a training GPU's tensors may take.
    usable = hw.memory_bytes * overheads.usable_memory_fraction
    trainable = hw.memory_bytes - overheads.train_runtime_reserve_bytes
    colocated = shares_gpus(plans.placement)
    n = len(plans)

    # The trainer's side depends on the training layout alone (and on whether the old
    # log-probs' pass runs, where that differs by plan): cost each distinct one once.
    recomputed = np.broadcast_to(np.asarray(old_log_probs, dtype=bool), (n,))
    first, spread = unique_rows(*(getattr(plans, name) for name in TRAIN_COLUMNS), recomputed)
    side = _trainer_side(
        plans.take(first), actor, critic_fig, reward_fig, needs,
        replace(assessed, old_log_probs=recomputed[first]), batch, hw, fabric, eff, overheads,
        trainable,
    )  # fmt: skip
    train_mem = side.memory.take(spread)
    own_memory = {role: m.take(spread) for role, m in side.own_memory.items()}
    assessed_parts = side.assessment.take(spread)
    assessment, training = assessed_parts.stage, side.training.take(spread)
    switch = side.switch.take(spread)
    chunk, handoffs = side.chunk[spread], side.handoffs[spread]
    stretch = side.stretch[spread]
    # A fused assessment on the rollout's GPUs holds its phase beside the engine (survey
    # Table 9: M_G/A^fused); on separate pools each side keeps its own.
    streamed = np.where(
        (chunk > 0) & colocated, np.maximum(train_mem.streamed - train_mem.resident, 0.0), 0.0
    )
    latency = _handoff_latency(plans, colocated, fabric)

    if needs.offline:
        # Offline preference optimisation: the pairs come with the dataset (cost.offline).
        rollout, sync = no_generation(n)
        timing = offline_step(assessment, training, switch)
        generated = None
        stream = Stream(np.zeros(n), np.zeros(n), np.zeros(n))
    else:
        generated = _generation(
            plans, actor, batch, train_mem.resident, colocated, usable, hw, fabric, eff,
            overheads, episode or Episode.of(workload), workload, search, streamed,
        )  # fmt: skip
        rollout, sync = generated.rollout, generated.sync
        stream = generated.extras.stream
        timing = compose_step(
            plans.placement,
            plans.execution,
            plans.staleness,
            rollout,
            assessment,
            training,
            sync,
            switch,
            plans.fusion,
            stream=stream,
            minibatches=float(batch.minibatches),
            epochs=float(batch.epochs),
            handoffs=handoffs,
            handoff_seconds=latency,
            stretch=stretch,
        )
    stages = {
        "rollout": rollout,
        "assessment": assessment,
        "training": training,
        "weight_sync": sync,
        "switch": switch,
    }
    step = timing.step.seconds

    # A training pool must hold its peak and the allocator's fragmentation reserve.
    peaks = {"training": train_mem.required}
    terms = {"training": train_mem.terms}
    if generated is not None:
        # An offline plan has no rollout pool: only the trainer's memory binds.
        peaks = {"rollout": generated.peak, **peaks}
        terms = {"rollout": generated.terms, **terms}
    for role, memory in own_memory.items():
        peaks[role] = memory.required
        terms[role] = memory.terms
    overflows = {
        pool: peak - (usable if pool == "rollout" else trainable) for pool, peak in peaks.items()
    }
    hosts = [(train_mem.host, plans.train_gpus)]
    hosts += [(m.host, getattr(plans, f"{role}_gpus")) for role, m in own_memory.items()]
    host_node = fullest_node(hosts, hw.node_gpus)
    host_room = hw.host_memory_bytes * overheads.host_memory_usable_fraction
    overflows["host"] = host_node - host_room
    terms["host"] = {"offloaded_state_per_node": host_node}
    overflow = np.max(np.stack(list(overflows.values())), axis=0)
    # A micro-batch sized to fill the memory exactly must not fail on a rounding error.
    overflow = np.where(overflow > usable * 1e-9, overflow, 0.0)
    zero = np.zeros(n)
    memory_bytes = hw.memory_bytes
    headroom = {"train": memory_bytes - train_mem.bytes}
    if generated is not None:
        headroom = {"rollout": memory_bytes - generated.resident - generated.engine, **headroom}
    for role, memory in own_memory.items():
        headroom[role] = memory_bytes - memory.bytes
    return CostTable(
        plans=plans,
        stages=stages,
        step_seconds=step,
        step_lower_seconds=timing.step.lower,
        step_upper_seconds=timing.step.upper,
        tokens_per_second=batch.trained_tokens / step,
        memory_rollout_gib=(
            (generated.engine + generated.resident) / GIB if generated is not None else zero
        ),
        memory_train_gib=train_mem.bytes / GIB,
        feasible=overflow <= 0.0,
        overflow_gib=overflow / GIB,
        offload_gib=train_mem.host / GIB,
        bottleneck=bottleneck(stages, colocated, timing),
        rollout_concurrency=generated.extras.concurrency if generated is not None else zero,
        engine_concurrency=(
            engine_concurrency(generated.extras, timing) if generated is not None else zero
        ),
        rollout_min_token_seconds=(
            generated.extras.min_token_seconds if generated is not None else zero
        ),
        rollout_idle_seconds=timing.rollout_idle,
        train_idle_seconds=timing.train_idle,
        memory_terms_gib={p: {k: v / GIB for k, v in t.items()} for p, t in terms.items()},
        pool_overflow_gib={p: v / GIB for p, v in overflows.items()},
        assessment_parts=assessed_parts.parts,
        rollout_memory_fraction=(
            generated.engine / memory_bytes if generated is not None else zero
        ),
        train_micro_tokens=train_mem.costed_tokens,
        headroom_gib={p: v / GIB for p, v in headroom.items()},
        overlap_seconds=timing.overlap,
        overlap_share=timing.hidden_share,
        stream_concurrency=stream.concurrency,
        stream_produce_seconds=stream.produce_seconds,
        stream_sequence_seconds=stream.sequence_seconds,
        fusion_chunk=chunk,
        fusion_handoffs=handoffs,
        # (where the assessment waits for the rollout: overlapping modes stream nothing)
        fusion_overhead_seconds=np.where(
            (chunk > 0) & np.isin(plans.execution, (SYNC, PARTIAL_ROLLOUT)),
            handoffs * latency + (stretch - 1.0) * assessment.seconds,
            0.0,
        ),
        offline=needs.offline,
        agentic_parts=generated.agentic if generated is not None else {},
    )


@dataclass(frozen=True, slots=True)
class Generation:
    """The rollout side of online plans: the rollout and weight-sync stages and the rollout
    pool's memory (its peak, its terms, what it uses)."""

    rollout: StageCost
    sync: StageCost
    extras: RolloutExtras
    peak: FloatArray
    """What must fit in the usable memory: one longest sequence beside what stays resident
    (a launch's own engine share: usable plus what that share overflows by)."""
    terms: dict[str, FloatArray]
    engine: FloatArray
    """Bytes per GPU the engine is budgeted (weights, workspace, the KV cache it may fill)."""
    resident: FloatArray
    agentic: dict[str, FloatArray]


def _generation(
    plans: PlanTable,
    actor: ModelFigures,
    batch: Batch,
    trainer_resident: FloatArray,
    colocated: BoolArray,
    usable: float,
    hw: Hardware,
    fabric: Fabric,
    eff: EfficiencyFactors,
    overheads: Overheads,
    episode: Episode,
    workload: Workload,
    search: StepSearch | None,
    streamed: FloatArray,
) -> Generation:
    """Rollout, weight sync and the rollout pool's memory, for plans that generate; a search
    from the responses' states decodes on the same engine after them. `streamed` is what a
    fused assessment on the same GPUs holds beyond the trainer's resident state."""
    n = len(plans)
    # Memory of the rollout phase; colocated, whatever the trainer did not park stays, and
    # a fused assessment's phase beside it.
    r_layout = RolloutLayout.of(plans)
    trainer_state = np.where(colocated, trainer_resident, 0.0)
    resident = trainer_state + streamed
    shared = rollout_memory(
        actor, r_layout, batch, usable, overheads, resident=resident, total_bytes=hw.memory_bytes
    )
    caps = np.where(
        plans.execution == PARTIAL_ROLLOUT,
        np.ceil(batch.longest_response / (plans.staleness + 1.0)),
        batch.longest_response,
    )
    # Steps' worth of requests a streaming engine keeps in flight (cost.compose: async).
    admitted = np.where(plans.execution == ASYNC, np.maximum(plans.staleness, 1), 1).astype(float)
    # The rollout depends on its layout, its KV capacity, its cap, prefix caching and what it
    # admits when it streams.
    rollout_keys = [getattr(plans, name) for name in ROLLOUT_COLUMNS]
    first, spread = unique_rows(
        *rollout_keys, shared.capacity, caps, plans.prefix_caching, admitted
    )
    layout = RolloutLayout.of(plans.take(first))
    capacity, capped = shared.capacity[first], caps[first]
    agentic: dict[str, FloatArray] = {}
    if episode.single_turn:
        unique_rollout, unique_extras = rollout_stage(
            actor, layout, batch, capacity, capped, plans.prefix_caching[first], hw, fabric,
            eff, overheads, admitted[first],
        )  # fmt: skip
    else:
        turn, longest_turn = response_lengths(workload)
        unique_rollout, unique_extras, unique_parts = agentic_rollout_stage(
            actor, layout, batch, episode, turn, longest_turn, capacity, capped,
            plans.prefix_caching[first], hw, fabric, eff, overheads,
        )  # fmt: skip
        agentic = {k: v[spread] for k, v in unique_parts.items()}
    if search is not None:
        searched, stream = search_stage(
            actor, layout, batch, search, capacity, capped, plans.prefix_caching[first], hw,
            fabric, eff, overheads, admitted[first], unique_extras.stream,
        )  # fmt: skip
        unique_rollout = unique_rollout + searched
        unique_extras = replace(unique_extras, stream=stream)
    rollout, extras = unique_rollout.take(spread), unique_extras.take(spread)

    sync_keys = [getattr(plans, name) for name in SYNC_COLUMNS]
    first, spread = unique_rows(*rollout_keys, *sync_keys, colocated)
    sub = plans.take(first)
    sub_train = TrainLayout.of(sub)
    sync = weight_sync_stage(
        actor,
        RolloutLayout.of(sub),
        sub_train,
        TrainLinks.of(fabric, sub_train),
        colocated[first],
        hw,
        fabric,
        eff,
        overheads,
    ).take(spread)
    # Peaks per pool: the rollout must hold at least one longest sequence beside what stays.
    kv_used = np.maximum(extras.concurrency, 1.0) * shared.kv_per_sequence
    terms = {
        "weights": shared.weights,
        "kv_cache": np.maximum(kv_used, shared.minimum - shared.weights - shared.workspace),
        "workspace": np.full(n, shared.workspace),
        "trainer_state": trainer_state,
    }
    if streamed.any():
        # only a table with a fused assessment on the rollout's GPUs shows the term
        terms["fused_assessment"] = streamed
    filled = shared.weights + shared.workspace + kv_used
    if agentic:
        # KV of the kept contexts whose episodes wait on their environments.
        waiting = agentic["episodes_in_flight_per_engine"] - agentic["decode_batch"]
        kept = agentic["kv_kept"] > 0
        agentic["kv_held_gib"] = np.where(kept, waiting * shared.kv_per_sequence, 0.0) / GIB
    # The engine takes all the room its budget leaves for KV, not only what the plan fills.
    engine = np.maximum(usable - resident, filled)
    peak = shared.minimum + resident
    launched = r_layout.memory_fraction > 0
    if launched.any():
        # A launch's own share: vLLM refuses to start when less than it is free beside what
        # stays resident, and one longest sequence must fit inside it; the peak is stated
        # against the usable memory the other pools are held to.
        share = r_layout.memory_fraction * hw.memory_bytes
        over = np.maximum(shared.minimum - share, share + resident - hw.memory_bytes)
        engine = np.where(launched, share, engine)
        peak = np.where(launched, usable + over, peak)
    return Generation(rollout, sync, extras, peak, terms, engine, resident, agentic)


TRAINER_STAGES = ("assessment", "training", "switch")


def bottleneck(stages: dict[str, StageCost], colocated: BoolArray, timing: StepTime) -> IntArray:
    """Index into STAGES of the stage that sets the step: the longest one, except that in
    disaggregated plans a pool that waits for the other cannot be the bottleneck (the rollout
    idles: the trainer's longest stage binds; the trainer idles: the rollout binds)."""
    seconds = np.stack([stages[name].seconds for name in STAGES])
    rollout_waits = ~colocated & (timing.rollout_idle > timing.train_idle)
    trainer_waits = ~colocated & (timing.train_idle > timing.rollout_idle)
    for k, name in enumerate(STAGES):
        if name == "rollout":
            seconds[k] = np.where(rollout_waits, -1.0, seconds[k])
        elif name in TRAINER_STAGES:
            seconds[k] = np.where(trainer_waits, -1.0, seconds[k])
    return np.argmax(seconds, axis=0)


def _handoff_latency(plans: PlanTable, colocated: BoolArray, fabric: Fabric) -> FloatArray:
    """Seconds of one hand-off of a fused chunk: a small message that synchronises the
    rollout's and the assessment's ranks, at the latency of one small collective over the
    GPUs both run on (the scale-up or scale-out latency constants of cost.overheads, measured
    for 32 KiB collectives; no measurement of a fusion hand-off itself was found)."""
    gpus = np.where(
        colocated,
        np.maximum(plans.rollout_gpus, plans.train_gpus),
        plans.rollout_gpus + plans.train_gpus,
    )
    return group_link(fabric, floats(gpus), np.ones(len(plans))).latency
