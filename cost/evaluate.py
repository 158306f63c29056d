"""The entry point: resolved specs + a plan table -> a table of stage and step costs.

One code path serves one plan (a table of length 1, read back with `CostTable.row`) and a
whole search (hundreds of thousands of rows): every formula runs over arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from cost.architecture import ModelFigures
from cost.arrays import BoolArray, FloatArray, IntArray
from cost.batch import Batch, Needs
from cost.collectives import Fabric
from cost.compose import compose_step
from cost.efficiency import EfficiencyFactors, resolve_efficiency
from cost.hardware import Hardware
from cost.layouts import RolloutLayout, TrainLayout, TrainLinks
from cost.memory import colocated_offload, rollout_memory, training_memory
from cost.overheads import DEFAULT_OVERHEADS, Overheads
from cost.plans import COLOCATED, PARTIAL_ROLLOUT, PlanTable, check_plans
from cost.preparation import preparation_stage
from cost.rollout import rollout_stage
from cost.stage import BOUNDS, STAGES, StageCost
from cost.training import training_stage
from cost.units import GIB
from cost.weight_sync import switch_stage, weight_sync_stage
from kb.schema import Efficiency, Workload
from kb.schema.specs import AcceleratorFigures, Architecture


@dataclass(frozen=True, slots=True)
class CostTable:
    """Costs of every plan of a table; entry i of each array belongs to plan i."""

    plans: PlanTable
    stages: dict[str, StageCost]
    """By name, in STAGES order: rollout, preparation, training, weight_sync, switch."""
    step_seconds: FloatArray
    step_lower_seconds: FloatArray
    step_upper_seconds: FloatArray
    tokens_per_second: FloatArray
    memory_rollout_gib: FloatArray
    memory_train_gib: FloatArray
    feasible: BoolArray
    overflow_gib: FloatArray
    """How far the tighter phase exceeds the usable memory per GPU (0 when it fits)."""
    offload_gib: FloatArray
    """Trainer state a colocated plan parks in host memory during the rollout."""
    bottleneck: IntArray
    """Index into STAGES of the longest stage."""
    rollout_concurrency: FloatArray
    rollout_min_token_seconds: FloatArray
    rollout_idle_seconds: FloatArray
    train_idle_seconds: FloatArray

    def __len__(self) -> int:
        return len(self.plans)

    def take(self, rows: np.ndarray) -> CostTable:
        values: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "stages":
                values[f.name] = {k: v.take(rows) for k, v in value.items()}
            else:
                values[f.name] = value.take(rows) if f.name == "plans" else value[rows]
        return CostTable(**values)

    def stage_row(self, name: str, i: int) -> dict[str, Any]:
        s = self.stages[name]
        return {
            "name": name,
            "seconds": float(s.seconds[i]),
            "lower_seconds": float(s.lower_seconds[i]),
            "upper_seconds": float(s.upper_seconds[i]),
            "work_seconds": float(s.work_seconds[i]),
            "work_flop": float(s.work_flop[i]),
            "hbm_bytes": float(s.hbm_bytes[i]),
            "link_bytes": float(s.link_bytes[i]),
            "depth_seconds": float(s.depth_seconds[i]),
            "gpus": int(s.gpus[i]),
            "bound": BOUNDS[int(s.bound[i])],
        }

    def row(self, i: int) -> dict[str, Any]:
        """Plan i as the JSON of `recommend`/`estimate` (DESIGN.md) without rank, rules and
        frameworks, which the guideline engine adds; extra keys carry the feasibility."""
        colocated = int(self.plans.placement[i]) == COLOCATED
        names = [n for n in STAGES if n != "switch" or colocated]
        return {
            **self.plans.row(i),
            "step_seconds": float(self.step_seconds[i]),
            "step_lower_seconds": float(self.step_lower_seconds[i]),
            "step_upper_seconds": float(self.step_upper_seconds[i]),
            "tokens_per_second": float(self.tokens_per_second[i]),
            "stages": [self.stage_row(n, i) for n in names],
            "memory_gib_per_gpu": {
                "rollout": float(self.memory_rollout_gib[i]),
                "train": float(self.memory_train_gib[i]),
            },
            "bottleneck": STAGES[int(self.bottleneck[i])],
            "feasible": bool(self.feasible[i]),
            "overflow_gib": float(self.overflow_gib[i]),
            "offload_gib": float(self.offload_gib[i]),
            "rollout_concurrency": int(self.rollout_concurrency[i]),
            "idle_seconds": {
                "rollout": float(self.rollout_idle_seconds[i]),
                "train": float(self.train_idle_seconds[i]),
            },
        }


def evaluate(
    accelerator: AcceleratorFigures,
    policy: Architecture,
    workload: Workload,
    plans: PlanTable,
    *,
    needs: Needs | None = None,
    critic: Architecture | None = None,
    reward: Architecture | None = None,
    gpus_per_node: int = 8,
    nodes: int | None = None,
    scale_out_gbps_per_gpu: float | None = None,
    efficiency: Efficiency | EfficiencyFactors | None = None,
    overheads: Overheads = DEFAULT_OVERHEADS,
    check: bool = True,
) -> CostTable:
    """Cost every plan of `plans` for one RL step.

    `critic` defaults to the policy's architecture when `needs` asks for a critic; `reward`
    is the reward model's architecture, or None for a rule-based verifier. `nodes` (if given)
    bounds the GPUs a plan may use. With `check` the table's factorisations are validated
    first and the first problem raised as a `PlanError`.
    """
    needs = needs or Needs()
    eff = resolve_efficiency(efficiency)
    critic_arch = (critic or policy) if needs.needs_critic else None
    if check:
        cluster = nodes * gpus_per_node if nodes is not None else None
        check_plans(plans, policy, critic_arch, cluster_gpus=cluster)

    hw = Hardware.of(accelerator, gpus_per_node, overheads, scale_out_gbps_per_gpu)
    fabric = Fabric.of(hw, eff, overheads)
    batch = Batch.of(workload, needs)
    actor = ModelFigures.of(policy)
    critic_fig = ModelFigures.of(critic_arch) if critic_arch is not None else None
    reward_fig = ModelFigures.of(reward) if reward is not None else None
    r_layout, t_layout = RolloutLayout.of(plans), TrainLayout.of(plans)
    t_links = TrainLinks.of(fabric, t_layout)
    usable = hw.memory_bytes * overheads.usable_memory_fraction
    colocated = plans.placement == COLOCATED

    # Memory of the training phase (it also sizes the training micro-batches).
    trained = [actor] + ([critic_fig] if critic_fig else [])
    frozen = ([actor] if needs.needs_reference else []) + ([reward_fig] if reward_fig else [])
    train_mem = training_memory(trained, frozen, t_layout, batch, usable, overheads)
    states, train_memory = train_mem.resident, train_mem.bytes
    micro_tokens = np.maximum(train_mem.micro_tokens, batch.sequence_tokens)

    # Memory of the rollout phase; colocated, the trainer's state offloads just enough.
    alone = rollout_memory(actor, r_layout, batch, usable, overheads)
    per_replica = np.ceil(batch.generated_sequences / r_layout.dp)
    wanted = np.minimum(per_replica, overheads.max_seqs_per_replica) * alone.kv_per_sequence
    offload = np.where(
        colocated, colocated_offload(states, alone.weights, alone.workspace, wanted, usable), 0.0
    )
    resident = np.where(colocated, states - offload, 0.0)
    shared = rollout_memory(actor, r_layout, batch, usable, overheads, resident=resident)

    caps = np.where(
        plans.execution == PARTIAL_ROLLOUT,
        np.ceil(batch.longest_response / (plans.staleness + 1.0)),
        batch.longest_response,
    )
    rollout, extras = rollout_stage(
        actor,
        r_layout,
        batch,
        shared.capacity,
        caps,
        plans.prefix_caching,
        hw,
        fabric,
        eff,
        overheads,
    )
    preparation = preparation_stage(
        actor,
        critic_fig,
        reward_fig,
        needs.needs_reference,
        needs.old_log_probs,
        t_layout,
        t_links,
        batch,
        hw,
        eff,
        overheads,
    )
    training = training_stage(actor, critic_fig, t_layout, t_links, batch, micro_tokens, hw, eff)
    sync = weight_sync_stage(
        actor, r_layout, t_layout, t_links, colocated, hw, fabric, eff, overheads
    )
    switch = switch_stage(offload, colocated, r_layout.gpus, overheads)
    stages = {
        "rollout": rollout,
        "preparation": preparation,
        "training": training,
        "weight_sync": sync,
        "switch": switch,
    }
    timing = compose_step(
        plans.placement,
        plans.execution,
        plans.staleness,
        rollout,
        preparation,
        training,
        sync,
        switch,
    )
    step = timing.step.seconds

    rollout_memory_bytes = (
        alone.weights + alone.workspace + extras.concurrency * alone.kv_per_sequence + resident
    )
    overflow = np.maximum(train_memory - usable, alone.minimum - usable)
    # A micro-batch sized to fill the memory exactly must not fail on a rounding error.
    overflow = np.where(overflow > usable * 1e-9, overflow, 0.0)
    return CostTable(
        plans=plans,
        stages=stages,
        step_seconds=step,
        step_lower_seconds=timing.step.lower,
        step_upper_seconds=timing.step.upper,
        tokens_per_second=batch.trained_tokens / step,
        memory_rollout_gib=rollout_memory_bytes / GIB,
        memory_train_gib=train_memory / GIB,
        feasible=overflow <= 0.0,
        overflow_gib=overflow / GIB,
        offload_gib=offload / GIB,
        bottleneck=np.argmax(np.stack([stages[n].seconds for n in STAGES]), axis=0),
        rollout_concurrency=extras.concurrency,
        rollout_min_token_seconds=extras.min_token_seconds,
        rollout_idle_seconds=timing.rollout_idle,
        train_idle_seconds=timing.train_idle,
    )
