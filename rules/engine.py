"""Compile rule records and judge whole tables of candidate plans with them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.schema import Rule
from rlmguide.rules.expr import Condition, ConditionError, Fact
from rlmguide.rules.facts import FACTS, GENERATION_FACTS, SCENARIO_FACTS

SCENARIO_NAMES = {fact.name for fact in SCENARIO_FACTS}


@dataclass(frozen=True)
class Guarded:
    """A record with an `applies` and a `condition` expression, compiled: rules and framework
    constraints alike."""

    record: Any
    applies: Condition
    condition: Condition

    @property
    def id(self) -> str:
        return str(self.record.id)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.applies.names | self.condition.names)

    def judge(self, env: Mapping[str, Any], size: int) -> tuple[np.ndarray, np.ndarray]:
        """Where it applies and where its condition holds, over `size` candidates."""
        applies = np.broadcast_to(self.applies.evaluate(env), (size,))
        holds = np.broadcast_to(self.condition.evaluate(env), (size,))
        return applies, holds


@dataclass(frozen=True)
class CompiledRule(Guarded):
    record: Rule

    @property
    def scenario_only(self) -> bool:
        return self.names <= SCENARIO_NAMES

    @property
    def about_generation(self) -> bool:
        """It names a fact of the rollout, the placement or the overlap of generation with
        training, so it cannot apply to an offline method, which generates nothing."""
        return bool(self.names & GENERATION_FACTS)

    def fires(self, env: Mapping[str, Any], size: int) -> np.ndarray:
        """Where the rule fires, as a boolean array of `size` candidates.

        require: applies and the condition fails (the plan is rejected);
        prefer / advise: applies and the condition holds.
        """
        applies, holds = self.judge(env, size)
        if self.record.effect == "require":
            return applies & ~holds
        return applies & holds


def compile_rule(rule: Rule) -> CompiledRule:
    return CompiledRule(rule, Condition(rule.applies, FACTS), Condition(rule.condition, FACTS))


G = TypeVar("G", bound=Guarded)


def compile_kind(
    catalog: Catalog,
    kind: str,
    make: type[G],
    facts: Mapping[str, Fact] = FACTS,
    checks: str | None = None,
) -> tuple[list[G], list[Problem]]:
    """Every record of `kind` whose expressions compile over `facts`, as `make`, and a
    problem for each one that does not; with `checks`, only the constraints of that kind."""
    compiled: list[G] = []
    problems: list[Problem] = []
    for record in sorted(catalog.of(kind).values(), key=lambda r: r.id):
        if checks is not None and getattr(record, "checks", None) != checks:
            continue
        try:
            applies = Condition(record.applies, facts)  # type: ignore[attr-defined]
        except ConditionError as exc:
            problems.append(Problem(catalog.file_of(record), "applies", str(exc)))
            continue
        try:
            condition = Condition(record.condition, facts)  # type: ignore[attr-defined]
        except ConditionError as exc:
            problems.append(Problem(catalog.file_of(record), "condition", str(exc)))
            continue
        compiled.append(make(record, applies, condition))
    return compiled, problems


def compile_rules(catalog: Catalog) -> tuple[list[CompiledRule], list[Problem]]:
    """Every rule of the catalog that compiles, and a problem for each one that does not."""
    return compile_kind(catalog, "rule", CompiledRule)


def active(rules: Iterable[CompiledRule]) -> list[CompiledRule]:
    """Rules that take part in recommendations (deprecated ones only keep their page)."""
    return [r for r in rules if r.record.lifecycle != "deprecated"]
