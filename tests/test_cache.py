"""The cache verifies what it reads: nothing in it runs code, escapes it or is served damaged."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import rlmguide.kb.db
import rlmguide.kb.load
from click.testing import CliRunner
from rlmguide.kb.cache import write_sealed
from rlmguide.kb.catalog_cache import to_json
from rlmguide.kb.db import checksum_file, ensure_database, open_knowledge_base
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import content_hash


def roots(kb_root: Path) -> list[tuple[Path, None]]:
    return [(kb_root, None)]


def read_everything(path: Path) -> int:
    """Rows over every table: reading each block is what finds a damaged database file."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return sum(len(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)
    finally:
        con.close()


class Planted:
    """A pickle payload that leaves a file behind if anything ever unpickles it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Path.touch, (self.marker,))


def test_reproducer_planted_pickle_in_the_catalog_cache_runs_nothing(
    fixture_kb: Path, empty_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = load_catalog(roots(fixture_kb))
    marker = tmp_path / "pwned"
    cached = list((empty_cache / "catalogs").iterdir())
    assert cached and all(p.suffix == ".json" for p in cached)
    for path in cached:
        path.write_bytes(pickle.dumps(Planted(marker)))
    again = load_catalog(roots(fixture_kb))
    assert not marker.exists()
    assert again.records == first.records
    assert "ignoring cache file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "planted",
    [
        b"../../../../tmp/escaped",
        b"/etc/passwd",
        b"0123456789abcdef01234567/../x",
        b"\xff\xfe",
        b"",
    ],
)
def test_reproducer_signature_file_content_cannot_name_a_path(
    fixture_kb: Path, empty_cache: Path, planted: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    good = ensure_database(roots(fixture_kb))
    for memo in (empty_cache / "signatures").iterdir():
        memo.write_bytes(planted)
    again = ensure_database(roots(fixture_kb))
    assert again == good
    assert again.parent == empty_cache
    assert "ignoring cache file" in capsys.readouterr().err


def test_signature_file_that_is_a_fifo_does_not_hang(fixture_kb: Path, empty_cache: Path) -> None:
    good = ensure_database(roots(fixture_kb))
    for memo in (empty_cache / "signatures").iterdir():
        memo.unlink()
        os.mkfifo(memo)
    assert ensure_database(roots(fixture_kb)) == good


def _truncate(data: bytes, share: float) -> bytes:
    return data[: int(len(data) * share)]


def _flip(data: bytes, share: float) -> bytes:
    at = int(len(data) * share)
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: _truncate(d, 0.3), id="truncated-30%"),
        pytest.param(lambda d: _truncate(d, 0.7), id="truncated-70%"),
        pytest.param(lambda d: _truncate(d, 0.95), id="truncated-95%"),
        pytest.param(lambda d: _flip(d, 0.001), id="flip-header"),
        pytest.param(lambda d: _flip(d, 0.5), id="flip-middle"),
        pytest.param(lambda d: _flip(d, 0.99), id="flip-end"),
        pytest.param(lambda d: b"\0" * len(d), id="zeroed"),
    ],
)
def test_reproducer_damaged_database_file_is_rebuilt_with_one_line(
    fixture_kb: Path, empty_cache: Path, damage: object, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ensure_database(roots(fixture_kb))
    rows = read_everything(path)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    capsys.readouterr()
    again = ensure_database(roots(fixture_kb))
    assert again == path
    assert read_everything(again) == rows
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rebuilding it" in err[0], err


def test_database_without_its_checksum_is_rebuilt(fixture_kb: Path, empty_cache: Path) -> None:
    path = ensure_database(roots(fixture_kb))
    checksum_file(path).unlink()
    stamp = path.stat().st_mtime_ns
    assert ensure_database(roots(fixture_kb)) == path
    assert path.stat().st_mtime_ns != stamp and checksum_file(path).exists()


def test_reproducer_record_edited_during_a_cold_run_leaves_no_stale_file(
    fixture_kb: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest is taken, then the record changes before it is parsed (4 of 30 tries)."""
    record = fixture_kb / "sources" / "repo-b.yaml"
    original = record.read_text()
    edited = original.replace("A fixture repository", "Edited mid-run")
    before = content_hash(roots(fixture_kb))
    hashed = rlmguide.kb.db.fast_content_hash

    def hash_then_edit(given: object) -> str:
        digest = hashed(given)  # type: ignore[arg-type]
        record.write_text(edited)
        return digest

    monkeypatch.setattr(rlmguide.kb.db, "fast_content_hash", hash_then_edit)
    monkeypatch.setattr(rlmguide.kb.load, "fast_content_hash", hash_then_edit)
    built = ensure_database(roots(fixture_kb))
    monkeypatch.undo()
    monkeypatch.setenv("RLMGUIDE_CACHE_DIR", str(empty_cache))
    assert built.name == f"kb-{content_hash(roots(fixture_kb))}.duckdb"
    assert not (empty_cache / f"kb-{before}.duckdb").exists()
    record.write_text(original)  # back to the content first hashed: it must be served as is
    os.utime(record, ns=(1, 1))
    con = duckdb.connect(str(ensure_database(roots(fixture_kb))), read_only=True)
    assert con.execute("SELECT title FROM sources WHERE id = 'repo-b'").fetchone() == (
        "A fixture repository",
    )
    assert load_catalog(roots(fixture_kb)).of("source")["repo-b"].title == "A fixture repository"  # type: ignore[attr-defined]


def test_unwritable_cache_dir_falls_back_to_memory_with_a_warning(
    use_fixture_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("RLMGUIDE_CACHE_DIR", str(blocker / "cache"))
    con = open_knowledge_base(roots(use_fixture_kb))
    assert con.execute("SELECT count(*) FROM frameworks").fetchone() == (2,)
    with pytest.raises(duckdb.Error):
        con.execute("SET memory_limit = '100GB'")  # still locked
    from rlmguide.cli import cli

    result = CliRunner().invoke(cli, ["sql", "SELECT id FROM models", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "id\nmodel-7b\n"
    assert "using an in-memory database" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    path = CliRunner().invoke(cli, ["db", "path"])
    assert path.exit_code == 1 and "cannot write the cache folder" in path.output


def test_unwritable_cache_dir_as_a_process(use_fixture_kb: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "rlmguide", "sql", "SELECT count(*) AS n FROM sources"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "RLMGUIDE_CACHE_DIR": str(blocker / "cache")},
    )
    assert done.returncode == 0, done.stderr
    assert "2" in done.stdout
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_stale_catalogs_and_signatures_are_pruned(fixture_kb: Path, empty_cache: Path) -> None:
    from rlmguide.kb.load import KEEP_CATALOGS
    from rlmguide.kb.paths import KEEP_SIGNATURES

    for folder, suffix, count in (("catalogs", ".json", 30), ("signatures", "", 100)):
        (empty_cache / folder).mkdir(parents=True)
        for i in range(count):
            (empty_cache / folder / f"{i:024x}{suffix}").write_text("stale")
    load_catalog(roots(fixture_kb))
    assert len(list((empty_cache / "catalogs").iterdir())) == KEEP_CATALOGS + 1
    assert len(list((empty_cache / "signatures").iterdir())) == KEEP_SIGNATURES + 1


def test_a_catalog_parsed_by_other_schema_code_is_never_served(
    fixture_kb: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that keeps old schema code in memory while the records on disk gain a field
    it does not know (a review sweep running through a merge, as on 2026-12-07) parses them as
    broken and caches that under the new records' digest. The cache names a catalog by the
    code that validated it too (kb.load.CODE_DIGEST, taken at import), so a process with the
    new code parses the records itself instead of serving the old process's verdict."""
    whole = load_catalog(roots(fixture_kb))
    kind, by_id = next((k, v) for k, v in whole.records.items() if v)
    for path in (empty_cache / "catalogs").iterdir():
        path.unlink()
    monkeypatch.setattr(rlmguide.kb.load, "CODE_DIGEST", b"the old process's schema")
    poisoned = load_catalog(roots(fixture_kb))
    poisoned.records[kind].clear()  # what the old schema would have refused
    (cached,) = (empty_cache / "catalogs").iterdir()
    write_sealed(cached, to_json(poisoned))
    assert load_catalog(roots(fixture_kb)).records[kind] == {}  # the old process's own view
    monkeypatch.undo()
    assert load_catalog(roots(fixture_kb)).records[kind] == by_id
