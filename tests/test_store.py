"""The DuckDB store: tables, views, comments, caching by content and atomic builds."""

from __future__ import annotations

import datetime as dt
import multiprocessing
from pathlib import Path

import duckdb
import pytest
from rlmguide.kb.db import InvalidRecords, ensure_database
from rlmguide.kb.paths import PLURALS


def open_db(root: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(ensure_database([(root, None)])), read_only=True)


def test_every_kind_has_a_table_and_every_view_exists(fixture_kb: Path) -> None:
    con = open_db(fixture_kb)
    names = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    expected_views = {
        "framework_matrix",
        "technique_tree",
        "algorithm_models",
        "features",
        "framework_components",
    }
    assert (
        set(PLURALS.values()) | {"claims", "citations", "rule_examples"} | expected_views <= names
    )
    undocumented = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE comment IS NULL OR comment = '' "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal AND "
        "(comment IS NULL OR comment = '')"
    ).fetchall()
    assert undocumented == []


def test_matrix_tree_and_algorithm_models(fixture_kb: Path) -> None:
    con = open_db(fixture_kb)
    matrix = con.execute(
        "SELECT framework_id, feature, feature_kind, support, source_url FROM framework_matrix "
        "ORDER BY framework_id, feature"
    ).fetchall()
    assert matrix == [
        ("fw-one", "grpo", "algorithm", "yes", "https://example.org/repo-b"),
        ("fw-one", "tensor-parallelism", "technique", "partial", "https://example.org/paper-a"),
        ("fw-one", "vllm", "component", "yes", "https://example.org/repo-b"),
        ("fw-two", "ppo", "algorithm", "yes", "https://example.org/paper-a"),
    ]
    tree = con.execute("SELECT id, depth, path FROM technique_tree ORDER BY depth").fetchall()
    assert tree == [
        ("parallelism", 0, "parallelism"),
        ("tensor-parallelism", 1, "parallelism > tensor-parallelism"),
    ]
    roles = con.execute(
        "SELECT role, need FROM algorithm_models WHERE algorithm_id = 'ppo' ORDER BY role"
    ).fetchall()
    assert roles == [
        ("actor", "required"),
        ("critic", "required"),
        ("reference", "required"),
        ("reward-model", "required"),
    ]


def test_claims_carry_both_dates_and_the_stale_flag(fixture_kb: Path) -> None:
    con = open_db(fixture_kb)
    rows = con.execute(
        "SELECT framework_id, feature, checked, as_of, stale FROM framework_matrix "
        "ORDER BY framework_id, feature"
    ).fetchall()
    day = dt.date
    assert rows == [
        # fw-one's latest release is 2026-06-01: evidence before 2025-06-01 is stale.
        ("fw-one", "grpo", day(2026, 12, 2), day(2025, 3, 1), True),
        ("fw-one", "tensor-parallelism", day(2026, 12, 2), None, None),
        ("fw-one", "vllm", day(2026, 12, 2), day(2026, 1, 10), False),
        # fw-two records no release: stale against its check on 2026-11-30.
        ("fw-two", "ppo", day(2026, 11, 30), day(2025, 6, 1), True),
    ]
    types = dict(
        con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'claims'"
        ).fetchall()
    )
    assert (types["checked"], types["as_of"], types["stale"]) == ("DATE", "DATE", "BOOLEAN")
    assert "verified" not in types
    assert con.execute(
        "SELECT latest_release_version, latest_release_date FROM frameworks WHERE id = 'fw-one'"
    ).fetchone() == ("v1.2", day(2026, 6, 1))


def test_derived_columns_are_stored(fixture_kb: Path) -> None:
    con = open_db(fixture_kb)
    assert con.execute(
        "SELECT params_total, kv_bytes_per_token, attention FROM models"
    ).fetchall() == [(7_615_616_512, 57_344, "gqa")]
    (comment,) = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE table_name = 'models' "
        "AND column_name = 'params_total'"
    ).fetchone()
    assert comment.startswith("derived")


def test_framework_paper_is_a_citation(fixture_kb: Path) -> None:
    con = open_db(fixture_kb)
    cited = con.execute(
        "SELECT source_id FROM citations WHERE record_id = 'fw-one' ORDER BY source_id"
    ).fetchall()
    assert cited == [("paper-a",), ("repo-b",)]


def test_citations_carry_the_locator_and_directions_have_a_table(fixture_kb: Path) -> None:
    path = fixture_kb / "techniques" / "tensor-parallelism.yaml"
    path.write_text(path.read_text() + "locators: {paper-a: '§3.2, Table 5'}\n")
    (fixture_kb / "directions").mkdir()
    (fixture_kb / "directions" / "auto-parallel.yaml").write_text(
        "id: auto-parallel\ntitle: Automatic parallelization\nsection: §7\nposition: 3\n"
        "statement: s\ncoverage: partial\ncoverage_note: n\n"
        "techniques: [tensor-parallelism]\nsources: [paper-a]\n"
    )
    con = open_db(fixture_kb)
    assert con.execute(
        "SELECT record_id, locator FROM citations WHERE source_id = 'paper-a' "
        "AND record_kind IN ('technique', 'direction') ORDER BY record_id"
    ).fetchall() == [
        ("auto-parallel", None),
        ("parallelism", None),
        ("tensor-parallelism", "§3.2, Table 5"),
    ]
    assert con.execute("SELECT id, techniques, coverage FROM directions").fetchall() == [
        ("auto-parallel", ["tensor-parallelism"], "partial")
    ]


def test_rebuilt_only_when_records_change(fixture_kb: Path) -> None:
    first = ensure_database([(fixture_kb, None)])
    assert ensure_database([(fixture_kb, None)]) == first
    stamp = first.stat().st_mtime_ns
    assert ensure_database([(fixture_kb, None)]).stat().st_mtime_ns == stamp
    path = fixture_kb / "sources" / "repo-b.yaml"
    path.write_text(path.read_text().replace("A fixture repository", "Renamed repository"))
    second = ensure_database([(fixture_kb, None)])
    assert second != first
    con = duckdb.connect(str(second), read_only=True)
    assert con.execute("SELECT title FROM sources WHERE id = 'repo-b'").fetchone() == (
        "Renamed repository",
    )
    assert not list(second.parent.glob(".build-*")), "no temporary file is left behind"


def test_invalid_records_build_nothing(fixture_kb: Path, empty_cache: Path) -> None:
    (fixture_kb / "sources" / "paper-a.yaml").write_text("id: paper-a\n")
    with pytest.raises(InvalidRecords) as caught:
        ensure_database([(fixture_kb, None)])
    assert caught.value.problems
    assert not list(empty_cache.glob("*.duckdb"))


def _build(root: str) -> str:
    return str(ensure_database([(Path(root), None)]))


def test_parallel_first_runs_agree_and_leave_a_valid_file(fixture_kb: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        paths = pool.map(_build, [str(fixture_kb)] * 8)
    assert len(set(paths)) == 1
    con = duckdb.connect(paths[0], read_only=True)
    assert con.execute("SELECT count(*) FROM frameworks").fetchone() == (2,)
    assert not list(Path(paths[0]).parent.glob(".build-*"))


def test_every_dict_field_is_a_json_column() -> None:
    """A dict field stored as a plain column binds as a struct DuckDB cannot cast (an empty one
    types as NULL): the whole database then fails to build. Every one is in JSON_FIELDS."""
    import typing

    from pydantic import BaseModel
    from rlmguide.kb.store import JSON_FIELDS, KINDS, LINKED

    def dict_fields(cls: type[BaseModel], top: bool = True) -> set[str]:
        found = set()
        for name, info in cls.model_fields.items():
            if top and name in LINKED:
                continue  # stored as rows of their own tables (citations, claims)
            for arg in (info.annotation, *typing.get_args(info.annotation)):
                if typing.get_origin(arg) is dict or arg is dict:
                    found.add(name)
                elif (
                    isinstance(arg, type) and issubclass(arg, BaseModel) and name not in JSON_FIELDS
                ):
                    found |= dict_fields(arg, top=False)
        return found

    missing = {f"{kind}.{name}" for kind, cls in KINDS.items() for name in dict_fields(cls)} - {
        f"{kind}.{name}" for kind in KINDS for name in JSON_FIELDS
    }
    assert missing == set()
