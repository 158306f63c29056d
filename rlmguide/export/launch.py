"""A plan as a framework's launch: which mapping, which entry point, which keys and values.

`build` is the whole exporter over data: it picks the mapping (the newest for the framework
unless a version is asked for), the plan (search.find_plan), the training backend and rollout
engine the framework's constraints allow for it, and computes every key. Refusals are
NotExpressible with the reason; render.py writes the result as a script.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlmguide.export.mapping import (
    INPUTS,
    CompiledEntry,
    KeyCannotHold,
    NotExpressible,
    apply,
    compile_mapping,
    unexpressed,
)
from rlmguide.export.search import Found, find_plan
from rlmguide.export.startup import (
    ABSENT,
    binding,
    compile_checks,
    computed,
    read,
    refusal,
    tripped,
)
from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Launch
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.rules.scenario import Resolved


class UnknownVersion(ValueError):
    """`--framework-version` names no mapping of the framework (bad input, exit 2)."""


@dataclass(frozen=True)
class Argument:
    key: str
    value: Any
    fact: str
    file: str


@dataclass(frozen=True)
class Exported:
    framework: str
    mapping: MappingRecord
    launch: Launch
    backend: str | None
    engine: str | None
    arguments: list[Argument]
    inputs: dict[str, str]
    """Shell variable -> what the user must set it to."""
    found: Found
    defaults: dict[str, str] = field(default_factory=dict)
    """Shell variable -> the value the script uses when the user sets none (the policy's
    Hugging Face id)."""

    @property
    def plan(self) -> dict[str, Any]:
        return self.found.plan

    def as_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "mapping": self.mapping.id,
            "commit": self.mapping.commit,
            "syntax": self.mapping.syntax,
            "command": self.launch.command,
            "entry_point_file": self.launch.file,
            "training_backend": self.backend,
            "rollout_engine": self.engine,
            "preamble": [*self.mapping.preamble, *self.launch.preamble],
            "fixed": [*self.mapping.fixed, *self.launch.fixed],
            "arguments": [
                {"key": a.key, "value": a.value, "fact": a.fact, "file": a.file}
                for a in self.arguments
            ],
            "inputs": self.inputs,
            "input_defaults": self.defaults,
            "plan": self.plan,
            "rank": self.found.rank,
            "passed_over": self.found.result.get("passed_over", []),
            "passed_over_count": self.found.result.get("passed_over_count", 0),
        }


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


def _pairs(
    found: Found, framework: str, mapping: MappingRecord
) -> list[tuple[str | None, str | None]]:
    """The (backend, engine) pairs the framework's constraints allow for the plan and the
    mapping covers, in the mapping's order of preference."""
    allowed = found.recommender.pairs_for(framework, found.row)
    rank = {c: i for i, c in enumerate(mapping.components)}
    covered = [(b, e) for b, e in allowed if all(c is None or c in rank for c in (b, e))]
    if not covered:
        raise NotExpressible(
            f"{framework}'s constraints allow this plan only on {allowed or 'no'} "
            f"(training backend, rollout engine) pairs, none of which {mapping.id} covers"
        )
    return sorted(covered, key=lambda p: tuple(rank.get(c, -1) if c else -1 for c in p))


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


def _launch(mapping: MappingRecord, plan: Mapping[str, Any], backend: str | None) -> Launch:
    for launch in mapping.launches:
        if (launch.execution, launch.placement) == (plan["execution"], plan["placement"]) and (
            launch.component in (None, backend)
        ):
            return launch
    raise NotExpressible(
        f"{mapping.id} has no entry point for {plan['execution']} {plan['placement']} "
        f"runs on {backend}"
    )


def build(
    resolved: Resolved,
    catalog: Catalog,
    mappings: Mapping[str, MappingRecord],
    framework: str,
    version: str | None = None,
) -> Exported:
    mapping = pick_mapping(mappings, framework, version)
    mapping = for_algorithm(mapping, resolved.scenario.workload.algorithm)
    entries = compile_mapping(mapping)
    found = find_plan(resolved, catalog, framework, mapping)
    refusals = []
    for backend, engine in _pairs(found, framework, mapping):
        # the preferred pair first; one whose keys cannot hold the plan (verl's FSDP has no
        # ZeRO-1) gives way to the next
        try:
            return _write(resolved, catalog, framework, mapping, entries, found, backend, engine)
        except NotExpressible as exc:
            refusals.append(exc)
    # a refusal the plan itself meets (a start-up check, an oversampling no launch runs) says
    # more than a key that one pair cannot hold
    raise next((r for r in refusals if not isinstance(r, KeyCannotHold)), refusals[0])


def _write(
    resolved: Resolved,
    catalog: Catalog,
    framework: str,
    mapping: MappingRecord,
    entries: list[CompiledEntry],
    found: Found,
    backend: str | None,
    engine: str | None,
) -> Exported:
    """The launch of `found`'s plan on one (backend, engine) pair."""
    launch = _launch(mapping, found.plan, backend)
    facts = found.recommender.row_facts(found.row)
    facts["launch.oversampling"] = resolved.scenario.run.oversampling or 1.0
    facts |= computed(found.plan, facts, engine)
    facts |= {
        "workload.epochs": found.recommender.resolved.scenario.workload.epochs,
        "run.training_backend": backend or "",
        "run.rollout_engine": engine or "",
        **{name: f"${{{var}}}" for name, (var, _) in INPUTS.items()},
    }
    active = [c for c in entries if c.applies(facts, backend, engine)]
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
    written = read(mapping, {a.key.lstrip("+"): a.value for a in arguments})
    # a launch value no key writes is the framework's own (a pipeline split AReaL's and ROLL's
    # launches cannot give stays even), whatever the plan implied
    unsaid = {k: v for k, v in ABSENT.items() if k not in {a.fact for a in arguments}}
    checks, _ = compile_checks(catalog)
    if failed := tripped(binding(checks, mapping, backend, engine), facts | unsaid | written):
        raise NotExpressible(
            f"{mapping.id} would stop at start-up: " + "; ".join(refusal(r) for r in failed)
        )
    if facts["launch.oversampling"] > 1 and not written.get("launch.dynamic_sampling"):
        raise NotExpressible(
            f"the run cost bills {facts['launch.oversampling']}x oversampling (run.oversampling) "
            f"but {mapping.id} launches {facts['workload.algorithm']} {launch.execution} "
            "without dynamic sampling: drop run.oversampling or pick a launch that refills"
        )
    used = {a.fact for a in arguments}
    inputs = {var: text for name, (var, text) in INPUTS.items() if name in used}
    return Exported(framework, mapping, launch, backend, engine, arguments, inputs, found)


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
