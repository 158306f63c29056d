"""Fuzzing: mutated scenarios, random `--set` values and SQL result types never crash the CLI.

No case may raise (CliRunner re-raises what would be an "internal error"), exit with a code
other than 0, 1 or 2, or exit 0 with output that is not strict JSON or holds a non-finite
number. Bounded SQL is covered by tests/test_sql_limits.py; here every case is quick.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner
from fuzz_corpus import (
    BASE_FILE,
    CORPUS_SIZE,
    HOSTILE,
    REPRODUCERS,
    Case,
    Run,
    base,
    cases,
    damage,
    materialise,
    runs,
    snapshot,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlmguide.cli import cli

CORPUS = cases()
FUZZ_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays deterministic
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def reject_constant(name: str) -> None:
    raise AssertionError(f"output holds {name}, which is not JSON")


def check(result: click.testing.Result, json_output: bool = True) -> None:
    output = result.output
    assert result.exit_code in (0, 1, 2), output
    assert "internal error" not in output and "Traceback" not in output
    if result.exit_code == 0 and json_output:
        document = json.loads(result.stdout, parse_constant=reject_constant)
        numbers: list[Any] = [document]
        while numbers:
            item = numbers.pop()
            if isinstance(item, dict):
                numbers.extend(item.values())
            elif isinstance(item, list):
                numbers.extend(item)
            elif isinstance(item, float):
                assert math.isfinite(item)
    elif result.exit_code in (1, 2):
        assert len(output.strip().splitlines()) == 1, output


def test_corpus_is_large_and_deterministic() -> None:
    assert len(CORPUS) == CORPUS_SIZE >= 300
    assert [c.text for c in cases()] == [c.text for c in CORPUS]


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i:03d}" for i in range(len(CORPUS))])
def test_mutated_scenario(case: Case, tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(case.text)
    check(invoke("recommend", str(path), "--format", "json", "--top", "1"))


@pytest.mark.parametrize("name", list(REPRODUCERS))
def test_reproducer_from_the_issue(name: str, tmp_path: Path) -> None:
    non_utf8 = tmp_path / "latin1.yaml"
    non_utf8.write_bytes(BASE_FILE.read_bytes() + b"# caf\xe9\n")
    args = [a.replace("{non_utf8}", str(non_utf8)) for a in REPRODUCERS[name]]
    result = invoke(*args)
    check(result, json_output="json" in args)
    if args[0] == "recommend":
        assert result.exit_code == 2


RUNS = runs()
SAMPLE = RUNS[::37]
"""Every 37th of issue 30's generated runs (bench/fuzz_report.py runs them all as processes):
review scripts, recipes, flags and outputs, about 22 in all."""


def test_the_runs_are_many_deterministic_and_of_every_kind() -> None:
    assert len(RUNS) + len(CORPUS) >= 1_000
    assert [r.name for r in runs()] == [r.name for r in RUNS]
    kinds = {r.args[0] for r in SAMPLE} | {"outputs" for r in SAMPLE if r.outputs}
    assert {"review", "outputs"} <= kinds and len(kinds) >= 4


@pytest.mark.parametrize("run", SAMPLE, ids=[r.name[:50] for r in SAMPLE])
def test_a_generated_run_leaves_the_users_files_alone(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    materialise(run, tmp_path)
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{dir}", str(tmp_path)) for a in run.args]
    printed = "json" in args and "--out" not in args  # JSON on standard output
    check(CliRunner().invoke(cli, args, env=run.env, catch_exceptions=False), printed)
    assert damage(run, before, snapshot(tmp_path)) == []


SCENARIO_PATHS = [
    "cluster.nodes",
    "cluster.gpus_per_node",
    "cluster.accelerator",
    "cluster.scale_out_gbps_per_gpu",
    "models.policy",
    "workload.prompts_per_step",
    "workload.samples_per_prompt",
    "workload.prompt_tokens",
    "workload.response_tokens",
    "workload.max_response_tokens",
    "plan.train.tp",
    "plan.rollout.gpus",
    "efficiency.decode_hbm",
]
scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.none(),
    st.booleans(),
    st.sampled_from(HOSTILE),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=5)


@FUZZ_SETTINGS
@given(st.dictionaries(st.sampled_from(SCENARIO_PATHS), values, min_size=1, max_size=3))
def test_scenario_yaml_with_random_values(tmp_path: Path, changes: dict[str, Any]) -> None:
    scenario = base()
    for dotted, value in changes.items():
        node = scenario
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True))
    check(invoke("recommend", str(path), "--format", "json", "--top", "1"))


@FUZZ_SETTINGS
@given(st.sampled_from(SCENARIO_PATHS), st.text(max_size=40))
def test_set_with_random_text(dotted: str, value: str) -> None:
    check(invoke("recommend", str(BASE_FILE), "--set", f"{dotted}={value}", "--format", "json"))


SQL_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: f"'{x}'::DOUBLE"),
    st.integers(min_value=-(2**100), max_value=2**100).map(lambda x: f"{x}::HUGEINT")
    | st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda x: f"{x}::BIGINT"),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1e9, max_value=1e9).map(
        lambda x: f"{x}::DECIMAL(18, 3)"
    ),
    st.text(max_size=30).map(lambda s: "'" + s.replace("'", "''").replace("\0", "") + "'"),
    st.binary(max_size=12).map(lambda b: "'" + "".join(f"\\x{c:02X}" for c in b) + "'::BLOB"),
    st.just("uuid()"),
    st.integers(min_value=-(10**6), max_value=10**6).map(lambda d: f"INTERVAL {d} SECOND"),
    st.times().map(lambda t: f"TIME '{t.isoformat()}'"),
    st.dates().map(lambda d: f"DATE '{d.isoformat()}'"),
    st.just("[1.5, 'nan'::DOUBLE, NULL]"),
    st.just("{'a': 'inf'::DOUBLE, 'b': [uuid()]}"),
    st.just("MAP([1.5, 2.5], ['x', '[/]'])"),
    st.just("NULL"),
)


@FUZZ_SETTINGS
@given(st.lists(SQL_VALUES, min_size=1, max_size=4), st.sampled_from(["json", "table", "csv"]))
def test_sql_result_types_render_in_every_format(
    use_fixture_kb: Path, expressions: list[str], fmt: str
) -> None:
    columns = ", ".join(f"{e} AS c{i % 2}" for i, e in enumerate(expressions))
    result = invoke("sql", f"SELECT {columns}", "--format", fmt)
    check(result, json_output=fmt == "json")
    if result.exit_code == 0 and fmt == "json":
        (row,) = json.loads(result.stdout)
        assert len(row) == len(expressions)  # duplicate names kept, suffixed
