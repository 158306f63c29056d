"""slime's fully asynchronous launch and the plan's lag (audit12).

train_async.py with slime.rollout.fully_async_rollout.generate_rollout_fully_async sizes its pool
of prompt groups by --sglang-server-concurrency x engines (fully_async_rollout.py L58-L60 at
624b824a): up to that many completed groups wait in its queue (L148-L153) and a step drains only
--rollout-batch-size of them, oldest first (L215, L228-L232). Where that pool holds more than the
plan's max_staleness steps of prompts, the groups trained once generation outpaces training are
older than the plan's lag, and the export says so as a departure; where it holds fewer, or the
launch is the one-step-off loop without the function, it says nothing.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from launch_support import catalogs
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide.export import Exported, build, script
from rlmguide.export.render import DEPARTURE_LINE

FUNCTION = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
QUEUE_NOTE = "keeps up to --sglang-server-concurrency x engines completed groups queued"


@cache
def exported(prompts: int, execution: str) -> Exported:
    """Qwen3-8B on two nodes of H100s, GRPO with groups of 8, disaggregated, lag 1."""
    data: dict[str, Any] = {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 2, "gpus_per_node": 8},
        "models": {"policy": "qwen3-8b", "reward": "verifier"},
        "workload": {
            "algorithm": "grpo",
            "prompts_per_step": prompts,
            "samples_per_prompt": 8,
            "prompt_tokens": 512,
            "response_tokens": 2048,
            "max_response_tokens": 8192,
            "minibatches_per_step": 2,
        },
        "plan": {"execution": execution, "placement": "disaggregated", "max_staleness": 1},
    }
    catalog, mappings = catalogs()
    return build(
        resolve(parse_scenario(data, "slime-async"), catalog.records), catalog, mappings, "slime"
    )


def written(done: Exported) -> dict[str, Any]:
    return {a.key: a.value for a in done.arguments}


def pool_groups(done: Exported) -> int:
    """The fully-async worker's pool as slime computes it from the written flags:
    concurrency x engines, engines being rollout GPUs over GPUs per engine (http_utils.py
    L201-L210)."""
    args = written(done)
    engines = int(args["rollout-num-gpus"]) // int(args["rollout-num-gpus-per-engine"])
    return int(args["sglang-server-concurrency"]) * engines


def test_a_pool_beyond_one_step_of_prompts_is_a_departure() -> None:
    done = exported(64, "async")
    assert f"--rollout-function-path={FUNCTION}" in done.launch.fixed
    assert written(done)["rollout-batch-size"] == 64
    # the pool is several steps of prompts (a concurrency of a hundred or more sequences per
    # engine against 64 prompts), so a queued group waits several drains
    assert pool_groups(done) > 64 * 1
    notes = [n for n in done.departures if QUEUE_NOTE in n]
    assert len(notes) == 1
    text = script(done, "slime-async.yaml", "qwen3-8b")
    assert f"{DEPARTURE_LINE} {notes[0]}" in text.splitlines()


@pytest.mark.parametrize(("prompts", "execution"), [(2048, "async"), (64, "one-step-off")])
def test_no_departure_where_the_queue_holds_the_lag(prompts: int, execution: str) -> None:
    """A pool of at most one step's prompts lags no more than the plan; the one-step-off loop
    (train_async.py with slime's default rollout function) drains each rollout it starts."""
    done = exported(prompts, execution)
    if execution == "async":
        assert pool_groups(done) <= prompts * 1
    else:
        assert FUNCTION not in " ".join(done.launch.fixed)
    assert not [n for n in done.departures if QUEUE_NOTE in n]
