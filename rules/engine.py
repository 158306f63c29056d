"""Compile rule records and judge whole tables of candidate plans with them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kb.load import Catalog, Problem
from kb.schema import Rule
from rules.expr import Condition, ConditionError
from rules.facts import FACTS, SCENARIO_FACTS

SCENARIO_NAMES = {fact.name for fact in SCENARIO_FACTS}


@dataclass(frozen=True)
class CompiledRule:
    record: Rule
    applies: Condition
    condition: Condition

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def scenario_only(self) -> bool:
        return (self.applies.names | self.condition.names) <= SCENARIO_NAMES

    def fires(self, env: Mapping[str, Any], size: int) -> np.ndarray:
        """Where the rule fires, as a boolean array of `size` candidates.

        require: applies and the condition fails (the plan is rejected);
        prefer / advise: applies and the condition holds.
        """
        applies = np.broadcast_to(self.applies.evaluate(env), (size,))
        holds = np.broadcast_to(self.condition.evaluate(env), (size,))
        if self.record.effect == "require":
            return applies & ~holds
        return applies & holds


def compile_rule(rule: Rule) -> CompiledRule:
    return CompiledRule(rule, Condition(rule.applies, FACTS), Condition(rule.condition, FACTS))


def compile_rules(catalog: Catalog) -> tuple[list[CompiledRule], list[Problem]]:
    """Every rule of the catalog that compiles, and a problem for each one that does not."""
    compiled: list[CompiledRule] = []
    problems: list[Problem] = []
    for rule in sorted(catalog.of("rule").values(), key=lambda r: r.id):
        assert isinstance(rule, Rule)
        try:
            applies = Condition(rule.applies, FACTS)
        except ConditionError as exc:
            problems.append(Problem(catalog.file_of(rule), "applies", str(exc)))
            continue
        try:
            condition = Condition(rule.condition, FACTS)
        except ConditionError as exc:
            problems.append(Problem(catalog.file_of(rule), "condition", str(exc)))
            continue
        compiled.append(CompiledRule(rule, applies, condition))
    return compiled, problems


def active(rules: Iterable[CompiledRule]) -> list[CompiledRule]:
    """Rules that take part in recommendations (deprecated ones only keep their page)."""
    return [r for r in rules if r.record.lifecycle != "deprecated"]
