"""The Python API (rlmguide.api): its results are the commands' JSON, its errors their one-line
messages and exit codes, and the site's page of examples runs as written."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

import rlmguide
from rlmguide.api import (
    BadInput,
    RequestFailed,
    Scenario,
    connect,
    estimate,
    export,
    recommend,
    review,
)
from rlmguide.cli import cli
from rlmguide.results import Plan, Recommendation

REPO = Path(__file__).parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
FIXED = REPO / "examples" / "ppo-qwen2.5-7b-shared-critic-fused-16xh100.yaml"
VERL_SCRIPT = REPO / "tests" / "fixtures" / "review" / "verl-run_qwen2.5-32b.sh"
API_PAGE = REPO / "site" / "docs" / "python.md"
WALL_TIMES = ("search", "sizing", "mixed")
"""The result blocks that carry a search's wall time (`seconds`), which differs per run."""


def without_wall_time(document: dict[str, Any]) -> dict[str, Any]:
    for key in WALL_TIMES:
        if isinstance(document.get(key), dict):
            document[key].pop("seconds")
    return document


def command(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args], catch_exceptions=False)
    return result


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_recommend_is_the_commands_json(path: Path) -> None:
    ran = command("recommend", str(path), "--format", "json")
    if path == FIXED:  # a fixed Table 9 configuration no framework runs: refused alike
        with pytest.raises(RequestFailed) as refused:
            recommend(Scenario.from_yaml(path))
        assert ran.exit_code == refused.value.exit_code == 1
        assert ran.output == f"Error: {refused.value}\n"
        return
    found = recommend(Scenario.from_yaml(path))
    assert ran.exit_code == 0, ran.output
    mine = without_wall_time(json.loads(found.model_dump_json()))
    assert mine == without_wall_time(json.loads(ran.stdout))


def test_estimate_export_and_review_are_the_commands_json() -> None:
    ran = command("estimate", str(FIXED), "--format", "json", "--survey")
    mine = estimate(Scenario.from_yaml(FIXED), survey=True).model_dump(mode="json")
    assert without_wall_time(mine) == without_wall_time(json.loads(ran.stdout))

    ran = command("export", str(SMALL), "--framework", "verl", "--format", "json")
    launch = export(SMALL, "verl")
    assert launch.model_dump(mode="json") == json.loads(ran.stdout)
    assert launch.script == command("export", str(SMALL), "--framework", "verl").output

    args = ["--accelerator", "a100-sxm-80gb"]
    ran = command("review", str(VERL_SCRIPT), *args, "--format", "json")
    reading = review(VERL_SCRIPT, accelerator="a100-sxm-80gb")
    assert reading.model_dump(mode="json") == json.loads(ran.stdout)
    # verl's own layout needs its full recomputation: without it the 32B trainer's
    # activations do not fit beside its state (cost.memory), so dropping it is never a change
    # on its own (a context-parallel layout that halves the activations may go without).
    recompute = [c for c in reading.changes if c.text.startswith("train recompute")]
    assert all(c.step_seconds is None and "only with the other" in c.text for c in recompute)


def test_a_scenario_from_a_file_a_dict_or_keywords_is_the_same() -> None:
    data = yaml.safe_load(SMALL.read_text())
    from_file = Scenario.from_yaml(SMALL)
    assert from_file.origin == str(SMALL)
    assert Scenario.from_dict(data) == from_file == Scenario(**data)
    assert from_file.updated({"cluster.nodes": 2}).cluster.gpus == 16
    assert from_file.cluster.nodes == 1  # frozen: `updated` returns a new scenario
    # pairs apply in order: a later mapping replaces an earlier field inside it
    changes = [("plan.train.tp", 2), ("plan.train", {"zero": 3})]
    assert from_file.updated(changes).plan.train.tp is None


@pytest.mark.parametrize(
    "build",
    [
        lambda: Scenario(cluster={"accelerator": "h100-sxm-80gb", "nodes": 0}),
        lambda: Scenario.from_dict(["not", "a", "mapping"]),  # type: ignore[arg-type]
        lambda: Scenario.from_yaml(SMALL).updated({"cluster.nodes": 10**400}),
        lambda: Scenario.from_yaml(SMALL).updated({"workload..x": 1}),
        lambda: Scenario.from_yaml(REPO / "missing.yaml"),
        lambda: Scenario.from_deployment("no-such-deployment"),
        lambda: recommend(SMALL, top=0),
        lambda: recommend(SMALL, max_nodes=True),
        lambda: recommend(SMALL, deadline=float("nan")),
        lambda: recommend(SMALL, framework="verll"),
        lambda: export(SMALL, "verl", version="no-such-version"),
        lambda: review(VERL_SCRIPT),  # no accelerator
        lambda: review(VERL_SCRIPT, accelerator="a100-sxm-80gb", nodes=True),  # type: ignore
    ],
)
def test_bad_input_is_one_line(build: Any) -> None:
    with pytest.raises(BadInput) as caught:
        build()
    assert caught.value.exit_code == 2
    assert len(str(caught.value).splitlines()) == 1


def test_results_keep_keys_the_planner_adds() -> None:
    """Other modules add plan keys with every change: a result keeps them, as the JSON does."""
    document = recommend(SMALL, top=1).model_dump(mode="json")
    plan = document["plans"][0]
    plan["headroom_gib_per_gpu"] = 4.5
    plan["train"]["micro_batch_tokens"] = 8192
    plan["launchable_by"] = ["verl"]
    again = Recommendation.model_validate(document)
    assert again.model_dump(mode="json") == document
    assert again.best["headroom_gib_per_gpu"] == 4.5
    assert again.best.train["micro_batch_tokens"] == 8192
    with pytest.raises(KeyError):
        again.best["no-such-key"]
    # the contract's keys stay typed: a plan without one is not a plan
    del plan["step_seconds"]
    with pytest.raises(ValueError, match="step_seconds"):
        Plan.model_validate(plan)


def test_plans_as_a_table() -> None:
    result = recommend(SMALL, top=3)
    rows = result.rows()
    # top 3, and a fourth where the third won a tie over it (rules.ranking.rank shows it)
    assert [r["rank"] for r in rows] == list(range(1, len(result.plans) + 1))
    assert len(rows) == 3 or (len(rows) == 4 and rows[2]["tie.faster_rank"] == 4)
    first = rows[0]
    assert first["train.tp"] == result.best.train.tp
    assert first["seconds.rollout"] == result.best.stages[0].seconds
    assert first["rules"] == [r.id for r in result.best.rules]
    assert not any(isinstance(v, dict) for v in first.values())
    pa = pytest.importorskip("pyarrow")
    table = result.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == len(rows)
    assert table.column("step_seconds").to_pylist() == [p.step_seconds for p in result.plans]
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(ImportError, match="pip install pandas"):
            result.to_pandas()
    else:
        assert list(result.to_pandas()["rank"]) == [r["rank"] for r in rows]


def test_html_for_notebooks_is_escaped() -> None:
    result = recommend(SMALL, top=1)
    document = result.model_dump(mode="json")
    document["plans"][0]["frameworks"] = ["<script>alert(1)</script>"]
    shown = Recommendation.model_validate(document)._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert shown.startswith("<table>") and shown.count("<tr>") == 2


def test_estimate_of_a_plan_that_does_not_fit_says_why() -> None:
    tight = Scenario.from_yaml(FIXED).updated({"plan.train.zero": 0, "plan.train.tp": 1})
    found = estimate(tight)
    assert found.plan.feasible is False
    assert found.shortfall is not None and "GiB" in found.shortfall
    ran = command("estimate", str(FIXED), "--set", "plan.train.zero=0", "--set",
                  "plan.train.tp=1")  # fmt: skip
    assert ran.exit_code == 1
    assert ran.output.splitlines()[-1] == f"Error: the plan does not fit: {found.shortfall}"


def test_connect_is_read_only() -> None:
    con = connect()
    try:
        assert con.execute("SELECT count(*) FROM frameworks").fetchone()[0] > 10
        for statement in ("DELETE FROM frameworks", "SET threads = 8", "COPY sources TO 'x.csv'"):
            with pytest.raises(duckdb.Error):
                con.execute(statement)
    finally:
        con.close()


def test_the_package_exports_the_api() -> None:
    assert rlmguide.Scenario is Scenario and rlmguide.recommend is recommend
    assert rlmguide.estimate is estimate and rlmguide.connect is connect
    with pytest.raises(AttributeError):
        rlmguide.no_such_name  # noqa: B018


def test_the_api_page_runs(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """Every Python block of the site's API page, in order, from the repository root."""
    monkeypatch.chdir(REPO)
    blocks = re.findall(r"```python\n(.*?)```", API_PAGE.read_text(), re.S)
    assert len(blocks) >= 8
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, str(API_PAGE), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "cluster.nodes" in printed and "frameworks" in printed
