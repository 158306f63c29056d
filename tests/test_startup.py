"""Start-up checks: the values a launch writes beyond the plan's fields (`launch.*` facts) and
the constraint records of the frameworks' start-up asserts that read them (Megatron's pipeline
split, NeMo-RL's packing under context parallelism, slime's run length)."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules import RECOMMEND_KINDS
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide.cli import cli
from rlmguide.export import NotExpressible, build, script
from rlmguide.export.startup import ABSENT, compile_checks, pipeline_split, tripped


@cache
def _catalogs() -> tuple[Any, Any]:
    return load_catalog(record_roots(), RECOMMEND_KINDS), load_catalog(
        record_roots(), ("mapping",)
    ).of("mapping")


def _check(record_id: str) -> Any:
    catalog, _ = _catalogs()
    (check,) = [c for c in compile_checks(catalog)[0] if c.id == record_id]
    return check


def _export(data: dict[str, Any], framework: str) -> Any:
    catalog, mappings = _catalogs()
    resolved = resolve(parse_scenario(data, "test"), catalog.records)
    return build(resolved, catalog, mappings, framework)


def _scenario(plan: dict[str, Any], policy: str = "qwen2.5-7b", **workload: Any) -> dict:
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 8, "gpus_per_node": 8},
        "models": {"policy": policy, "reward": "verifier"},
        "workload": {
            "algorithm": "grpo",
            "prompts_per_step": 256,
            "samples_per_prompt": 16,
            "prompt_tokens": 1024,
            "response_tokens": 4096,
            "max_response_tokens": 8192,
            "minibatches_per_step": 4,
            **workload,
        },
        "plan": plan,
    }


UNEVEN = {"placement": "colocated", "execution": "sync", "train": {"tp": 1, "pp": 8, "cp": 1,
          "zero": 1, "recompute": "full"}}  # fmt: skip
"""Qwen2.5-7B's 28 layers over 8 pipeline stages."""


# -- the pipeline split ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layers", "pp", "split"),
    [
        (28, 8, (2, 2)),  # fullest 4; six middle stages of 4 leave 4
        (80, 7, (10, 10)),  # fullest 12; five of 12 leave 20
        (61, 16, (3, 2)),  # fullest 4; fourteen of 4 leave 5
        (94, 16, (5, 5)),  # fullest 6; fourteen of 6 leave 10
        (9, 8, (2, 1)),  # fullest 2; six of 2 would need 12: six of 1 leave 3
        (64, 8, (0, 0)),  # even
        (7, 1, (0, 0)),  # no pipeline
        (5, 2, (3, 2)),  # no middle stage
    ],
)
def test_pipeline_split_by_hand(layers: int, pp: int, split: tuple[int, int]) -> None:
    assert pipeline_split(layers, pp) == split


def test_no_split_when_the_stages_outnumber_what_the_layers_fill() -> None:
    with pytest.raises(ValueError, match="cannot fill"):
        pipeline_split(5, 8)


def _megatron_accepts(layers: int, pp: int, first: int, last: int) -> bool:
    check = _check("megatron-pipeline-stages-split-the-layers")
    facts = {"model.layers": layers, "plan.train.pp": pp} | {
        "launch.pp_first_layers": first,
        "launch.pp_last_layers": last,
    }
    return not tripped([check], facts)


@settings(deadline=None)  # the first example loads the catalog
@given(st.integers(1, 128), st.integers(1, 32))
def test_every_split_passes_megatron_and_fills_no_stage_past_the_costed_one(
    layers: int, pp: int
) -> None:
    try:
        first, last = pipeline_split(layers, pp)
    except ValueError:
        return
    assert _megatron_accepts(layers, pp, first, last)
    if first:
        middle = (layers - first - last) // max(pp - 2, 1) if pp > 2 else 0
        assert max(first, last, middle) <= math.ceil(layers / pp)


def test_megatron_check_refuses_an_uneven_pipeline_without_the_stage_counts() -> None:
    assert not _megatron_accepts(28, 8, 0, 0)
    assert not _megatron_accepts(28, 8, 3, 2)  # 23 left over 6 middle stages
    assert _megatron_accepts(28, 7, 0, 0)
    assert not _megatron_accepts(28, 2, 10, 10)  # two stages must hold every layer


# -- export writes what the checks need --------------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "first", "last"),
    [
        (
            "verl",
            "+actor_rollout_ref.actor.megatron.override_transformer_config."
            "num_layers_in_first_pipeline_stage",
            "+actor_rollout_ref.actor.megatron.override_transformer_config."
            "num_layers_in_last_pipeline_stage",
        ),
        (
            "nemo-rl",
            "policy.megatron_cfg.num_layers_in_first_pipeline_stage",
            "policy.megatron_cfg.num_layers_in_last_pipeline_stage",
        ),
        ("slime", "decoder-first-pipeline-num-layers", "decoder-last-pipeline-num-layers"),
    ],
)
def test_an_uneven_pipeline_is_exported_with_megatrons_stage_counts(
    framework: str, first: str, last: str
) -> None:
    done = _export(_scenario(UNEVEN), framework)
    written = {a.key: a.value for a in done.arguments}
    assert (written[first], written[last]) == (2, 2)


def _review(tmp_path: Path, text: str, *flags: str) -> dict[str, Any]:
    path = tmp_path / "launch.sh"
    path.write_text(text)
    args = ["review", str(path), "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-7b"]
    done = CliRunner().invoke(cli, [*args, *flags, "--format", "json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


@pytest.mark.parametrize("framework", ["verl", "slime"])
def test_review_reports_the_megatron_check_a_launch_without_stage_counts_trips(
    framework: str, tmp_path: Path
) -> None:
    text = script(_export(_scenario(UNEVEN), framework), "test", "qwen2.5-7b")
    assert _review(tmp_path, text)["startup"] == []
    stripped = "\n".join(line for line in text.splitlines() if "pipeline_stage" not in line
                         and "pipeline-num-layers" not in line)  # fmt: skip
    tripped_ids = [c["constraint"] for c in _review(tmp_path, stripped + "\n")["startup"]]
    assert tripped_ids == ["megatron-pipeline-stages-split-the-layers"]


def test_nemo_rl_dtensor_with_context_parallelism_turns_packing_off() -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 1, "cp": 2, "zero": 3, "recompute": "full"}}  # fmt: skip
    done = _export(_scenario(plan), "nemo-rl")
    written = {a.key: a.value for a in done.arguments}
    assert written["policy.dtensor_cfg.context_parallel_size"] == 2
    assert written["policy.sequence_packing.enabled"] is False
    check = _check("nemo-rl-dtensor-context-parallel-without-packing")
    facts = {**ABSENT, "plan.train.cp": 2, "launch.sequence_packing": True}
    assert tripped([check], facts) == [check.record]


def test_nemo_rl_dtensor_refuses_context_parallelism_beside_tensor_parallelism() -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 2, "cp": 2, "zero": 3, "recompute": "full"}}  # fmt: skip
    with pytest.raises(NotExpressible, match="nemo-rl-dtensor-context-parallel-without-sequence"):
        _export(_scenario(plan), "nemo-rl")


def test_slime_writes_the_run_length_it_asserts(tmp_path: Path) -> None:
    plan = {"placement": "colocated", "execution": "sync"}
    words = {a.key: a.value for a in _export(_scenario(plan), "slime").arguments}
    assert words["num-epoch"] == 1 and "num-rollout" not in words
    scenario = _scenario(plan, steps=300)
    text = script(_export(scenario, "slime"), "test", "qwen2.5-7b")
    assert "--num-rollout 300" in text and "--num-epoch" not in text
    stripped = "\n".join(ln for ln in text.splitlines() if "--num-rollout" not in ln) + "\n"
    tripped_ids = [c["constraint"] for c in _review(tmp_path, stripped)["startup"]]
    assert "slime-run-length-required" in tripped_ids


def test_slime_reinforce_plus_plus_normalises_advantages() -> None:
    plan = {"placement": "colocated", "execution": "sync"}
    done = _export(_scenario(plan, algorithm="reinforce-plus-plus"), "slime")
    assert {a.key: a.value for a in done.arguments}["normalize-advantages"] is True


def test_slime_keeps_the_sglang_expert_group_inside_its_engine() -> None:
    from rlmguide.rules.frameworks import compile_constraints

    catalog, _ = _catalogs()
    (record,) = [
        c for c in compile_constraints(catalog)[0]
        if c.id == "slime-sglang-expert-parallel-within-engine"
    ]  # fmt: skip
    assert tripped([record], {"plan.rollout.ep": 8, "plan.rollout.tp": 4})
    assert not tripped([record], {"plan.rollout.ep": 4, "plan.rollout.tp": 8})
    assert tripped([record], {"plan.rollout.ep": 3, "plan.rollout.tp": 4})
    plan = _export(_scenario({}, policy="qwen3-30b-a3b"), "slime").plan["rollout"]
    assert plan["ep"] <= plan["tp"] and plan["tp"] % plan["ep"] == 0
