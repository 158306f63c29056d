"""Every output is faithful: text printed literally, JSON strict, no column lost."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.formats import dumps, plain

pytestmark = pytest.mark.usefixtures("use_fixture_kb")


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def strict_json(text: str) -> object:
    """json.loads that refuses NaN and Infinity, as every other JSON reader does."""

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_reproducer_sql_uuid_as_json() -> None:
    result = invoke("sql", "SELECT uuid() AS u", "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = strict_json(result.stdout)
    assert len(row["u"]) == 36 and row["u"].count("-") == 4


def test_reproducer_blob_interval_time_decimal_nested_as_strict_json() -> None:
    result = invoke(
        "sql",
        "SELECT '\\xAA\\x00'::BLOB AS b, INTERVAL 3 DAY + INTERVAL 2 HOUR AS i, "
        "TIME '12:00:01.5' AS t, 1.25::DECIMAL(10, 2) AS d, MAP([1, 2], ['x', 'y']) AS m, "
        "{'a': [1, 2], 'n': 'nan'::DOUBLE} AS s, TIMESTAMPTZ '2020-01-01 00:00:00+00' AS tz",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    (row,) = strict_json(result.stdout)
    assert base64.b64decode(row["b"]) == b"\xaa\x00"
    assert row["i"] == "P3DT7200S"
    assert row["t"] == "12:00:01.500000"
    assert row["d"] == 1.25
    assert row["m"] == {"1": "x", "2": "y"}
    assert row["s"] == {"a": [1, 2], "n": None}
    assert row["tz"].startswith("2020-01-01")


def test_reproducer_nan_and_infinity_are_null_in_json() -> None:
    result = invoke(
        "sql",
        "SELECT 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS p, '-inf'::DOUBLE AS m, 1.5 AS x",
        "--format",
        "json",
    )
    assert result.exit_code == 0
    assert strict_json(result.stdout) == [{"n": None, "p": None, "m": None, "x": 1.5}]


def test_dumps_refuses_what_it_cannot_encode_instead_of_writing_bad_json() -> None:
    assert dumps({"x": math.inf, "y": [math.nan]}) == '{\n  "x": null,\n  "y": [\n    null\n  ]\n}'
    assert plain(float("nan")) is None
    with pytest.raises(TypeError):
        dumps({"x": object()})


def test_reproducer_duplicate_column_names_are_kept_with_a_suffix() -> None:
    result = invoke("sql", "SELECT 1 AS a, 2 AS a, 3 AS a_2", "--format", "json")
    assert strict_json(result.stdout) == [{"a": 1, "a_3": 2, "a_2": 3}]
    csv = invoke("sql", "SELECT 1 AS a, 2 AS a", "--format", "csv")
    assert csv.stdout == "a,a_2\n1,2\n"


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_reproducer_markup_in_query_values_is_printed_literally(fmt: str) -> None:
    text = "LoRA via [model.lora]; [/] and [bold]x[/bold]"
    result = invoke("sql", f"SELECT '{text}' AS \"[red]col\"", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert text in result.stdout
    assert "[red]col" in result.stdout


def test_reproducer_markup_in_record_text_is_shown_literally(use_fixture_kb: Path) -> None:
    """`show prime-rl` printed "LoRA via ;": the `[model.lora]` of the note was eaten."""
    path = use_fixture_kb / "frameworks" / "fw-one.yaml"
    path.write_text(path.read_text().replace("trains with GRPO", "LoRA via [model.lora]; [/]"))
    result = invoke("show", "fw-one")
    assert result.exit_code == 0, result.output
    assert "LoRA via [model.lora]; [/]" in result.stdout
    compare = invoke("compare", "fw-one", "fw-two", "--format", "json")
    assert "LoRA via [model.lora]; [/]" in compare.stdout


def test_null_still_shows_as_null_in_tables() -> None:
    assert "null" in invoke("sql", "SELECT NULL AS x").stdout
