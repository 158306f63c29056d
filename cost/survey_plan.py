"""A calibrated plan as one iteration of the survey's model (arXiv:2608.27046, §4.6, B.4): the
Table 9 rows it combines, and its own work, depth and peak memory composed from the stage
primitives where the plan puts each model.

Table 9 gives each configuration alone, under its own assumptions (every model on a group of
its own when disaggregated, assessment beside generation when asynchronous). A plan combines
several (a shared critic with fused stages) and places models its own way: assessment runs on
the trainer's GPUs unless a model has a pool of its own, the trainer's layout gives the
assessment's and training's tensor-parallel degree, the rollout's gives generation's. So the
plan's row is composed here from B.4.1's primitives, by the same rules Table 9's rows follow:
models on one group add their depths, models on separate groups take the maximum; stages on
one group share its memory over time (the maximum of their footprints), fused stages at once
(the sum); a resharded layout adds M_reshard (the actor's for a rollout layout, the frozen
models' for an assessment layout), a lagging rollout group the shadow copy M_sh.
Units as in `cost.survey_model`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rlmguide.cost.assessment import FROZEN_ROLES
from rlmguide.cost.survey_iteration import Iteration, Models, reshard_buffer
from rlmguide.cost.survey_iteration import generation as generation_terms
from rlmguide.cost.survey_model import activations_per_token, parameters, train_depth, train_flops

OWN_POOLS = ("critic", "reference", "reward")
"""Models a plan can give a pool of their own."""


@dataclass(frozen=True, slots=True)
class PlanShape:
    """What a calibrated plan fixes that Table 9's rows tell apart."""

    shared: bool = False
    """The critic is a value head on the policy (§4.1)."""
    inter_fusion: bool = False
    """Assessment streams behind generation (§4.3)."""
    intra_fusion: bool = False
    """The actor's and critic's updates overlap (§4.3)."""
    lagging: bool = False
    """The rollout lags the trainer (one-step-off, asynchronous, partial rollouts; §4.5)."""
    overlapped: bool = False
    """The rollout group works beside the trainer's instead of taking turns."""
    rollout_apart: bool = False
    """Generation has a group of its own (disaggregated placement)."""
    apart: frozenset[str] = frozenset()
    """Models on pools of their own, among `OWN_POOLS`."""
    generation_tp: float = 1.0
    assessment_tp: float = 1.0
    training_tp: float = 1.0
    resharded: bool = False
    """One group runs generation and training in different layouts (§4.4)."""
    frozen_tp: float | None = None
    """The frozen models' own tensor degree (plan.assessment); None: assessment_tp."""
    frozen_resharded: bool = False
    """The trainer's group re-lays the frozen models from the training layout into their own
    for each assessment (Table 9's hybrid row, "TP/PP for Assess")."""


@dataclass(frozen=True, slots=True)
class Part:
    """One model's share of a stage: work, depth, memory, and whether it runs apart."""

    name: str
    work: float
    depth: float
    memory: float
    """Weights (or trained state) and live buffers."""
    apart: bool = False
    weights: float = 0.0
    """The weights within `memory` (they stay resident; the buffers are one pass's)."""


@dataclass(frozen=True, slots=True)
class PlanIteration:
    rows: tuple[str, ...]
    """The Table 9 rows the plan combines, in the table's order."""
    work: float
    depth: float
    memory: float
    """Peak memory of the fullest device group."""
    generation: Part | None
    assessment: tuple[Part, ...]
    assessment_depth: float
    training: tuple[Part, ...]
    training_depth: float
    groups: dict[str, float]
    """Peak memory of each device group: `trainer`, `generation` when apart, each own pool."""

    @property
    def name(self) -> str:
        return " + ".join(self.rows)


def table9_rows(shape: PlanShape) -> tuple[str, ...]:
    """The Table 9 rows a plan combines. Disaggregation, fusion and asynchrony together are
    the combined row (with sharding, which it includes); nothing at all is the baseline."""
    disaggregated = shape.rollout_apart or bool(shape.apart)
    fused = shape.inter_fusion or shape.intra_fusion
    rows = ["shared actor-critic"] if shape.shared else []
    if disaggregated and fused and shape.lagging:
        rows.append("combined")
    else:
        flags = (
            ("disaggregated", disaggregated),
            ("hybrid", shape.resharded or shape.frozen_resharded),
            ("stage fusion", fused),
            ("asynchronous", shape.lagging),
        )
        rows += [name for name, on in flags if on]
    return tuple(rows) or ("baseline",)


def plan_iteration(models: Models, it: Iteration, shape: PlanShape) -> PlanIteration:
    """The plan's iteration: each stage's parts where the plan runs them, composed."""
    b, m = it.sequences, it.context
    pi = models.policy
    apart = shape.apart - ({"critic"} if shape.shared else set())
    passes = models.passes(it, shape.shared)

    def tp(name: str) -> float:
        frozen = shape.frozen_tp is not None and name in FROZEN_ROLES
        return shape.frozen_tp if frozen else shape.assessment_tp  # type: ignore[return-value]

    assessed = tuple(
        Part(p.name, p.work(b), p.depth(tp(p.name)), p.weights + p.buffer(b),
             p.name in apart, p.weights)
        for p in passes
    )  # fmt: skip
    # Frozen models that all run on pools of their own are never re-laid on the trainer's.
    here = any(p.name in FROZEN_ROLES and not p.apart for p in assessed)
    shape = replace(shape, frozen_resharded=shape.frozen_resharded and here)
    trained = tuple(
        Part(
            "critic" if role == "critic" else "actor",
            b * m * float(train_flops(s, m, role)),
            float(train_depth(s, m, b, shape.training_tp)),
            4.0 * parameters(s, role) + b * m * activations_per_token(s),
            role == "critic" and "critic" in apart,
        )
        for s, role in models.trained(shape.shared)
    )
    gen_work, gen_depth, gen_live = generation_terms(pi, it, shape.generation_tp)
    generation = Part(
        "actor", gen_work, gen_depth, parameters(pi, "policy") + gen_live, shape.rollout_apart
    )
    here = [p for p in assessed if not p.apart]
    depth_a = max(sum(p.depth for p in here), *(p.depth for p in assessed if p.apart), 0.0)
    beside = shape.intra_fusion or any(p.apart for p in trained)
    depths_t = [p.depth for p in trained]
    depth_t = max(depths_t) if beside else sum(depths_t)
    if shape.overlapped:
        # The trainer's side assesses and trains while the rollout group generates.
        depth = max(generation.depth, depth_a + depth_t)
    elif shape.inter_fusion:
        depth = max(generation.depth, depth_a) + depth_t
    else:
        depth = generation.depth + depth_a + depth_t
    groups = _groups(models, shape, generation, assessed, trained)
    work = generation.work + sum(p.work for p in (*assessed, *trained))
    return PlanIteration(
        rows=table9_rows(shape),
        work=work,
        depth=depth,
        memory=max(groups.values()),
        generation=generation,
        assessment=assessed,
        assessment_depth=depth_a,
        training=trained,
        training_depth=depth_t,
        groups=groups,
    )


def _groups(
    models: Models,
    shape: PlanShape,
    generation: Part,
    assessed: tuple[Part, ...],
    trained: tuple[Part, ...],
) -> dict[str, float]:
    """Peak memory per device group. The trainer's group holds the assessment models that
    have no pool of their own (their weights, and one pass's buffers at a time) and the
    trained models that have none; with the rollout on it too, stages take turns (the largest
    footprint) unless fused (generation and assessment at once), plus M_reshard where the
    layouts differ. A lagging rollout group on its own holds the actor's shadow copy."""
    here = [p for p in assessed if not p.apart]
    buffers = max((p.memory - p.weights for p in here), default=0.0)
    assessment = sum(p.weights for p in here) + buffers
    training = sum(p.memory for p in trained if not p.apart)
    groups: dict[str, float] = {}
    if shape.rollout_apart:
        shadow = parameters(models.policy, "policy") if shape.lagging else 0.0
        groups["generation"] = generation.memory + shadow
        trainer = max(assessment, training)
    else:
        first = (
            generation.memory + assessment
            if shape.inter_fusion
            else max(generation.memory, assessment)
        )
        trainer = max(first, training) + (reshard_buffer(models) if shape.resharded else 0.0)
    if shape.frozen_resharded:
        # M_reshard of the assessment layout: the frozen models on this group, re-laid
        # beside their training-layout copy (cost.memory.reshard_bytes states the assumption)
        trainer += sum(p.weights for p in here if p.name in FROZEN_ROLES)
    groups["trainer"] = trainer
    # A pool of its own holds each of its models in a stage (two critics for two objectives),
    # and its stages take turns.
    for stage in (assessed, trained):
        held: dict[str, float] = {}
        for p in stage:
            if p.apart:
                held[p.name] = held.get(p.name, 0.0) + p.memory
        for name, memory in held.items():
            groups[name] = max(groups.get(name, 0.0), memory)
    return groups
