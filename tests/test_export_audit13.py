"""Launches the thirteenth held-out audit found would not run as their plan: an asynchronous
engine capped at one step's batch where the plan streams more (the stream's concurrency)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from launch_support import review_json

from rlmguide import api

# Not an audit scenario (those stay held out): the same mechanism on a smaller run.
ASYNC = """
cluster: {accelerator: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}
models: {policy: qwen2.5-7b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 64, samples_per_prompt: 8, prompt_tokens: 512,
           response_tokens: 2048, max_response_tokens: 8192, minibatches_per_step: 1}
plan: {placement: disaggregated, execution: async, max_staleness: 2}
"""


def test_streaming_engine_cap_admits_what_the_stream_runs(tmp_path: Path) -> None:
    """An engine that streams k steps ahead (async, own GPUs) holds up to k batches' worth of
    sequences (cost.rollout's steady concurrency, up to its KV room), more than one step's
    batch. SGLang caps its running batch at max_running_requests (AReaL's
    sglang.max_running_requests, areal/api/cli_args.py at fee938ea), so an export that wrote the
    batch's figure ran the stream at that cap: the review of the launch read it back ~4% slower
    than the plan it came from (audit13's AReaL scenario). Hand-checked here: 64 prompts x 8 over
    3 engines is 171 a batch, and with staleness 2 the stream holds 2 x 171 = 342, within the
    engine's KV room on an H100."""
    path = tmp_path / "s.yaml"
    path.write_text(ASYNC)
    done = api.export(path, "areal")
    plan = done.plan.model_dump()
    assert plan["rollout"]["gpus"] // plan["rollout"]["tp"] == 3
    assert plan["rollout_concurrency"] == 171
    assert plan["engine_concurrency"] == 342
    written = re.search(r"sglang\.max_running_requests=(\d+)", done.script)
    assert written is not None and int(written.group(1)) == 342
    out = tmp_path / "run.sh"
    out.write_text(done.script)
    read = review_json(out)
    assert read["estimate"]["step_seconds"] == pytest.approx(plan["step_seconds"], rel=1e-3)


def test_a_batch_engine_is_capped_at_its_batch(tmp_path: Path) -> None:
    """The same run synchronous drains every batch: its engines never hold more than the
    batch, and the cap stays the batch's."""
    path = tmp_path / "s.yaml"
    path.write_text(ASYNC.replace("execution: async, max_staleness: 2", "execution: sync"))
    plan = api.export(path, "areal").plan.model_dump()
    assert plan["engine_concurrency"] == plan["rollout_concurrency"]
