"""The plan atlas: a row per setup of the grid, plausible figures, cached by its inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import run_cli
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules import atlas

from rlmguide.knowledge import ATLAS


def test_atlas_has_a_row_for_every_setup_of_the_grid(atlas_rows: list[dict[str, Any]]) -> None:
    grid = atlas.grid(load_catalog(record_roots(), atlas.READ_KINDS).records)
    expected = {(s.model, s.accelerator, s.gpus, s.algorithm) for s in grid}
    found = {(r["model_id"], r["accelerator_id"], r["gpus"], r["algorithm_id"]) for r in atlas_rows}
    assert found == expected and len(atlas_rows) == len(grid) >= 500
    assert {r["gpus"] for r in atlas_rows} == {8, 32, 128, 1024, 4096}
    assert {r["algorithm_id"] for r in atlas_rows} == {"grpo", "dapo", "ppo"}
    assert {r["accelerator_id"] for r in atlas_rows} == {
        "h100-sxm-80gb", "h200-sxm-141gb", "h20-96gb", "b200-sxm-180gb", "a100-sxm-80gb",
    }  # fmt: skip
    assert {r["model_id"] for r in atlas_rows if r["moe"]} == {
        "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3",
    }  # fmt: skip
    sizes = [r["params_b"] for r in atlas_rows]
    assert min(sizes) < 2 and max(sizes) > 600


def test_every_atlas_plan_is_launchable(atlas_rows: list[dict[str, Any]]) -> None:
    # The top plan of every setup that fits is one a released framework launches, and the
    # row names the first of them (export mappings first, then the newest release), or the
    # row says it has no launchable plan and why.
    catalog = load_catalog(record_roots(), ("framework", "mapping"))
    released = {f for f, r in catalog.of("framework").items() if r.released}  # type: ignore[attr-defined]
    mapped = {m.framework for m in catalog.of("mapping").values()}  # type: ignore[attr-defined]
    feasible = [r for r in atlas_rows if r["feasible"]]
    assert len(feasible) >= 500
    unlaunched, own = [], []
    for r in feasible:
        # a framework whose export refuses the plan is set apart, as `recommend` sets it
        refused = set(r["launch_refused_by"])
        assert refused <= mapped & released & set(r["frameworks"]), r
        assert not refused & set(r["launchable_by"]), r
        if not r["launchable_by"]:
            # no plan that fits is one a released framework launches: every released
            # runner of the best is named with its refusal, none as the one to launch with,
            # and the row says so with what binds each mapped framework's own ranking
            assert r["framework"] is None and refused == released & set(r["frameworks"]), r
            reason = r["no_launch_reason"]
            assert reason.startswith("no launchable plan: "), r
            assert all(f"{f}: " in reason for f in refused), r
            assert r["ranked_for"] is None, r
            unlaunched.append(r)
            continue
        assert r["no_launch_reason"] is None, r
        assert r["framework"] == r["launchable_by"][0], r
        # those that park the reference run the plan's parked twin (rules.recommend)
        parked = set(r["reference_parked_by"])
        assert parked <= set(r["launchable_by"]), r
        assert set(r["launchable_by"]) <= released & (set(r["frameworks"]) | parked), r
        if mapped & set(r["launchable_by"]):
            assert r["framework"] in mapped, r
        if r["ranked_for"] is not None:
            # the default ranking's runners refused its best plans: the row is the plan of
            # a mapped framework's own ranking, which that framework's export writes
            assert r["launchable_by"] == [r["ranked_for"]] == r["frameworks"], r
            assert r["ranked_for"] in mapped & released, r
            own.append(r)
    # every row that fits has a launchable plan but at most two, which say why (since ROLL's
    # FSDP2 expert parallelism is kept to the models it builds, both fit no plan a released
    # framework runs on-policy and say so as infeasible rows): DeepSeek-V3 PPO on 128
    # H100s or A100s. NeMo-RL launches PPO (examples/run_ppo.py at 7ea279abf), but its DTensor
    # value model would build Automodel's own causal-LM class for DeepSeek-V3, a vocabulary-wide
    # head (constraint nemo-rl-dtensor-ppo-value-needs-hf-head), and its Megatron path fits no
    # plan on 128 GPUs even with the CPU optimizer its mapping writes; ROLL, whose plans fit
    # and whose FSDP2 phase offload its mapping writes (offload_policy), maps neither FSDP2
    # expert parallelism, which they use, nor PPO's critic (see the README)
    key = ("model_id", "accelerator_id", "gpus", "algorithm_id")
    assert {tuple(r[k] for k in key) for r in unlaunched} <= NO_LAUNCHABLE_PLAN
    for r in unlaunched:
        assert "nemo-rl: no plan fits in memory" in r["no_launch_reason"], r
        assert r["launch_refused_by"] == ["roll"], r
        assert "offload_phase" not in r["no_launch_reason"], r
    assert len(own) <= 0.05 * len(feasible)


NO_LAUNCHABLE_PLAN = {
    ("deepseek-v3", "h100-sxm-80gb", 128, "ppo"),
    ("deepseek-v3", "a100-sxm-80gb", 128, "ppo"),
}
"""Setups whose top plans no released framework's export writes, each saying why."""


def test_atlas_figures_are_plausible(atlas_rows: list[dict[str, Any]]) -> None:
    feasible = [r for r in atlas_rows if r["feasible"]]
    assert len(feasible) >= 0.8 * len(atlas_rows)
    for r in feasible:
        assert r["infeasible_reason"] is None
        # (a plan that runs Adam on the CPU on a few GPUs can take more than a day a step)
        assert 1 < r["step_seconds"] < 1_000_000, r
        assert r["tokens_per_second"] > 0
        assert 0 < r["rollout_gpus"] <= r["gpus"] and 0 < r["train_gpus"] <= r["gpus"]
        assert r["rollout_layout"].startswith(f"{r['rollout_gpus']} GPUs")
        assert r["placement"] in ("colocated", "partially-colocated", "disaggregated")
        assert r["memory_gib_train"] > 0 and r["frameworks"], r
        # tokens trained per step over the step time is the throughput
        tokens = r["prompts_per_step"] * r["samples_per_prompt"] * (1024 + r["response_tokens"])
        assert r["tokens_per_second"] == pytest.approx(tokens / r["step_seconds"], rel=0.01)
    # More GPUs never train the same setup slower (the batch grows with the cluster, so
    # compare tokens per second).
    by_setup = {
        (r["model_id"], r["accelerator_id"], r["algorithm_id"], r["gpus"]): r for r in feasible
    }
    for (model, accelerator, algorithm, gpus), r in by_setup.items():
        for more in (g for g in atlas.GPUS if g > gpus):
            if (bigger := by_setup.get((model, accelerator, algorithm, more))) is not None:
                assert bigger["tokens_per_second"] > r["tokens_per_second"], (r, bigger)
    # DeepSeek-V3's 671B parameters with Adam do not fit on one node of H100s, and on one node
    # of A100s or H20s its bf16 weights alone (156 GiB a GPU of an 8-GPU engine) fill no
    # rollout engine (a tp 2 x pp 4 engine with ep 8 once counted 44 GiB: rules.search)
    small = [
        r
        for r in atlas_rows
        if (r["model_id"], r["gpus"]) == ("deepseek-v3", 8)
        and r["accelerator_id"] in ("h100-sxm-80gb", "a100-sxm-80gb", "h20-96gb")
    ]
    assert len(small) == 9
    assert all(not r["feasible"] and "memory" in r["infeasible_reason"] for r in small)


def test_atlas_table_and_columns_are_documented() -> None:
    done = run_cli(
        "sql",
        "SELECT (SELECT comment FROM duckdb_tables() WHERE table_name = 'atlas') AS doc, "
        "count(*) FILTER (WHERE comment IS NULL OR comment = '') AS bare "
        "FROM duckdb_columns() WHERE table_name = 'atlas'",
        "--format",
        "json",
        timeout=600,
    )
    [row] = json.loads(done.stdout)
    assert row["doc"].startswith("The plan atlas") and row["bare"] == 0


def test_warm_build_reads_the_atlas_from_its_cache(
    fixture_kb: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows are computed once per input digest: a database rebuilt for other reasons (a
    source edited, the file lost) reads them back instead of searching again."""
    from rlmguide.kb.db import ensure_database

    roots = [(fixture_kb, None)]
    computed: list[int] = []

    def fake(roots: Any, workers: int | None = None, launch_check: Any = None) -> list[list[Any]]:
        computed.append(1)
        head = ["m", False, 1.0, "a", 8, 1, "grpo", 1, 1, 1, False, "why"]
        return [[*head, *[None] * (len(atlas.COLUMNS) - len(head))]]

    monkeypatch.setattr(atlas, "compute", fake)
    first = ensure_database(roots, ATLAS)
    assert computed == [1]
    first.unlink()
    again = ensure_database(roots, ATLAS)
    assert again == first and computed == [1]
    con = duckdb.connect(str(again), read_only=True)
    assert con.execute("SELECT model_id, infeasible_reason FROM atlas").fetchall() == [("m", "why")]
    con.close()
    # A source is not read by a search: editing one rebuilds the file but not the atlas.
    source = next((fixture_kb / "sources").glob("*.yaml"))
    source.write_text(source.read_text() + "\n# edited\n")
    assert ensure_database(roots, ATLAS) != first and computed == [1]
    # The cost code is: another code digest names another file and computes again.
    monkeypatch.setattr(atlas, "code_digest", lambda launch_check=None: "0" * 24)
    ensure_database(roots, ATLAS)
    assert computed == [1, 1]


WORKER = (
    "import sys; from rlmguide.rules import atlas; atlas._work(); "
    "print(*(getattr(m, '__file__', None) for m in list(sys.modules.values())), "
    "sep='\\n', file=sys.stderr)"
)
"""An atlas worker that lists, after its rows, the files of every module it imported."""


def test_the_atlas_cache_key_covers_every_module_its_workers_import(empty_cache: Path) -> None:
    # A worker's rows depend on every module of this project it imports (export's launch
    # check among them): an edit of any must name another cache file and recompute.
    setup = {"model": "qwen2.5-1.5b", "accelerator": "h100-sxm-80gb", "gpus": 8}
    job = {
        "roots": [[str(r), k] for r, k in record_roots()],
        "setups": [{**setup, "algorithm": "grpo"}],
        "launch_check": ATLAS.launch_check,
    }
    done = subprocess.run(
        [sys.executable, "-c", WORKER],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    named = dict(zip((c[0] for c in atlas.COLUMNS), row, strict=True))
    assert named["feasible"] and named["framework"] in named["launchable_by"]
    repo = atlas.REPO.resolve()
    imported = {Path(f).resolve() for f in done.stderr.splitlines() if f != "None"}
    ours = {
        f
        for f in imported
        if f.is_relative_to(repo)
        and "site-packages" not in f.parts
        # the package's own __init__ only names the API, loaded on use
        and f != repo / "rlmguide" / "__init__.py"
    }
    covered = {f.resolve() for f in atlas.code_files(ATLAS.launch_check)}
    assert repo / "rlmguide" / "export" / "writer.py" in ours
    assert sorted(ours - covered) == []


def test_a_damaged_atlas_cache_is_recomputed(
    fixture_kb: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    roots = [(fixture_kb, None)]
    monkeypatch.setattr(atlas, "compute", lambda roots, workers=None, launch_check=None: [])
    assert atlas.atlas_rows(roots) == []
    [cached] = (empty_cache / "atlas").glob("atlas-*.json")
    cached.write_bytes(b"garbage")
    assert atlas.atlas_rows(roots) == []
    assert "recomputing the atlas" in capsys.readouterr().err


def test_atlas_page_says_which_launches_are_unchecked_and_which_rows_name_none() -> None:
    from rlmguide.sitegen.atlas_page import ATLAS_PAGE, atlas_pages

    con = duckdb.connect()
    con.execute("CREATE TABLE mappings (framework VARCHAR)")
    con.execute("INSERT INTO mappings VALUES ('verl'), ('areal')")
    con.execute(
        "CREATE TABLE atlas (model_id VARCHAR, accelerator_id VARCHAR, gpus BIGINT, "
        "algorithm_id VARCHAR, feasible BOOLEAN, infeasible_reason VARCHAR, placement VARCHAR, "
        "execution VARCHAR, rollout_layout VARCHAR, train_layout VARCHAR, step_seconds DOUBLE, "
        "tokens_per_second DOUBLE, bottleneck VARCHAR, framework VARCHAR, "
        "launchable_by VARCHAR[], launch_refused_by VARCHAR[], ranked_for VARCHAR, "
        "no_launch_reason VARCHAR, params_b DOUBLE)"
    )
    plan = "'colocated', 'sync', '8 GPUs', '8 GPUs · ZeRO 3', 10.0, 100.0, 'rollout'"
    con.execute(
        f"INSERT INTO atlas VALUES ('m', 'a', 8, 'grpo', true, NULL, {plan}, 'verl', "
        "['verl', 'miles'], ['areal'], NULL, NULL, 7), "
        f"('m', 'a', 32, 'grpo', true, NULL, {plan}, NULL, [], ['areal'], NULL, "
        "'no launchable plan: areal: no entry point', 7), "
        f"('m', 'a', 64, 'grpo', true, NULL, {plan}, 'nemo-rl', ['nemo-rl'], [], 'nemo-rl', "
        "NULL, 7), "
        "('m', 'a', 128, 'grpo', false, 'memory: no', NULL, NULL, NULL, NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, NULL, 7)"
    )
    text = atlas_pages(con)[ATLAS_PAGE]
    # miles has no export mapping: listed, and said to be unchecked; verl's launch is checked
    [unchecked] = [line for line in text.splitlines() if "unchecked" in line]
    assert "miles" in unchecked and "verl" not in unchecked
    assert "3 of 4 setups have a plan that fits" in text
    assert "Of those, 1 have no launchable plan" in text
    assert "In 1, every runner of the default ranking's best plans refuses them" in text
    [row] = [line for line in text.splitlines() if "export refuses it:" in line]
    assert "areal" in row and ">no launchable plan<" in row
    assert 'title="no launchable plan: areal: no entry point"' in row
    [own] = [line for line in text.splitlines() if "its own ranking" in line]
    assert "nemo-rl" in own
