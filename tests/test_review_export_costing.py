"""Review costs an exported launch as the framework runs it (estimate --framework) and never
names as the framework's best a plan slower than the one it reviews."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review import Hardware, review
from rlmguide.review import _slower_than_reviewed as slower

# NeMo-RL async GRPO on 8 + 8 B200 (the audit's n04): the search's ranking for nemo-rl holds
# no async plan, so its best is a one-step-off plan.
ASYNC = {
    "cluster": {"accelerator": "b200-sxm-180gb", "nodes": 2, "gpus_per_node": 8},
    "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo",
        "prompts_per_step": 256,
        "samples_per_prompt": 8,
        "prompt_tokens": 512,
        "response_tokens": 3000,
        "max_response_tokens": 8192,
        "minibatches_per_step": 1,
        "max_staleness": 1,
    },
    "plan": {"placement": "disaggregated", "execution": "async"},
}


@pytest.fixture(scope="module")
def async_review(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    folder = tmp_path_factory.mktemp("async")
    scenario, out = folder / "s.yaml", folder / "run.sh"
    scenario.write_text(yaml.safe_dump(ASYNC))
    done = CliRunner().invoke(
        cli, ["export", str(scenario), "--framework", "nemo-rl", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    return review(out, "nemo-rl", hardware=Hardware("b200-sxm-180gb")), folder


def test_review_costs_the_launch_as_estimate_on_its_framework(
    async_review: tuple[dict[str, Any], Path],
) -> None:
    # Before, review costed with the generic overheads: 70.8 s where estimate --framework
    # nemo-rl (and export's header, 92.0 s) costs the same plan at about 91 s.
    got, folder = async_review
    read = folder / "read.yaml"
    read.write_text(yaml.safe_dump(got["scenario"]))
    done = CliRunner().invoke(
        cli, ["estimate", str(read), "--framework", "nemo-rl", "--format", "json"]
    )
    assert done.exit_code == 0, done.output
    (plan,) = json.JSONDecoder().raw_decode(done.output)[0]["plans"]
    assert got["estimate"]["step_seconds"] == pytest.approx(plan["step_seconds"])
    terms = got["estimate"]["memory_breakdown_gib"]
    assert terms.keys() == plan["memory_breakdown_gib"].keys()
    for pool, costed in plan["memory_breakdown_gib"].items():
        assert terms[pool] == pytest.approx(costed)


def test_no_best_slower_than_the_reviewed_plan(async_review: tuple[dict[str, Any], Path]) -> None:
    got, _ = async_review
    best = got["recommendation"]
    if best is not None:
        assert best["step_seconds"] <= got["estimate"]["step_seconds"]
    else:
        assert "slower than the reviewed plan" in got["no_recommendation"]
        assert "async execution" in got["no_recommendation"]
        assert got["changes"] == []


def _plan(seconds: float, execution: str = "async", feasible: bool = True) -> dict[str, Any]:
    return {"step_seconds": seconds, "execution": execution, "feasible": feasible}


def test_a_slower_best_is_named_as_such_and_a_faster_one_is_kept() -> None:
    assert slower(_plan(70.8), _plan(91.8, "one-step-off"), "nemo-rl") == (
        "the best plan the search found on nemo-rl (91.8 s per step) is slower than the "
        "reviewed plan (70.8 s): the search did not rank the launch's async execution (its "
        "best runs one-step-off)"
    )
    assert "cannot express part" in (slower(_plan(70.8), _plan(90.0), "slime") or "")
    assert slower(_plan(70.8), _plan(71.0), "slime") is None  # within the ranking's tie
    assert slower(_plan(70.8), _plan(70.8), "slime") is None
    assert slower(_plan(90.0), _plan(60.0, "sync"), "slime") is None
    # a reviewed plan that does not fit: any plan that does is advice, however slow
    assert slower(_plan(70.8, feasible=False), _plan(91.8), "slime") is None


# slime async GRPO of Qwen3-235B-A22B on 16 + 48 H200 (the audit's n06): slime parks the
# reference (its mapping's implied train.offload.frozen), the training pool pipelines 6 deep.
PARKED = {
    "cluster": {"accelerator": "h200-sxm-141gb", "nodes": 8, "gpus_per_node": 8},
    "models": {"policy": "qwen3-235b-a22b", "reward": "verifier"},
    "workload": {**ASYNC["workload"], "prompts_per_step": 16, "prompt_tokens": 1024}
    | {"response_tokens": 12000, "max_response_tokens": 32768},
    "plan": {"placement": "disaggregated", "execution": "async"},
}


def test_review_of_an_export_with_parked_frozen_models_costs_its_memory_as_export(
    tmp_path: Path,
) -> None:
    # The launch packs --max-tokens-per-gpu into the reference's forward as into training
    # (slime's log_probs_max_tokens_per_gpu defaults to it); export's search once costed that
    # forward at one mean sequence under pipelining, so its plan fitted (frozen 0.0, total
    # 126.4 of 140 GiB) where review, costing the written budget, found 12.3 GiB frozen and
    # 36.3 GiB of activations in the assessment phase: "fits: no".
    scenario, out = tmp_path / "s.yaml", tmp_path / "run.sh"
    scenario.write_text(yaml.safe_dump(PARKED))
    args = ["export", str(scenario), "--framework", "slime"]
    written = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert written.exit_code == 0, written.output
    exported = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert exported.exit_code == 0, exported.output
    plan = json.JSONDecoder().raw_decode(exported.output)[0]["plan"]
    assert plan["train"]["offload"]["frozen"] is True
    got = review(out, "slime", hardware=Hardware("h200-sxm-141gb"))["estimate"]
    assert got["train"]["offload"]["frozen"] is True
    assert got["feasible"] == plan["feasible"]
    terms = got["memory_breakdown_gib"]["training"]
    assert terms == pytest.approx(plan["memory_breakdown_gib"]["training"])


# A pipelined plan: Megatron runs it on verl with dynamic batch size, which packs
# micro-batches up to ppo_max_token_len_per_gpu and cannot set that below the longest
# sequence (512 + 4,096 tokens here); the planner once costed one sequence per micro-batch
# while the export wrote the longest sequence's budget, so the review of its own export came
# out 1-2% slower than the header promised (audit10's d07, d09).
PIPELINED = {
    "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
    "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo",
        "prompts_per_step": 16,
        "samples_per_prompt": 8,
        "prompt_tokens": 512,
        "response_tokens": 1500,
        "max_response_tokens": 4096,
        "minibatches_per_step": 2,
    },
    "plan": {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 2},
        "train": {"gpus": 8, "tp": 1, "pp": 4, "zero": 1, "recompute": "full"},
    },
}


def test_a_pipelined_export_reviews_at_the_step_its_header_predicts(tmp_path: Path) -> None:
    scenario, out = tmp_path / "s.yaml", tmp_path / "run.sh"
    scenario.write_text(yaml.safe_dump(PIPELINED))
    done = CliRunner().invoke(
        cli, ["export", str(scenario), "--framework", "verl", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    script = out.read_text()
    assert "ppo_max_token_len_per_gpu=4608" in script  # 512 + 4,096
    (header,) = re.findall(r"; ([0-9.]+) s per step predicted", script)
    got = review(out, "verl", hardware=Hardware("h100-sxm-80gb"))
    assert got["estimate"]["step_seconds"] == pytest.approx(float(header), abs=0.05)
