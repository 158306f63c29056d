"""User SQL is bounded: a time limit, a row limit, DuckDB memory and threads, Ctrl-C works."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from rlmguide.kb.db import LOCKED_CONFIG, connect_read_only, ensure_database
from rlmguide.kb.limits import Limits
from rlmguide.kb.query import QueryError, QueryTimeout, run, unique_names

from rlmguide.cli import cli

pytestmark = pytest.mark.usefixtures("use_fixture_kb")

RUNAWAYS = {
    "range count": "SELECT count(*) FROM range(10000000000000::BIGINT)",
    "recursive cte": (
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"
    ),
    "cross join": (
        "SELECT count(*) FROM range(1000000) a, range(1000000) b, range(1000000) c "
        "WHERE a.range + b.range + c.range = -1"
    ),
    "huge result": "SELECT * FROM range(10000000000000::BIGINT)",
    "sort": "SELECT * FROM range(10000000000::BIGINT) ORDER BY random() LIMIT 1",
}


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def connection() -> object:
    from rlmguide import cli as module

    return connect_read_only(ensure_database(module.record_roots()))


@pytest.mark.parametrize("name", list(RUNAWAYS))
def test_reproducer_runaway_query_is_stopped_at_its_time_limit(name: str) -> None:
    start = time.monotonic()
    with pytest.raises(QueryTimeout, match=r"time limit of 0\.3 s"):
        run(connection(), RUNAWAYS[name], limits=Limits(seconds=0.3))
    assert time.monotonic() - start < 2


def test_timeout_is_exit_1_with_one_line() -> None:
    result = invoke("sql", RUNAWAYS["recursive cte"], "--timeout", "0.3")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the query ran past its time limit of 0.3 s and was stopped (raise it with "
        "--timeout)"
    ]


def test_rows_past_the_limit_are_counted_not_printed() -> None:
    result = invoke("sql", "SELECT range AS n FROM range(25)", "--max-rows", "3", "--format", "csv")
    assert result.exit_code == 0
    assert result.stdout == "n\n0\n1\n2\n"
    assert result.stderr == "22 more rows not shown (raise --max-rows)\n"
    rows = run(connection(), "SELECT * FROM range(5000)", limits=Limits(max_rows=10))
    assert (len(rows.rows), rows.more) == (10, 4990)


def test_memory_threads_and_spill_are_limited_and_locked() -> None:
    con = connection()
    settings = dict(
        con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('memory_limit', 'threads', 'max_temp_directory_size', 'lock_configuration')"
        ).fetchall()
    )
    assert settings["threads"] == str(LOCKED_CONFIG["threads"])
    assert settings["memory_limit"].endswith(("MiB", "GiB", "MB", "GB"))
    assert settings["lock_configuration"] == "true"
    with pytest.raises(QueryError):
        run(con, "SET memory_limit = '100GB'")


def test_out_of_memory_is_a_clear_error_not_a_crash() -> None:
    result = invoke(
        "sql", "SELECT list(range) AS l FROM range(400000000)", "--format", "csv", "--timeout", "30"
    )
    assert result.exit_code in (1, 2), result.output
    assert "Out of Memory" in result.output or "time limit" in result.output
    assert "internal error" not in result.output


def test_reproducer_update_extensions_is_refused() -> None:
    result = invoke("sql", "UPDATE EXTENSIONS")
    assert result.exit_code == 2
    assert "UPDATE statements are refused" in result.output
    assert "internal error" not in result.output


def test_unique_names() -> None:
    assert unique_names(["a", "a", "a_2", "b", "a"]) == ["a", "a_3", "a_2", "b", "a_4"]


def wait_until_querying(process: subprocess.Popen[str]) -> None:
    """Until the process has the database open (the query starts next), then a little more:
    a fixed sleep would send SIGINT during start-up on a loaded machine."""
    deadline = time.monotonic() + 60
    fds = Path(f"/proc/{process.pid}/fd")
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if any(os.readlink(fd).endswith(".duckdb") for fd in fds.iterdir()):
                break
        time.sleep(0.05)
    time.sleep(0.5)


@pytest.mark.parametrize("name", ["range count", "recursive cte", "huge result"])
def test_ctrl_c_stops_a_runaway_query_within_a_second_with_exit_130(name: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "rlmguide", "sql", RUNAWAYS[name], "--timeout", "60"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until_querying(process)
    assert process.poll() is None
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=10)
    assert time.monotonic() - sent < 1.0
    assert process.returncode == 130
    assert stderr == "Error: interrupted; the query was stopped\n"
