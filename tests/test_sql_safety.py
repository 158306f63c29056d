"""User SQL reads the knowledge base and nothing else."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from rlmguide.kb.db import connect_read_only, ensure_database
from rlmguide.kb.query import QueryError, run


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}


ATTACKS = {
    "insert": "INSERT INTO sources (id) VALUES ('x')",
    "update": "UPDATE frameworks SET licence = 'MIT'",
    "delete": "DELETE FROM claims",
    "drop": "DROP TABLE frameworks",
    "create table": "CREATE TABLE t AS SELECT 1",
    "create temp table": "CREATE TEMP TABLE t (x INT)",
    "create view": "CREATE VIEW v AS SELECT 1",
    "create macro": "CREATE MACRO f(x) AS x",
    "alter": "ALTER TABLE frameworks ADD COLUMN x INT",
    "attach file": "ATTACH '{tmp}/other.duckdb' AS other",
    "attach memory": "ATTACH ':memory:' AS m",
    "copy to": "COPY frameworks TO '{tmp}/out.csv'",
    "copy query to": "COPY (SELECT * FROM sources) TO '{tmp}/out.parquet' (FORMAT parquet)",
    "export database": "EXPORT DATABASE '{tmp}/dump'",
    "read_csv": "SELECT * FROM read_csv('/etc/passwd')",
    "read_text": "SELECT * FROM read_text('/etc/passwd')",
    "read_blob": "SELECT * FROM read_blob('/etc/hostname')",
    "read_json": "SELECT * FROM read_json('{tmp}/x.json')",
    "read_parquet": "SELECT * FROM read_parquet('{tmp}/x.parquet')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "bare file scan": "SELECT * FROM '/etc/passwd'",
    "install": "INSTALL httpfs",
    "load": "LOAD httpfs",
    "set": "SET threads = 1",
    "set external access": "SET enable_external_access = true",
    "reset": "RESET threads",
    "pragma setting": "PRAGMA enable_profiling",
    "pragma memory": "PRAGMA memory_limit = '1GB'",
    "checkpoint": "CHECKPOINT",
    "vacuum": "VACUUM",
    "two statements": "SELECT 1; DROP TABLE frameworks",
    "hidden second statement": "SELECT 1; SELECT * FROM read_csv('/etc/passwd')",
    "use": "USE memory",
    "detach": "DETACH DATABASE memory",
}


@pytest.fixture
def kb_file(fixture_kb: Path) -> Path:
    return ensure_database([(fixture_kb, None)])


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_refused_and_changes_nothing(name: str, kb_file: Path, tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[1]")
    before_db, before_files = digest(kb_file), snapshot(tmp_path)
    con = connect_read_only(kb_file)
    with pytest.raises(QueryError) as caught:
        run(con, ATTACKS[name].format(tmp=tmp_path))
    message = str(caught.value)
    assert message and "\n" not in message
    con.close()
    assert digest(kb_file) == before_db
    assert snapshot(tmp_path) == before_files


def test_reading_the_kb_still_works(kb_file: Path) -> None:
    con = connect_read_only(kb_file)
    rows = run(con, "SELECT id FROM frameworks WHERE id = $id", {"id": "fw-one"})
    assert rows.columns == ["id"] and rows.rows == [("fw-one",)]
    assert run(con, "DESCRIBE frameworks").rows
    assert run(con, "PRAGMA version").rows
    assert run(con, "SELECT current_setting('enable_external_access')").rows == [(False,)]


def test_parameters_travel_apart_from_the_sql(kb_file: Path) -> None:
    con = connect_read_only(kb_file)
    hostile = "x'; DROP TABLE frameworks; --"
    assert run(con, "SELECT count(*) FROM frameworks WHERE id = $id", {"id": hostile}).rows == [
        (0,)
    ]
    assert run(con, "SELECT count(*) FROM frameworks").rows == [(2,)]
