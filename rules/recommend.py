"""scenario -> facts -> candidate plans -> cost core -> rules -> ranked plans with explanations.

Disaggregated pools are independent until they are composed, so each pool size's layouts are
costed and judged once and only the fastest few per size are combined with every split and
execution mode. Colocated plans share GPUs, so their layouts are costed jointly.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import reduce
from typing import Any, NamedTuple

import numpy as np
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.evaluate import CostTable, evaluate
from rlmguide.cost.overheads import (
    DEFAULT_OVERHEADS,
    Overheads,
    for_framework,
    without_framework,
)
from rlmguide.cost.plans import (
    CRITICS,
    EXECUTIONS,
    EXPERT_GRID_CHECK,
    FUSION_HANDOFFS,
    FUSIONS,
    ONE_POOL,
    PLACEMENTS,
    RECOMPUTE,
    PlanTable,
    assessment_columns,
    frozen_models,
    head_tps,
    inter_stage,
    shares_gpus,
    valid_rows,
)
from rlmguide.cost.units import GIB
from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Architecture, Constraint, Framework, Offload, Plan, length_prior
from rlmguide.rules.agentic import agentic_notes
from rlmguide.rules.engine import CompiledRule
from rlmguide.rules.expr import Condition
from rlmguide.rules.facts import FACTS, STAGES, scenario_facts
from rlmguide.rules.frameworks import (
    CompiledConstraint,
    Support,
    compile_constraints,
    configuration_techniques,
    inherit,
    pool_of,
    supports,
)
from rlmguide.rules.ranking import (
    NEAR_FRACTION,
    TIE_FRACTION,
    Ranked,
    Ranker,
    complexity,
    ranking,
    rollout_shape,
)
from rlmguide.rules.runcost import BilledPart, add_run_totals
from rlmguide.rules.scenario import Resolved
from rlmguide.rules.search import (
    FINE_GRID_UP_TO_GPUS,
    HEAVY_OFFLOADS,
    MAX_SPLITS,
    NO_OFFLOAD,
    PHASE_OFFLOAD,
    TRAIN_LAYOUT_COLUMNS,
    Split,
    executions,
    offload_options,
    own_pool_sizes,
    pool_variants,
    prefix_caching_options,
    rollout_layouts,
    split_unit,
    splits,
    stage_split,
    train_layouts,
)

SHORTLIST = 4
"""Layouts kept per disaggregated pool size for composition."""
COARSE_SPLITS = 16
"""Disaggregated splits costed first on a coarse grid, before refining around the best."""
PROBES = 5
"""Training layouts each colocated rollout layout is costed beside on a coarse grid."""
COLOCATED_ROLLOUTS = 8
"""Rollout layouts kept per probe, besides the fastest of each engine shape."""
PROBED_ABOVE = 50_000
"""Colocated pairs of rollout and training layouts (times execution modes) beyond which the
rollout layouts are probed first: mixtures of experts from about a hundred GPUs."""


VARIANT_BASE = 16
"""The fastest plans of a search that are costed again under Table 9's other configurations."""
POOL_BASES = 1024
"""Fastest plans that own-pool variants are made of (`Recommender.pool_variants`)."""
POOL_PER_SIZE = 2
"""Own-pool variants kept per pool size, donor pool and frozen-model layout."""
ASSESSMENT_TP = (1, 2, 4, 8)
"""Tensor degrees tried for the frozen models' own layout (plan.assessment, pp 1) beside the
training layout, where the scenario leaves it open: data-parallel replicas of one GPU (the
survey's plain DP, §3.1.1) up to a node's NVLink group; those that divide the pool, split the
model and fit survive."""


DEFAULT_FIELDS = ("default_rollout_tp", "model_parallel_above_params_b", "moe_model_parallel")
"""The framework defaults the ranking breaks ties with (rules.ranking.complexity)."""


@dataclass(frozen=True)
class TieDefault:
    """A default the ranking's tie-breaks use (`Recommender.tie_defaults`)."""

    value: int | bool
    frameworks: tuple[str, ...]
    """The frameworks whose records give it: the searched one, or the others of the field."""
    own: bool
    """Whether it is the searched framework's own record (else the field's median)."""

    def described(self, name: str) -> str:
        what = {
            "default_rollout_tp": f"rollout TP {self.value}",
            "model_parallel_above_params_b": f"model-parallel above {self.value}B parameters",
            "moe_model_parallel": ("model-parallel" if self.value else "data-parallel sharded")
            + " for a mixture of experts",
        }[name]
        whose = "its own record" if self.own else "the median of " + ", ".join(self.frameworks)
        return f"{what} ({whose})"


class InvalidRecords(Exception):
    """Rule or constraint records that do not compile; `rlmguide validate` lists them all."""


@dataclass(frozen=True)
class Judges:
    """What a recommender judges plans with, compiled once from a catalog: its active rules,
    frameworks, constraints (inherited by the components that extend others) and the role of
    each component."""

    rules: list[CompiledRule]
    frameworks: list[Framework]
    constraints: list[CompiledConstraint]
    components: dict[str, str]
    mapped: frozenset[str] = frozenset()
    """Frameworks with an export mapping (kb/records/mappings): first among a plan's runners."""
    engine_max_seqs: Mapping[str, int] = field(default_factory=dict)
    """Per framework, the sequences its engines run at once where its newest mapping writes
    no key for them (the engine's own default as the framework creates it)."""
    fp32_gradients: frozenset[str] = frozenset()
    """Frameworks whose Megatron backend keeps fp32 gradient buffers by default."""
    split_stages: frozenset[str] = frozenset()
    """Frameworks whose newest mapping writes Megatron's first and last pipeline stage layer
    counts (launch.pp_first_layers, launch.pp_last_layers): their plans may split unevenly."""
    frozen_on_host: frozenset[str] = frozenset()
    """Frameworks that keep the frozen models' weights on the host and load them for the
    assessment whatever the launch says (their mapping's `implied` offload_frozen: NeMo-RL,
    slime, SkyRL)."""
    phase_on_colocation: frozenset[str] = frozenset()
    """Frameworks that park a colocated trainer's state on the host around every rollout
    whatever the launch says (their mapping's colocated_phase_offload: NeMo-RL)."""
    rollout_log_probs: Mapping[str, str] = field(default_factory=dict)
    """Per framework, where its newest mapping's launch runs no old-log-prob pass (the
    mapping's rollout_log_probs condition)."""
    phase_offload: Mapping[str, str] = field(default_factory=dict)
    """Per framework, where its newest mapping's launch parks the trained state between
    phases whatever the plan says (the mapping's phase_offload condition: SkyRL's swap of the
    policy around a reference on its GPUs)."""
    no_sequence_parallel: frozenset[str] = frozenset()
    """Frameworks whose tensor-parallel training keeps every token on each rank (their
    mapping's sequence_parallel false: OpenRLHF's DeepSpeed AutoTP)."""
    versions: Mapping[str, str] = field(default_factory=dict)
    """Per framework with a mapping, its newest mapping's id: the version whose constraint
    records (their `versions` scope) the planner judges its plans by."""


def judges_of(catalog: Catalog) -> Judges:
    """The catalog's judges (the catalog must hold rules, frameworks, constraints and
    components); records that do not compile raise InvalidRecords."""
    from rlmguide.rules.engine import active, compile_rules

    rules, problems = compile_rules(catalog)
    constraints, more = compile_constraints(catalog)
    if problems or more:
        raise InvalidRecords(str((problems + more)[0]))
    every = catalog.of("component").values()
    extends = {c.id: c.extends for c in every if c.extends}  # type: ignore[attr-defined]
    mappings = sorted(catalog.of("mapping").values(), key=lambda m: m.committed)  # type: ignore[attr-defined]
    newest = {m.framework: m for m in mappings}  # type: ignore[attr-defined]
    return Judges(
        active(rules),
        list(catalog.of("framework").values()),  # type: ignore[arg-type]
        inherit(constraints, extends),
        {c.id: c.role for c in every},  # type: ignore[attr-defined]
        frozenset(newest),
        {f: m.engine_max_seqs for f, m in newest.items() if m.engine_max_seqs},  # type: ignore[attr-defined]
        frozenset(f for f, m in newest.items() if m.fp32_gradients),  # type: ignore[attr-defined]
        frozenset(
            f
            for f, m in newest.items()
            if {"launch.pp_first_layers", "launch.pp_last_layers"} <= {e.fact for e in m.entries}  # type: ignore[attr-defined]
        ),
        frozenset(
            f
            for f, m in newest.items()
            if "plan.train.offload_frozen" in m.implied_facts()  # type: ignore[attr-defined]
        ),
        frozenset(f for f, m in newest.items() if m.colocated_phase_offload),  # type: ignore[attr-defined]
        {f: m.rollout_log_probs for f, m in newest.items() if m.rollout_log_probs},  # type: ignore[attr-defined]
        {f: m.phase_offload for f, m in newest.items() if m.phase_offload},  # type: ignore[attr-defined]
        frozenset(f for f, m in newest.items() if not m.sequence_parallel),  # type: ignore[attr-defined]
        {f: m.id for f, m in newest.items()},
    )


def recommender_for(
    resolved: Resolved,
    catalog: Catalog,
    judges: Judges | None = None,
    factory: Any = None,
    **options: Any,
) -> Recommender:
    """A recommender with the catalog's judges (`judges`, where a caller searches many
    scenarios on one catalog, compiled once); `factory` builds it (default `Recommender`; a
    subclass that costs plans across the parts of a mixed cluster, rules.mixed). One
    framework's plans (`only`, or any plan costed as it runs them: `costed_as`) run at its
    engines' default concurrency where its newest mapping writes none, unless
    `engine_max_seqs` says otherwise (export's older mapping), and with the gradient buffers
    its Megatron backend keeps (`fp32_gradients`) and the frozen models where it keeps them
    (`frozen_on_host`), and its colocated trainer's state where it parks it
    (`phase_on_colocation`). Each framework's constraint records
    are those in scope for its newest mapping, or for the mapping `versions` names for it
    (export's and review's mapping)."""
    j = judges or judges_of(catalog)
    given = dict(options)
    options["versions"] = {**j.versions, **(options.get("versions") or {})}
    runs_as = options.get("only") or options.get("costed_as")
    if runs_as is not None:
        options.setdefault("engine_max_seqs", j.engine_max_seqs.get(runs_as))
        options.setdefault("fp32_gradients", runs_as in j.fp32_gradients)
        options.setdefault("split_stages", runs_as in j.split_stages)
        options.setdefault("frozen_on_host", runs_as in j.frozen_on_host)
        options.setdefault("phase_on_colocation", runs_as in j.phase_on_colocation)
        options.setdefault("rollout_log_probs", j.rollout_log_probs.get(runs_as))
        options.setdefault("phase_offload", j.phase_offload.get(runs_as))
        options.setdefault("sequence_parallel", runs_as not in j.no_sequence_parallel)
    recommender = (factory or Recommender)(
        resolved,
        j.rules,
        j.frameworks,
        constraints=j.constraints,
        components=j.components,
        mapped=j.mapped,
        **options,
    )
    if runs_as is None and options.get("launch_check") is not None:
        # where every runner of the ranking's plans refuses them at export, each mapped
        # framework's own ranking is asked (`recommend`)
        def narrowed(framework: str) -> Recommender:
            return recommender_for(resolved, catalog, j, factory, **{**given, "only": framework})

        recommender.narrowed = narrowed
    return recommender


class Shortlists(NamedTuple):
    """Per pool size, the disaggregated pools' kept layouts and their fastest seconds."""

    rollouts: dict[int, dict[str, np.ndarray]]
    trains: dict[int, dict[str, np.ndarray]]
    rollout_seconds: dict[int, float]
    train_seconds: dict[int, float]


class NoFeasiblePlan(Exception):
    """Every candidate was rejected; the message names the binding constraint and by how much."""


HEAD_RULES = {"rollout-tp-divides-heads": "rollout", "tp-divides-heads": "train"}
"""The rules that keep a pool's tp to the policy's attention heads, by pool."""


@dataclass
class Search:
    candidates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    by_pair: Counter[tuple[str, str]] = field(default_factory=Counter)
    """With one framework: (its "backend + engine" pair, the first reason that pair refuses a
    candidate for), counted over the candidates no pair runs."""

    @property
    def feasible(self) -> int:
        return self.candidates - sum(self.rejected.values())


def _cost(
    resolved: Resolved,
    table: PlanTable,
    overheads: Overheads = DEFAULT_OVERHEADS,
    options: Mapping[str, Any] | None = None,
) -> CostTable:
    s = resolved.scenario
    workload = s.workload.model_copy(
        update={
            "samples_per_prompt": resolved.samples_per_prompt,
            "max_response_tokens": resolved.max_response_tokens,
        }
    )
    return evaluate(
        resolved.accelerator,
        resolved.policy,
        workload,
        table,
        needs=Needs.of(resolved.algorithm),
        critic=resolved.critic,
        reward=resolved.reward,
        efficiency=s.efficiency,
        overheads=overheads,
        check=False,
        **(resolved.cost_options() if options is None else options),
    )


def _runs(frameworks: Iterable[Any], env: Mapping[str, Any], size: int) -> np.ndarray:
    """Rows some of `frameworks` (rules.frameworks.Support) runs, judged on the whole plan."""
    found = np.zeros(size, dtype=bool)
    seen: dict[str, np.ndarray] = {}
    for support in frameworks:
        found |= support.runnable(env, size, "plan", seen)[0]
        if found.all():
            break
    return found


def plan_facts(table: PlanTable, costs: CostTable | None = None) -> dict[str, Any]:
    """The plan facts of every row of `table` (and the costed ones when `costs` is given)."""
    sync = table.execution == EXECUTIONS.index("sync")
    facts: dict[str, Any] = {
        "plan.placement": np.asarray(PLACEMENTS)[table.placement],
        "plan.execution": np.asarray(EXECUTIONS)[table.execution],
        "plan.max_staleness": np.where(sync, 0, table.staleness),
        "plan.prefix_caching": table.prefix_caching,
        "plan.train.recompute": np.asarray(RECOMPUTE)[table.train_recompute],
        "plan.critic": np.asarray(CRITICS)[table.critic_shared.astype(np.int64)],
        "plan.fusion": np.asarray(FUSIONS)[table.fusion],
        "plan.fusion_chunk": table.fusion_chunk,
    }
    for pool in ("rollout", "train"):
        degrees = ("gpus", "tp", "pp", "ep", "etp", "dp", "cp", "zero", "attention_dp")
        for degree in (*degrees, "virtual_stages", "shard_group", "frozen_shard_group"):
            column = getattr(table, f"{pool}_{degree}", None)
            if column is not None:
                facts[f"plan.{pool}.{degree}"] = column
    facts["plan.rollout.fp8"] = table.rollout_fp8
    facts["plan.rollout.eager"] = table.rollout_eager
    facts["plan.train.fp8"] = table.train_fp8
    facts["plan.train.lora_rank"] = table.train_lora_rank
    facts["plan.train.first_stage_layers"] = table.train_first_layers
    facts["plan.train.last_stage_layers"] = table.train_last_layers
    facts["plan.train.sequence_parallel"] = (table.train_tp > 1) & table.train_sequence_parallel
    for kind in ("phase", "optimizer", "params", "frozen"):
        facts[f"plan.train.offload_{kind}"] = getattr(table, f"offload_{kind}")
    for model in ("critic", "reference", "reward"):
        facts[f"plan.pools.{model}"] = getattr(table, f"{model}_gpus")
    facts["plan.assessment.tp"] = table.assess_tp
    facts["plan.assessment.pp"] = table.assess_pp
    facts["plan.train.expert_layout"] = np.where(table.train_ep_isolated, "isolated", "folded")
    if costs is not None:
        facts["plan.step_seconds"] = costs.step_seconds
        facts["plan.fusion_chunk"] = costs.fusion_chunk.astype(np.int64)
        facts["plan.memory.rollout_gib"] = costs.memory_rollout_gib
        facts["plan.memory.train_gib"] = costs.memory_train_gib
        total = np.maximum(sum(costs.stages[s].seconds for s in STAGES), 1e-12)
        for stage in STAGES:
            facts[f"plan.share.{stage}"] = costs.stages[stage].seconds / total
    return facts


def _stack(values: list[Any], lengths: list[int]) -> np.ndarray:
    """One column from blocks of rows, each block an array or one value for all its rows."""
    if not any(np.ndim(v) for v in values):
        return np.repeat(np.asarray(values), lengths)  # one call instead of one per block
    return np.concatenate(
        [np.broadcast_to(np.asarray(v), (n,)) for v, n in zip(values, lengths, strict=True)]
    )


ROLLOUT_COLUMNS = ("gpus", "tp", "pp", "ep", "attention_dp", "cp")
TRAIN_COLUMNS = (
    "gpus", "tp", "pp", "cp", "ep", "etp", "zero", "recompute",
    "offload_phase", "offload_optimizer", "offload_params", "offload_frozen",
    "first_layers", "last_layers",
)  # fmt: skip


def pool_columns(pool: str, layout: Mapping[str, Any]) -> dict[str, Any]:
    """A pool's layout columns as `PlanTable.from_arrays` keywords (`train_tp=...`; the
    offload columns keep their own names); columns a layout lacks keep their defaults."""
    names = ROLLOUT_COLUMNS if pool == "rollout" else TRAIN_COLUMNS
    return {
        name if name.startswith("offload_") else f"{pool}_{name}": layout[name]
        for name in names
        if name in layout
    }


def fixed_columns(resolved: Resolved) -> dict[str, Any]:
    """Plan fields the search never varies (precision, LoRA, models' own pools): the run's
    decisions, as the scenario gives them."""
    plan = resolved.scenario.plan
    return {
        "rollout_fp8": plan.rollout.precision == "fp8",
        "rollout_eager": plan.rollout.cuda_graphs is False,
        "rollout_memory_fraction": plan.rollout.memory_fraction or 0.0,
        "rollout_max_seqs": plan.rollout.max_seqs or 0,
        "rollout_per_tensor": bool(plan.rollout.per_tensor_sync),
        "train_micro_tokens": plan.train.micro_batch_tokens or 0,
        "train_forward_micro_tokens": plan.train.forward_micro_batch_tokens or 0,
        "train_fp32_gradients": bool(plan.train.fp32_gradients),
        "train_sequence_parallel": plan.train.sequence_parallel is not False,
        "train_virtual_stages": plan.train.virtual_stages or 1,
        "train_shard_group": plan.train.shard_group or 0,
        "train_frozen_shard_group": plan.train.frozen_shard_group or 0,
        # a split the scenario fixes; unset, the search's layouts give it (Recommender.layouts)
        **(
            {
                "train_first_layers": plan.train.first_stage_layers or 0,
                "train_last_layers": plan.train.last_stage_layers or 0,
            }
            if plan.train.first_stage_layers or plan.train.last_stage_layers
            else {}
        ),
        "train_ep_isolated": plan.train.expert_layout == "isolated",
        "train_fp8": plan.train.precision == "fp8",
        "train_lora_rank": plan.train.lora_rank or 0,
        "critic_gpus": plan.pools.critic or 0,
        "reference_gpus": plan.pools.reference or 0,
        "reward_gpus": plan.pools.reward or 0,
        "critic_shared": plan.critic == "shared",
        "fusion": plan.fusion or "none",
        # a chunk given with fusion left open applies to the fused variants only
        "fusion_chunk": (plan.fusion_chunk or 0) if plan.fusion in ("inter-stage", "both") else 0,
        **assessment_columns(plan),
    }


def fixed_assessment(plan: Plan) -> dict[str, int] | None:
    """The frozen models' layout the scenario fixes (plan.assessment), or None."""
    columns = assessment_columns(plan)
    if not columns["assess_tp"]:
        return None
    return {"tp": columns["assess_tp"], "pp": columns["assess_pp"]}


def frozen_roles(resolved: Resolved) -> list[tuple[str, Architecture]]:
    """The frozen models an assessment layout lays out: the reference (the policy's
    architecture unless the scenario gives one; none with LoRA, whose base is the
    reference) and a scoring model."""
    own_reference = (
        resolved.algorithm.needs_reference and not resolved.scenario.plan.train.lora_rank
    )
    return frozen_models(resolved.policy, resolved.reference, resolved.reward, own_reference)


def _reference_rollout_tp(gpus: int, per_node: int) -> int:
    tp = 1
    while tp * 2 <= min(gpus, per_node) and gpus % (tp * 2) == 0:
        tp *= 2
    return tp


LaunchCheck = Callable[["Recommender", int, Mapping[str, Any], str], str | None]
"""Why a framework's export cannot launch row `row` of a recommender's result, costed as the
plan given (None: it can): export.writer.Writer.refusal."""


class Recommender:
    def __init__(
        self,
        resolved: Resolved,
        rules: list[CompiledRule],
        frameworks: Iterable[Framework],
        *,
        enforce_memory: bool = True,
        overheads: Overheads = DEFAULT_OVERHEADS,
        constraints: Iterable[CompiledConstraint] = (),
        components: Mapping[str, str] | None = None,
        mapped: Collection[str] = (),
        only: str | None = None,
        costed_as: str | None = None,
        research: bool = False,
        filter_frameworks: bool = True,
        exhaustive: bool = False,
        full_grid: bool = False,
        held_out: str | None = None,
        engine_max_seqs: int | None = None,
        fp32_gradients: bool = False,
        frozen_on_host: bool = False,
        phase_on_colocation: bool = False,
        split_stages: bool = False,
        versions: Mapping[str, str] | None = None,
        launch_check: LaunchCheck | None = None,
        rollout_log_probs: str | None = None,
        phase_offload: str | None = None,
        sequence_parallel: bool = True,
    ) -> None:
        """`frameworks` with their `constraints` decide which plans can run (none given: every
        plan is judged on physics alone, as calibration does). Plans are ranked when a
        released framework runs them; the others, that only research systems (partial code, a
        paper, a closed system) run, are kept as what-ifs, unless `research` ranks every
        framework's plans. `only` keeps one framework (whatever its availability); `mapped`
        frameworks have an export mapping. Without `filter_frameworks` (estimate) the plans
        are only labelled with them. `held_out` names a framework whose own defaults are not
        used, neither its tie-breaks (`framework_defaults`) nor the cost constants read from it
        (cost.overheads.without_framework): its published launches are then judged out of
        sample; `only` costs with the constants that framework sets for itself
        (cost.overheads.for_framework), and so does `costed_as`, which keeps every
        framework's label (estimate of one framework's launch). `engine_max_seqs` caps the
        sequences an engine runs at once (the cost model's cap otherwise): a framework whose
        launch cannot set it runs at its engine's default.
        `fp32_gradients` costs gradient buffers in fp32 where the scenario does not say;
        `frozen_on_host` parks the frozen models (reference, reward model) in every plan, as
        a framework that always does so runs them; `phase_on_colocation` parks a colocated
        trainer's state around the rollout in every colocated plan (phase offload), as a
        framework that always does so runs them. `split_stages` gives pipelined plans
        Megatron's account-for-embedding-and-loss split where it divides the layers
        (`stage_split`), for a framework whose launch can write the stage counts; otherwise
        the stages are even. `versions` names per framework the mapping
        whose version its constraint records are judged at (rules.frameworks.supports).
        `rollout_log_probs` is a condition over the facts where the framework's launch trains
        on the rollout engine's log-probs and skips the old-log-prob pass (SkyRL's fully
        asynchronous trainer): those plans cost no such pass. `phase_offload` is a condition
        over the facts where the framework's launch parks the trained state between phases
        whatever the plan says (SkyRL's policy swapped out around a reference on its GPUs):
        those plans are costed, and shown, with phase offload. Without `sequence_parallel`
        a tensor-parallel rank holds every token of its micro-batch where the scenario does
        not say (a framework whose tensor parallelism has no sequence split).
        `launch_check` says why a framework's export mapping cannot launch a costed row
        (export's own predicate, given from above: rules does not import export); a
        framework with a mapping is listed in a plan's `launchable_by` only where it can."""
        self.resolved = resolved
        self.launch_check = launch_check
        self.costed_as = costed_as
        """The framework `estimate --framework` costs the plan as; a plan its own constraints
        refuse says so in `launch_refused_by` (`own_refusal`)."""
        self.rollout_log_probs = (
            Condition(rollout_log_probs, FACTS) if rollout_log_probs is not None else None
        )
        self.phase_offload = Condition(phase_offload, FACTS) if phase_offload is not None else None
        self.narrowed: Callable[[str], Recommender] | None = None
        """A recommender of the same scenario for one framework alone (`recommender_for`
        sets it where a launch check is given): `recommend` asks the mapped frameworks'
        own rankings when every runner of this one's plans refuses them at export."""
        self.enforce_memory = enforce_memory
        self.held_out = held_out
        if (only or costed_as) is not None:
            overheads = for_framework(
                overheads,
                only or costed_as,
                resolved.accelerator.capacity_gib,
                resolved.accelerator_id,
            )
        if held_out is not None:
            overheads = without_framework(
                overheads, held_out, resolved.accelerator.capacity_gib, resolved.accelerator_id
            )
        if engine_max_seqs is not None and engine_max_seqs < overheads.max_seqs_per_replica:
            overheads = replace(overheads, max_seqs_per_replica=engine_max_seqs)
        self.overheads = overheads
        # Rules about the rollout, placement or overlap say nothing about an offline method.
        online = resolved.algorithm.online
        self.rules = [r for r in rules if online or not r.about_generation]
        self.frameworks = list(frameworks)
        self.mapped = frozenset(mapped)
        every = supports(
            self.frameworks,
            constraints,
            components or {},
            resolved.algorithm.id,
            resolved.algorithm.online,
            versions,
        )
        self.labels = every
        """The frameworks that label a plan (`frameworks`, `launchable_by`, `also_claimed_by`)."""
        ranked_all = research or only is not None or not filter_frameworks
        self.supports = every if ranked_all else [x for x in every if x.released]
        """The frameworks whose plans are searched and ranked."""
        self.research_supports = [] if ranked_all else [x for x in every if not x.released]
        """Frameworks whose plans are kept as what-ifs only (see `research_what_if`)."""
        if self.frameworks and filter_frameworks and not self.supports:
            if every:
                raise NoFeasiblePlan(
                    f"no released framework in the knowledge base claims "
                    f"{resolved.algorithm.name}; research systems that do: "
                    f"{', '.join(x.id for x in every)} (--include-research ranks their plans)"
                )
            raise NoFeasiblePlan(
                f"no framework in the knowledge base claims {resolved.algorithm.name}, so none "
                "runs a plan of this scenario; `rlmguide estimate` costs a fixed plan regardless"
            )
        if only is not None:
            self.supports = [x for x in self.supports if x.id == only]
            if not self.supports:
                raise NoFeasiblePlan(
                    f"framework {only} does not claim {resolved.algorithm.name}, so it runs no "
                    "plan of this scenario"
                )
            self.labels = self.supports
            plan = resolved.scenario.plan
            for feature, field in configuration_techniques(
                plan.critic, plan.fusion, fixed_assessment(plan), plan.train.expert_layout
            ):
                if feature not in self.supports[0].claimed:
                    raise NoFeasiblePlan(
                        f"framework {only} does not claim {feature} ({field}), so it runs no "
                        "plan of this scenario"
                    )
        self.launchable = np.zeros(0, dtype=bool)
        """For each plan `run` returned: a released framework runs it (else a research
        system only)."""
        self._research_rows: np.ndarray | None = None
        self.only = only
        self.filter_frameworks = filter_frameworks
        self.exhaustive = exhaustive
        """Pair every layout (tests compare the pruned search against it)."""
        self.pruned = not (exhaustive or full_grid)
        self.coarse = resolved.scenario.cluster.gpus > FINE_GRID_UP_TO_GPUS and self.pruned
        """Above FINE_GRID_UP_TO_GPUS, search the splits coarse to fine (`_searched_splits`),
        and wherever colocated pairs are many, probe the rollout layouts first
        (`_colocated_rollouts`); `full_grid` turns both off (tests compare the two)."""
        self.probed = False
        self.coarse_splits: list[int] = []
        self.refined_around: list[int] = []
        """Rollout pool sizes of the coarse splits and of the best ones refined around."""
        self._layouts: dict[tuple[str, int, tuple[Offload, ...]], dict[str, np.ndarray]] = {}
        self.final_env: dict[str, Any] = {}
        self.final_size = 0
        """The facts of the rows `run` returned (row_facts and pairs_for read them)."""
        self._frameworks_of: dict[int, list[str]] = {}
        """frameworks_of's verdicts on the rows of final_env."""
        self.final_costs: CostTable | None = None
        """The rows `run` returned, costed (a row's parked twin is shown from it)."""
        self._parked: dict[tuple[Any, ...], int] = {}
        """The parked-reference variants among those rows, by the plan they park for
        (`parked_twin`)."""
        self.parked_by: dict[int, list[str]] = {}
        """Per row `runners` judged, the frameworks it lists only for the row's parked twin."""
        self.ranked_rows: list[int] = []
        """Rows of those plans in rank order, once `recommend` has ranked them."""
        self.facts = scenario_facts(resolved)
        # What a training GPU's tensors may take (the policy's state must fit there).
        self.usable_gib = (
            resolved.accelerator.capacity_gib - overheads.train_runtime_reserve_bytes / GIB
        )
        self.search = Search()
        self.fixed = fixed_columns(resolved)
        if fp32_gradients and resolved.scenario.plan.train.fp32_gradients is None:
            self.fixed["train_fp32_gradients"] = True
        if not sequence_parallel and resolved.scenario.plan.train.sequence_parallel is None:
            self.fixed["train_sequence_parallel"] = False
        train = resolved.scenario.plan.train
        critic = resolved.critic
        self.split_stages = (
            split_stages
            and not (train.first_stage_layers or train.last_stage_layers)
            and (train.virtual_stages or 1) == 1
            and (critic is None or critic.layers == resolved.policy.layers)
        )
        """Searched pipelines take the account-for split (`stage_split`)."""
        # Offline there is no rollout phase to park the trainer's state for.
        phases = (NO_OFFLOAD, PHASE_OFFLOAD) if resolved.algorithm.online else (NO_OFFLOAD,)
        parked = frozen_on_host and bool(frozen_roles(resolved))

        def frozen_parked(options: tuple[Offload, ...]) -> tuple[Offload, ...]:
            # a plan that fixes its offload too: the framework's own code parks them (its
            # mapping's implied offload_frozen), whatever the launch or scenario says
            return (
                tuple(o.model_copy(update={"frozen": True}) for o in options) if parked else options
            )

        colocated = offload_options(resolved, phases)
        if phase_on_colocation and resolved.algorithm.online:
            # the framework's refit parks the state whatever the launch or scenario says
            colocated = tuple(o.model_copy(update={"phase": True}) for o in colocated)
        self.colocated_offloads = frozen_parked(colocated)
        self.train_offloads = frozen_parked(offload_options(resolved, phases[:1]))
        self.offload_fallback = False
        """Set when no plan fitted without a CPU optimizer or streamed parameters."""
        self._tightest: tuple[float, dict[str, Any]] | None = None
        self._tightest_offloaded: tuple[float, dict[str, Any]] | None = None
        """The closest plan of the offload round: its own, since its overflow is often the
        host's, a node's GiB that `_tightest` (GiB per GPU mostly) would never pick."""
        self.pool_refusals: dict[str, Constraint] = {}
        """The constraints that refused plans only for want of a model's own pool
        (`_refused_for_pools`)."""
        # A require rule over one pool's facts is judged on that pool before the pools meet.
        self.level = {
            rule.id: (
                level
                if rule.record.effect == "require"
                and (level := pool_of(rule.names)) in ("rollout", "train")
                else "plan"
            )
            for rule in rules
        }

    # -- judging ---------------------------------------------------------------------------

    def _reject(
        self, env: Mapping[str, Any], size: int, level: str, weight: np.ndarray
    ) -> np.ndarray:
        """Rows that pass every require rule of `level`; rejections are counted, weighted by
        how many candidate plans each row stands for."""
        alive = np.ones(size, dtype=bool)
        for rule in self.rules:
            if rule.record.effect != "require" or self.level[rule.id] != level:
                continue
            hit = rule.fires(env, size) & alive
            if hit.any():
                self.search.rejected[rule.id] += int(weight[hit].sum())
                alive &= ~hit
        if self.frameworks and self.filter_frameworks:
            runnable = self._runnable(env, size, level, weight, alive)
            if level == "plan" and self.research_supports:
                # Kept as what-ifs: the plans only research systems run.
                self._research_rows = alive & ~runnable & _runs(self.research_supports, env, size)
            alive &= runnable
        return alive

    def _runnable(
        self, env: Mapping[str, Any], size: int, level: str, weight: np.ndarray, alive: np.ndarray
    ) -> np.ndarray:
        """Rows some framework can run, judged on `level`'s facts; the others are counted
        against the first constraint that refuses them (one framework) or as refused by every
        framework."""
        some = np.zeros(size, dtype=bool)
        first_fail: list[tuple[str, np.ndarray]] = []
        seen: dict[str, np.ndarray] = {}
        for support in self.supports:
            ok, fails = support.runnable(env, size, level, seen)
            some |= ok
            if self.only:
                first_fail = list(fails.items())
                only = (support, fails)
            elif some.all():
                break  # every row has a framework; the others need not be judged here
        refused = alive & ~some
        if refused.any():
            if first_fail and len(only[0].pairs) > 1:
                self._count_by_pair(*only, env, size, level, weight, refused)
            left = refused.copy()
            for cid, failing in first_fail:
                hit = left & failing
                if hit.any():
                    self.search.rejected[f"constraint {cid}"] += int(weight[hit].sum())
                    left &= ~hit
            if left.any():
                reason = (
                    f"{self.only}'s claims"
                    if self.only
                    else "no released framework runs it"
                    if self.research_supports
                    else "no framework runs it"
                )
                self.search.rejected[reason] += int(weight[left].sum())
        return some

    def _count_by_pair(
        self,
        support: Support,
        fails: Mapping[str, np.ndarray],
        env: Mapping[str, Any],
        size: int,
        level: str,
        weight: np.ndarray,
        refused: np.ndarray,
    ) -> None:
        """Count, for each pair `support` offers, the first reason it refuses the `refused`
        rows for (Search.by_pair)."""
        for pair, reasons in support.pair_failures(env, size, fails, level).items():
            left = refused.copy()
            for reason, hit in reasons:
                if (hit := left & hit).any():
                    self.search.by_pair[(pair, reason)] += int(weight[hit].sum())
                    left &= ~hit

    def cost(self, resolved: Resolved, table: PlanTable) -> CostTable:
        """Cost `table` for `resolved` (the scenario, or it at another response length);
        the plans whose launch skips the old-log-prob pass (`rollout_log_probs`) without it,
        and those whose launch parks the trained state (`phase_offload`) with phase offload,
        which the costed table's plans then show."""
        options = resolved.cost_options()
        if self.phase_offload is not None:
            env = {**scenario_facts(resolved), **plan_facts(table)}
            parked = np.broadcast_to(self.phase_offload.evaluate(env), (len(table),))
            table = replace(table, offload_phase=table.offload_phase | parked)
        if self.rollout_log_probs is not None and options["old_log_probs"]:
            env = {**scenario_facts(resolved), **plan_facts(table)}
            skipped = np.broadcast_to(self.rollout_log_probs.evaluate(env), (len(table),))
            options["old_log_probs"] = ~np.asarray(skipped, dtype=bool)
        return _cost(resolved, table, self.overheads, options)

    def splits(self) -> list[Split]:
        """The pool splits searched (rules.search.splits)."""
        return splits(self.resolved)

    def billed(self) -> list[BilledPart] | None:
        """The GPUs a plan bills, each part at its price; None: the whole cluster."""
        return None

    def _env(self, table: PlanTable, costs: CostTable | None = None) -> dict[str, Any]:
        return {**self.facts, **plan_facts(table, costs)}

    def layouts(
        self, pool: str, gpus: int, offloads: tuple[Offload, ...] = ()
    ) -> dict[str, np.ndarray]:
        """A pool's layouts on `gpus` GPUs, enumerated once per search."""
        key = (pool, gpus, offloads)
        if key not in self._layouts:
            r = self.pool_resolved(pool)
            self._layouts[key] = (
                rollout_layouts(r, gpus) if pool == "rollout" else train_layouts(r, gpus, offloads)
            )
            if pool != "rollout" and self.split_stages:
                layout = self._layouts[key]
                first = stage_split(r.policy.layers, layout["pp"])
                layout["first_layers"] = layout["last_layers"] = first
        return self._layouts[key]

    def pool_resolved(self, pool: str) -> Resolved:
        """The scenario a pool's layouts are enumerated for (a pool on another part of a mixed
        cluster has that part's, rules.mixed)."""
        return self.resolved

    # -- pools -----------------------------------------------------------------------------

    def _pool_shortlists(
        self, pool: str, sizes: list[tuple[int, int]], weights: list[int]
    ) -> tuple[dict[int, dict[str, np.ndarray]], dict[int, int], dict[int, float]]:
        """The fastest feasible layouts of a disaggregated pool, for every (size, other) pair
        of `sizes`, costed in one call, how many fit and the pool's fastest seconds per size;
        `weights[k]` is how many candidate plans one layout of pair k stands for (the other
        pool's layouts times the execution modes)."""
        r = self.resolved
        per_node = r.scenario.cluster.gpus_per_node
        per_size = [self.layouts(pool, size, self.train_offloads) for size, _ in sizes]
        counts = np.array([len(layouts["tp"]) for layouts in per_size])
        out: dict[int, dict[str, np.ndarray]] = {}
        feasible: dict[int, int] = {}
        fastest: dict[int, float] = {}
        if not counts.sum():
            return out, feasible, fastest
        layouts = {k: np.concatenate([x[k] for x in per_size]) for k in per_size[0]}
        group = np.repeat(np.arange(len(sizes)), counts)
        other = np.array([o for _, o in sizes])[group]
        n = len(group)
        if pool == "rollout":
            reference = {
                "gpus": other,
                "tp": 1,
                "pp": 1,
                "cp": 1,
                "ep": 1,
                "etp": 1,
                "zero": 3,
                "recompute": "full",
            }
            rows = {**pool_columns("rollout", layouts), **pool_columns("train", reference)}
        else:
            tps = np.array([_reference_rollout_tp(o, per_node) for _, o in sizes])[group]
            reference = {"gpus": other, "tp": tps, "pp": 1, "ep": 1}
            rows = {**pool_columns("rollout", reference), **pool_columns("train", layouts)}
        rows.update(placement=np.full(n, PLACEMENTS.index("disaggregated")), execution="sync")
        table = PlanTable.from_arrays(**rows, **self.fixed)
        weight = np.asarray(weights)[group]
        alive = self._reject(self._env(table), n, pool, weight)
        keep = np.flatnonzero(alive)
        if not keep.size:
            return out, feasible, fastest
        costs = self.cost(r, table.take(keep))
        overflows = costs.pool_overflow_gib
        if pool == "rollout":
            seconds = costs.stages["rollout"].seconds
            excess = overflows["rollout"]
        else:
            seconds = (
                costs.stages["training"].seconds
                + costs.stages["assessment"].seconds
                + costs.stages["switch"].seconds
            )
            excess = np.max([v for k, v in overflows.items() if k != "rollout"], axis=0)
        fits = (excess <= 0.0) | (not self.enforce_memory)
        self.search.rejected["memory"] += int(weight[keep][~fits].sum())
        self._note_closest(costs, ~fits, excess)
        ok = keep[fits]
        order = ok[np.lexsort((seconds[fits], group[ok]))]
        by_row = np.empty(n)
        by_row[keep] = seconds
        for k, (size, _) in enumerate(sizes):
            mine = order[group[order] == k]
            feasible[size] = len(mine)
            if len(mine):
                fastest[size] = float(by_row[mine[0]])
            keep_mask = np.arange(len(mine)) < (len(mine) if self.exhaustive else SHORTLIST)
            if pool == "rollout":
                # The pool is probed as a sync plan, and a constraint on the whole plan may
                # refuse the fastest engines in another mode (NeMo-RL's vLLM runs experts
                # wider than its tensor group only with the sync engine): the fastest plain
                # engine, tensor-parallel alone, every framework runs in every mode, stays.
                plain = (layouts["pp"][mine] == 1) & (layouts["ep"][mine] <= layouts["tp"][mine])
                keep_mask[np.flatnonzero(plain)[:1]] = True
            if pool == "train" and r.scenario.cluster.gpus <= FINE_GRID_UP_TO_GPUS:
                # Weight sync depends on the trainer's tp, pp, cp and ZeRO stage, and when
                # the rollout is the critical path a slower trainer with a faster sync wins:
                # the fastest layout of each such group stays.
                sync = np.stack([layouts[c][mine] for c in ("tp", "pp", "cp", "zero")], axis=1)
                keep_mask[np.unique(sync, axis=0, return_index=True)[1]] = True
            kept = mine[keep_mask]
            out[size] = {key: v[kept] for key, v in layouts.items()}
        return out, feasible, fastest

    def _note_closest(self, costs: CostTable, failing: np.ndarray, excess: np.ndarray) -> None:
        """Keep the plan that misses the memory by the least, to explain a failed search."""
        rows = np.flatnonzero(failing)
        if not rows.size:
            return
        i = int(rows[np.argmin(excess[rows])])
        if self._tightest is None or float(excess[i]) < self._tightest[0]:
            self._tightest = (float(excess[i]), costs.row(i))
        plans = costs.plans
        # (a pool's probe rows pair it with a plain reference pool: only offloading rows count)
        heavy = np.flatnonzero(failing & ((plans.offload_optimizer > 0) | plans.offload_params))
        if not self.offload_fallback or not heavy.size:
            return
        j = int(heavy[np.argmin(excess[heavy])])
        if self._tightest_offloaded is None or float(excess[j]) < self._tightest_offloaded[0]:
            self._tightest_offloaded = (float(excess[j]), costs.row(j))

    # -- candidates ------------------------------------------------------------------------

    def _colocated_rows(self, split: Split) -> list[dict[str, Any]]:
        """Every rollout layout with every training layout that is not dominated (see
        `_train_frontier`), in every execution mode and prefix-caching choice."""
        r = self.resolved
        ro = self.layouts("rollout", split.rollout_gpus)
        tr = self.layouts("train", split.train_gpus, self.colocated_offloads)
        modes = executions("colocated", r.scenario.plan, r.searched_staleness)
        prefixes = prefix_caching_options(r)
        nr, nt = len(ro["tp"]), len(tr["tp"])
        if not nr or not nt or not modes:
            return []
        per_layout = len(modes) * len(prefixes)
        self.search.candidates += nr * nt * per_layout
        tr, resident = self._train_frontier(split, tr, nr * per_layout)
        nt = len(tr["tp"])
        if not nt:
            return []
        if self.pruned and nr > COLOCATED_ROLLOUTS and nr * nt * per_layout > PROBED_ABOVE:
            ro = self._colocated_rollouts(split, ro, tr, resident)
            nr, self.probed = len(ro["tp"]), True
        ri, ti = np.meshgrid(np.arange(nr), np.arange(nt), indexing="ij")
        ri, ti = ri.ravel(), ti.ravel()
        out = []
        for (execution, staleness), prefix in ((m, p) for m in modes for p in prefixes):
            out.append(
                self._combine(
                    split.placement,
                    execution,
                    staleness,
                    prefix,
                    {k: v[ri] for k, v in ro.items()},
                    {k: v[ti] for k, v in tr.items()},
                )
            )
        return out

    def _train_frontier(
        self, split: Split, tr: dict[str, np.ndarray], weight: int
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The colocated training layouts worth pairing with rollout layouts: those that pass
        the training pool's rules and constraints and fit, and among layouts that sync weights
        alike (same tp, pp, cp, ZeRO stage), only those no other beats on both the trainer's
        time and the state it keeps on the GPUs during the rollout (less state leaves more KV
        cache). `weight` is how many candidates one layout stands for. Returns those layouts
        and the trainer state (GiB per GPU) each keeps during the rollout."""
        r = self.resolved
        n = len(tr["tp"])
        reference_tp = _reference_rollout_tp(split.rollout_gpus, r.scenario.cluster.gpus_per_node)
        rows = {
            **pool_columns("rollout", {"gpus": split.rollout_gpus, "tp": reference_tp}),
            **pool_columns("train", tr),
        }
        rows.update(placement=np.full(n, PLACEMENTS.index("colocated")), execution="sync")
        table = PlanTable.from_arrays(**rows, **self.fixed)
        alive = self._reject(self._env(table), n, "train", np.full(n, weight))
        keep = np.flatnonzero(alive)
        if not keep.size:
            return {k: v[keep] for k, v in tr.items()}, np.zeros(0)
        costs = self.cost(r, table.take(keep))
        trainer = sum(costs.stages[s].seconds for s in ("assessment", "training", "switch"))
        rollout_terms = costs.memory_terms_gib.get("rollout")
        # Offline nothing stays beside a rollout: the trainer's time alone decides.
        resident = rollout_terms["trainer_state"] if rollout_terms else np.zeros(keep.size)
        excess = np.max([v for k, v in costs.pool_overflow_gib.items() if k != "rollout"], axis=0)
        fits = (excess <= 0.0) | (not self.enforce_memory)
        self.search.rejected["memory"] += int((~fits).sum()) * weight
        self._note_closest(costs, ~fits, excess)
        if self.exhaustive:
            return {k: v[keep[fits]] for k, v in tr.items()}, resident[fits]
        frontier = []
        ok = np.flatnonzero(fits)
        groups = np.stack([tr[k][keep[ok]] for k in ("tp", "pp", "cp", "zero")], axis=1)
        offloads = [k for k in TRAIN_LAYOUT_COLUMNS if k.startswith("offload_")]
        offload = np.stack([tr[k][keep] for k in offloads], axis=1)
        for group in np.unique(groups, axis=0):
            mine = ok[np.all(groups == group, axis=1)]
            least = np.inf
            for i in mine[np.lexsort((resident[mine], trainer[mine]))]:
                if resident[i] < least:
                    frontier.append(i)
                    least = resident[i]
            # The micro-batch a trainer fits depends on the rollout beside it, so its time at
            # the reference rollout does not rank offload settings: the fastest of each stays.
            by_time = mine[np.argsort(trainer[mine], kind="stable")]
            frontier.extend(by_time[np.unique(offload[by_time], axis=0, return_index=True)[1]])
        chosen = np.unique(np.asarray(frontier, dtype=np.int64))
        return {k: v[keep[chosen]] for k, v in tr.items()}, resident[chosen]

    def _colocated_rollouts(
        self,
        split: Split,
        ro: dict[str, np.ndarray],
        tr: dict[str, np.ndarray],
        resident: np.ndarray,
    ) -> dict[str, np.ndarray]:
        """The rollout layouts worth pairing with every training layout of a large colocated
        cluster: each rollout layout is costed beside `PROBES` training layouts that span the
        trainer state they leave on the GPUs (which sets the KV cache), and per probe the
        `COLOCATED_ROLLOUTS` fastest that fit stay, with the fastest of every engine shape
        (so that the simpler engine a tie prefers is still there)."""
        nr = len(ro["tp"])
        by_state = np.argsort(resident, kind="stable")
        probes = by_state[np.unique(np.linspace(0, len(by_state) - 1, PROBES).round().astype(int))]
        ri = np.tile(np.arange(nr), len(probes))
        ti = np.repeat(probes, nr)
        execution, staleness = executions(
            "colocated", self.resolved.scenario.plan, self.resolved.searched_staleness
        )[0]
        rows = self._combine(
            split.placement,
            execution,
            staleness,
            prefix_caching_options(self.resolved)[0],
            {k: v[ri] for k, v in ro.items()},
            {k: v[ti] for k, v in tr.items()},
        )
        table = PlanTable.from_arrays(**rows, **self.fixed)
        n = len(table)
        # Only ranks the rollout layouts: nothing here counts as rejected.
        alive = self._reject(self._env(table), n, "rollout", np.zeros(n, dtype=int))
        keep = np.flatnonzero(alive)
        costs = self.cost(self.resolved, table.take(keep))
        fits = costs.feasible | (not self.enforce_memory)
        keep, seconds = keep[fits], costs.step_seconds[fits]
        shape = rollout_shape(table.take(keep))
        chosen: set[int] = set()
        for probe in probes:
            mine = np.flatnonzero(ti[keep] == probe)
            mine = mine[np.argsort(seconds[mine], kind="stable")]
            chosen.update(int(ri[keep[k]]) for k in mine[:COLOCATED_ROLLOUTS])
            first = np.unique(shape[mine], return_index=True)[1]
            chosen.update(int(ri[keep[k]]) for k in mine[first])
        picked = np.array(sorted(chosen), dtype=np.int64)
        return {k: v[picked] for k, v in ro.items()}

    @staticmethod
    def _combine(
        placement: str,
        execution: str,
        staleness: int,
        prefix: bool,
        ro: Mapping[str, np.ndarray],
        tr: Mapping[str, np.ndarray],
    ) -> dict[str, Any]:
        return dict(
            # Codes, not names: coding millions of names would sort them.
            placement=np.full(len(ro["tp"]), PLACEMENTS.index(placement)),
            execution=execution,
            # A synchronous row carries 1 (unused); async at 0 is the on-policy stream.
            staleness=staleness if execution == "async" else max(staleness, 1),
            prefix_caching=prefix,
            **pool_columns("rollout", ro),
            **pool_columns("train", tr),
        )

    def _disaggregated_rows(self, chosen: list[Split]) -> list[dict[str, Any]]:
        r = self.resolved
        if not chosen:
            return []
        modes = executions("disaggregated", r.scenario.plan, r.searched_staleness)
        prefixes = prefix_caching_options(r)
        per_layout = len(modes) * len(prefixes)
        chosen, lists = self._searched_splits(chosen, per_layout)
        out = []
        for split in chosen:
            ro, tr = lists.rollouts.get(split.rollout_gpus), lists.trains.get(split.train_gpus)
            if ro is None or tr is None or not len(ro["tp"]) or not len(tr["tp"]):
                continue
            ri, ti = np.meshgrid(np.arange(len(ro["tp"])), np.arange(len(tr["tp"])), indexing="ij")
            ri, ti = ri.ravel(), ti.ravel()
            out += [
                self._combine(
                    "disaggregated",
                    execution,
                    staleness,
                    prefix,
                    {k: v[ri] for k, v in ro.items()},
                    {k: v[ti] for k, v in tr.items()},
                )
                for (execution, staleness) in modes
                for prefix in prefixes
            ]
        return out

    def _searched_splits(
        self, chosen: list[Split], per_layout: int
    ) -> tuple[list[Split], Shortlists]:
        """The splits to compose and their pools' shortlists. On a coarse grid with more than
        COARSE_SPLITS splits, the pools are first costed at COARSE_SPLITS evenly spaced splits
        and at every power-of-two rollout pool; then at every split between the coarse
        neighbours of the best split by the sum of the two pools' fastest times (sync) and by
        their maximum (overlapped)."""
        if not self.coarse or len(chosen) <= COARSE_SPLITS:
            return chosen, self._shortlists(chosen, per_layout)
        spaced = np.linspace(0, len(chosen) - 1, COARSE_SPLITS).round().astype(int)
        first = sorted(
            {chosen[i] for i in spaced}
            | {s for s in chosen if s.rollout_gpus & (s.rollout_gpus - 1) == 0},
            key=lambda s: s.rollout_gpus,
        )
        lists = self._shortlists(first, per_layout)
        self.coarse_splits = [s.rollout_gpus for s in first]
        costed = [s for s in first if s.rollout_gpus in lists.rollout_seconds
                  and s.train_gpus in lists.train_seconds]  # fmt: skip
        if not costed:
            return first, lists
        times = np.array(
            [(lists.rollout_seconds[s.rollout_gpus], lists.train_seconds[s.train_gpus])
             for s in costed]
        )  # fmt: skip
        around = {costed[int(np.argmin(times.sum(axis=1)))],
                  costed[int(np.argmin(times.max(axis=1)))]}  # fmt: skip
        self.refined_around = sorted(s.rollout_gpus for s in around)
        finer: set[Split] = set()
        for best in around:
            k = first.index(best)
            low = first[k - 1].rollout_gpus if k else 0
            high = first[k + 1].rollout_gpus if k + 1 < len(first) else math.inf
            finer |= {s for s in chosen if low < s.rollout_gpus < high} - set(first)
        more = self._shortlists(sorted(finer, key=lambda s: s.rollout_gpus), per_layout)
        for mine, theirs in zip(lists, more, strict=True):
            mine.update(theirs)
        return sorted(set(first) | finer, key=lambda s: s.rollout_gpus), lists

    def _shortlists(self, chosen: list[Split], per_layout: int) -> Shortlists:
        """Both pools' shortlists at these splits, their candidates counted."""
        n_train = [
            len(self.layouts("train", s.train_gpus, self.train_offloads)["tp"]) for s in chosen
        ]
        n_roll = [len(self.layouts("rollout", s.rollout_gpus)["tp"]) for s in chosen]
        self.search.candidates += sum(a * b for a, b in zip(n_roll, n_train, strict=True)) * (
            per_layout
        )
        rollouts, feasible_rollouts, rollout_seconds = self._pool_shortlists(
            "rollout",
            [(s.rollout_gpus, s.train_gpus) for s in chosen],
            [t * per_layout for t in n_train],
        )
        # Training layouts of a split whose rollout pool has no feasible layout stand for no
        # further candidates: they are already counted as rejected with the rollout pool.
        trains, _, train_seconds = self._pool_shortlists(
            "train",
            [(s.train_gpus, s.rollout_gpus) for s in chosen],
            [feasible_rollouts.get(s.rollout_gpus, 0) * per_layout for s in chosen],
        )
        return Shortlists(rollouts, trains, rollout_seconds, train_seconds)

    # -- the whole search ------------------------------------------------------------------

    def run(self) -> tuple[CostTable, dict[str, np.ndarray]]:
        """Search without heavy offload; where memory rejects every plan and the scenario
        leaves offload open, search again with a CPU optimizer or streamed parameters."""
        self._start = time.perf_counter()
        try:
            return self._run_round()
        except NoFeasiblePlan:
            # Memory turned some plans away: heavier offload may let them run.
            memory_bound = self.search.rejected["memory"] > 0
            if not memory_bound or self.resolved.scenario.plan.train.offload is not None:
                raise
        self.offload_fallback = True
        self.colocated_offloads = HEAVY_OFFLOADS
        self.train_offloads = tuple(o.model_copy(update={"phase": False}) for o in HEAVY_OFFLOADS)
        return self._run_round()

    def _run_round(self) -> tuple[CostTable, dict[str, np.ndarray]]:
        start = self._start
        vetoing_rule = self._scenario_rejection()
        rows: list[dict[str, Any]] = []
        chosen = self.splits()
        for split in chosen:
            if split.placement in ONE_POOL:
                rows += self._colocated_rows(split)
        rows += self._disaggregated_rows([s for s in chosen if s.placement == "disaggregated"])
        if vetoing_rule is not None:
            self.search.rejected[vetoing_rule] += self.search.candidates - sum(
                self.search.rejected.values()
            )
            rows = []
        if not rows:
            self.search.seconds = time.perf_counter() - start
            raise NoFeasiblePlan(self._binding())
        lengths = [len(p["placement"]) for p in rows]
        merged = {k: _stack([p[k] for p in rows], lengths) for k in rows[0]}
        table = PlanTable.from_arrays(**merged, **self.fixed)
        n = len(table)
        colocated = shares_gpus(table.placement)
        env = self._env(table)
        alive = np.ones(n, dtype=bool)
        for level in ("rollout", "train"):
            # Disaggregated rows were judged per pool already; colocated ones are judged here.
            alive &= self._reject(env, n, level, colocated.astype(int)) | ~colocated
        keep = np.flatnonzero(alive)
        if not keep.size:
            self.search.seconds = time.perf_counter() - start
            raise NoFeasiblePlan(self._binding())
        table = table.take(keep)
        costs = self.cost(self.resolved, table)
        env = self._env(table, costs)
        n = len(table)
        self._research_rows = None
        alive = self._reject(env, n, "plan", np.ones(n, dtype=int))
        research = self._research_rows if self._research_rows is not None else np.zeros_like(alive)
        fits = costs.feasible | (not self.enforce_memory)
        colocated = shares_gpus(table.placement)
        self.search.rejected["memory"] += int((alive & ~fits & colocated).sum())
        # A disaggregated combination of two fitting pools can still overflow (weight-sync
        # buffers); it is rejected too but was never counted as a candidate of its own.
        self._note_closest(costs, alive & ~fits, costs.overflow_gib)
        waiting = np.zeros(n, dtype=bool)
        if not (alive & fits).any() and self.frameworks and self.filter_frameworks:
            # A framework that runs a model only on a pool of its own (NeMo-RL's reward
            # model) refuses every plan here, where the pools are the scenario's: its plans
            # are the own-pool variants of the plans it would run but for that.
            waiting = self._refused_for_pools(env, n) & fits
        ok = np.flatnonzero((alive | research | waiting) & fits)
        self.search.seconds = time.perf_counter() - start
        if not (alive | waiting)[ok].any():
            raise NoFeasiblePlan(self._binding())
        costs, launchable, waiting = costs.take(ok), alive[ok], waiting[ok]
        variant = np.zeros(len(costs), dtype=bool)
        if self.frameworks and self.filter_frameworks:
            searched = len(costs)
            costs, launchable = self._with_configurations(costs, launchable, waiting)
            variant = np.arange(len(costs)) >= searched
            if waiting.any():  # bases of the variants only: nobody ranked runs them as they are
                base = np.zeros(len(costs), dtype=bool)
                base[:searched] = waiting & ~research[ok]
                kept = np.flatnonzero(~base)
                if not kept.size:
                    raise NoFeasiblePlan(self._own_pool_binding())
                costs, launchable, variant = costs.take(kept), launchable[kept], variant[kept]
        self.launchable = launchable
        final = {**self.facts, **plan_facts(costs.plans, costs)}
        self.final_env, self.final_size = final, len(costs)
        self.final_costs = costs
        self._parked = {
            _unparked_key(costs.plans, int(i)): int(i)
            for i in np.flatnonzero(variant & costs.plans.offload_frozen)
        }
        self.parked_by = {}
        self._frameworks_of = {}
        fired = {rule.id: rule.fires(final, len(costs)) for rule in self.rules}
        return costs, fired

    def _with_configurations(
        self, costs: CostTable, launchable: np.ndarray, waiting: np.ndarray
    ) -> tuple[CostTable, np.ndarray]:
        """The best plans again under Table 9's other configurations (shared actor-critic,
        inter- and intra-stage fusion, survey §4.1, §4.3), where the scenario leaves them open:
        a variant some framework in the KB runs joins the search like any plan. Variants are
        of the VARIANT_BASE fastest plans and of the fastest of each placement and execution
        mode (a framework that fuses stages may run only synchronous plans): a configuration
        changes the assessment and training, not which layouts are best. A variant only a
        research system runs joins as a what-if (`launchable` false). Then the models whose
        pools the scenario leaves open are given pools of their own (`pool_variants`), the
        `waiting` plans among the bases (`_refused_for_pools`)."""
        order = np.argsort(costs.step_seconds, kind="stable")
        pair = (costs.plans.placement * len(EXECUTIONS) + costs.plans.execution)[order]
        _, firsts = np.unique(pair, return_index=True)
        base = np.union1d(order[:VARIANT_BASE], order[firsts])
        parked = np.union1d(base, self._tie_winners(costs, launchable))
        configured = self._joined(
            *self.configuration_variants(costs.plans.take(base), costs.plans.take(parked))
        )
        pooled = self._joined(*self.pool_variants(costs, launchable | waiting, configured))
        found = [part for part in (configured, pooled) if part is not None]
        if not found:
            return costs, launchable
        # One concatenation of the (large) searched table, whatever joins it.
        variants = reduce(CostTable.concat, [v for v, _ in found])
        self.search.candidates += len(variants)
        return costs.concat(variants), np.concatenate([launchable, *(r for _, r in found)])

    def _tie_winners(self, costs: CostTable, launchable: np.ndarray) -> np.ndarray:
        """The VARIANT_BASE simplest rankable rows (launchable, not lagging) within the tie
        of the fastest one (rules.ranking): where the plan ranked first is, which the
        fastest plans need not include."""
        rankable = np.flatnonzero(launchable & ~lagging(self, costs.plans))
        if not rankable.size:
            return rankable
        seconds = costs.step_seconds[rankable]
        tied = rankable[seconds <= (1 + TIE_FRACTION) * seconds.min()]
        scores = scores_of(self, costs.plans.take(tied))
        return tied[np.lexsort((costs.step_seconds[tied], scores))[:VARIANT_BASE]]

    @staticmethod
    def _joined(
        variants: CostTable | None, alive: np.ndarray, runnable: np.ndarray, research: np.ndarray
    ) -> tuple[CostTable, np.ndarray] | None:
        """The variants that pass and that some framework runs, and where a released one
        does (None if none)."""
        joined = np.flatnonzero(alive & (runnable | research))
        if variants is None or not joined.size:
            return None
        return variants.take(joined), runnable[joined]

    def pool_variants(
        self,
        costs: CostTable,
        launchable: np.ndarray,
        configured: tuple[CostTable, np.ndarray] | None = None,
    ) -> tuple[CostTable | None, np.ndarray, np.ndarray, np.ndarray]:
        """The plans with the models of `pooled_roles` on pools of their own, each of the
        sizes `search.own_pool_sizes` tries (survey §3.1.1: forward-only models as plain
        data-parallel replicas; §4.2: partial co-location), costed and judged: for each size,
        the POOL_PER_SIZE fastest of the POOL_BASES fastest rankable plans (launchable, not
        lagging the policy more than allowed; those of `costs` and the `configured` variants
        with where a released framework runs them) whose layouts still divide the GPUs left
        to them, under their own configuration."""
        roles = self.pooled_roles()
        plan = self.resolved.scenario.plan
        none = costs.plans.take(np.zeros(0, dtype=np.int64))
        if not roles:
            return self._judged(none)
        rankable = np.flatnonzero(launchable & ~lagging(self, costs.plans))
        top = rankable[np.argsort(costs.step_seconds[rankable], kind="stable")[:POOL_BASES]]
        plans, seconds = costs.plans.take(top), costs.step_seconds[top]
        if configured is not None:
            variants, runs = configured
            keep = np.flatnonzero(runs & ~lagging(self, variants.plans))
            plans = plans.concat(variants.plans.take(keep))
            seconds = np.concatenate([seconds, variants.step_seconds[keep]])
        if not len(plans):
            return self._judged(none)
        table = pool_variants(
            plans.take(np.argsort(seconds, kind="stable")[:POOL_BASES]),
            roles,
            own_pool_sizes(self.resolved.gpus),
            ASSESSMENT_TP if plan.assessment is None else (),
            self.resolved.gpus,
            per_size=POOL_PER_SIZE,
            one_pool=plan.placement != "colocated",
            rollout_fixed=plan.rollout.gpus is not None,
            train_fixed=plan.train.gpus is not None,
        )
        ok = self._valid(table)
        return self._judged(table.take(np.flatnonzero(ok)))

    def _refused_for_pools(self, env: Mapping[str, Any], size: int) -> np.ndarray:
        """Rows that pass the require rules and that a framework ranked would run if its
        constraints on the own pools of `pooled_roles` were lifted: the plans it runs once
        a model has GPUs of its own, which `pool_variants` then judges in full."""
        names = {f"plan.pools.{role}" for role in self.pooled_roles()}
        if not names:
            return np.zeros(size, dtype=bool)
        lifted = [
            replace(x, constraints=tuple(c for c in x.constraints if not names & c.names))
            for x in self.supports
        ]
        alive = _runs(lifted, env, size)
        for rule in self.rules:
            if rule.record.effect == "require":
                alive &= ~rule.fires(env, size)
        self.pool_refusals = {
            c.id: c.record
            for x in self.supports
            for c in x.constraints
            if names & c.names and (alive & ~c.holds(env, size)).any()
        }
        return alive

    def _own_pool_binding(self) -> str:
        """No own-pool variant of the plans refused only for their pools runs: the
        constraints that asked for the pool, cited."""
        cited = "; ".join(
            f"constraint {r.id} ({r.title}; {r.file} at {r.commit[:10]})"
            for r in self.pool_refusals.values()
        )
        return (
            f"every plan that fits is refused for want of a model's own pool ({cited}), and "
            f"no plan with one (pool sizes tried: "
            f"{', '.join(map(str, own_pool_sizes(self.resolved.gpus)))} GPUs) both fits and "
            "is run by " + (self.only or "a framework ranked")
        )

    def pooled_roles(self) -> list[str]:
        """The models whose own pool the search sizes: the frozen ones and a separate critic,
        each where the scenario gives it no pool size (plan.pools)."""
        plan = self.resolved.scenario.plan
        roles = [role for role, _ in frozen_roles(self.resolved)]
        if self.resolved.critic is not None and plan.critic != "shared":
            roles.append("critic")
        return [role for role in roles if getattr(plan.pools, role) is None]

    def configuration_variants(
        self, base: PlanTable, parked: PlanTable | None = None
    ) -> tuple[CostTable | None, np.ndarray, np.ndarray, np.ndarray]:
        """`base`'s plans under every other Table 9 configuration that applies, and
        `parked`'s (default `base`) with the frozen models parked while training, costed:
        the variants, where they pass memory and the require rules, where some framework
        ranked runs them, and where only a research system does (no table where no
        configuration applies)."""
        plan = self.resolved.scenario.plan
        has_critic = self.resolved.critic is not None
        critics = (
            [plan.critic] if plan.critic else ["separate"] + (["shared"] if has_critic else [])
        )
        # Offline nothing is generated: no stage can stream behind a rollout.
        fusions = (
            [plan.fusion] if plan.fusion else list(FUSIONS) if self.resolved.algorithm.online
            else ["none"]
        )  # fmt: skip
        # Inter-stage fusion's chunk, where the scenario leaves it open: the default (one
        # assessment micro-batch per rank) and a bounded sweep of hand-offs per step.
        streamed = Batch.of(self.resolved.scenario.workload, Needs.of(self.resolved.algorithm))
        chunks = (
            [plan.fusion_chunk]
            if plan.fusion_chunk
            else [0, *sorted({-(-streamed.generated_sequences // h) for h in FUSION_HANDOFFS})]
        )
        made = [
            replace(
                base,
                critic_shared=np.full(len(base), c == "shared"),
                fusion=np.full(len(base), FUSIONS.index(f), dtype=np.int64),
                fusion_chunk=np.full(len(base), k, dtype=np.int64),
            )
            for c in critics
            for f in fusions
            for k in (chunks if f in ("inter-stage", "both") else [0])
        ]
        sources = [base] * len(made)
        if plan.assessment is None and frozen_roles(self.resolved):
            # The frozen models' own layouts, under each plan's own configuration.
            ones = np.ones(len(base), dtype=np.int64)
            made += [replace(base, assess_tp=t * ones, assess_pp=ones) for t in ASSESSMENT_TP]
            sources += [base] * len(ASSESSMENT_TP)
        if plan.train.offload is None and frozen_roles(self.resolved):
            # The frozen models parked on the host while training, as ROLL and SkyRL always
            # run them (constraints roll-reference-offloaded-after-each-call,
            # skyrl-reference-parked-beside-the-policy): the main round parks them only
            # beside the trainer's state (PHASE_OFFLOAD), so a plan those frameworks run
            # without phase offload (ROLL's FSDP2, any trainer on GPUs of its own) is this one.
            parked = base if parked is None else parked
            made.append(replace(parked, offload_frozen=np.ones(len(parked), dtype=bool)))
            sources.append(parked)
        if plan.train.expert_layout is None and self.resolved.policy.moe is not None:
            # The survey's isolated EP beside Megatron's folding (plan_problems keeps the
            # plans whose ep divides dp): a what-if, as no framework in the KB claims it.
            made.append(replace(base, train_ep_isolated=np.ones(len(base), dtype=bool)))
            sources.append(base)
        table, source = reduce(PlanTable.concat, made), reduce(PlanTable.concat, sources)
        same = np.ones(len(table), dtype=bool)
        for name in (
            "critic_shared", "fusion", "fusion_chunk", "assess_tp", "train_ep_isolated",
            "offload_frozen",
        ):  # fmt: skip
            same &= getattr(table, name) == getattr(source, name)
        # Fusing the assessment into the rollout changes nothing where they already overlap.
        waits = np.isin(
            table.execution, (EXECUTIONS.index("sync"), EXECUTIONS.index("partial-rollout"))
        )
        useful = ~same & (waits | ~inter_stage(table.fusion))
        ok = useful & self._valid(table)
        return self._judged(table.take(np.flatnonzero(ok)))

    def _valid(self, table: PlanTable) -> np.ndarray:
        """Where the variants built after the main round are plans the scenario allows."""
        return valid_rows(
            table,
            self.resolved.policy,
            self.resolved.critic,
            cluster_gpus=self.resolved.gpus,
            frozen=frozen_roles(self.resolved),
        )

    def _judged(
        self, table: PlanTable
    ) -> tuple[CostTable | None, np.ndarray, np.ndarray, np.ndarray]:
        """`table`'s plans costed: where they pass memory and the require rules, where some
        framework ranked runs them, and where only a research system does."""
        n = len(table)
        if not n:
            none = np.zeros(0, dtype=bool)
            return None, none, none, none
        variants = self.cost(self.resolved, table)
        env = self._env(table, variants)
        alive = variants.feasible | (not self.enforce_memory)
        for rule in self.rules:
            if rule.record.effect == "require":
                alive &= ~rule.fires(env, n)
        runnable = _runs(self.supports, env, n)
        research = _runs(self.research_supports, env, n) & ~runnable
        return variants, alive, runnable, research

    def _scenario_rejection(self) -> str | None:
        for rule in self.rules:
            if (
                rule.record.effect == "require"
                and rule.scenario_only
                and bool(np.all(rule.fires(self.facts, 1)))
            ):
                return rule.id
        return None

    def _binding(self) -> str:
        rejected = +self.search.rejected  # drops reasons that rejected nothing
        if not rejected:
            return self._fixed_fields_binding()
        reason, count = rejected.most_common(1)[0]
        if (heads := self._fixed_tp_breaks_heads()) is not None:
            # every candidate carries the fixed tp, so the head rule rejects them all, whichever
            # reason the search counted first; the other reasons would not free one of them
            reason, count = heads, self.search.candidates
        if reason == "memory":
            return self._memory_binding()
        if reason.startswith("constraint "):
            record = next(c.record for x in self.supports for c in x.constraints
                          if f"constraint {c.id}" == reason)  # fmt: skip
            return (
                f"{record.framework} refuses {count} of {self.search.candidates} candidates by "
                f"{reason} ({record.title}): {record.statement} ({record.file} at "
                f"{record.commit[:10]})"
                + self._other_pairs(reason)
                + self._other_reasons(rejected, reason)
            )
        if reason not in {r.id for r in self.rules}:
            plan = self.resolved.scenario.plan
            if fixed := configuration_techniques(
                plan.critic, plan.fusion, fixed_assessment(plan), plan.train.expert_layout
            ):
                claims = "; ".join(
                    f"{feature} ({field}) is claimed by "
                    + (", ".join(f"{x.id} ({x.framework.availability.status})"
                                 for x in self.labels if feature in x.claimed)
                       or "no framework")
                    for feature, field in fixed
                )  # fmt: skip
                research = (
                    " (--include-research ranks research systems' plans too)"
                    if self.research_supports
                    else ""
                )
                return (
                    f"{reason}: {count} of {self.search.candidates} candidates; the plan fixes "
                    f"Table 9's configuration: {claims}, and none of those runs the rest of "
                    "the plan; `rlmguide estimate` costs it and `recommend --what-if` shows "
                    f"what it would gain{research}"
                )
            return (
                f"{reason}: {count} of {self.search.candidates} candidates need what no "
                "framework in the knowledge base claims or allows (its placement, execution "
                "mode or parallelism); see `rlmguide compare` for the frameworks' claims"
            )
        rule = next(x for x in self.rules if x.id == reason)
        return (
            f"rule {reason} ({rule.record.title}) rejects {count} of "
            f"{self.search.candidates} candidates: {rule.record.statement}"
            + self._heads_detail(reason)
        )

    def _other_pairs(self, named: str) -> str:
        """The (backend, engine) pairs the named constraint does not refuse, with what does
        refuse them there: without it, a message naming one pair's constraint sends a user
        to the next pair, which its own constraint refuses."""
        cid = named.removeprefix("constraint ")
        pairs = {pair for pair, _ in self.search.by_pair}
        bound = {pair for pair, reason in self.search.by_pair if reason == cid}
        elsewhere = [
            (pair, reason, count)
            for (pair, reason), count in self.search.by_pair.most_common()
            if pair not in bound
        ]
        if not elsewhere or len(pairs) < 2:
            return ""
        records = {c.id: c.record for x in self.supports for c in x.constraints}
        grouped: dict[tuple[str, int], list[str]] = {}
        for pair, reason, count in elsewhere:
            grouped.setdefault((reason, count), []).append(pair)
        told = []
        for (reason, count), on in grouped.items():
            record = records.get(reason)
            why = (
                f"constraint {reason} ({record.title}; {record.file} at {record.commit[:10]})"
                if record
                else reason
            )
            told.append(f"on {', '.join(on)}, {count} by {why}")
        return f"; the pairs it does not bind refuse them too: {'; '.join(told)}"

    @staticmethod
    def _other_reasons(rejected: Counter[str], named: str) -> str:
        """The reasons beside the one named that rejected candidates too, with their counts:
        a constraint that removed half of them is not why the rest failed."""
        others = [
            f"{count} {'do not fit in memory' if reason == 'memory' else 'by ' + reason}"
            for reason, count in rejected.most_common()
            if reason != named
        ]
        return f"; of the others, {', '.join(others)}" if others else ""

    def _fixed_tp_breaks_heads(self) -> str | None:
        """The head rule (HEAD_RULES) of a pool whose tp the scenario fixes at a degree that
        does not lay out the policy's attention (head_tps), None where no fixed tp does."""
        arch = self.resolved.policy
        ours = {r.id for r in self.rules}
        for rule_id, pool in HEAD_RULES.items():
            tp = getattr(self.resolved.scenario.plan, pool).tp
            if rule_id in ours and tp is not None and tp not in head_tps(arch):
                return rule_id
        return None

    def _heads_detail(self, rule_id: str) -> str:
        """For a head-divisibility rule that rejects a tp the scenario fixes (the search
        proposes none that fails it): the policy's head counts and the tps that do lay them out."""
        pool = HEAD_RULES.get(rule_id)
        tp = getattr(self.resolved.scenario.plan, pool).tp if pool else None
        if tp is None:
            return ""
        arch = self.resolved.policy
        kv = "latent attention" if arch.mla else f"{arch.kv_heads} KV heads"
        allowed = ", ".join(str(t) for t in head_tps(arch))
        return (
            f" (plan.{pool}.tp={tp} against the policy's {arch.heads} attention heads and {kv}; "
            f"tps that lay them out: {allowed})"
        )

    def _fixed_fields_binding(self) -> str:
        """No candidate at all: name the fixed field that no pool size can host."""
        plan = self.resolved.scenario.plan
        chosen = self.splits()
        for pool, fixed, degrees in (
            ("rollout", plan.rollout, ("tp", "pp")),
            ("train", plan.train, ("tp", "pp", "cp")),
        ):
            given = {d: getattr(fixed, d) for d in degrees if getattr(fixed, d)}
            if not given:
                continue
            product = math.prod(given.values())
            sizes = sorted({getattr(s, f"{pool}_gpus") for s in chosen})
            if sizes and all(size % product for size in sizes):
                named = " x ".join(f"plan.{pool}.{d}={v}" for d, v in given.items())
                shown = ", ".join(str(x) for x in sizes[:8]) + (", ..." if len(sizes) > 8 else "")
                return (
                    f"{named} does not divide the {pool} GPUs of any placement this cluster "
                    f"allows ({shown})"
                )
        if experts := self._fixed_experts_binding(chosen):
            return experts
        if not chosen:
            return (
                "no split of the cluster matches the fixed placement and pool sizes "
                "(plan.placement, plan.rollout.gpus, plan.train.gpus)"
            )
        return "no candidate plan fits the fixed plan fields of the scenario"

    def _fixed_experts_binding(self, chosen: Any) -> str | None:
        """Fixed expert degrees no train pool hosts: Megatron lays experts out over
        etp x ep x pp ranks that must divide the world (megatron/core/parallel_state.py
        L788-L795 at core_v0.16.1; cost.plans.expert_ranks is the same grid, ep dividing
        dp x cp x tp / etp). An unset etp is searched, so it is taken at 1, its widest grid."""
        train = self.resolved.scenario.plan.train
        if not train.ep or train.ep == 1:
            return None
        product = (train.etp or 1) * train.ep * (train.pp or 1)
        sizes = sorted({s.train_gpus for s in chosen})
        if not sizes or any(size % product == 0 for size in sizes):
            return None
        named = " x ".join(
            f"plan.train.{d}={v}"
            for d, v in (("etp", train.etp), ("ep", train.ep), ("pp", train.pp))
            if v
        )
        shown = ", ".join(str(x) for x in sizes[:8]) + (", ..." if len(sizes) > 8 else "")
        return (
            f"{named}: {product} expert ranks a replica, which do not divide the train GPUs "
            f"of any placement this cluster allows ({shown}); Megatron refuses such a world "
            f"({EXPERT_GRID_CHECK})"
        )

    def _memory_binding(self) -> str:
        r = self.resolved
        state = self.facts["model.state_gib"]
        capacity = r.gpus * self.usable_gib
        head = "no plan fits in memory"
        if state > capacity:
            smallest = math.ceil(state / self.usable_gib)
            head += (
                f": the policy's weights, gradients and Adam states alone need {state:,.0f} GiB "
                f"and the cluster's GPUs hold {r.gpus} x {self.usable_gib:.1f} = "
                f"{capacity:,.0f} GiB; without offload a cluster needs at least {smallest} GPUs"
            )
        if self._tightest is None:
            return head
        _, plan = self._tightest
        closest = f"{head}; closest plan: {memory_shortfall(plan)}"
        if self._tightest_offloaded is None or self._tightest_offloaded[1] is plan:
            tried = " (a CPU optimizer and streamed parameters were tried too)"
            return closest + (tried if self.offload_fallback else "")
        offloaded = self._tightest_offloaded[1]
        assumed = ""
        if (
            max(offloaded["pool_overflow_gib"], key=offloaded["pool_overflow_gib"].get) == "host"
            and r.scenario.cluster.host_memory_gib_per_node is None
            and r.accelerator.host_memory_gib_per_gpu is None
        ):
            # the node's host memory is the assumed figure (cost.hardware): say so
            assumed = (
                f" (host memory assumed, 2 TB per 8 GPUs: the {r.accelerator_id} record gives none)"
            )
        return (
            f"{closest}; with a CPU optimizer and streamed parameters, closest: "
            f"{memory_shortfall(offloaded)}{assumed}"
        )

    # -- output ----------------------------------------------------------------------------

    def tie_defaults(self) -> dict[str, TieDefault]:
        """The defaults the ranking's tie-breaks use when the search runs for one framework
        (`framework_defaults`), per field of DEFAULT_FIELDS that is known: the framework's
        own recorded value, or, where it records none or is `held_out`, the field's published
        practice: the median (the lower of two middles) of the values the other released
        frameworks record, each cited in its own record."""
        if not self.only or len(self.supports) != 1:
            return {}
        framework = self.supports[0].framework
        others = [
            f for f in self.frameworks if f.released and f.id not in (framework.id, self.held_out)
        ]
        found = {}
        for name in DEFAULT_FIELDS:
            own = getattr(framework, name)
            if own is not None and framework.id != self.held_out:
                found[name] = TieDefault(own.value, (framework.id,), True)
                continue
            recorded = sorted((getattr(f, name).value, f.id) for f in others if getattr(f, name))
            if recorded:
                value = statistics.median_low(v for v, _ in recorded)
                found[name] = TieDefault(value, tuple(f for _, f in recorded), False)
        return found

    def deciding_defaults(self) -> dict[str, TieDefault]:
        """The `tie_defaults` this policy's ties lean on: the rollout TP, and for the training
        family, for a mixture of experts the MoE rule where one is known (it names the case,
        the size threshold does not), else the size threshold."""
        found = self.tie_defaults()
        moe = self.resolved.policy.moe is not None and "moe_model_parallel" in found
        family = "moe_model_parallel" if moe else "model_parallel_above_params_b"
        return {n: d for n, d in found.items() if n in ("default_rollout_tp", family)}

    def framework_defaults(self) -> tuple[int | None, bool | None]:
        """What the one framework searched for does by default (`deciding_defaults`): its
        rollout TP, and whether it trains this model model-parallel."""
        found = self.deciding_defaults()
        tp = found.get("default_rollout_tp")
        if moe := found.get("moe_model_parallel"):
            return (tp.value if tp else None), bool(moe.value)
        above = found.get("model_parallel_above_params_b")
        params_b = self.resolved.policy.params_total / 1e9
        return (tp.value if tp else None), (params_b > above.value if above else None)

    def row_facts(self, row: int) -> dict[str, Any]:
        """Every scenario and plan fact of row `row` of the result, as plain values."""
        facts = {}
        n = self.final_size
        for name, value in self.final_env.items():
            if name.startswith("_"):
                continue  # memoised intermediates (rules.frameworks keeps `_uses.*`)
            array = np.asarray(value)
            # a plan fact is a column; a scenario fact, one value for every row, is read as
            # it is (not broadcast: the export's launch check reads every plan it checks)
            if array.ndim:
                array = (array if array.shape == (n,) else np.broadcast_to(array, (n,)))[row]
            facts[name] = array.item()
        return facts

    def _rows_env(self, rows: Sequence[int]) -> dict[str, Any]:
        """The facts of the result's rows `rows` only (scenario facts as they are)."""
        n, index = self.final_size, np.asarray(rows)
        return {
            name: value[index] if np.shape(value)[:1] == (n,) else value
            for name, value in self.final_env.items()
            if not name.startswith("_")  # memoised intermediates of all rows
        }

    def own_refusal(self, row: int, launchable_by: Collection[str]) -> dict[str, str] | None:
        """The framework a plan is costed as (`costed_as`) with why it does not run row `row`,
        where its claims or constraints refuse it (None where it runs it, or none is named):
        `estimate --framework` of a fixed plan that framework would not start costs it all
        the same, and says so."""
        own = self.costed_as
        if own is None or own in launchable_by:
            return None
        support = next((x for x in self.labels if x.id == own), None)
        if support is None:
            return {own: f"{own} does not claim {self.resolved.algorithm.name}"}
        why = support.refusal(self._rows_env([row]))
        return None if why is None else {own: why}

    def pairs_for(self, framework: str, row: int) -> list[tuple[str | None, str | None]]:
        """The (training backend, rollout engine) pairs of `framework` whose constraints
        allow row `row` of the result (judged on that row alone, as `frameworks_of`)."""
        support = next(x for x in self.supports if x.id == framework)
        by_pair, _ = support.pair_masks(self._rows_env([row]), 1)
        return [pair for pair, ok in by_pair.items() if ok[0]]

    def frameworks_for(self, row: int) -> list[str]:
        """The frameworks whose claims and constraints allow row `row` of the result (judged
        on that row alone: only the plans shown need it)."""
        return self.frameworks_of([row])[row]

    def frameworks_of(self, rows: Sequence[int], along: Iterable[int] = ()) -> dict[int, list[str]]:
        """`frameworks_for` of several rows, judged together (one evaluation of each
        framework's claims and constraints over those rows) and remembered per row: the
        launch check of the ranking reads many rows, and the plans shown read them again.
        Where some of `rows` must be judged, the rows `along` are judged in the same
        evaluation (its cost hardly grows with the rows: a few thousand cost about what
        a handful do), for later calls to find."""
        known = self._frameworks_of
        todo = {int(r) for r in rows if int(r) not in known}
        if todo:
            todo |= {int(r) for r in along if int(r) not in known}
            # with their parked twins, which `runners` reads next
            todo |= {t for r in list(todo) if (t := self.parked_twin(r)) is not None} - set(known)
        todo = sorted(todo)
        if todo and not self.labels:
            known.update({r: [] for r in todo})
        elif todo:
            env = self._rows_env(todo)
            seen: dict[str, np.ndarray] = {}
            ids = [x.id for x in self.labels]
            allowed = np.stack([x.runnable(env, len(todo), "plan", seen)[0] for x in self.labels])
            # rows share a few sets of frameworks: each set's list is made once, and each
            # row gets its own copy
            sets, which = np.unique(allowed.T, axis=0, return_inverse=True)
            lists = [sorted(ids[j] for j in np.flatnonzero(one)) for one in sets]
            for r, k in zip(todo, which.reshape(-1).tolist(), strict=True):
                known[r] = list(lists[k])
        return {int(r): known[int(r)] for r in rows}

    def parked_twin(self, row: int) -> int | None:
        """The row that is row `row` with the frozen models parked on the host while
        training (its parked-reference variant, `configuration_variants`), where one was
        costed and its step is within NEAR_FRACTION of the row's: one plan as the ranking
        shows plans (rules.ranking folds such rows into one), and the plan as ROLL and SkyRL,
        which always park the reference, run it."""
        costs = self.final_costs
        if costs is None or not self._parked or costs.plans.offload_frozen[row]:
            return None
        twin = self._parked.get(_unparked_key(costs.plans, row))
        seconds = costs.step_seconds
        if twin is None or seconds[twin] > (1 + NEAR_FRACTION) * seconds[row]:
            return None
        return twin

    def runners(
        self, row: int, plan: Mapping[str, Any]
    ) -> tuple[list[str], list[str], dict[str, str]]:
        """Who runs row `row` (costed as `plan`), in the order that helps a user: the released
        frameworks, those with an export mapping first, then by their latest release (newest
        first); the others whose claims and constraints allow it (partial code, a paper, a
        closed system); and the released ones whose claims allow it but whose export mapping
        cannot launch it (`launch_check`), each with why. The released frameworks that launch
        the row's parked twin (`parked_twin`) are among the first, remembered in
        `parked_by`."""
        launchable, research, refused = self._runners(row, plan)
        twin = self.parked_twin(row)
        if twin is None:
            return launchable, research, refused
        assert self.final_costs is not None
        # only the frameworks the row does not list already are judged on the twin (an
        # export check each)
        new = set(self.frameworks_for(twin)) - set(launchable)
        parking = self._runners(twin, _shown_plan(self.final_costs, twin), new)[0]
        self.parked_by[row] = parking
        if not self.parked_by[row]:
            return launchable, research, refused
        by_id = {x.id: x.framework for x in self.labels}
        both = [by_id[f] for f in {*launchable, *parking}]
        refused = {f: why for f, why in refused.items() if f not in parking}
        return [f.id for f in sorted(both, key=self._order)], research, refused

    def _order(self, f: Framework) -> tuple[bool, int, str]:
        """Mapped frameworks first, then the newest release (`runners`)."""
        date = f.latest_release.date.toordinal() if f.latest_release else 0
        return f.id not in self.mapped, -date, f.id

    def _runners(
        self, row: int, plan: Mapping[str, Any], among: Collection[str] | None = None
    ) -> tuple[list[str], list[str], dict[str, str]]:
        """`runners` of row `row` alone (of the frameworks `among`, where given)."""
        ids = set(self.frameworks_for(row))
        if among is not None:
            ids &= set(among)
        every = {x.id: x.framework for x in self.labels if x.id in ids}
        check = self.launch_check
        refused = {
            f.id: why
            for f in every.values()
            if f.released and f.id in self.mapped and check is not None
            if (why := check(self, row, plan, f.id)) is not None
        }
        released = [f for f in every.values() if f.released and f.id not in refused]
        return (
            [f.id for f in sorted(released, key=self._order)],
            sorted(f.id for f in every.values() if not f.released),
            dict(sorted(refused.items())),
        )


TERM_NAMES = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "Adam states",
    "frozen_models": "reference/reward weights",
    "zero3_gather": "ZeRO-3 gathered layer",
    "reshard": "resharding buffer of the frozen models' own layout",
    "activations": "activations",
    "fragmentation_reserve": "allocator fragmentation reserve",
    "kv_cache": "KV cache of the longest sequence",
    "workspace": "engine workspace",
    "trainer_state": "trainer state kept during rollout",
    "offloaded_state_per_node": "offloaded state",
    "fused_assessment": "assessment streamed beside the rollout (inter-stage fusion)",
}

REMEDIES = {
    "optimizer": "a CPU optimizer (plan.train.offload.optimizer: 1), ZeRO-1 or more data "
    "parallelism, or more GPUs",
    "gradients": "ZeRO-2/3 or more GPUs",
    "weights": "more tensor/pipeline/expert parallelism, ZeRO-3, streamed parameters "
    "(plan.train.offload.params) or more GPUs",
    "frozen_models": "parking them while training (plan.train.offload.frozen) or a pool of "
    "their own (plan.pools)",
    "activations": "full recomputation, context parallelism or shorter sequences",
    "fragmentation_reserve": "full recomputation, context parallelism or shorter sequences",
    "kv_cache": "more rollout tensor parallelism, DP attention or a shorter max_response_tokens",
    "trainer_state": "phase offload (plan.train.offload.phase)",
    "zero3_gather": "more tensor parallelism",
    "reshard": "the frozen models on the trainer's layout (no plan.assessment) or on a pool of "
    "their own (plan.pools)",
    "workspace": "a larger rollout tensor group",
    "fused_assessment": "smaller fusion chunks (plan.fusion_chunk), no inter-stage fusion "
    "(plan.fusion: none) or the assessment on a pool of its own (plan.pools)",
    "offloaded_state_per_node": "less offload, more nodes or a node with more host memory "
    "(cluster.host_memory_gib_per_node)",
}


SHARDED_TERMS = frozenset(("weights", "gradients", "optimizer", "frozen_models"))
"""Memory terms ZeRO shards over the shard group (plan.train.shard_group)."""


def memory_shortfall(plan: Mapping[str, Any]) -> str:
    """Which pool of a costed plan overflows, by how much, its largest term, and what would
    make it fit: the sentence a memory failure ends with. A pool's terms sum to what it
    must hold, so they less the overflow are its usable memory."""
    over = plan["pool_overflow_gib"]
    pool = max(over, key=lambda k: over[k])
    terms = plan["memory_breakdown_gib"][pool]
    term = max(terms, key=lambda k: terms[k])
    listed = ", ".join(f"{TERM_NAMES[k]} {v:.1f}" for k, v in terms.items() if v >= 0.05)
    where = "per node of host memory" if pool == "host" else "per GPU"
    usable = sum(terms.values()) - over[pool]
    limit = f" (usable {usable:,.1f} GiB{' a node' if pool == 'host' else ''})"
    remedy = REMEDIES[term]
    if plan["train"].get("shard_group") and term in SHARDED_TERMS:
        remedy = f"a larger shard group (plan.train.shard_group) or {remedy}"
    return (
        f"{describe_plan(plan)} overflows the {pool} pool by {over[pool]:.1f} GiB {where}{limit}; "
        f"GiB there: {listed}; largest: {TERM_NAMES[term]}; it would fit with {remedy}"
    )


def describe_plan(plan: Mapping[str, Any]) -> str:
    """A plan in one line, as a tie names the plan it passed over (review names it alike)."""
    ro, tr = plan["rollout"], plan["train"]
    offload = [k for k, v in tr["offload"].items() if v]
    rollout = (
        "no rollout (offline)"
        if ro is None
        else f"rollout {ro['gpus']} GPUs tp {ro['tp']} pp {ro['pp']} ep {ro['ep']}"
    )
    group = f" in groups of {tr['shard_group']}" if tr.get("shard_group") else ""
    train = (
        f"train {tr['gpus']} GPUs tp {tr['tp']} pp {tr['pp']} cp {tr['cp']} ep {tr['ep']} "
        f"zero {tr['zero']}{group} recompute {tr['recompute']}"
    )
    shown = f" offload {'+'.join(offload)}" if offload else ""
    return f"{plan['placement']} {plan['execution']}, {rollout}, {train}{shown}"


def _move_notes(costs: CostTable, order: np.ndarray, best: int) -> list[str]:
    """What would change the answer: the bottleneck's share, and the best plan of each other
    placement and execution mode with its difference."""
    row = costs.row(best)
    stages = {s["name"]: s["seconds"] for s in row["stages"]}
    total = sum(stages.values()) or 1.0
    bottleneck = row["bottleneck"]
    notes = [
        f"{bottleneck} is {100 * stages[bottleneck] / total:.0f}% of the stage time "
        f"({stages[bottleneck]:.1f} s of {total:.1f} s summed over stages); "
        f"its bound is {next(s['bound'] for s in row['stages'] if s['name'] == bottleneck)}"
    ]
    step = row["step_seconds"]
    seen = {(row["placement"], row["execution"])}
    # The first row of each (placement, execution) pair in rank order, found without
    # visiting the millions of rows that may lie between them.
    pair = costs.plans.placement[order] * len(EXECUTIONS) + costs.plans.execution[order]
    firsts = []
    for code in range(len(PLACEMENTS) * len(EXECUTIONS)):
        hit = pair == code
        if hit.any():
            firsts.append(int(hit.argmax()))
    for i in order[sorted(firsts)]:
        other = costs.plans.row(int(i))
        key = (other["placement"], other["execution"])
        if key in seen:
            continue
        seen.add(key)
        alt = float(costs.step_seconds[i])
        change = 100 * (alt - step) / step
        notes.append(
            f"best {key[1]} {key[0]} plan (rollout {other['rollout']['gpus']} GPUs, train "
            f"{other['train']['gpus']} GPUs): {alt:.1f} s per step ({change:+.0f}%)"
        )
    return notes


def what_if(recommender: Recommender, costs: CostTable, best: int) -> list[dict[str, Any]]:
    """The best runnable plan (row `best`) under each Table 9 configuration that no framework
    in the KB runs with it, and what each would gain: for reading, not launching.
    `claimed_by` lists the frameworks that claim the technique yet cannot run the plan (their
    other claims or constraints refuse it)."""
    variants, alive, runnable, research = recommender.configuration_variants(
        costs.plans.take([best])
    )
    best_seconds = float(costs.step_seconds[best])
    found: list[dict[str, Any]] = []
    if variants is None:
        return found
    for i in np.flatnonzero(alive & ~runnable & ~research):
        row = variants.row(int(i))
        features = sorted(
            f
            for f, _ in configuration_techniques(
                row["critic"], row["fusion"], row.get("assessment"), row["train"]["expert_layout"]
            )
        )
        claimed = sorted(
            f.id
            for f in recommender.frameworks
            if any(c.feature in features and c.support in ("yes", "partial") for c in f.claims)
        )
        seconds = float(variants.step_seconds[i])
        found.append(
            {
                "critic": row["critic"],
                "fusion": row["fusion"],
                **({"assessment": row["assessment"]} if "assessment" in row else {}),
                "expert_layout": row["train"]["expert_layout"],
                "placement": row["placement"],
                "execution": row["execution"],
                "step_seconds": seconds,
                "stages": row["stages"],
                "gain_percent": round(100 * (1 - seconds / best_seconds), 1),
                "over_step_seconds": best_seconds,
                "runnable": False,
                "techniques": features,
                "claimed_by": claimed,
                "note": "no framework in the knowledge base runs this configuration with this "
                "plan: what it would gain, not a plan to launch",
            }
        )
    return sorted(found, key=lambda w: w["step_seconds"])


def lagging(recommender: Recommender, plans: PlanTable) -> np.ndarray:
    """Plans that lag the policy by more than the scenario allows (`Resolved.max_staleness`):
    what-ifs, never ranked."""
    lag = np.where(plans.execution == EXECUTIONS.index("sync"), 0, plans.staleness)
    return np.asarray(lag > recommender.resolved.max_staleness)


def scores_of(recommender: Recommender, plans: PlanTable) -> np.ndarray:
    """Each plan's simplicity (rules.ranking.complexity) as this recommender ranks."""
    resolved = recommender.resolved
    return complexity(
        plans,
        resolved.scenario.cluster.gpus_per_node,
        *recommender.framework_defaults(),
        moe=resolved.policy.moe is not None,
    )


Refusal = Callable[[int, dict[str, Any]], str | None]
"""Why a row of the result (and its costed plan) cannot be used (None: it can): see
`recommend`'s `first`."""
PASSED_OVER_SHOWN = 5
"""Plans passed over by `recommend(first=...)` that the result lists, best first."""
LAUNCH_CHECKS = 256
"""Ranked plans read for an export refusal before the ranking stands as it is."""
JUDGED_AHEAD = 64
"""The fastest and the simplest rows of the ranking's ties whose frameworks are judged with
the shown rows that need it (Ranker.contenders): an evaluation of the frameworks costs about
the same for a hundred rows as for one, and the DeepSeek-V3 examples' checked rows are
nearly all among them."""


def _first(
    costs: CostTable, scores: np.ndarray, eligible: np.ndarray, refuses: Refusal
) -> tuple[Ranked, int, list[dict[str, Any]], int]:
    """Walk the ranking to the first plan `refuses` accepts: that place, its rank in the full
    ranking, the first PASSED_OVER_SHOWN plans passed over (rank, plan, why) and how many
    were."""
    passed: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    for position, place in enumerate(ranking(costs, scores, eligible), start=1):
        plan = _shown_plan(costs, place.row)
        why = refuses(place.row, plan)
        if why is None:
            return Ranked([place]), position, passed, reasons.total()
        reasons[why] += 1
        if len(passed) < PASSED_OVER_SHOWN:
            passed.append({"rank": position, "plan": describe_plan(plan), "why": why})
    # every distinct reason, not only the first plans': those may all meet one (a mode the
    # launch has no entry point for) and hide the one the plans it could launch meet
    count = reasons.total()
    raise NoFeasiblePlan(
        f"none of the {count} ranked plans can be used: "
        + "; ".join(f"{why} ({n} of {count})" for why, n in reasons.most_common(PASSED_OVER_SHOWN))
    )


def _unparked_key(plans: PlanTable, row: int) -> tuple[Any, ...]:
    """Row `row` of `plans` as a key that leaves out where the frozen models are while
    training: a plan and its parked-reference variant share it."""
    return tuple(
        getattr(plans, f.name)[row].item() for f in fields(plans) if f.name != "offload_frozen"
    )


def _shown_plan(costs: CostTable, row: int) -> dict[str, Any]:
    plan = costs.row(row)
    if plan["execution"] == "sync":
        plan["max_staleness"] = 0
    return plan


def _launchable_ranking(
    recommender: Recommender,
    costs: CostTable,
    top: int,
    scores: np.ndarray,
    eligible: np.ndarray,
) -> Ranked:
    """The ranking with the plans every released runner's export refuses moved out (a plan
    whose claims let AReaL run it, but whose mode AReaL's launch has no entry point for, is
    not one a user can start). Refusals are read on the places the ranking shows, which
    move as refused plans leave (a tie's simpler plan is chosen among those left), at most
    LAUNCH_CHECKS of them, so a search pays for a bounded number of checks; `eligible` is
    narrowed in place. Past the bound the ranking stands as it is, and the plans shown name
    who refused them."""
    ranker = Ranker(costs, scores)
    ranked = ranker.rank(top, eligible)
    if recommender.launch_check is None:
        return ranked
    verdicts: dict[int, bool] = {}
    while len(verdicts) < LAUNCH_CHECKS:
        rows = [place.row for place in ranked.places]
        # with the rows the next rounds are likely to show (see Ranker.contenders)
        recommender.frameworks_of(
            [row for row in rows if row not in verdicts],
            ranker.contenders(ranked, eligible, JUDGED_AHEAD),
        )
        for row in rows:
            if row not in verdicts:
                verdicts[row] = _refused_by_all(recommender, costs, row)
        refused = [row for row in rows if verdicts[row]]
        narrowed = eligible.copy()
        narrowed[refused] = False
        if not refused or not narrowed.any():
            break
        eligible[:] = narrowed
        ranked = ranker.rank(top, eligible)
    return ranked


def _own_rankings(
    recommender: Recommender, top: int, with_what_if: bool
) -> tuple[dict[str, Any] | None, list[str]]:
    """The fastest top plan that a mapped released framework's own ranking (`narrowed`)
    gives and its export writes, as that ranking's result (None where none does), and why
    each framework gives none."""
    assert recommender.narrowed is not None
    found: list[dict[str, Any]] = []
    why: list[str] = []
    mapped = [x.id for x in recommender.supports if x.released and x.id in recommender.mapped]
    for framework in mapped:
        try:
            result = recommend(recommender.narrowed(framework), top, with_what_if)
        except NoFeasiblePlan as exc:
            why.append(f"{framework}: {_gist(str(exc))}")
            continue
        plan = result["plans"][0]
        if plan["launchable_by"]:
            found.append(result)
        else:
            why.append(f"{framework}: {plan['launch_refused_by'].get(framework, '')}")
    if not found:
        return None, why
    return min(found, key=lambda r: r["plans"][0]["step_seconds"]), why


def _ranked_for(own: dict[str, Any], cause: str) -> dict[str, Any]:
    """`own` (an `_own_rankings` result) as `recommend`'s, saying why (`cause`: what the
    default ranking could not give)."""
    own["ranked_for"] = {
        "framework": own["plans"][0]["launchable_by"][0],
        "why": f"{cause}; the plans shown are this framework's own ranking (recommend "
        "--framework), whose top plan is the fastest that a mapped framework's own ranking "
        "gives and its export writes",
    }
    return own


def _gist(message: str) -> str:
    """A failed search's first clause (NoFeasiblePlan): the binding constraint named, before
    its figures or its record's statement."""
    for end in ("; ", "): "):
        if end in message:
            message = message[: message.index(end) + (1 if end == "): " else 0)]
    return message


def _refused_by_all(recommender: Recommender, costs: CostTable, row: int) -> bool:
    launchable_by, _, refused_by = recommender.runners(row, _shown_plan(costs, row))
    return bool(refused_by) and not launchable_by


def recommend(
    recommender: Recommender, top: int, with_what_if: bool = False, first: Refusal | None = None
) -> dict[str, Any]:
    """Run the search and shape the result as DESIGN.md's JSON: plans by predicted step time,
    ties toward the simpler plan, each distinct (see rules.ranking); plans that lag the policy
    more than the scenario allows are not ranked but listed under `off_policy_what_if` with
    their gain. With `with_what_if`, the Table 9 configurations no framework runs, under
    `what_if` (see `what_if`). With `first`, the one plan is the best ranked one that `first`
    does not refuse, with its rank in the full ranking and the plans passed over before it
    (`passed_over`, `passed_over_count`): the plan an export writes."""
    resolved = recommender.resolved
    costs, fired = recommender.run()
    scores = scores_of(recommender, costs.plans)
    off_policy = lagging(recommender, costs.plans)
    launchable = recommender.launchable
    eligible = launchable & ~off_policy
    if not eligible.any():
        cause = _nothing_ranked(recommender, costs, launchable, off_policy)
        if first is None and recommender.narrowed is not None:
            own, tried = _own_rankings(recommender, top, with_what_if)
            if own is not None:
                return _ranked_for(own, cause)
            cause += (
                f"; nor does any mapped framework's own ranking give a plan its export writes "
                f"({'; '.join(tried)})"
            )
        raise NoFeasiblePlan(cause)
    passed: dict[str, Any] = {}
    start = 1
    if first is None:
        ranked = _launchable_ranking(recommender, costs, top, scores, eligible)
        if recommender.narrowed is not None and _refused_by_all(recommender, costs, ranked.rows[0]):
            best = _shown_plan(costs, ranked.rows[0])
            refusals = recommender.runners(ranked.rows[0], best)[2]
            own, tried = _own_rankings(recommender, top, with_what_if)
            refused = "; ".join(f"{f}: {why}" for f, why in refusals.items())
            if own is not None:
                return _ranked_for(
                    own,
                    f"every runner of the ranking's best plans refuses them at export ({refused})",
                )
            passed = {
                "no_launchable_plan": f"no launchable plan: every runner of the best plan that "
                f"fits refuses it at export ({refused}), and no mapped framework's own ranking "
                f"gives a plan its export writes ({'; '.join(tried)})"
            }
    else:
        # the plans the launch check refuses leave the ranking first, as `recommend` ranks
        # (a tie then picks its simpler plan among those left); where that finds none it
        # launches, the refusals are told on the ranking as it was
        if recommender.launch_check is not None:
            left = eligible.copy()
            top_left = _launchable_ranking(recommender, costs, 1, scores, left).rows
            if not _refused_by_all(recommender, costs, top_left[0]):
                eligible = left
        ranked, start, skipped, count = _first(costs, scores, eligible, first)
        passed = {"passed_over": skipped, "passed_over_count": count}
    recommender.ranked_rows = list(ranked.rows)
    defaults = recommender.tie_defaults()
    broken_by = "; ".join(d.described(name) for name, d in recommender.deciding_defaults().items())
    by_id = {r.id: r for r in recommender.rules}
    shown = {place.row: position for position, place in enumerate(ranked.places, start=start)}
    plans = []
    for position, place in enumerate(ranked.places, start=start):
        i = place.row
        plan = _shown_plan(costs, i)
        plan["rules"] = [
            {
                "id": rid,
                "effect": by_id[rid].record.effect,
                "title": by_id[rid].record.title,
                "statement": by_id[rid].record.statement,
                "sources": list(by_id[rid].record.sources),
            }
            for rid, hits in fired.items()
            if hits[i] and by_id[rid].record.effect != "require"
        ]
        plan["frameworks"] = recommender.frameworks_for(i)
        runners = recommender.runners(i, plan)
        plan["launchable_by"], plan["also_claimed_by"], plan["launch_refused_by"] = runners
        if (own := recommender.own_refusal(i, plan["launchable_by"])) is not None:
            plan["launch_refused_by"] = {**plan["launch_refused_by"], **own}
        if parked := recommender.parked_by.get(i):
            # they run it with the frozen models parked on the host (its parked twin, in
            # `also` when it is shown)
            plan["reference_parked_by"] = parked
        plan["tie"] = _tie(costs, i, place.anchor, shown, place.also)
        if plan["tie"] and broken_by:
            plan["tie"]["why"] += f"; for {recommender.only}, ties lean to the defaults {broken_by}"
        plan["also_as"] = _folded(costs, place.folded)
        plan["also"] = [_also(costs, i, k) for k in place.also]
        plan["also_count"] = place.also_count
        plans.append({"rank": position, **plan})
    run = add_run_totals(
        resolved, costs, list(ranked.rows), plans, recommender.cost, recommender.billed()
    )
    time_order = np.argsort(costs.step_seconds, kind="stable")
    time_order = time_order[eligible[time_order]]
    search = recommender.search
    return {
        "scenario": normalised(resolved),
        "run": run,
        "search": {
            "candidates": search.candidates,
            "feasible": search.feasible,
            "seconds": round(search.seconds, 4),
            "split_every_gpus": split_unit(resolved),
            "exhaustive": recommender.exhaustive,
            "coarse_splits_rollout_gpus": recommender.coarse_splits,
            "refined_around_rollout_gpus": recommender.refined_around,
        },
        "rejected": [{"reason": k, "count": v} for k, v in (+search.rejected).most_common()],
        "tie_defaults": {
            name: {"value": d.value, "frameworks": list(d.frameworks), "own": d.own}
            for name, d in defaults.items()
        },
        "plans": plans,
        "departure": _departure(costs, ranked, scores, eligible, shown),
        "notes": _move_notes(costs, time_order, ranked.rows[0])
        + agentic_notes(costs, time_order, ranked.rows[0]),
        "off_policy_what_if": _off_policy(
            recommender, costs, off_policy & launchable, ranked.rows[0]
        ),
        "research_what_if": _research(
            recommender, costs, ~launchable & ~off_policy, ranked.rows[0]
        ),
        **_length_prior(resolved),
        "resolution_notes": list(resolved.notes)
        + (
            ["no plan fitted without a CPU optimizer or streamed parameters, so they were searched"]
            if recommender.offload_fallback
            else []
        )
        + _grid_notes(recommender),
        **({"what_if": what_if(recommender, costs, ranked.rows[0])} if with_what_if else {}),
        **(
            {"pool_search": pools}
            if (pools := _pool_search(recommender, costs, eligible, ranked.rows[0]))
            else {}
        ),
        **passed,
    }


def _pool_search(
    recommender: Recommender, costs: CostTable, eligible: np.ndarray, best: int
) -> dict[str, Any] | None:
    """Which own pools plan 1 gives the models whose pools were searched (`pooled_roles`), and
    why: the fastest ranked-eligible plan with such a pool against the fastest without."""
    roles = recommender.pooled_roles()
    if not roles or not (recommender.frameworks and recommender.filter_frameworks):
        return None
    plans = costs.plans
    own = np.zeros(len(plans), dtype=bool)
    for role in roles:
        own |= getattr(plans, f"{role}_gpus") > 0
    sizes = own_pool_sizes(recommender.resolved.gpus)

    def fastest(mask: np.ndarray) -> dict[str, Any] | None:
        rows = np.flatnonzero(eligible & mask)
        if not rows.size:
            return None
        i = int(rows[np.argmin(costs.step_seconds[rows])])
        row = costs.row(i)
        return {
            "pools": {r: g for r, g in row["pools"].items() if g and r in roles},
            "placement": row["placement"],
            "step_seconds": float(costs.step_seconds[i]),
        }

    with_pool, without = fastest(own), fastest(~own)
    chosen = {r: int(getattr(plans, f"{r}_gpus")[best]) for r in roles}
    chosen = {r: g for r, g in chosen.items() if g}
    if chosen:
        why = "plan 1 gives " + ", ".join(f"the {r} model {g} GPUs of its own" for r, g in
                                          chosen.items())  # fmt: skip
    else:
        why = f"plan 1 keeps the {', '.join(roles)} model(s) on the rollout and training GPUs"
    why += f" (pool sizes tried: {', '.join(map(str, sizes))} GPUs)"
    if with_pool is None:
        why += "; no runnable plan with a pool of its own fits"
    elif without is None:
        why += "; no runnable plan without one fits"
    else:
        placed = ", ".join(f"{r} {g} GPUs" for r, g in with_pool["pools"].items())
        change = 100.0 * (with_pool["step_seconds"] / without["step_seconds"] - 1.0)
        why += (
            f"; the fastest plan with one ({placed}, {with_pool['placement']}) takes "
            f"{with_pool['step_seconds']:.1f} s a step, {abs(change):.1f}% "
            f"{'slower' if change >= 0 else 'faster'} than the fastest without "
            f"({without['step_seconds']:.1f} s)"
        )
        if (change < 0) != bool(chosen) and change != 0:
            why += "; plan 1 is the simpler plan within the ranking's tie (rules.ranking)"
    return {
        "roles": roles,
        "sizes_tried": sizes,
        "chosen": chosen,
        "fastest_with_own_pool": with_pool,
        "fastest_without": without,
        "why": why,
    }


def _nothing_ranked(
    recommender: Recommender, costs: CostTable, launchable: np.ndarray, off_policy: np.ndarray
) -> str:
    """Why no plan is ranked though some fit: none a released framework runs, or all lag."""
    if not launchable.any():
        best = int(np.argmin(costs.step_seconds))
        who = ", ".join(recommender.frameworks_for(best)) or "none"
        return (
            "no released framework runs a feasible plan of this scenario; research systems "
            f"do (the fastest, {describe_plan(costs.row(best))}, by {who}): --include-research "
            "ranks their plans"
        )
    return (
        "every feasible plan a released framework runs lags the policy, and the scenario "
        f"allows {recommender.resolved.max_staleness} policy versions (workload.max_staleness)"
    )


RESEARCH_SHOWN = 5
"""Research-only plans listed under a recommendation (the fastest of each kind)."""


def _research(
    recommender: Recommender, costs: CostTable, research: np.ndarray, best: int
) -> list[dict[str, Any]]:
    """The fastest plan of each placement, execution mode and Table 9 configuration that only
    research systems run (partial code, a paper, a closed system), where it beats the top plan:
    what that system's design would gain, with the systems that show it. Never a plan to
    launch."""
    best_seconds = float(costs.step_seconds[best])
    rows = np.flatnonzero(research & (costs.step_seconds < best_seconds))
    plans = costs.plans
    found: list[dict[str, Any]] = []
    seen: set[tuple[int, ...]] = set()
    by_id = {x.id: x.framework for x in recommender.labels}
    for i in rows[np.argsort(costs.step_seconds[rows], kind="stable")]:
        key = tuple(
            int(getattr(plans, name)[i])
            for name in ("placement", "execution", "critic_shared", "fusion")
        )
        if key in seen:
            continue
        seen.add(key)
        seconds = float(costs.step_seconds[i])
        shown = [by_id[f] for f in recommender.frameworks_for(int(i))]
        found.append(
            {
                "plan": describe_plan(costs.row(int(i))),
                "placement": PLACEMENTS[key[0]],
                "execution": EXECUTIONS[key[1]],
                "critic": CRITICS[key[2]],
                "fusion": FUSIONS[key[3]],
                "step_seconds": round(seconds, 2),
                "gain_percent": round(100 * (1 - seconds / best_seconds), 1),
                "over_step_seconds": round(best_seconds, 2),
                "shown_by": [
                    {"framework": f.id, "availability": f.availability.status} for f in shown
                ],
                "note": "no released framework runs this plan: what the systems that show it "
                "would gain, not a plan to launch (--include-research ranks it)",
            }
        )
        if len(found) == RESEARCH_SHOWN:
            break
    return found


def _off_policy(
    recommender: Recommender, costs: CostTable, off_policy: np.ndarray, best: int
) -> list[dict[str, Any]]:
    """The fastest plan of each execution mode and staleness that lags the policy more than
    the scenario allows, where it beats the top plan: what the run would gain by accepting
    that lag. Never a plan to launch as the scenario stands."""
    best_seconds = float(costs.step_seconds[best])
    rows = np.flatnonzero(off_policy & (costs.step_seconds < best_seconds))
    found: list[dict[str, Any]] = []
    seen: set[tuple[int, int]] = set()
    for i in rows[np.argsort(costs.step_seconds[rows], kind="stable")]:
        key = (int(costs.plans.execution[i]), int(costs.plans.staleness[i]))
        if key in seen:
            continue
        seen.add(key)
        seconds = float(costs.step_seconds[i])
        found.append(
            {
                "plan": describe_plan(costs.row(int(i))),
                "placement": PLACEMENTS[int(costs.plans.placement[i])],
                "execution": EXECUTIONS[key[0]],
                "max_staleness": key[1],
                "step_seconds": round(seconds, 2),
                "gain_percent": round(100 * (1 - seconds / best_seconds), 1),
                "over_step_seconds": round(best_seconds, 2),
                "frameworks": recommender.frameworks_for(int(i)),
                "launchable_by": recommender.runners(int(i), costs.row(int(i)))[0],
                "allowed_by": f"workload.max_staleness: {key[1]}",
                "note": f"trains on samples up to {key[1]} policy version(s) old; "
                f"{recommender.resolved.algorithm.name} as the scenario states it is "
                "on-policy, so this is what accepting the lag would gain, not a ranked plan",
            }
        )
    return found


def _length_prior(resolved: Resolved) -> dict[str, Any]:
    """`length_prior` when the workload's mean response length is the prior's: the share,
    its spread and the measurements behind it (JSON beside the note in resolution_notes)."""
    workload = resolved.scenario.workload
    if workload.response_tokens_from != "prior":
        return {}
    low, high = length_prior.MEAN_SHARE_QUARTILES
    return {
        "length_prior": {
            "response_tokens": workload.response_tokens,
            "max_response_tokens": workload.max_response_tokens,
            "share": round(length_prior.MEAN_SHARE, 4),
            "quartiles": [round(low, 4), round(high, 4)],
            "memory": "sized at max_response_tokens",
            "measurements": [
                {
                    "source": m.source,
                    "locator": m.locator,
                    "workload": m.workload,
                    "mean_tokens": m.mean_tokens,
                    "cap_tokens": m.cap_tokens,
                }
                for m in length_prior.MEASUREMENTS
            ],
        }
    }


def _grid_notes(recommender: Recommender) -> list[str]:
    resolved = recommender.resolved
    cluster = resolved.scenario.cluster
    unit, per_node = split_unit(resolved), cluster.gpus_per_node
    notes = []
    if unit > per_node:
        notes.append(
            f"disaggregated splits were searched every {unit} GPUs ({unit // per_node} nodes), "
            f"not every node, to keep the search within {MAX_SPLITS} splits; fix "
            "plan.rollout.gpus to cost another split"
        )
    if cluster.gpus > FINE_GRID_UP_TO_GPUS:
        notes.append(
            f"above {FINE_GRID_UP_TO_GPUS} GPUs pipeline degrees are powers of two and each "
            f"disaggregated pool size keeps its {SHORTLIST} fastest training layouts, without "
            "the fastest of every weight-sync group (tp, pp, cp, ZeRO stage) kept below that "
            "size; fix plan.train fields to cost another layout"
        )
    if recommender.probed:
        notes.append(
            "with this many colocated layouts, each rollout layout was costed beside "
            f"{PROBES} training layouts and only the {COLOCATED_ROLLOUTS} fastest per probe "
            "(and the fastest of each engine shape) were paired with every training layout"
        )
    if recommender.coarse_splits:
        coarse = ", ".join(map(str, recommender.coarse_splits))
        around = " and ".join(map(str, recommender.refined_around)) or "none"
        notes.append(
            f"disaggregated splits were costed first at rollout pools of {coarse} GPUs, then "
            f"at every split between the neighbours of the best ({around} rollout GPUs); "
            "fix plan.rollout.gpus to cost another split"
        )
    return notes


def _tie(
    costs: CostTable, row: int, anchor: int, shown: Mapping[int, int], also: list[int]
) -> dict[str, Any] | None:
    """Where a faster plan was passed over as a tie: which one (its rank in the list, or
    that it is listed under this row's `also`) and by how much."""
    if row == anchor:
        return None
    mine, best = float(costs.step_seconds[row]), float(costs.step_seconds[anchor])
    where = (
        {"faster_rank": shown[anchor]}
        if anchor in shown
        else {"faster_rank": None, "faster_listed_under": "also" if anchor in also else None}
    )
    return {
        "faster_plan": describe_plan(costs.row(anchor)),
        **where,
        "faster_by_percent": round(100 * (mine - best) / mine, 1),
        "slower_by_percent": round(100 * (mine - best) / best, 1),
        "why": f"within the {100 * TIE_FRACTION:.0f}% tie of the faster plan, the simpler "
        "plan comes first",
    }


def _also(costs: CostTable, row: int, other: int) -> dict[str, Any]:
    """A near-identical row shown with `row`: what differs (training layout, offload, Table 9
    configuration) and its time against it."""
    plan, mine = costs.plans.row(other), costs.plans.row(row)
    seconds = float(costs.step_seconds[other])
    change = seconds / float(costs.step_seconds[row]) - 1.0
    differs = {
        key: plan["train"][key]
        for key in ("tp", "pp", "cp", "ep", "etp", "zero", "recompute", "offload")
        if plan["train"][key] != mine["train"][key]
        and (key != "etp" or plan["train"]["etp"] != plan["train"]["tp"])  # etp follows tp
    }
    differs |= {key: plan[key] for key in ("critic", "fusion") if plan[key] != mine[key]}
    chunk = int(costs.fusion_chunk[other])
    if chunk and chunk != int(costs.fusion_chunk[row]):
        differs["fusion_chunk"] = chunk
    return {
        "differs": differs,
        "step_seconds": round(seconds, 2),
        "change_percent": round(100 * change, 1),
    }


def _folded(costs: CostTable, rows: list[int]) -> dict[str, Any]:
    """The staleness and prefix-caching variants one plan stands for, with their times."""
    plans = costs.plans
    stale = sorted(
        {0 if int(plans.execution[k]) == EXECUTIONS.index("sync") else int(plans.staleness[k])
         for k in rows}
    )  # fmt: skip
    return {
        "max_staleness": stale,
        "prefix_caching": sorted({bool(plans.prefix_caching[k]) for k in rows}),
        "step_seconds": [
            round(float(costs.step_seconds[rows].min()), 2),
            round(float(costs.step_seconds[rows].max()), 2),
        ],
    }


def _departure(
    costs: CostTable,
    ranked: Ranked,
    score: np.ndarray,
    eligible: np.ndarray,
    shown: Mapping[int, int],
) -> dict[str, Any] | None:
    """Where the top plan is not the simplest ranked plan: the simplest, how much slower it
    is than the fastest plan of the top plan's tie (outside the tie, so it could not win
    it) and how much step time the top plan saves over it."""
    rows = np.flatnonzero(eligible)
    simplest_score = score[rows].min()
    candidates = rows[score[rows] == simplest_score]
    simplest = int(candidates[np.argmin(costs.step_seconds[candidates])])
    top, anchor = ranked.places[0].row, ranked.places[0].anchor
    if score[top] == simplest_score:
        return None
    seconds = costs.step_seconds
    gain = 1.0 - float(seconds[top]) / float(seconds[simplest])
    beyond = float(seconds[simplest]) / float(seconds[anchor]) - 1.0
    fastest = (
        "the top plan"
        if anchor == top
        else f"the fastest plan (rank {shown[anchor]})"
        if anchor in shown
        else "the fastest plan of its tie"
    )
    return {
        "simplest_plan": describe_plan(costs.row(simplest)),
        "simplest_step_seconds": round(float(seconds[simplest]), 2),
        "gain_percent": round(100 * gain, 1),
        "slower_than_fastest_percent": round(100 * beyond, 1),
        "why": f"the simplest plan takes {100 * beyond:.0f}% longer than {fastest}, beyond "
        f"the {100 * TIE_FRACTION:.0f}% tie; the top plan predicts {100 * gain:.0f}% less "
        "step time than it",
    }


def normalised(resolved: Resolved) -> dict[str, Any]:
    """The scenario as understood: ids kept, defaults filled in."""
    data = resolved.scenario.model_dump(mode="json")
    data["workload"]["samples_per_prompt"] = resolved.samples_per_prompt
    data["workload"]["max_response_tokens"] = resolved.max_response_tokens
    data["workload"]["max_prompt_tokens"] = resolved.scenario.workload.longest_prompt
    if resolved.critic is not None and data["models"]["critic"] is None:
        data["models"]["critic"] = "same as policy"
    if not resolved.algorithm.online:
        data["models"]["reward"] = "none"
        data["plan"]["rollout"] = None
    return data
