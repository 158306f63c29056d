"""Launches the thirteenth held-out audit found would not run as their plan: an asynchronous
engine capped at one step's batch where the plan streams more (the stream's concurrency), and
an SGLang engine of a hybrid linear-attention model costed at more sequences than its state
pool admits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from launch_support import review_json
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.memory import rollout_memory
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, for_framework
from rlmguide.cost.units import GIB
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from test_cost_specs import one_plan, workload

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


def test_sglang_hybrid_engine_runs_what_its_state_pool_admits() -> None:
    """SGLang keeps a linear layer's recurrent state in float32 (configs/mamba_utils.py
    L47-L107 at 0.5.15.post1) and, with its radix cache on as slime leaves it, splits the cache
    memory 0.9 : 1 between a state pool and the KV pool, running at most a fifth of the state
    slots (model_runner_kv_cache_mixin.py L186-L220, L1239-L1252; 3 + 2 for the extra buffer).
    The cost model pooled both at bf16, so slime's Qwen3.5-35B-A3B engine (audit13) was costed
    at 128 sequences where SGLang runs about 77.

    By hand, Qwen3.5-27B on a TP 4 engine (48 Gated DeltaNet layers of 48 heads x 128 x 128
    and a conv window of 3 x 10,240; 16 full layers of 4 KV heads x 256), per GPU: a state of
    48 x (786,432 x 4 + 30,720 x 2) / 4 = 38,486,016 bytes; KV 16 x 2 x 256 x 2 = 16,384 bytes
    a token, 83,886,080 for the 5,120-token mean sequence. With 20 GiB free: pooled at bf16
    (19,611,648 bytes of state) 207 sequences; SGLang's state pool floor(20 GiB x 0.9 / 1.9 /
    (5 x 38,486,016)) = 52, its KV pool floor(20 GiB / 1.9 / 83,886,080) = 134: 52."""
    arch = load_catalog(record_roots(), ("model",)).of("model")["qwen3.5-27b"].architecture
    fig = ModelFigures.of(arch)
    layout = RolloutLayout.of(one_plan(rollout_gpus=4, rollout_tp=4, train_gpus=4))
    batch = Batch.of(workload(), Needs())
    weights = rollout_memory(fig, layout, batch, 1e12, DEFAULT_OVERHEADS).weights[0]
    usable = weights + DEFAULT_OVERHEADS.rollout_workspace_bytes + 20 * GIB
    pooled = rollout_memory(fig, layout, batch, usable, DEFAULT_OVERHEADS)
    assert pooled.kv_per_sequence[0] == 83_886_080 + 19_611_648
    assert pooled.capacity[0] == 207
    slime = for_framework(DEFAULT_OVERHEADS, "slime", 80.0, "H100")
    apart = rollout_memory(fig, layout, batch, usable, slime)
    assert apart.kv_per_sequence[0] == 83_886_080 + 38_486_016
    assert apart.capacity[0] == 52
    # AReaL turns SGLang's radix cache off: one pool, with the float32 state
    areal = for_framework(DEFAULT_OVERHEADS, "areal", 80.0, "H100")
    assert rollout_memory(fig, layout, batch, usable, areal).capacity[0] == (
        20 * GIB // (83_886_080 + 38_486_016)
    )
