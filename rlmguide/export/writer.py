"""Whether, and how, a framework's launch writes one costed plan: the one predicate export and
`recommend` share.

`Writer.write` computes the launch's keys for a row of a recommender's result on the first
(training backend, rollout engine) pair that holds it; every refusal is NotExpressible with
the reason: no entry point for the plan's execution and placement, no covered pair, a fact
no key writes, two values for one key, a start-up check the launch would trip, oversampling
no launch refills. `Writer.refusal` is that as a predicate: export walks the ranking to the
first plan it accepts (search.find_plan), and `recommend` lists a framework with a mapping
in a plan's `launchable_by` only where it accepts the plan, so that every framework listed
there exports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlmguide.export.mapping import (
    INPUTS,
    CompiledEntry,
    KeyCannotHold,
    NotExpressible,
    apply,
    compile_mapping,
    departures,
    unexpressed,
)
from rlmguide.export.startup import (
    ABSENT,
    binding,
    by_tokens,
    compile_checks,
    computed,
    extended_context,
    read,
    refusal,
    tripped,
)
from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Launch
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.rules.frameworks import CompiledConstraint
from rlmguide.rules.recommend import LaunchCheck, Recommender
from rlmguide.rules.runcost import run_steps, run_terms


class UnknownVersion(ValueError):
    """`--framework-version` names no mapping of the framework (bad input, exit 2)."""


@dataclass(frozen=True)
class Argument:
    key: str
    value: Any
    fact: str
    file: str


@dataclass(frozen=True)
class Written:
    """A plan's launch on one (backend, engine) pair."""

    launch: Launch
    backend: str | None
    engine: str | None
    arguments: list[Argument]
    inputs: dict[str, str]
    """Shell variable -> what the user must set it to."""
    departures: list[str] = field(default_factory=list)
    """How the launch runs otherwise than the algorithm's record (Mapping.departures)."""


def pick_mapping(
    mappings: Mapping[str, MappingRecord], framework: str, version: str | None
) -> MappingRecord:
    """The framework's newest mapping, or the one whose id or commit `version` names."""
    own = sorted(
        (m for m in mappings.values() if m.framework == framework),
        key=lambda m: m.committed,
        reverse=True,
    )
    if not own:
        have = sorted({m.framework for m in mappings.values()})
        raise NotExpressible(
            f"no mapping of {framework}'s launch configuration in the knowledge base yet "
            f"(kb/records/mappings/ has {', '.join(have)})"
        )
    if version is None:
        return own[0]
    for m in own:
        if version in (m.id, m.id.removeprefix(f"{framework}-")) or m.commit.startswith(version):
            return m
    known = ", ".join(m.id.removeprefix(f"{framework}-") for m in own)
    raise UnknownVersion(
        f"--framework-version: {framework} has no mapping {version!r}; known: {known}"
    )


def for_algorithm(mapping: MappingRecord, algorithm: str) -> MappingRecord:
    """The mapping with the entry points that run `algorithm`: one made for it (verl's DAPO
    recipe trainer) replaces the general one of its execution, placement and backend."""
    own = [la for la in mapping.launches if algorithm in la.algorithms]
    taken = {(la.execution, la.placement, la.component) for la in own}
    general = [
        la
        for la in mapping.launches
        if not la.algorithms and (la.execution, la.placement, la.component) not in taken
    ]
    return mapping.model_copy(update={"launches": own + general})


class Writer:
    """The launches of the frameworks in `mappings` (one mapping each, as picked for the
    scenario's algorithm: `for_scenario`), with their entries and the start-up checks
    compiled once."""

    def __init__(self, catalog: Catalog, mappings: Mapping[str, MappingRecord]) -> None:
        self.mappings = dict(mappings)
        self.entries = {f: compile_mapping(m) for f, m in self.mappings.items()}
        self.checks: list[CompiledConstraint] = compile_checks(catalog)[0]

    @classmethod
    def for_scenario(
        cls, catalog: Catalog, mappings: Mapping[str, MappingRecord], algorithm: str
    ) -> Writer:
        """Every framework's newest mapping, for `algorithm`."""
        frameworks = sorted({m.framework for m in mappings.values()})
        chosen = {f: for_algorithm(pick_mapping(mappings, f, None), algorithm) for f in frameworks}
        return cls(catalog, chosen)

    def refusal(
        self, recommender: Recommender, row: int, plan: Mapping[str, Any], framework: str
    ) -> str | None:
        """Why `framework`'s launch cannot run row `row` (costed as `plan`); None where it
        can, or where the framework has no mapping (nothing is exported, nothing refused)."""
        if framework not in self.mappings:
            return None
        try:
            self.write(recommender, row, plan, framework)
        except NotExpressible as exc:
            return str(exc)
        return None

    def write(
        self, recommender: Recommender, row: int, plan: Mapping[str, Any], framework: str
    ) -> Written:
        """The launch of row `row` on the first (backend, engine) pair whose keys hold it;
        NotExpressible where none does."""
        mapping = self.mappings[framework]
        policy = recommender.resolved.policy_id
        if mapping.model_scripts and policy not in mapping.model_scripts:
            folder = Path(next(iter(mapping.model_scripts.values()))).parent
            raise NotExpressible(
                f"{mapping.id} has no architecture script for {policy} in {folder}/ at "
                f"{mapping.commit[:12]}: its launch sources the model's architecture flags from "
                "there, and its start-up checks them against the checkpoint's config"
            )
        facts = recommender.row_facts(row)
        mode = (facts["plan.execution"], facts["plan.placement"])
        if mode not in {(x.execution, x.placement) for x in mapping.launches}:
            raise NotExpressible(f"{mapping.id} has no entry point for {mode[0]} {mode[1]}")
        refusals = []
        for backend, engine in _pairs(recommender, row, framework, mapping):
            # the preferred pair first; one whose keys cannot hold the plan (verl's FSDP has
            # no ZeRO-1) gives way to the next
            try:
                return self._write(recommender, plan, facts, framework, backend, engine)
            except NotExpressible as exc:
                refusals.append(exc)
        # a refusal the plan itself meets (a start-up check, an oversampling no launch runs)
        # says more than a key that one pair cannot hold
        raise next((r for r in refusals if not isinstance(r, KeyCannotHold)), refusals[0])

    def _write(
        self,
        recommender: Recommender,
        plan: Mapping[str, Any],
        plan_facts: Mapping[str, Any],
        framework: str,
        backend: str | None,
        engine: str | None,
    ) -> Written:
        """The launch of the plan on one (backend, engine) pair."""
        mapping = self.mappings[framework]
        resolved = recommender.resolved
        launch = _launch(mapping, plan_facts, backend)
        facts = dict(plan_facts)
        facts["launch.oversampling"] = resolved.scenario.run.oversampling or 1.0
        facts["launch.context_positions"] = extended_context(
            resolved.scenario.models.context_tokens, resolved.policy.max_context_tokens
        )
        # the run's length is the scenario's, whatever row (run totals are added only to the
        # plans shown)
        steps = run_steps(resolved, run_terms(resolved))
        facts |= computed({**plan, "run_steps": steps}, facts, engine, mapping.engine_starts_first)
        facts |= {
            "workload.epochs": resolved.scenario.workload.epochs,
            "run.training_backend": backend or "",
            "run.rollout_engine": engine or "",
            **{name: f"${{{var}}}" for name, (var, _) in INPUTS.items()},
        }
        active = [c for c in self.entries[framework] if c.applies(facts, backend, engine)]
        if missing := unexpressed(facts, active, mapping.implied_facts()):
            why = [
                f"{name}: {mapping.absent[name]}"
                for name in (m.partition(" = ")[0] for m in missing)
                if name in mapping.absent
            ]
            raise KeyCannotHold(
                f"{mapping.id} has no key for {', '.join(missing)} on {backend} with {engine}"
                + "".join(f" ({w})" for w in why)
            )
        arguments = _arguments(active, facts)
        keys = {a.key.lstrip("+"): a.value for a in arguments}
        written = read(mapping, keys)
        # the switches an entry point always passes count (verl's fixed use_dynamic_bsz=True)
        fixed = (f.lstrip("-+").partition("=") for f in (*mapping.fixed, *launch.fixed))
        always = {key: value if sep else True for key, sep, value in fixed}
        written["launch.token_batching"] = by_tokens(mapping, always | keys)
        # a launch value no key writes is the framework's own (a pipeline split AReaL's and
        # ROLL's launches cannot give stays even), whatever the plan implied
        unsaid = {k: v for k, v in ABSENT.items() if k not in {a.fact for a in arguments}}
        checks = binding(self.checks, mapping, backend, engine)
        if failed := tripped(checks, facts | unsaid | written):
            raise NotExpressible(
                f"{mapping.id} would stop at start-up: " + "; ".join(refusal(r) for r in failed)
            )
        if facts["launch.oversampling"] > 1 and not written.get("launch.dynamic_sampling"):
            raise NotExpressible(
                f"the run cost bills {facts['launch.oversampling']}x oversampling "
                f"(run.oversampling) but {mapping.id} launches {facts['workload.algorithm']} "
                f"{launch.execution} without dynamic sampling: drop run.oversampling or pick a "
                "launch that refills"
            )
        used = {a.fact for a in arguments}
        inputs = {var: text for name, (var, text) in INPUTS.items() if name in used}
        return Written(
            launch, backend, engine, arguments, inputs, departures(mapping, facts | written)
        )


def launch_check(catalog: Catalog, algorithm: str) -> LaunchCheck:
    """`recommend`'s launch check for a scenario of `algorithm`: the refusal of every
    framework's newest mapping (the catalog must hold mappings and constraints)."""
    return Writer.for_scenario(catalog, catalog.of("mapping"), algorithm).refusal  # type: ignore[arg-type]


def _pairs(
    recommender: Recommender, row: int, framework: str, mapping: MappingRecord
) -> list[tuple[str | None, str | None]]:
    """The (backend, engine) pairs the framework's constraints allow for the plan and the
    mapping covers, in the mapping's order of preference."""
    allowed = recommender.pairs_for(framework, row)
    rank = {c: i for i, c in enumerate(mapping.components)}
    covered = [(b, e) for b, e in allowed if all(c is None or c in rank for c in (b, e))]
    if not covered:
        raise NotExpressible(
            f"{framework} runs it only on (backend, engine) pairs {mapping.id} does not cover "
            f"({', '.join(f'{b}+{e}' for b, e in allowed) or 'none'})"
        )
    return sorted(covered, key=lambda p: tuple(rank.get(c, -1) if c else -1 for c in p))


def _launch(mapping: MappingRecord, facts: Mapping[str, Any], backend: str | None) -> Launch:
    mode = (facts["plan.execution"], facts["plan.placement"])
    for launch in mapping.launches:
        if (launch.execution, launch.placement) == mode and launch.component in (None, backend):
            return launch
    raise NotExpressible(
        f"{mapping.id} has no entry point for {mode[0]} {mode[1]} runs on {backend}"
    )


def _arguments(active: list[CompiledEntry], facts: Mapping[str, Any]) -> list[Argument]:
    """One argument per key, sorted; two entries that give one key different values are a
    plan the key cannot hold."""
    by_key: dict[str, Argument] = {}
    for compiled in active:
        e = compiled.entry
        value = apply(e, facts)
        seen = by_key.get(e.key)
        if seen is not None and seen.value != value:
            raise KeyCannotHold(
                f"{e.key} would be {seen.value} for {seen.fact} but {value} for {e.fact}"
            )
        by_key.setdefault(e.key, Argument(e.key, value, e.fact, e.file))
    return sorted(by_key.values(), key=lambda a: a.key.lstrip("+"))
