"""Build the DuckDB database from a validated catalog, and find or rebuild its cached file.

Tables are named by the plural of their kind. Scalar fields become columns, nested structures
(`moe`, `mla`) become prefixed columns, `sources` lists become rows of `citations`, framework
claims become `claims`, rule examples `rule_examples`, and a result's scenario a JSON column.
These names are a public interface: users write SQL against them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import duckdb
from pydantic import BaseModel
from rlmguide.kb.derived import Table
from rlmguide.kb.evidence import claim_stale
from rlmguide.kb.load import Catalog
from rlmguide.kb.paths import PLURALS
from rlmguide.kb.schema import KINDS, Framework

LINKED = {"sources", "locators", "claims", "examples"}
JSON_FIELDS = {
    "scenario", "launches", "entries", "config_defaults", "reads", "repositories",
    "specification", "absent", "model_scripts", "departures", "sequence_batching",
    "token_budgets", "forward_token_budgets", "global_batching", "other_pipelines",
    "other_trainings", "single_sample",
}  # fmt: skip
"""Fields stored as one JSON column: a scenario, a mapping's launches, entries, config
defaults, micro-batch keys counted in sequences, token budgets by switch and those of the
forward passes by their sequence-count key, older global
micro-batch keys, other repositories, per-model architecture scripts, the other pipelines' config
keys, the pipelines refused by what they are, the grouped estimators run on one sample,
and departures from the algorithm records, an
algorithm's §5 specification (its steps and parallelism annotations). Every dict-typed field is
one (tests/test_store.py)."""

VIEWS = {
    "features": (
        "Every id a framework claim can name: techniques, algorithms and components.",
        """
        SELECT id, name, 'technique' AS kind, scope AS category FROM techniques
        UNION ALL SELECT id, name, 'algorithm', 'algorithm' FROM algorithms
        UNION ALL SELECT id, name, 'component', role FROM components
        """,
    ),
    "framework_matrix": (
        "One row per framework x feature claim, with the support level, its source, the day "
        "it was checked, the date of its evidence (as_of) and whether that evidence is stale.",
        """
        SELECT c.framework_id, f.name AS framework, c.feature, ft.kind AS feature_kind,
               ft.category AS feature_category, ft.name AS feature_name, c.support, c.note,
               c.source_id, s.url AS source_url, c.checked, c.as_of, c.stale, c.version
        FROM claims c
        JOIN frameworks f ON f.id = c.framework_id
        LEFT JOIN features ft ON ft.id = c.feature
        LEFT JOIN sources s ON s.id = c.source_id
        """,
    ),
    "technique_tree": (
        "The taxonomy: every technique with its depth and its path from the root.",
        """
        WITH RECURSIVE tree(id, name, scope, parent, depth, path) AS (
            SELECT id, name, scope, parent, 0, id FROM techniques WHERE parent IS NULL
            UNION ALL
            SELECT t.id, t.name, t.scope, t.parent, tree.depth + 1, tree.path || ' > ' || t.id
            FROM techniques t JOIN tree ON t.parent = tree.id
        )
        SELECT * FROM tree
        """,
    ),
    "algorithm_models": (
        "Which models each algorithm needs in a step: actor, reference, critic, reward model.",
        """
        SELECT id AS algorithm_id, 'actor' AS role, 'required' AS need FROM algorithms
        UNION ALL SELECT id, 'reference', 'required' FROM algorithms WHERE needs_reference
        UNION ALL SELECT id, 'critic', 'required' FROM algorithms WHERE needs_critic
        UNION ALL SELECT id, 'reward-model', CASE reward WHEN 'model' THEN 'required'
                  ELSE 'optional' END FROM algorithms WHERE reward IN ('model', 'either')
        """,
    ),
    "framework_components": (
        "Training backends, rollout engines and orchestrators each framework claims.",
        """
        SELECT c.framework_id, c.feature AS component_id, k.role, c.support, c.source_id
        FROM claims c JOIN components k ON k.id = c.feature
        """,
    ),
}


def _sql_type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _sql_type(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _sql_type(args[0]) if len(args) == 1 else "VARCHAR"
    if origin is list:
        return _sql_type(typing.get_args(annotation)[0]) + "[]"
    if origin is Literal:
        return "VARCHAR"
    return {bool: "BOOLEAN", int: "BIGINT", float: "DOUBLE", dt.date: "DATE"}.get(
        annotation, "VARCHAR"
    )


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def columns(cls: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str]]:
    """(column, SQL type, description) for a model's fields, nested models flattened."""
    found: list[tuple[str, str, str]] = []
    for name, info in cls.model_fields.items():
        if not prefix and name in LINKED:
            continue
        nested = _nested_model(info.annotation)
        if name in JSON_FIELDS:
            found.append((prefix + name, "JSON", info.description or ""))
        elif nested is not None:
            found.extend(columns(nested, f"{prefix}{name}_"))
        else:
            found.append((prefix + name, _sql_type(info.annotation), info.description or ""))
    for name, info in cls.model_computed_fields.items():
        kind = _sql_type(info.return_type)
        found.append((prefix + name, kind, "derived: " + (info.description or name)))
    return found


def _json(value: BaseModel | list[BaseModel] | dict[str, Any]) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(exclude_unset=True)
    if isinstance(value, dict):  # config key -> a plain value, or a record (forward budgets)
        return json.dumps(
            {
                k: v.model_dump(mode="json", exclude_unset=True) if isinstance(v, BaseModel) else v
                for k, v in value.items()
            },
            sort_keys=True,
        )
    return json.dumps([item.model_dump(mode="json", exclude_unset=True) for item in value])


def _row(record: BaseModel, cols: list[tuple[str, str, str]]) -> list[Any]:
    flat: dict[str, Any] = {}

    def walk(obj: BaseModel | None, cls: type[BaseModel], prefix: str) -> None:
        for name, info in cls.model_fields.items():
            if not prefix and name in LINKED:
                continue
            value = getattr(obj, name) if obj is not None else None
            nested = _nested_model(info.annotation)
            if name in JSON_FIELDS:
                flat[prefix + name] = _json(value) if value else None
            elif nested is not None:
                walk(value, nested, f"{prefix}{name}_")
            else:
                flat[prefix + name] = value
        for name in cls.model_computed_fields:
            flat[prefix + name] = getattr(obj, name) if obj is not None else None

    walk(record, type(record), "")
    return [flat[name] for name, _, _ in cols]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _create(
    con: duckdb.DuckDBPyConnection,
    table: str,
    cols: list[tuple[str, str, str]],
    doc: str,
    rows: Iterable[list[Any]],
) -> None:
    con.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t, _ in cols)})")
    con.execute(f"COMMENT ON TABLE {table} IS {_quote(doc)}")
    for name, _, description in cols:
        if description:
            con.execute(f"COMMENT ON COLUMN {table}.{name} IS {_quote(description)}")
    batch = list(rows)
    if batch:
        # One statement per table, a list per column unnested side by side: executemany binds
        # row by row and took 9 s of a 10 s build for ~1,700 rows; this takes milliseconds.
        values = [list(column) for column in zip(*batch, strict=True)]
        select = ", ".join(f"unnest(${i}::{kind}[])" for i, (_, kind, _) in enumerate(cols, 1))
        con.execute(f"INSERT INTO {table} SELECT {select}", values)


def built_at() -> dt.datetime:
    """When a file is built: SOURCE_DATE_EPOCH when the caller sets it (the reproducible-builds
    convention, which the site build follows), else now; UTC without a zone, as stored."""
    if epoch := os.environ.get("SOURCE_DATE_EPOCH"):
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).replace(tzinfo=None)
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def populate(
    con: duckdb.DuckDBPyConnection,
    catalog: Catalog,
    digest: str,
    derived: Sequence[Table] = (),
) -> None:
    """Create every table and view of the knowledge base in `con`, and the `derived` tables."""
    frameworks = [fw for fw in catalog.of("framework").values() if isinstance(fw, Framework)]
    for kind, cls in KINDS.items():
        cols = columns(cls)
        doc = " ".join((cls.__doc__ or kind).split())
        records = sorted(catalog.of(kind).values(), key=lambda r: r.id)
        _create(con, PLURALS[kind], cols, doc, (_row(r, cols) for r in records))
    _create(
        con,
        "citations",
        [
            ("record_kind", "VARCHAR", ""),
            ("record_id", "VARCHAR", ""),
            ("source_id", "VARCHAR", ""),
            (
                "locator",
                "VARCHAR",
                "where in the source the record rests (a section, table or page), or NULL",
            ),
        ],
        "Which source each record cites (claims cite theirs in `claims.source_id`).",
        (
            [r.kind, r.id, source, getattr(r, "locators", {}).get(source)]
            for r in catalog.all()
            for source in dict.fromkeys(r.cited_sources())
        ),
    )
    _create(
        con,
        "claims",
        [
            ("framework_id", "VARCHAR", ""),
            ("feature", "VARCHAR", "technique, algorithm or component id"),
            ("support", "VARCHAR", "yes | partial | planned | no | undocumented"),
            ("note", "VARCHAR", ""),
            ("source_id", "VARCHAR", ""),
            ("checked", "DATE", "the day the evidence was read (was `verified` before 2026-12)"),
            (
                "as_of",
                "DATE",
                "the date of the evidence itself: commit date of the pinned version, or the "
                "release or publication date of a docs or paper version; NULL when unknown",
            ),
            (
                "stale",
                "BOOLEAN",
                "derived: as_of more than a year older than the framework's latest release "
                "(frameworks.latest_release_date), or than checked when no release is "
                "recorded; NULL when as_of is",
            ),
            ("version", "VARCHAR", "the pinned commit, tag, release or paper version read"),
            ("as_of_unknown", "VARCHAR", "why as_of is NULL: why the evidence has no date"),
        ],
        "The unit of fact: how far a framework supports a feature, with its source.",
        (
            [
                fw.id,
                c.feature,
                c.support,
                c.note,
                c.source,
                c.checked,
                c.as_of,
                claim_stale(fw, c),
                c.version,
                c.as_of_unknown,
            ]
            for fw in sorted(frameworks, key=lambda r: r.id)
            for c in fw.claims
        ),
    )
    _create(
        con,
        "rule_examples",
        [
            ("rule_id", "VARCHAR", ""),
            ("description", "VARCHAR", ""),
            ("fires", "BOOLEAN", ""),
            ("scenario", "JSON", ""),
        ],
        "Scenarios on which each rule must fire or stay silent (they are tests).",
        (
            [r.id, e.description, e.fires, e.scenario.model_dump_json(exclude_unset=True)]
            for r in catalog.of("rule").values()
            for e in r.examples
        ),  # type: ignore[attr-defined]
    )
    for table in derived:
        _create(con, table.name, list(table.columns), table.doc, (list(r) for r in table.rows))
    for name, (doc, sql) in VIEWS.items():
        con.execute(f"CREATE VIEW {name} AS {sql}")
        con.execute(f"COMMENT ON VIEW {name} IS {_quote(doc)}")
    con.execute(
        "CREATE TABLE kb_meta AS SELECT ?::VARCHAR AS content_hash, ?::TIMESTAMP AS built_at",
        [digest, built_at()],
    )
    con.execute(
        "COMMENT ON TABLE kb_meta IS 'When and from which record content the file was built.'"
    )


def build_file(
    catalog: Catalog,
    target: Path,
    digest: str,
    checksum_path: Path,
    derived: Sequence[Table] = (),
) -> Path:
    """Write the database under a temporary name, then its checksum, then rename it into place.

    The checksum is written first so that no reader ever sees the new file without it.
    """
    from rlmguide.kb.cache import file_checksum, write_atomic

    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=".build-", suffix=".duckdb")
    os.close(handle)
    os.unlink(temp)  # DuckDB must create the file itself
    try:
        con = duckdb.connect(temp)
        try:
            populate(con, catalog, digest, derived)
        finally:
            con.close()
        write_atomic(checksum_path, file_checksum(Path(temp)).encode("ascii"))
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return target
