"""Review and ranking judge a difference with one tie (rules.ranking.within_tie): a plan the
ranking puts first is not told to change, and every field where the best plan differs is
listed (audit7 #5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from rlmguide.rules.ranking import TIE_FRACTION, within_tie

from rlmguide.cli import cli
from rlmguide.review import Hardware, changes, review, tie_verdict
from rlmguide.review import _slower_than_reviewed as slower

# PPO with a critic and an 8B reward model on 16 A100-40GB (the audit's m04): OpenRLHF's rank 1
# (rollout TP 2) is kept by the tie over a faster rollout TP 4.
PPO = {
    "cluster": {"accelerator": "a100-sxm-40gb", "nodes": 2, "gpus_per_node": 8},
    "models": {
        "policy": "qwen2.5-7b",
        "critic": "qwen2.5-7b",
        "reward": "skywork-reward-llama-3.1-8b",
    },
    "workload": {
        "algorithm": "ppo",
        "prompts_per_step": 128,
        "samples_per_prompt": 1,
        "prompt_tokens": 1024,
        "response_tokens": 1024,
        "max_response_tokens": 2048,
        "minibatches_per_step": 2,
    },
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tie")
    scenario, out = folder / "s.yaml", folder / "run.sh"
    scenario.write_text(yaml.safe_dump(PPO))
    done = CliRunner().invoke(
        cli, ["export", str(scenario), "--framework", "openrlhf", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    return out


def _review(path: Path) -> dict[str, Any]:
    return review(path, hardware=Hardware("a100-sxm-40gb"))


def test_the_rank_1_export_is_not_told_to_change(exported: Path) -> None:
    # Before, review advised "rollout tp 2 -> 4: -18%" on the plan the ranking put first.
    got = _review(exported)
    assert got["tie"] is not None and got["tie"].startswith("no change advised")
    assert all(c["within_noise"] for c in got["changes"])
    faster = got["recommendation"].get("tie")
    if faster:  # the plan the tie passed over is named, as within the tie
        assert faster["faster_plan"] in got["tie"]
    done = CliRunner().invoke(cli, ["review", str(exported), "--accelerator", "a100-sxm-40gb"])
    assert done.exit_code == 0, done.output
    assert "no change advised" in " ".join(done.output.split())


def test_a_faster_launch_within_the_tie_is_not_said_to_be_unexpressible(
    exported: Path, tmp_path: Path
) -> None:
    # Before, the launch of the faster plan the tie passed over got "the search cannot
    # express part of the launch's plan" and no best plan.
    text = exported.read_text()
    assert "--vllm.tensor_parallel_size 2" in text and "--vllm.num_engines 8" in text
    faster = tmp_path / "tp4.sh"
    faster.write_text(
        text.replace("--vllm.tensor_parallel_size 2", "--vllm.tensor_parallel_size 4").replace(
            "--vllm.num_engines 8", "--vllm.num_engines 4"
        )
    )
    got = _review(faster)
    mine, best = got["estimate"]["step_seconds"], got["recommendation"]["step_seconds"]
    assert within_tie(mine, best) == (got["tie"] is not None)
    if mine < best and got["tie"]:
        assert "slower than this one but within the ranking's 20% tie" in got["tie"]
        assert "no_recommendation" not in got
    for change in got["changes"]:
        assert change["within_noise"] == within_tie(change["step_seconds"], mine)


def test_every_differing_field_is_a_change_nested_ones_too() -> None:
    # Before, a best plan that differed only in phase offload gave an empty table (m08).
    pools = {"rollout": {"gpus": 8, "tp": 2, "dp": 4}, "pools": {}}
    train = {"gpus": 8, "tp": 1, "dp": 8, "micro_batch_tokens": 4096}
    offload = {"phase": True, "optimizer": 0.0, "params": False, "frozen": True}
    reviewed = {"step_seconds": 100.0, "placement": "colocated", "execution": "async", **pools,
                "train": {**train, "offload": offload}}  # fmt: skip
    top = {**reviewed, "train": {**train, "dp": 4, "micro_batch_tokens": 8192,
                                 "offload": {**offload, "phase": False}}}  # fmt: skip
    found = changes(reviewed, top, lambda field, value: 75.0)
    assert [c["field"] for c in found] == ["train.offload.phase"]  # dp, micro-batch: sized
    assert found[0]["text"].startswith("train offload phase True -> False: -25% step time")
    assert not found[0]["within_noise"]


def _plan(seconds: float, feasible: bool = True, rollout_tp: int = 2) -> dict[str, Any]:
    offload = {"phase": False, "optimizer": 0.0, "params": False, "frozen": False}
    return {"step_seconds": seconds, "execution": "sync", "feasible": feasible,
            "placement": "colocated", "rollout": {"gpus": 8, "tp": rollout_tp, "pp": 1, "ep": 1},
            "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 3,
                      "recompute": "none", "offload": offload}}  # fmt: skip


def test_the_tie_verdict_by_hand() -> None:
    assert tie_verdict(_plan(42.4), _plan(50.8)) == (
        "no change advised: the best plan (50.8 s per step) is slower than this one but "
        "within the ranking's 20% tie, where the simpler plan ranks first"
    )
    assert tie_verdict(_plan(50.8), _plan(42.4)).endswith(
        "within the ranking's 20% tie of this one"
    )
    assert tie_verdict(_plan(50.8), _plan(50.77)) == (  # m04: re-costed at the launch's settings
        "no change advised: this is the ranking's first plan"
    )
    assert "takes as long as this one" in (
        tie_verdict(_plan(50.8), _plan(50.8, rollout_tp=4)) or ""
    )
    assert tie_verdict(_plan(100.0), _plan(70.0)) is None  # 43% slower: advice stands
    assert tie_verdict(_plan(100.0, feasible=False), _plan(95.0)) is None
    # a slower best within the tie is the ranking's simpler plan, not one the search missed
    assert slower(_plan(70.8), _plan(71.0), "slime") is None
    assert "cannot express part" in (slower(_plan(70.8), _plan(90.0), "slime") or "")


@given(st.floats(1.0, 1e4), st.floats(1.0, 1e4))
def test_within_tie_is_the_ranking_window(a: float, b: float) -> None:
    assert within_tie(a, b) == within_tie(b, a)
    assert within_tie(a, b) == (max(a, b) <= (1 + TIE_FRACTION) * min(a, b))
    assert within_tie(a, a)
