"""Every rule's example cases are tests: it fires where it says and stays silent elsewhere."""

from __future__ import annotations

import functools

import pytest
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.engine import CompiledRule, active, compile_rules
from rlmguide.rules.examples import fires_on


@functools.cache
def shipped() -> tuple[Catalog, list[CompiledRule]]:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    rules, problems = compile_rules(catalog)
    assert problems == []
    return catalog, active(rules)


def cases() -> list[tuple[str, int]]:
    _catalog, rules = shipped()
    return [(r.id, i) for r in rules for i in range(len(r.record.examples))]


def test_there_are_at_least_25_rules_each_cited() -> None:
    _, rules = shipped()
    assert len(rules) >= 25
    assert all(r.record.sources for r in rules)


@pytest.mark.parametrize(("rule_id", "index"), cases())
def test_rule_example(rule_id: str, index: int) -> None:
    catalog, rules = shipped()
    rule = next(r for r in rules if r.id == rule_id)
    example = rule.record.examples[index]
    assert fires_on(rule, example.scenario, catalog.records, rules) is example.fires, (
        example.description
    )
