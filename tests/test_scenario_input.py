"""Bad scenario input is exit 2 with one line naming the field or file, never a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO
from rlmguide.kb.schema.bounds import MAX_GPUS

from rlmguide.cli import cli

SMALL = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def recommend_setting(assignments: tuple[str, ...]) -> tuple[int, str]:
    """`recommend` on the small scenario with each assignment given as --set, as JSON."""
    sets = [arg for a in assignments for arg in ("--set", a)]
    return invoke("recommend", SMALL, *sets, "--format", "json")


def assert_clean_bad_input(code: int, output: str, *expected: str) -> None:
    assert code == 2, output
    assert "internal error" not in output and "Traceback" not in output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    for text in expected:
        assert text in lines[0], lines[0]


def test_reproducer_non_utf8_scenario(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(Path(SMALL).read_bytes() + b"# caf\xe9\n")
    code, out = invoke("recommend", str(path))
    assert_clean_bad_input(code, out, str(path), "not UTF-8", "byte 0xe9")


def test_scenario_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    code, out = invoke("recommend", str(fifo))
    assert_clean_bad_input(code, out, "not a regular file")


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("cluster.scale_out_gbps_per_gpu=.inf", "not a finite number"),
        ("cluster.scale_out_gbps_per_gpu=-.inf", "scale_out_gbps_per_gpu"),
        ("cluster.scale_out_gbps_per_gpu=.nan", "scale_out_gbps_per_gpu"),
        ("cluster.scale_out_gbps_per_gpu=5e-324", "outside the supported range"),
        ("cluster.scale_out_gbps_per_gpu=1e308", "outside the supported range"),
        ("efficiency.decode_hbm=5e-324", "efficiency.decode_hbm"),
        ("cluster.host_memory_gib_per_node=1e-320", "host_memory_gib_per_node"),
        ("workload.prompts_per_step=100000000000000000000", "workload.prompts_per_step"),
        ("workload.prompt_tokens=1e400", "workload.prompt_tokens"),
        ("workload.max_response_tokens=9007199254740993", "workload.max_response_tokens"),
        ("plan.train.lora_rank=99999999999", "plan.train.lora_rank"),
        ("plan.train.tp=[", "malformed value"),
        ("plan.train.tp=!!python/name:os.system", "malformed value"),
        ("..=1", "field names joined by dots"),
        (
            "models.policy={layers: 1000000000, hidden: 8, heads: 1, kv_heads: 1, ffn: 8, "
            "vocab: 8, max_context_tokens: 100000}",
            "models.policy.layers",
        ),
    ],
)
def test_reproducer_huge_tiny_and_infinite_numbers(assignment: str, expected: str) -> None:
    code, out = invoke("recommend", SMALL, "--set", assignment, "--format", "json")
    assert_clean_bad_input(code, out, expected)


def test_reproducer_gpus_per_node_overflow_is_bounded_with_a_clear_error() -> None:
    """`--gpus-per-node 9007199254740993` used 23 GiB and was killed; now it is refused."""
    start = time.monotonic()
    done = _run_limited("recommend", SMALL, "--gpus-per-node", "9007199254740993")
    assert time.monotonic() - start < 30
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"Error: {SMALL}: cluster.gpus_per_node: 9,007,199,254,740,993 is outside the supported "
        "range 1 to 128 (the largest nodes (trays of an NVLink rack) hold far fewer)"
    ]


def _run_limited(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a process that may use at most 2 GiB, so a regression fails, not swaps."""

    def limit() -> None:
        cap = 2 * 1024**3
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.run(
        [sys.executable, "-m", "rlmguide", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=limit,
    )


def test_reproducer_recommend_100000_nodes_is_refused_naming_the_limit() -> None:
    done = _run_limited("recommend", SMALL, "--nodes", "100000")
    assert done.returncode == 2, done.stderr
    assert "cluster.nodes: 100,000 is outside the supported range 1 to 8,192" in done.stderr
    assert f"bounded to {MAX_GPUS:,} GPUs" in done.stderr


def test_cluster_larger_than_the_search_budget_is_refused() -> None:
    code, out = invoke("recommend", SMALL, "--nodes", "8192", "--gpus-per-node", "16")
    assert_clean_bad_input(code, out, "131,072 GPUs exceeds the 65,536 GPUs")


def test_internal_error_says_it_is_a_bug_and_how_to_report_it() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import rlmguide.cli as c\n"
            "def boom(*a, **k):\n    raise RuntimeError('boom')\n"
            "c.cli.main = boom\nc.main()",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "internal error (a bug, not your input): RuntimeError: boom" in done.stderr
    assert "RLMGUIDE_DEBUG=1" in done.stderr and "Traceback" not in done.stderr


def test_non_utf8_arguments_and_standard_input_are_bad_input() -> None:
    argument = subprocess.run(
        [sys.executable.encode(), b"-m", b"rlmguide", b"sql", b"SELECT '\xff' AS x"],
        capture_output=True,
        check=False,
    )
    assert argument.returncode == 2
    assert argument.stderr.decode().startswith("Error: argument ")
    assert b"not UTF-8 text" in argument.stderr and b"internal error" not in argument.stderr
    stdin = subprocess.run(
        [sys.executable, "-m", "rlmguide", "sql", "-"],
        input=b"SELECT 1 AS \xff",
        capture_output=True,
        check=False,
    )
    assert stdin.returncode == 2
    assert stdin.stderr == b"Error: standard input: line 1: not UTF-8 text (byte 0xff)\n"


def test_scenario_schema_documents_the_supported_ranges() -> None:
    code, out = invoke("schema", "scenario")
    assert code == 0
    document = json.loads(out)
    defs = document["$defs"]
    assert defs["Cluster"]["properties"]["nodes"]["maximum"] == 8_192
    assert defs["Cluster"]["properties"]["gpus_per_node"]["maximum"] == 128
    assert defs["Efficiency"]["properties"]["decode_hbm"]["anyOf"][0]["minimum"] == 0.001
    assert defs["TrainPlan"]["properties"]["zero"]["anyOf"][0]["maximum"] == 3  # kept, not raised
    assert f"{MAX_GPUS:,}" in document["description"]
    unbounded = [
        (name, field)
        for name, model in defs.items()
        for field, spec in model.get("properties", {}).items()
        for branch in [spec, *spec.get("anyOf", [])]
        if branch.get("type") in ("integer", "number") and "maximum" not in branch
    ]
    assert unbounded == []


def test_ctrl_c_in_any_command_exits_130_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import rlmguide.api as module

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "_recommender", interrupted)
    result = CliRunner().invoke(cli, ["recommend", SMALL])
    assert result.exit_code == 130
    assert result.output == "Error: interrupted\n"


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        (("plan.rollout.tp=4", "plan.rollout.cp=3"), "plan.rollout.cp: 3 does not divide"),
        (
            ("plan.rollout.tp=4", "plan.rollout.attention_dp=2", "plan.rollout.cp=4"),
            "plan.rollout.tp / attention_dp (2)",
        ),
        (("plan.rollout.cp=0",), "plan.rollout.cp"),
    ],
)
def test_decode_context_parallelism_outside_the_tensor_group_is_one_line(
    assignments: tuple[str, ...], expected: str
) -> None:
    assert_clean_bad_input(*recommend_setting(assignments), expected)


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        # Qwen2.5-7B has 28 layers: with the embedding and the output, 30 chunks at most
        (("plan.train.virtual_stages=16",), "at least pp 2 x 16 = 32 chunks"),
        (("plan.train.pp=4", "plan.train.virtual_stages=8"), "plan.train.pp 4 x 8 = 32 chunks"),
        (("plan.train.pp=2", "plan.train.virtual_stages=2000"), "supported range 1 to 1,024"),
    ],
)
def test_an_interleaving_with_more_chunks_than_layers_is_one_line(
    assignments: tuple[str, ...], expected: str
) -> None:
    assert_clean_bad_input(*recommend_setting(assignments), expected)


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        # Qwen2.5-7B has 28 layers; the stage counts belong to a given pp
        (("plan.train.first_stage_layers=4",), "for a given plan.train.pp"),
        (("plan.train.pp=4", "plan.train.first_stage_layers=20",
          "plan.train.last_stage_layers=8"), "every other stage one of the policy's 28"),
        (("plan.train.pp=1", "plan.train.last_stage_layers=4"), "they need pp > 1"),
        (("plan.train.pp=2", "plan.train.first_stage_layers=10",
          "plan.train.last_stage_layers=17"), "two stages: hold them all"),
    ],
)  # fmt: skip
def test_a_stage_split_without_its_stages_is_one_line(
    assignments: tuple[str, ...], expected: str
) -> None:
    assert_clean_bad_input(*recommend_setting(assignments), expected)


def test_an_interleaving_is_only_planned_on_a_pipeline() -> None:
    # virtual_stages fixed, pp searched: a one-stage layout would carry chunks it cannot run
    # (Megatron raises on a virtual size under pp 1), so only pipelines of 2 or more are tried.
    code, out = invoke(
        "recommend",
        SMALL,
        "--set",
        "plan.train.virtual_stages=2",
        "--format",
        "json",
        "--top",
        "20",
    )
    assert code == 0, out
    plans = json.loads(out)["plans"]
    assert plans and all(p["train"]["pp"] >= 2 and p["train"]["virtual_stages"] == 2 for p in plans)


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("cluster.nodez=1", "cluster.nodez: unknown field; did you mean nodes?"),
        ("plan.train.tpp=2", "plan.train.tpp: unknown field; did you mean tp, pp, etp?"),
        ("workload.agent.turnz=3", "workload.agent.turnz: unknown field; did you mean turns?"),
        ("plan.train.offload.frozn=true", "unknown field; did you mean frozen?"),
        ("nosuch.field=1", "nosuch: unknown field; fields there: cluster, efficiency, models"),
    ],
)
def test_an_unknown_field_names_the_closest_fields(assignment: str, expected: str) -> None:
    # Before: "unknown field" alone, whatever the typo was one letter from.
    assert_clean_bad_input(*recommend_setting((assignment,)), expected)
