"""The command line, through click's runner and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import REPO, run_cli
from rlmguide.kb.paths import PLURALS

from rlmguide.cli import cli

pytestmark = pytest.mark.usefixtures("use_fixture_kb")


def invoke(*args: str, stdin: str | None = None) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def test_sql_json_is_an_array_of_objects() -> None:
    result = invoke("sql", "SELECT id, licence FROM frameworks ORDER BY id", "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output) == [
        {"id": "fw-one", "licence": "Apache-2.0"},
        {"id": "fw-two", "licence": None},
    ]


def test_sql_from_stdin_with_parameters_as_csv() -> None:
    result = invoke(
        "sql",
        "-",
        "-p",
        "kind",
        "algorithm",
        "--format",
        "csv",
        stdin="SELECT feature FROM framework_matrix WHERE feature_kind = $kind ORDER BY feature",
    )
    assert result.exit_code == 0
    assert result.output == "feature\ngrpo\nppo\n"


def test_sql_markdown_and_table() -> None:
    md = invoke("sql", "SELECT id FROM models", "--format", "markdown")
    assert md.output == "| id |\n| --- |\n| model-7b |\n"
    assert "model-7b" in invoke("sql", "SELECT id FROM models").output


def test_refused_sql_exits_2_with_one_line() -> None:
    result = invoke("sql", "DROP TABLE frameworks")
    assert result.exit_code == 2
    assert "DROP statements are refused" in result.output


def test_canned_queries_list_and_run() -> None:
    listing = json.loads(invoke("query", "--list", "--format", "json").output)
    names = {q["name"] for q in listing}
    assert {"framework-matrix", "taxonomy", "frameworks-supporting"} <= names
    assert all(q["title"] and q["description"] for q in listing)
    for name in names - {"frameworks-supporting"}:
        assert invoke("query", name, "--format", "csv").exit_code == 0, name
    rows = json.loads(
        invoke("query", "frameworks-supporting", "-p", "feature", "grpo", "--format", "json").output
    )
    assert [r["framework_id"] for r in rows] == ["fw-one"]
    assert "did you mean taxonomy" in invoke("query", "taxonomi").output


def test_every_kind_lists() -> None:
    for plural in PLURALS.values():
        result = invoke("list", plural, "--format", "json")
        assert result.exit_code == 0, (plural, result.output)
        assert isinstance(json.loads(result.output), list)


def test_list_show_and_compare() -> None:
    listing = json.loads(invoke("list", "frameworks", "--format", "json").output)
    assert [(f["id"], f["claims"]) for f in listing] == [("fw-one", 3), ("fw-two", 1)]
    shown = json.loads(invoke("show", "fw-one", "--format", "json").output)
    assert shown["kind"] == "framework"
    assert {s["id"] for s in shown["sources"]} == {"repo-b", "paper-a"}
    assert {c["feature"]: c["source"] for c in shown["claims"]}["grpo"] == "repo-b"
    dated = {c["feature"]: (c["checked"], c["as_of"], c["stale"]) for c in shown["claims"]}
    assert dated["grpo"] == ("2026-12-02", "2025-03-01", True)
    assert dated["tensor-parallelism"] == ("2026-12-02", None, None)
    model = json.loads(invoke("show", "model-7b", "--format", "json").output)
    assert model["params_total"] == 7_615_616_512
    compared = json.loads(invoke("compare", "fw-one", "fw-two", "--format", "json").output)
    cells = {f["feature"]: f["cells"] for f in compared["features"]}
    assert cells["ppo"]["fw-one"] is None  # unknown, not "no"
    assert cells["ppo"]["fw-two"]["source"] == "paper-a"
    table = invoke("compare", "fw-one", "fw-two", "--format", "markdown").output
    assert "| ppo | algorithm | unknown | yes (paper-a, as of 2025-06-01, stale) |" in table
    assert "| vllm | component | yes (repo-b, as of 2026-01-10) | unknown |" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "fw-on"), "unknown record 'fw-on'; did you mean fw-one"),
        (("show", "grpo", "--kind", "framework"), "unknown framework 'grpo'"),
        (("compare", "fw-one", "vrel"), "unknown framework 'vrel'"),
        (("list", "framework_s"), "unknown kind 'framework_s'; did you mean frameworks"),
        (("sql", "SELEC 1"), "Parser Error"),
        (("sql", "SELECT 1", "--format", "xml"), "Invalid value for '--format'"),
        (("sql", "SELECT $x"), "missing $x"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args: tuple[str, ...], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_validate_reports_every_problem_and_exits_1(use_fixture_kb: Path) -> None:
    assert invoke("validate").exit_code == 0
    path = use_fixture_kb / "frameworks" / "fw-two.yaml"
    path.write_text(path.read_text().replace("source: paper-a", "source: paper-q"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "frameworks/fw-two.yaml: claims[0].source: unknown source 'paper-q'" in result.output


def test_invalid_records_make_queries_fail_with_exit_1(use_fixture_kb: Path) -> None:
    (use_fixture_kb / "sources" / "broken.yaml").write_text("id: [\n")
    result = invoke("sql", "SELECT 1")
    assert result.exit_code == 1
    assert "sources/broken.yaml: line" in result.output


def test_db_path_and_parquet_export(tmp_path: Path) -> None:
    path = Path(invoke("db", "path").output.strip())
    assert path.exists() and path.suffix == ".duckdb"
    result = invoke("db", "export", "--parquet", str(tmp_path / "pq"))
    assert result.exit_code == 0
    import duckdb

    exported = tmp_path / "pq" / "frameworks.parquet"
    assert duckdb.sql(f"SELECT count(*) FROM '{exported}'").fetchall() == [(2,)]
    assert (tmp_path / "pq" / "framework_matrix.parquet").exists()


def test_schema_command_emits_json_schema(tmp_path: Path) -> None:
    document = json.loads(invoke("schema", "framework").output)
    assert "claims" in document["properties"]
    assert document["additionalProperties"] is False
    assert invoke("schema", "--out", str(tmp_path)).exit_code == 0
    assert (tmp_path / "scenario.schema.json").exists()


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
    return found


@pytest.mark.parametrize("path", _commands(cli), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    command: click.Command = cli
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    assert command.help and len(command.help) > 20
    result = invoke(*path, "--help")
    assert result.exit_code == 0 and "Usage:" in result.output


def test_every_command_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    for path in _commands(cli):
        assert f"rlmguide {' '.join(path)}" in readme, path


def test_real_subprocess_success_and_exit_codes() -> None:
    ok = run_cli("sql", "SELECT count(*) AS n FROM frameworks", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == [{"n": 2}]
    bad = run_cli("show", "nothing-like-this")
    assert bad.returncode == 2
    assert bad.stderr.startswith("Error: unknown record") and "Traceback" not in bad.stderr
    usage = run_cli("frobnicate")
    assert usage.returncode == 2 and "No such command" in usage.stderr


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "rlmguide"
    assert script.exists()
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "0.1.0" in done.stdout
