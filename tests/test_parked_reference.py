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


def test_the_default_ranking_lists_them_where_they_run_its_parked_twin(tmp_path: Path) -> None:
    # Before: the default search costed the parked variant of a plan only beside phase
    # offload, so ROLL's FSDP2 (which refuses phase offload) was never listed on the README
    # example's top plan; now that plan's twin with the reference parked is costed, shown
    # under `also`, and ROLL is listed as running it.
    plan = _json("recommend", SMALL, "--top", "1")["plans"][0]
    assert not plan["train"]["offload"]["frozen"]
    assert plan["reference_parked_by"] == ["roll"]
    assert "roll" in plan["launchable_by"] and "roll" not in plan["frameworks"]
    # mapped frameworks first: ROLL follows the mapped ones the plan lists itself
    mapped = [f for f in plan["launchable_by"] if f in ("verl", "openrlhf", "roll")]
    assert plan["launchable_by"][: len(mapped)] == mapped
    # the twin: the same plan with the reference parked, which ROLL's claims allow, within
    # 2% of the plan's time (one plan as the ranking shows plans)
    scenario = yaml.safe_load(Path(SMALL).read_text())
    train = {k: plan["train"][k] for k in ("gpus", "tp", "pp", "cp", "ep", "zero", "recompute")}
    scenario["plan"] = {
        "placement": plan["placement"],
        "execution": plan["execution"],
        "rollout": {k: plan["rollout"][k] for k in ("gpus", "tp", "pp", "ep")},
        "train": {**train, "offload": {**plan["train"]["offload"], "frozen": True}},
    }
    path = tmp_path / "twin.yaml"
    path.write_text(yaml.safe_dump(scenario))
    twin = _json("estimate", str(path))["plans"][0]
    assert "roll" in twin["frameworks"]
    assert twin["step_seconds"] <= 1.02 * plan["step_seconds"]
