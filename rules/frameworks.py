"""Which frameworks can run a plan: their claims (what they support) and their constraints
(what their code refuses), evaluated over a whole table of candidate plans at once.

A framework offers pairs of a training backend and a rollout engine (the components it
claims). A plan is runnable by the framework when its claims cover what the plan uses and,
for some pair, every constraint bound to the framework or to a component of the pair holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.schema import Claim, Constraint, Framework
from rlmguide.rules.engine import Guarded, compile_kind

EXECUTION_FEATURE = {
    "sync": "synchronous-execution",
    "one-step-off": "one-step-off-policy",
    "async": "asynchronous-execution",
    "partial-rollout": "partial-rollout",
}
"""The technique a framework must claim to run each execution mode."""

CONFIGURATION_FEATURES = (
    ("plan.critic", "shared-actor-critic", ("shared",)),
    ("plan.fusion", "inter-stage-fusion", ("inter-stage", "both")),
    ("plan.fusion", "intra-stage-fusion", ("intra-stage", "both")),
)
"""Table 9's configurations (survey §4.1, §4.3): a framework must claim the technique to run
a plan that uses it."""


FROZEN_LAYOUT = "frozen-model-layout"
"""The technique of a plan that gives the frozen models a layout of their own
(plan.assessment, Table 9's "TP/PP for Assessment"): a framework must claim it to run one."""
ISOLATED_EP = "isolated-expert-parallelism"
"""The technique of a plan whose ep ranks replicate the dense work (plan.train.expert_layout
isolated, survey B.3.6): a framework must claim it to run one."""


def configuration_techniques(
    critic: str | None,
    fusion: str | None,
    assessment: Mapping[str, Any] | None = None,
    expert_layout: str | None = None,
) -> list[tuple[str, str]]:
    """(technique, plan field) of each Table 9 configuration a plan uses, and of an isolated
    expert layout (survey Tables 7-8)."""
    given = {"plan.critic": critic, "plan.fusion": fusion}
    found = [
        (feature, f"{fact}: {given[fact]}")
        for fact, feature, values in CONFIGURATION_FEATURES
        if given[fact] in values
    ]
    if assessment:
        found.append(
            (FROZEN_LAYOUT, f"plan.assessment: tp {assessment['tp']}, pp {assessment['pp']}")
        )
    if expert_layout == "isolated":
        found.append((ISOLATED_EP, "plan.train.expert_layout: isolated"))
    return found


POOL_FEATURES = {
    "rollout": (
        ("plan.rollout.tp", "rollout-tensor-parallelism"),
        ("plan.rollout.ep", "rollout-expert-parallelism"),
    ),
    "train": (
        ("plan.train.tp", "tensor-parallelism"),
        ("plan.train.pp", "pipeline-parallelism"),
        ("plan.train.cp", "context-parallelism"),
        ("plan.train.ep", "expert-parallelism"),
    ),
}
"""A degree above 1 runs only on a released framework whose claims say it supports the
technique (`yes`, or `partial` within the limits its constraint records state): a plan is
launchable when a framework runs it under its claims, and a technique it makes no claim on is
not evidence that it does. Where a claimed technique is refused in some combination (a
backend without it), the constraint records say so. A research system (no released code) is
judged by what its claims rule out: its plans are what-ifs."""

KINDS_OF = {
    "ring-attention": "context-parallelism",
    "ulysses-sequence-parallelism": "context-parallelism",
    "1f1b-pipeline-schedule": "pipeline-parallelism",
    "interleaved-pipeline-schedule": "pipeline-parallelism",
}
"""Techniques a plan's degree stands for (their records' parent): a framework claiming ring
attention or Ulysses runs a plan's context parallelism (plan.train.cp), one claiming a
pipeline schedule its pipeline."""

PARALLELISM = frozenset(feature for pool in POOL_FEATURES.values() for _, feature in pool)

WEIGHT_SHARDING_BACKENDS = frozenset({"pytorch-fsdp", "deepspeed", "torchtitan", "jax"})
"""Training backends whose sharding is ZeRO-3 style (FSDP's full sharding, DeepSpeed stage
3, TorchTitan's FSDP2, JAX's sharded arrays): a ZeRO-3 plan runs on a framework's pair with
one of them. On Megatron-LM (and MindSpeed over it) the frameworks shard the optimizer
states only, with Megatron's distributed optimizer (ZeRO-1): so read in code for verl,
NeMo-RL, slime and miles (their constraint records), and no other framework's claims show
Megatron's own FSDP modes in use."""

ZERO_3_CLAIMS = frozenset({"zero-3", "fsdp", "pytorch-fsdp", "deepspeed"})
"""Claims under which a framework shards weights ZeRO-3 style: the technique under either name,
or a backend whose sharding it is (FSDP's full sharding, DeepSpeed's stage 3)."""


@dataclass(frozen=True)
class CompiledConstraint(Guarded):
    record: Constraint

    def holds(self, env: Mapping[str, Any], size: int) -> np.ndarray:
        """Where the plan satisfies the constraint (it holds trivially where it does not apply)."""
        applies, holds = self.judge(env, size)
        return ~applies | holds


def compile_constraints(catalog: Catalog) -> tuple[list[CompiledConstraint], list[Problem]]:
    """The constraints the planner judges: start-up checks of a launch's own values
    (`checks: launch`) are export's and review's (rlmguide.export.startup)."""
    return compile_kind(catalog, "constraint", CompiledConstraint, checks="plan")


def inherit(
    constraints: Iterable[CompiledConstraint], extends: Mapping[str, str]
) -> list[CompiledConstraint]:
    """The constraints, plus for every component that `extends` another (child -> parent) a
    copy of each constraint bound to the parent, bound to the child: a layer over Megatron-LM
    runs Megatron-LM's code and its refusals."""
    out = list(constraints)
    for child, parent in extends.items():
        out += [
            replace(c, record=c.record.model_copy(update={"component": child}))
            for c in constraints
            if c.record.component == parent
        ]
    return out


def pool_of(names: Iterable[str]) -> str:
    """The narrowest level a set of facts can be judged at: one pool, or the whole plan."""
    pools = {n.split(".")[1] for n in names if n.startswith(("plan.rollout.", "plan.train."))}
    plan_wide = any(
        n.startswith("plan.") and not n.startswith(("plan.rollout.", "plan.train.")) for n in names
    )
    if plan_wide or len(pools) > 1:
        return "plan"
    return pools.pop() if pools else "scenario"


@dataclass(frozen=True)
class Support:
    """One framework as the planner sees it."""

    framework: Framework
    claimed: frozenset[str]
    refused: frozenset[str]
    """Features the framework's claims say it does not support."""
    pairs: tuple[tuple[str | None, str | None], ...]
    """(training backend, rollout engine) pairs it offers."""
    constraints: tuple[CompiledConstraint, ...]

    @property
    def id(self) -> str:
        return self.framework.id

    @property
    def released(self) -> bool:
        """Its end-to-end code is public: a plan it runs is launchable."""
        return self.framework.released

    def claims_allow(self, env: Mapping[str, Any], size: int, level: str) -> np.ndarray:
        """Where its claims cover what the plans use, judged on the facts of `level`: the
        placement, the execution mode, Table 9's configuration and every parallelism above 1
        must be claimed (POOL_FEATURES)."""
        uses = _uses(env, size, level)
        ok = np.ones(size, dtype=bool)
        for feature, used in uses.items():
            if feature == "zero-3":  # FSDP is the same sharding under another name
                denied = {"zero-3", "fsdp"} <= self.refused or (
                    self.released and not self.claimed & ZERO_3_CLAIMS
                )
            elif feature in PARALLELISM and not self.released:
                # A research system's design, read from a paper or partial code, is judged
                # by what it rules out: its plans are what-ifs, never launched.
                denied = feature in self.refused
            else:
                denied = feature not in self.claimed
            if denied:
                ok &= ~used
        return ok

    def runnable(
        self,
        env: Mapping[str, Any],
        size: int,
        level: str = "plan",
        seen: dict[str, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Where the framework can run the plans, judged on the facts of `level` (a pool, or
        the whole plan), and where each of its constraints fails. `seen` keeps constraints
        already judged on this env (a component's constraint binds many frameworks)."""
        by_pair, fails = self.pair_masks(env, size, level, seen)
        some_pair = np.zeros(size, dtype=bool)
        for ok in by_pair.values():
            some_pair |= ok
        return some_pair & self.claims_allow(env, size, level), fails

    def pair_masks(
        self,
        env: Mapping[str, Any],
        size: int,
        level: str = "plan",
        seen: dict[str, np.ndarray] | None = None,
    ) -> tuple[dict[tuple[str | None, str | None], np.ndarray], dict[str, np.ndarray]]:
        """Where each (backend, engine) pair passes every constraint bound to it, and where
        each constraint fails (claims aside: see `runnable`)."""
        seen = {} if seen is None else seen
        judged = [
            c
            for c in self.constraints
            if level == "plan" or pool_of(c.names) in (level, "scenario")
        ]
        for c in judged:
            if c.id not in seen:
                seen[c.id] = ~c.holds(env, size)
        fails = {c.id: seen[c.id] for c in judged}
        sharded = _weights_sharded(env, size, level)
        by_pair = {}
        for backend, engine in self.pairs:
            ok = np.ones(size, dtype=bool)
            for c in _bound(judged, backend, engine):
                ok &= ~fails[c.id]
            if not _shards_weights(backend):
                ok &= ~sharded
            by_pair[(backend, engine)] = ok
        return by_pair, fails

    def refusal(self, env: Mapping[str, Any]) -> str | None:
        """Why the framework does not run the one plan `env` holds (None where it does): the
        constraints that fail on each (backend, engine) pair it offers, pairs refused alike
        named together, or its claims where those, not a constraint, leave the plan out."""
        by_pair, fails = self.pair_masks(env, 1)
        if not by_pair:
            return "it offers no training backend and rollout engine its claims name"
        if any(ok[0] for ok in by_pair.values()):
            if self.claims_allow(env, 1, "plan")[0]:
                return None
            return f"its claims do not cover the plan's features ({self.id}'s claim records)"
        grouped: dict[tuple[str, ...], list[str]] = {}
        for pair, reasons in self.pair_failures(env, 1, fails).items():
            grouped.setdefault(tuple(r for r, hit in reasons if hit[0]), []).append(pair)
        return "; ".join(
            f"on {', '.join(pairs)}: {', '.join(failing)}" for failing, pairs in grouped.items()
        )

    def pair_failures(
        self,
        env: Mapping[str, Any],
        size: int,
        fails: Mapping[str, np.ndarray],
        level: str = "plan",
    ) -> dict[str, list[tuple[str, np.ndarray]]]:
        """For each (backend, engine) pair it offers, named "backend + engine", what refuses
        the `size` plans on it, in order: each bound constraint judged in `fails` (from
        pair_masks) with where it fails, then the planner's rule that the backend cannot
        shard weights under ZeRO-3 where no constraint already refuses. A plan can be refused
        for one reason on one pair and for another on the next: naming only the first sends
        a user to the other pair."""
        sharded = _weights_sharded(env, size, level)
        found = {}
        for backend, engine in self.pairs:
            reasons = [
                (c.id, fails[c.id])
                for c in _bound(self.constraints, backend, engine)
                if c.id in fails
            ]
            if not _shards_weights(backend):
                refused = np.zeros(size, dtype=bool)
                for _, hit in reasons:
                    refused |= hit
                # no record names it, the planner's own rule does (WEIGHT_SHARDING_BACKENDS)
                reasons.append(
                    (f"ZeRO-3 ({backend} shards the optimizer states only)", sharded & ~refused)
                )
            found[" + ".join(x for x in (backend, engine) if x) or "every pair"] = reasons
        return found


def _bound(
    constraints: Iterable[CompiledConstraint], backend: str | None, engine: str | None
) -> list[CompiledConstraint]:
    """The constraints that bind a (backend, engine) pair: the framework's own and its
    components'."""
    return [c for c in constraints if c.record.component in (None, backend, engine)]


def _weights_sharded(env: Mapping[str, Any], size: int, level: str) -> np.ndarray:
    """Where the plans shard weights (ZeRO-3), judged on the facts of `level`."""
    zero = env.get("plan.train.zero") if level in ("plan", "train") else None
    if zero is None:
        return np.zeros(size, dtype=bool)
    return np.broadcast_to(np.asarray(zero) >= 3, (size,))


def _shards_weights(backend: str | None) -> bool:
    """The backend can shard weights (ZeRO-3); the others shard optimizer states only."""
    return backend in (None, *WEIGHT_SHARDING_BACKENDS)


def _uses(env: Mapping[str, Any], size: int, level: str) -> dict[str, np.ndarray]:
    """Where the plans use each claimable feature, judged on the facts of `level`; kept in
    the env (as `_uses.<level>`) so that forty frameworks share one computation."""
    key = f"_uses.{level}"
    cached = env.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    uses: dict[str, np.ndarray] = {}
    pools = ("rollout", "train") if level == "plan" else (level,)
    for pool in pools:
        for fact, feature in POOL_FEATURES.get(pool, ()):
            if fact in env:
                uses[feature] = np.broadcast_to(np.asarray(env[fact]) > 1, (size,))
        if pool == "train" and "plan.train.zero" in env:
            uses["zero-3"] = np.broadcast_to(np.asarray(env["plan.train.zero"]) >= 3, (size,))
    if level == "plan":
        placement = np.broadcast_to(np.asarray(env["plan.placement"]), (size,))
        execution = np.broadcast_to(np.asarray(env["plan.execution"]), (size,))
        # Partial co-location takes both: the actor's pool is colocated and the frozen models
        # sit on groups of their own, as a disaggregated placement puts them.
        partial = placement == "partially-colocated"
        for name in ("colocated", "disaggregated"):
            uses[f"{name}-placement"] = (placement == name) | partial
        for mode, feature in EXECUTION_FEATURE.items():
            uses[feature] = execution == mode
        for fact, feature, values in CONFIGURATION_FEATURES:
            if fact in env:
                value = np.broadcast_to(np.asarray(env[fact]), (size,))
                uses[feature] = np.isin(value, values)
        if "plan.assessment.tp" in env:
            given = np.broadcast_to(np.asarray(env["plan.assessment.tp"]), (size,))
            uses[FROZEN_LAYOUT] = given > 0
        if "plan.train.expert_layout" in env:
            layout = np.broadcast_to(np.asarray(env["plan.train.expert_layout"]), (size,))
            uses[ISOLATED_EP] = layout == "isolated"
    if isinstance(env, dict):
        env[key] = uses
    return uses


PLAN_FEATURES = frozenset(
    {"colocated-placement", "disaggregated-placement", *EXECUTION_FEATURE.values()}
    | {feature for _, feature, _ in CONFIGURATION_FEATURES}
    | {FROZEN_LAYOUT, ISOLATED_EP}
)
"""Features a framework must claim to run a plan that uses them (with the algorithm): a
partial claim on one runs the plan only when the part that exists is what the planner costs."""


def runs(claim: Claim, plan_feature: bool) -> bool:
    """Whether a claim lets its framework run plans that use the feature. A `partial` claim on
    a plan feature (placement, execution mode, Table 9 configuration, the algorithm) does only
    where it names its part and that part is what the planner costs (`part.costed`): a plan is
    never costed with more than exists. On a component or a parallelism, partial support is
    support whose limits the constraint records state."""
    if claim.support == "yes":
        return True
    if claim.support != "partial":
        return False
    return not plan_feature or (claim.part is not None and claim.part.costed)


def supports(
    frameworks: Iterable[Framework],
    constraints: Iterable[CompiledConstraint],
    components: Mapping[str, str],
    algorithm: str,
    online: bool = True,
    versions: Mapping[str, str] | None = None,
) -> list[Support]:
    """The frameworks that claim the algorithm, each with its pairs and constraints.
    `components` maps a component id to its role; an `online` algorithm samples, so it needs
    a rollout engine. `versions` names, per framework, the mapping whose version is judged:
    a constraint scoped to other versions does not bind it (none named: every one does)."""
    versions = versions or {}
    by_framework: dict[str | None, list[CompiledConstraint]] = {}
    for c in constraints:
        by_framework.setdefault(c.record.framework, []).append(c)
    of_components = by_framework.get(None, [])
    found = []
    for fw in sorted(frameworks, key=lambda f: f.id):
        ran = [
            c.feature
            for c in fw.claims
            if runs(c, c.feature in PLAN_FEATURES or c.feature == algorithm)
        ]
        claimed = frozenset(ran) | {KINDS_OF[f] for f in ran if f in KINDS_OF}
        refused = frozenset(c.feature for c in fw.claims if c.support == "no")
        if algorithm not in claimed:
            continue
        # A backend or engine runs plans where it is claimed `yes` or with a costed part (a
        # partial claim such as an inference-only engine forms no pair). A framework that
        # claims no training backend, or no engine for a method that samples, runs nothing
        # under its claims.
        usable = {c.feature for c in fw.claims if runs(c, plan_feature=True)}
        backends = sorted(f for f in usable if components.get(f) == "training-backend")
        engines = sorted(f for f in usable if components.get(f) == "rollout-engine")
        if fw.released:
            pairs = tuple(itertools.product(backends, engines or ([] if online else [None])))
        else:  # a design without the components named: judged by its other claims
            pairs = tuple(itertools.product(backends or [None], engines or [None]))
        # A component's own refusals bind every framework that runs on it.
        inherited = [c for c in of_components if c.record.component in claimed]
        version = versions.get(fw.id)
        own = tuple(c for c in by_framework.get(fw.id, []) if c.record.in_scope(version))
        own += tuple(inherited)
        found.append(Support(fw, claimed, refused, pairs, own))
    return found
