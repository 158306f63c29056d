"""Review reads the lag slime's fully-async launch implies, and flags it against the
scenario's (the export's departure note, read back).

train_async.py with slime's fully-async rollout function keeps --sglang-server-concurrency x
engines groups generating and queued (slime/rollout/fully_async_rollout.py L58-L60, L148-L153
at 624b824a) and a step drains --rollout-batch-size of them, oldest first (L215, L228-L232):
once generation outpaces training a trained group is about pool / rollout-batch-size versions
old. Export says so as a departure; review read every slime async launch at the mapping's
implied lag of 1. It now costs the queue's lag (at most the 16 a plan may have), shows it
beside the lag the export's header states, and still judges the loop's own lag (1) for the
start-up constraint slime-async-lags-one-step, which slime's queue does not trip.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from launch_support import catalogs
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide.export import build, script
from rlmguide.review import Hardware, review

WILD = Path(__file__).parent / "fixtures" / "review" / "wild" / "slime-624b824"
LAG_ROW = "policy versions a trained group lags"
QUEUE_NOTE = "keeps up to --sglang-server-concurrency x engines completed groups queued"


def _exported(tmp_path: Path, execution: str) -> tuple[Path, dict[str, Any]]:
    """Qwen3-8B GRPO on two nodes of H100s, 64 prompts a step, the scenario's lag 1."""
    data: dict[str, Any] = {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 2, "gpus_per_node": 8},
        "models": {"policy": "qwen3-8b", "reward": "verifier"},
        "workload": {
            "algorithm": "grpo",
            "prompts_per_step": 64,
            "samples_per_prompt": 8,
            "prompt_tokens": 512,
            "response_tokens": 2048,
            "max_response_tokens": 8192,
            "minibatches_per_step": 2,
        },
        "plan": {"execution": execution, "placement": "disaggregated", "max_staleness": 1},
    }
    catalog, mappings = catalogs()
    done = build(
        resolve(parse_scenario(data, "slime-lag"), catalog.records), catalog, mappings, "slime"
    )
    path = tmp_path / "run.sh"
    path.write_text(script(done, "slime-lag.yaml", "qwen3-8b"))
    return path, {a.key: a.value for a in done.arguments}


def _lag_rows(got: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in got["algorithm_settings"] if r["setting"] == LAG_ROW]


def test_an_exported_fully_async_launch_is_read_at_its_queue_lag(tmp_path: Path) -> None:
    path, args = _exported(tmp_path, "async")
    engines = int(args["rollout-num-gpus"]) // int(args["rollout-num-gpus-per-engine"])
    lag = math.ceil(int(args["sglang-server-concurrency"]) * engines / 64)
    assert 1 < lag <= 16  # the pool is several steps of prompts (128 x 4 engines / 64: 8)
    got = review(path, hardware=Hardware())
    assert got["scenario"]["plan"]["max_staleness"] == lag
    assert [(r["launch"], r["record"]) for r in _lag_rows(got)] == [(lag, 1)]
    assert "lags more than the scenario's 1" in _lag_rows(got)[0]["verdict"]
    # the export's note holds against the scenario's lag, as export judged it
    notes = [r for r in got["algorithm_settings"] if QUEUE_NOTE in str(r["verdict"])]
    assert len(notes) == 1
    # slime checks no lag: the loop's own (one step) is what its constraint judges
    assert got["startup"] == []


def test_the_one_step_off_loop_keeps_its_one_step(tmp_path: Path) -> None:
    path, _ = _exported(tmp_path, "one-step-off")
    got = review(path, hardware=Hardware())
    assert got["scenario"]["plan"].get("max_staleness") in (None, 1)
    assert _lag_rows(got) == []


def test_slime_defaults_give_a_lag_beyond_any_plan_costed_at_the_cap() -> None:
    """The 0.5B demo leaves --sglang-server-concurrency at 512 (slime/backends/sglang_utils/
    arguments.py L47) over 3 engines of 1 GPU and drains 8 prompts a step: 1536 / 8 = 192."""
    got = review(
        WILD / "examples" / "fully_async" / "run-qwen2.5-0.5B-fully_async.sh",
        hardware=Hardware("h100-sxm-80gb"),
    )
    assert got["scenario"]["plan"]["max_staleness"] == 16
    (row,) = _lag_rows(got)
    assert (row["launch"], row["record"]) == (192, None)
    assumed = [a for a in got["assumed"] if a["field"] == "plan.max_staleness"]
    assert "512 (the framework's default" in assumed[0]["why"]
    assert "costed at 16" in assumed[0]["why"]
