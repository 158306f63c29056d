"""The checks behind the survey map: each row's status is what its checks find when they run.

A row names what implements a survey item (records, code, tests) and what the survey asks of it
beyond them (`requires`). Every name is a check that runs against this repository and its
knowledge base: a record exists, cites the survey and is complete for its kind; a code path or
test function exists; a scenario field or rule fact exists; a query over the database holds; a
Table 11 column has a cited claim for every framework the survey names. The row is present when
every check passes, missing when none does, partial otherwise, and each failure says what is
absent. Tests run in the suite, not here: a test check finds the function the suite runs.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, model_validator

from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Scenario
from rlmguide.kb.schema.common import Strict, Text
from rlmguide.kb.survey_columns import TABLE11, best_feature
from rlmguide.rules.facts import FACTS

SURVEY = "arxiv-2608.27046"
REPO = Path(__file__).resolve().parents[2]
"""The repository root (the sitegen package sits at rlmguide/sitegen); code and tests are
named relative to it."""

Status = Literal["present", "partial", "missing"]
STATUSES: tuple[Status, ...] = ("present", "partial", "missing")


class Requirement(Strict):
    """One thing the survey asks of an item beyond its records, code and tests: exactly one of
    a scenario field, a rule fact, a query over the knowledge base, or a Table 11 column."""

    field: Text | None = None
    """A dotted scenario path that must exist (`plan.train.cp`)."""
    fact: Text | None = None
    """A rule fact that must exist (`plan.rollout.cp`)."""
    query: Text | None = None
    """SQL over the knowledge base whose first value must be true (or a non-zero count)."""
    column: Text | None = None
    """A Table 11 column: every framework the survey names has a cited claim for it."""
    need: Text
    """What the survey asks, in a few words: the reason shown when the check fails."""

    @model_validator(mode="after")
    def _one(self) -> Requirement:
        given = [k for k in ("field", "fact", "query", "column") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a requirement gives one of field, fact, query, column: {given}")
        return self


@dataclass(frozen=True)
class Finding:
    check: str
    """What ran, as the page shows it (`record model:phi-4`, `test tests/x.py::t`)."""
    passed: bool
    detail: str = ""
    """Why it failed (empty when it passed)."""


def status_of(findings: list[Finding]) -> Status:
    if findings and all(f.passed for f in findings):
        return "present"
    return "partial" if any(f.passed for f in findings) else "missing"


class Checker:
    """Runs the checks against one catalog and its database connection."""

    def __init__(self, catalog: Catalog, con: duckdb.DuckDBPyConnection, repo: Path = REPO):
        self.catalog, self.con, self.repo = catalog, con, repo

    def record(self, ref: str, cite: bool) -> Finding:
        kind, rid = ref.split(":", 1)
        name = f"record {ref}"
        record = self.catalog.of(kind).get(rid)
        if record is None:
            return Finding(name, False, f"no {kind} record {rid}")
        if cite and SURVEY not in getattr(record, "sources", []):
            return Finding(name, False, f"{kind} {rid} does not cite the survey")
        gap = incomplete(record)
        return Finding(name, not gap, gap)

    def path(self, path: str) -> Finding:
        found = (self.repo / path).exists()
        return Finding(f"code {path}", found, "" if found else f"no {path} in the repository")

    def test(self, test_id: str) -> Finding:
        file, name = test_id.split("::")
        source = self.repo / file
        if not source.exists():
            return Finding(f"test {test_id}", False, f"no {file} (checks run in the repository)")
        text = source.read_text(encoding="utf-8")
        found = re.search(rf"^def {re.escape(name)}\(", text, re.M) is not None
        return Finding(f"test {test_id}", found, "" if found else f"no test {name} in {file}")

    def requirement(self, req: Requirement) -> Finding:
        kind, value = next(
            (k, v) for k in ("field", "fact", "query", "column") if (v := getattr(req, k))
        )
        passed, detail = REQUIREMENTS[kind](self, value)
        return Finding(f"{kind} {value}", passed, "" if passed else f"{req.need}: {detail}")

    def _field(self, path: str) -> tuple[bool, str]:
        return scenario_field(path), f"no scenario field {path}"

    def _fact(self, name: str) -> tuple[bool, str]:
        return name in FACTS, f"no rule fact {name}"

    def _query(self, sql: str) -> tuple[bool, str]:
        row = self.con.execute(sql).fetchone()
        return bool(row and row[0]), f"the query finds {row[0] if row else 'no row'}"

    def _column(self, label: str) -> tuple[bool, str]:
        """`label` is a Table 11 column, or `*` for all 13."""
        columns = [c for c in TABLE11 if label in ("*", c.label)]
        if not columns:
            return False, f"no Table 11 column {label}"
        named = self.survey_frameworks()
        best = [
            claims[f] if (f := best_feature(c, claims)) else None
            for c in columns
            for claims in named.values()
        ]
        unknown = best.count(None)
        # An undocumented claim is cited (it records what was read); the count keeps it visible.
        return not unknown, (
            f"{unknown} of {len(best)} cells have no cited claim; "
            f"{best.count('undocumented')} cite sources that leave the feature undocumented"
        )

    def survey_frameworks(self) -> dict[str, dict[str, str]]:
        """The frameworks §1 and §6.2 name (their citation of the survey), each with its claimed
        support per feature."""
        rows = self.con.execute(
            "SELECT f.record_id, c.feature, c.support FROM citations f "
            "LEFT JOIN claims c ON c.framework_id = f.record_id "
            "WHERE f.source_id = ? AND f.record_kind = 'framework' "
            "AND regexp_matches(f.locator, '§1($|[^.0-9])|§6\\.2')",
            [SURVEY],
        ).fetchall()
        named: dict[str, dict[str, str]] = {}
        for fid, feature, support in rows:
            claims = named.setdefault(fid, {})
            if feature is not None:
                claims[feature] = support
        return named


REQUIREMENTS: dict[str, Callable[[Checker, str], tuple[bool, str]]] = {
    "field": Checker._field,
    "fact": Checker._fact,
    "query": Checker._query,
    "column": Checker._column,
}


def incomplete(record: Any) -> str:
    """What a record lacks for the map to count it ('' when nothing). The schema already holds a
    rule to examples that fire and do not, and an open model to its configuration or the reason
    it has none; a framework may still have no cited claims."""
    if record.kind == "framework" and not record.claims:
        return f"framework {record.id} has no claims"
    return ""


def scenario_field(path: str) -> bool:
    """Does the scenario schema have the dotted field `path`? A union field (a reward given by
    id, inline or by kind) has it when one of its forms does."""
    models: list[type[BaseModel]] = [Scenario]
    for part in path.split("."):
        found = [m.model_fields[part] for m in models if part in m.model_fields]
        if not found:
            return False
        models = [n for f in found for n in nested_models(f.annotation)]
    return True


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside an annotation (`Agent | None`, `Annotated[...]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in nested_models(arg)]
