"""ROLL and SkyRL park the reference model on the host between its passes (constraints
roll-reference-offloaded-after-each-call, skyrl-reference-parked-beside-the-policy): a plan
costed with the reference resident on the trainer's GPUs is not theirs, and their own plans are
costed with it parked (plan.train.offload_frozen: the host-to-device reload in the switch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO

from rlmguide.cli import cli

SMALL = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
PARKING = ("roll", "skyrl")


def _json(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_ranking_lists_them_only_on_plans_that_park_the_reference() -> None:
    # Before: ROLL was listed on every one of the first plans, each costed with the GRPO
    # reference resident on the training GPUs (offload.frozen false).
    plans = _json("recommend", SMALL, "--top", "10")["plans"]
    for plan in plans:
        if not plan["train"]["offload"]["frozen"]:
            assert not set(PARKING) & set(plan["frameworks"]), plan["frameworks"]


@pytest.mark.parametrize("framework", PARKING)
def test_their_own_plans_park_it_and_pay_the_reload(framework: str) -> None:
    plan = _json("recommend", SMALL, "--top", "1", "--framework", framework)["plans"][0]
    assert plan["train"]["offload"]["frozen"] is True
    assert plan["frameworks"] == [framework]
    switch = next(s for s in plan["stages"] if s["name"] == "switch")
    assert switch["seconds"] > 0


def test_estimate_labels_them_by_where_the_reference_is(tmp_path: Path) -> None:
    scenario = yaml.safe_load(Path(SMALL).read_text())
    frameworks = {}
    for frozen in (False, True):
        scenario["plan"] = {
            "placement": "colocated", "execution": "sync", "rollout": {"gpus": 8, "tp": 2},
            "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full",
                      "offload": {"frozen": frozen}},
        }  # fmt: skip
        path = tmp_path / f"frozen-{frozen}.yaml"
        path.write_text(yaml.safe_dump(scenario))
        plan = _json("estimate", str(path))["plans"][0]
        frameworks[frozen] = set(plan["frameworks"])
        seconds = {s["name"]: s["seconds"] for s in plan["stages"]}
        if frozen:  # the reference's reload, on the trainer's side of the step
            assert seconds["switch"] > 0
    assert "roll" in frameworks[True] and "roll" not in frameworks[False]
