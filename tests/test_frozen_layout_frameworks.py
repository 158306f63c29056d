"""plan.assessment in the frameworks whose code lays the reference out on its own (SkyRL,
ROLL): export writes the reference's own keys, review reads them back as the layout, and a
reference keyed as the trainer reads as no layout. Frameworks that do not claim
frozen-model-layout refuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO
from rlmguide.rules.recommend import REMEDIES, TERM_NAMES, memory_shortfall

from rlmguide import api
from rlmguide.errors import RlmguideError
from rlmguide.review import Hardware, review
from rlmguide.review.review import frozen_layout

GRPO = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
"""Qwen2.5-7B (28 layers, 28 heads) with GRPO and a KL loss on one node of eight H100s."""


def scenario(**plan: Any) -> api.Scenario:
    data = yaml.safe_load(GRPO.read_text())
    data["plan"] = plan
    return api.Scenario.from_dict(data, origin="frozen-layout")


def keys(launch: Any) -> dict[str, Any]:
    return {a.key.lstrip("+"): a.value for a in launch.arguments}


def read_back(launch: Any, tmp_path: Path, framework: str) -> dict[str, Any]:
    syntax = launch.model_dump().get("syntax")
    path = tmp_path / ("run.yaml" if syntax == "yaml" else "run.sh")
    path.write_text(launch.script)
    got: dict[str, Any] = review(path, framework, hardware=Hardware("h100-sxm-80gb"))
    return got


def test_skyrl_megatron_writes_the_references_own_degrees_and_reads_them_back(
    tmp_path: Path,
) -> None:
    launch = api.export(scenario(train={"zero": 1}, assessment={"tp": 2}), "skyrl")
    written = keys(launch)
    plan = launch.model_dump(mode="json")["plan"]
    assert plan["assessment"] == {"tp": 2, "pp": 1, "dp": 4}
    assert written["trainer.ref.megatron_config.tensor_model_parallel_size"] == 2
    assert written["trainer.ref.megatron_config.pipeline_model_parallel_size"] == 1
    # the trainer keeps its own degree; the reference's context and expert keys are left at 1
    trainer_tp = written["trainer.policy.megatron_config.tensor_model_parallel_size"]
    assert trainer_tp == plan["train"]["tp"]
    assert "trainer.ref.megatron_config.context_parallel_size" not in written
    got = read_back(launch, tmp_path, "skyrl")
    assert got["scenario"]["plan"]["assessment"] == {"tp": 2, "pp": 1}
    assert got["estimate"]["assessment"] == {"tp": 2, "pp": 1, "dp": 4}


def test_skyrl_fsdp_replicates_the_reference_and_reads_it_back(tmp_path: Path) -> None:
    launch = api.export(scenario(train={"zero": 3}, assessment={"tp": 1}), "skyrl")
    written = keys(launch)
    assert written["trainer.strategy"] == "fsdp"
    assert written["trainer.ref.fsdp_config.fsdp_size"] == 1
    got = read_back(launch, tmp_path, "skyrl")
    assert got["scenario"]["plan"]["assessment"] == {"tp": 1, "pp": 1}


def test_skyrl_fsdp_has_no_tensor_split_for_the_reference() -> None:
    with pytest.raises(RlmguideError, match="cannot run this scenario"):
        api.export(scenario(train={"zero": 3}, assessment={"tp": 2}), "skyrl")


def test_a_megatron_reference_pipeline_must_divide_the_layers() -> None:
    # 8 stages over 28 layers: 8 GPUs hold one replica, but Megatron splits 28 layers evenly only
    # over a divisor (constraint megatron-frozen-pipeline-stages-divide-the-layers, the only one
    # that refuses it: without the record the same scenario exports); 4 stages do
    with pytest.raises(RlmguideError, match="cannot run this scenario"):
        api.export(scenario(train={"zero": 1}, assessment={"tp": 1, "pp": 8}), "skyrl")
    launch = api.export(scenario(train={"zero": 1}, assessment={"tp": 1, "pp": 4}), "skyrl")
    assert keys(launch)["trainer.ref.megatron_config.pipeline_model_parallel_size"] == 4


def test_a_reference_keyed_as_the_trainer_reads_as_no_layout(tmp_path: Path) -> None:
    launch = api.export(scenario(train={"zero": 1}), "skyrl")
    written = keys(launch)
    assert (
        written["trainer.ref.megatron_config.tensor_model_parallel_size"]
        == written["trainer.policy.megatron_config.tensor_model_parallel_size"]
    )
    got = read_back(launch, tmp_path, "skyrl")
    assert "assessment" not in got["scenario"]["plan"]


def test_roll_megatron_writes_the_references_own_degrees_and_reads_them_back(
    tmp_path: Path,
) -> None:
    launch = api.export(scenario(train={"zero": 1}, assessment={"tp": 2}), "roll")
    written = keys(launch)
    plan = launch.model_dump(mode="json")["plan"]
    ref = "reference.strategy_args.strategy_config"
    assert written["reference.strategy_args.strategy_name"] == "megatron_infer"
    assert written[f"{ref}.tensor_model_parallel_size"] == 2
    assert written[f"{ref}.pipeline_model_parallel_size"] == 1
    assert f"{ref}.context_parallel_size" not in written
    trainer_tp = written["actor_train.strategy_args.strategy_config.tensor_model_parallel_size"]
    assert trainer_tp == plan["train"]["tp"] != 2
    got = read_back(launch, tmp_path, "roll")
    assert got["scenario"]["plan"]["assessment"] == {"tp": 2, "pp": 1}


def test_roll_fsdp2_has_no_own_layout_for_the_reference() -> None:
    with pytest.raises(RlmguideError, match="cannot run this scenario"):
        api.export(scenario(train={"zero": 3}, assessment={"tp": 1}), "roll")
    plain = api.export(scenario(train={"zero": 3}), "roll")
    assert plain.model_dump()["plan"]["train"]["zero"] == 3


@pytest.mark.parametrize(
    ("facts", "layout"),
    [
        ({}, None),
        ({"plan.assessment.tp": 2, "plan.train.tp": 2, "plan.train.zero": 1}, None),
        # the trainer's degrees over ZeRO-3 shards: whole replicas are a layout of their own
        ({"plan.assessment.tp": 1, "plan.train.zero": 3}, {"tp": 1, "pp": 1}),
        (
            {"plan.assessment.tp": 2, "plan.assessment.pp": 2, "plan.train.tp": 2},
            {"tp": 2, "pp": 2},
        ),
        ({"plan.assessment.tp": 1, "plan.train.tp": 4, "plan.train.zero": 1}, {"tp": 1, "pp": 1}),
    ],
)
def test_frozen_layout_by_hand(facts: dict[str, Any], layout: dict[str, int] | None) -> None:
    assert frozen_layout(facts) == layout


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "nemo-rl", "slime", "areal"])
def test_frameworks_without_the_layout_refuse_it(framework: str) -> None:
    with pytest.raises(RlmguideError, match="frozen-model-layout"):
        api.export(scenario(assessment={"tp": 2}), framework)


def test_a_reshard_overflow_names_its_buffer_and_remedy() -> None:
    # A reference laid out TP 1 PP 8 on the trainer's GPUs needs a buffer for its re-laid
    # weights (M_reshard); where that buffer is what overflows, the failure names it.
    plan = {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 2, "pp": 1, "ep": 1},
        "train": {
            "gpus": 8,
            "tp": 1,
            "pp": 1,
            "cp": 1,
            "ep": 1,
            "zero": 1,
            "recompute": "full",
            "offload": {},
        },
        "pool_overflow_gib": {"rollout": 0.0, "train": 3.0},
        "memory_breakdown_gib": {"train": {"weights": 10.0, "activations": 20.0, "reshard": 40.0}},
    }
    said = memory_shortfall(plan)
    assert "largest: resharding buffer of the frozen models' own layout" in said
    assert said.endswith("(plan.pools)")
    assert "(usable 67.0 GiB)" in said


def test_every_memory_term_has_a_name_and_a_remedy() -> None:
    assert set(TERM_NAMES) == set(REMEDIES)


def test_every_term_a_bundled_plan_reports_has_a_name() -> None:
    # A term the cost core adds without a name here made a memory failure an internal
    # KeyError (the frozen models' resharding buffer, then fusion's streamed assessment).
    seen: set[str] = set()
    for example in sorted((REPO / "examples").glob("*.yaml")):
        try:
            found: Any = api.recommend(example, top=20, what_if=True, include_research=True)
        except RlmguideError:  # a plan only research systems run: estimate costs it
            found = api.estimate(example)
        for plan in found.model_dump(mode="json")["plans"]:
            for terms in plan["memory_breakdown_gib"].values():
                seen |= set(terms)
    assert "fused_assessment" in seen and "reshard" in seen
    assert seen <= set(TERM_NAMES)
