"""The prompt cap (workload.max_prompt_tokens): every export writes it where a framework caps
prompts or context lengths, memory is sized at it while the step time keeps the mean, review
reads it back, and a cap below the mean is refused naming the field (audit D6: the mean prompt
was written as the cap, so verl truncated and AReaL dropped every longer prompt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from pydantic import ValidationError
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.memory import rollout_memory
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.units import GIB
from rlmguide.kb.schema import Workload
from test_cost_specs import QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

from rlmguide import api
from rlmguide.cli import cli
from rlmguide.export.render import SCENARIO_LINE
from rlmguide.review import Hardware, review

SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
"""Qwen2.5-7B GRPO on 8 H100s: prompts of 512 tokens on average, responses of 8,192 at most."""
CAP = 2048


def _small(**workload: Any) -> dict[str, Any]:
    data = yaml.safe_load(SMALL.read_text())
    data["workload"].update(workload)
    return data  # type: ignore[no-any-return]


def _written(launch: api.Launch) -> dict[str, Any]:
    return {a.key.lstrip("+-"): a.value for a in launch.arguments}


# framework (mapping version), its key and the value written: the prompt cap itself, or a
# context bound of the longest prompt plus the longest response (8,192)
WRITES = [
    ("verl", None, "data.max_prompt_length", CAP),
    ("verl", "0.7.0-125-gb178a3cd5", "data.max_prompt_length", CAP),
    ("areal", "1.0.4-17-g4aef98d8d", "train_dataset.max_length", CAP),
    ("areal", None, "train_dataset.max_length", CAP),
    ("areal", None, "gconfig.max_tokens", CAP + 8192),
    ("skyrl", None, "trainer.max_prompt_length", CAP),
    ("roll", None, "prompt_length", CAP),
    ("slime", None, "rollout-max-context-len", CAP + 8192),
    ("openrlhf", None, "data.max_len", CAP + 8192),
    ("openrlhf", "0.8.9.post1-5-gc250c21a", "prompt_max_len", CAP),
    ("nemo-rl", None, "policy.max_total_sequence_length", CAP + 8192),
]


@pytest.mark.parametrize(("framework", "version", "key", "value"), WRITES)
def test_export_writes_the_prompt_cap_not_the_mean(
    framework: str, version: str | None, key: str, value: int
) -> None:
    scenario = api.Scenario.from_dict(_small(max_prompt_tokens=CAP))
    written = _written(api.export(scenario, framework, version=version))
    assert written[key] == value


def test_without_a_cap_the_mean_is_written_and_the_outputs_say_so() -> None:
    launch = api.export(api.Scenario.from_dict(_small()), "verl")
    assert _written(launch)["data.max_prompt_length"] == 512
    assert "# Prompt cap: workload.max_prompt_tokens is not given" in launch.script
    capped_launch = api.export(api.Scenario.from_dict(_small(max_prompt_tokens=CAP)), "verl")
    assert "# Prompt cap" not in capped_launch.script
    found = api.recommend(api.Scenario.from_dict(_small()), top=1).model_dump(mode="json")
    assert found["scenario"]["workload"]["max_prompt_tokens"] == 512
    (note,) = [n for n in found["resolution_notes"] if "max_prompt_tokens is not given" in n]
    assert "prompt cap" in note
    capped = api.recommend(api.Scenario.from_dict(_small(max_prompt_tokens=CAP)), top=1)
    notes = capped.model_dump(mode="json")["resolution_notes"]
    assert not any("prompt" in n for n in notes)


def test_rollout_memory_holds_the_longest_prompt_by_hand() -> None:
    # Qwen2.5-7B, tp 1: 2 x 28 layers x 4 KV heads x 128 x 2 bytes = 57,344 bytes a token.
    # A cap of 4,096 over a mean of 1,024: one longest sequence holds 4,096 + 16,384 tokens
    # (before: 1,024 + 16,384), 3,072 x 57,344 = 176,160,768 bytes more; the KV reserved per
    # concurrent sequence stays the mean's (1,024 + 4,096), and with it the step time.
    layout = RolloutLayout.of(one_plan(rollout_gpus=1, train_gpus=1))
    usable = 0.9 * 80 * GIB
    fig = ModelFigures.of(QWEN25_7B)
    mean = rollout_memory(fig, layout, Batch.of(workload(), Needs()), usable, DEFAULT_OVERHEADS)
    capped_batch = Batch.of(workload(max_prompt_tokens=4096), Needs())
    capped = rollout_memory(fig, layout, capped_batch, usable, DEFAULT_OVERHEADS)
    assert capped.minimum[0] == 2 * QWEN7B_PARAMS + GIB + 20480 * 57_344
    assert capped.minimum[0] - mean.minimum[0] == 176_160_768
    assert capped.kv_per_sequence[0] == mean.kv_per_sequence[0] == 5120 * 57_344
    assert capped.capacity[0] == mean.capacity[0] == 207
    # tokens added to every prompt (a judge's rubric) lengthen the longest one too
    assert capped_batch.longest_sequence_tokens == 4096 + 16384
    assert capped_batch.sequence_tokens == 1024 + 4096


def test_a_cap_raises_memory_and_keeps_the_step_time() -> None:
    def plan(data: dict[str, Any]) -> dict[str, Any]:
        return api.estimate(api.Scenario.from_dict(data)).model_dump(mode="json")["plans"][0]

    fixed = {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 1, "pp": 1},
        "train": {"gpus": 8, "tp": 1, "pp": 1, "cp": 1, "zero": 3, "recompute": "full"},
    }
    mean = plan({**_small(), "plan": fixed})
    # 16,384 + 8,192 tokens: a longest sequence beyond the 16,384-token micro-batch budget
    capped = plan({**_small(max_prompt_tokens=16384), "plan": fixed})
    assert capped["step_seconds"] == mean["step_seconds"]
    assert capped["memory_gib_per_gpu"]["train"] > mean["memory_gib_per_gpu"]["train"]


def test_a_cap_below_the_mean_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"max_prompt_tokens \(512\) is below the mean"):
        Workload(prompts_per_step=8, prompt_tokens=1024, max_prompt_tokens=512, response_tokens=64)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_small(max_prompt_tokens=256)))
    result = CliRunner().invoke(cli, ["recommend", str(path)])
    assert result.exit_code == 2
    assert "max_prompt_tokens (256) is below the mean prompt_tokens (512)" in result.output


def test_a_cap_alone_gives_the_mean_at_it_said_so() -> None:
    only = Workload(prompts_per_step=8, max_prompt_tokens=3000, response_tokens=64)
    assert (only.prompt_tokens, only.prompt_tokens_from) == (3000, "cap")
    data = _small(max_prompt_tokens=CAP)
    del data["workload"]["prompt_tokens"]
    found = api.recommend(api.Scenario.from_dict(data), top=1).model_dump(mode="json")
    assert any("prompt_tokens is not given" in n for n in found["resolution_notes"])


@pytest.mark.parametrize("framework", ["verl", "areal", "skyrl", "roll", "slime"])
def test_review_reads_the_cap_back(framework: str, tmp_path: Path) -> None:
    launch = api.export(api.Scenario.from_dict(_small(max_prompt_tokens=CAP)), framework)
    syntax = launch.model_dump().get("syntax")
    path = tmp_path / ("run.yaml" if syntax == "yaml" else "run.sh")
    path.write_text(launch.script)
    # the export's header states the mean under the cap (review.header)
    stated = review(path, framework, hardware=Hardware("h100-sxm-80gb"))["scenario"]["workload"]
    assert (stated["max_prompt_tokens"], stated["prompt_tokens"]) == (CAP, 512)
    assert "prompt_tokens_from" not in stated
    text = path.read_text()
    path.write_text("".join(line for line in text.splitlines(keepends=True)
                            if not line.startswith(SCENARIO_LINE)))  # fmt: skip
    got = review(path, framework, hardware=Hardware("h100-sxm-80gb"))
    read = got["scenario"]["workload"]
    assert read["max_prompt_tokens"] == CAP
    # a launch without the header gives no mean: it is taken at the cap, and the review says
    # it assumed it
    assert (read["prompt_tokens"], read["prompt_tokens_from"]) == (CAP, "cap")
    (mean,) = [a for a in got["assumed"] if a["field"] == "workload.prompt_tokens"]
    assert mean["value"] == CAP
    assert "workload.prompt_tokens" in got["rests_on_assumptions"]
    # the flag gives the mean beside the file's cap
    flagged = review(path, framework, hardware=Hardware("h100-sxm-80gb", prompt_tokens=512))
    assert flagged["scenario"]["workload"]["prompt_tokens"] == 512
    assert flagged["scenario"]["workload"]["max_prompt_tokens"] == CAP


def test_the_cli_sets_the_cap() -> None:
    result = CliRunner().invoke(
        cli,
        ["export", str(SMALL), "--framework", "verl", "--max-prompt-tokens", "4096",
         "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    written = {a["key"]: a["value"] for a in json.loads(result.output)["arguments"]}
    assert written["data.max_prompt_length"] == 4096
