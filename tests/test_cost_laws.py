"""Laws every plan obeys, checked with hypothesis over random workloads and plan tables.

Brent bounds per stage and for the step; work that more GPUs never increase; a rollout depth
never below max_response_tokens x the minimum per-token latency; doubling every rate halves
every time; one plan evaluated alone equals the same plan inside a batch; the JSON keys.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import STAGES, CostTable, Needs, PlanTable, evaluate
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, Overheads
from rlmguide.cost.plans import PARTIAL_ROLLOUT
from rlmguide.kb.schema import Workload
from rlmguide.kb.schema.specs import AcceleratorFigures, Architecture
from test_cost_specs import A100, H100, LLAMA31_70B, QWEN3_30B_A3B, QWEN25_7B, random_plans

ARCHS = {"qwen2.5-7b": QWEN25_7B, "llama-3.1-70b": LLAMA31_70B, "qwen3-30b-a3b": QWEN3_30B_A3B}
TOLERANCE = 1e-9


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[AcceleratorFigures, Architecture, Workload, Needs, PlanTable]:
    arch = ARCHS[draw(st.sampled_from(sorted(ARCHS)))]
    accelerator = draw(st.sampled_from([H100, A100]))
    response = draw(st.integers(16, 8192))
    wl = Workload(
        prompts_per_step=draw(st.integers(1, 1024)),
        samples_per_prompt=draw(st.integers(1, 16)),
        prompt_tokens=draw(st.integers(16, 4096)),
        response_tokens=response,
        max_response_tokens=response + draw(st.integers(0, 24576)),
        minibatches_per_step=draw(st.integers(1, 8)),
        epochs=draw(st.integers(1, 2)),
    )
    needs = Needs(
        needs_critic=draw(st.booleans()),
        needs_reference=draw(st.booleans()),
        extra_generations_per_prompt=draw(st.integers(0, 1)),
    )
    plans = random_plans(draw(st.integers(0, 2**32 - 1)), arch, 12)
    return accelerator, arch, wl, needs, plans


def run(scenario: tuple, **kwargs: object) -> CostTable:  # type: ignore[type-arg]
    accelerator, arch, wl, needs, plans = scenario
    return evaluate(accelerator, arch, wl, plans, needs=needs, **kwargs)  # type: ignore[arg-type]


def within(lower: np.ndarray, value: np.ndarray, upper: np.ndarray) -> bool:
    slack = TOLERANCE * np.maximum(np.abs(upper), 1e-300)
    return bool(np.all(lower <= value + slack) and np.all(value <= upper + slack))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(scenarios())
def test_brent_bounds_hold_for_every_stage_and_the_step(scenario: tuple) -> None:  # type: ignore[type-arg]
    r = run(scenario)
    for name in STAGES:
        s = r.stages[name]
        assert within(s.lower_seconds, s.seconds, s.upper_seconds), name
        assert np.all(s.depth_seconds >= 0) and np.all(s.work_seconds >= 0), name
    assert within(r.step_lower_seconds, r.step_seconds, r.step_upper_seconds)
    assert np.all(np.isfinite(r.step_seconds)) and np.all(r.step_seconds > 0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scenarios())
def test_more_gpus_never_increase_work(scenario: tuple) -> None:  # type: ignore[type-arg]
    accelerator, arch, wl, needs, plans = scenario
    doubled = dataclasses.replace(
        plans,
        rollout_gpus=2 * plans.rollout_gpus, rollout_dp=2 * plans.rollout_dp,
        train_gpus=2 * plans.train_gpus, train_dp=2 * plans.train_dp,
    )  # fmt: skip
    small, large = run(scenario), run((accelerator, arch, wl, needs, doubled))
    for name in STAGES:
        assert np.all(large.stages[name].work_flop <= small.stages[name].work_flop * (1 + 1e-12)), (
            name
        )
        # and the work spread over them takes no longer, for the compute-heavy stages
    for name in ("assessment", "training"):
        compute_small = small.stages[name].compute_seconds
        assert np.all(large.stages[name].compute_seconds <= compute_small * (1 + 1e-12)), name


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scenarios(), st.sampled_from([1, 2, 4, 8]))
def test_rollout_depth_never_below_the_longest_response_at_minimum_latency(
    scenario: tuple,  # type: ignore[type-arg]
    widen: int,
) -> None:
    accelerator, arch, wl, needs, plans = scenario
    # more rollout replicas (and, colocated, the same GPUs for training)
    shared = np.where(plans.placement == 0, widen, 1)
    wider = dataclasses.replace(
        plans,
        rollout_gpus=widen * plans.rollout_gpus, rollout_dp=widen * plans.rollout_dp,
        train_gpus=shared * plans.train_gpus, train_dp=shared * plans.train_dp,
    )  # fmt: skip
    r = run((accelerator, arch, wl, needs, wider))
    longest = float(wl.max_response_tokens or wl.response_tokens)
    steps = np.where(
        plans.execution == PARTIAL_ROLLOUT, np.ceil(longest / (plans.staleness + 1)), longest
    )
    depth = r.stages["rollout"].depth_seconds
    # the plan's own lone-sequence step latency, and the host floor no GPU count removes
    assert np.all(depth >= steps * r.rollout_min_token_seconds * (1 - 1e-12))
    assert np.all(depth >= steps * DEFAULT_OVERHEADS.decode_step_seconds * (1 - 1e-12))


def faster(accelerator: AcceleratorFigures, k: float) -> AcceleratorFigures:
    return accelerator.model_copy(
        update={
            "hbm_tbytes_per_s": accelerator.hbm_tbytes_per_s * k,
            "bf16_dense_tflops": accelerator.bf16_dense_tflops * k,
            "scale_up_gbytes_per_s": accelerator.scale_up_gbytes_per_s * k,
            "scale_out_gbits_per_s": accelerator.scale_out_gbits_per_s * k,
            "fp8_dense_tflops": (accelerator.fp8_dense_tflops or 0) * k or None,
            "host_link_gbytes_per_s": (accelerator.host_link_gbytes_per_s or 0) * k or None,
        }
    )


def quicker(overheads: Overheads, k: float) -> Overheads:
    return dataclasses.replace(
        overheads,
        decode_step_seconds=overheads.decode_step_seconds / k,
        eager_layer_seconds=overheads.eager_layer_seconds / k,
        scale_up_latency_seconds=overheads.scale_up_latency_seconds / k,
        scale_out_latency_seconds=overheads.scale_out_latency_seconds / k,
        host_bytes_per_s=overheads.host_bytes_per_s * k,
        fallback_scale_out_gbits_per_s=overheads.fallback_scale_out_gbits_per_s * k,
        weight_sync_bucket_seconds=overheads.weight_sync_bucket_seconds / k,
        expert_loop_seconds=overheads.expert_loop_seconds / k,
        moe_layer_decode_seconds=overheads.moe_layer_decode_seconds / k,
        cpu_adam_bytes_per_s_per_node=overheads.cpu_adam_bytes_per_s_per_node * k,
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scenarios())
def test_doubling_every_rate_halves_every_time(scenario: tuple) -> None:  # type: ignore[type-arg]
    accelerator, arch, wl, needs, plans = scenario
    base = run(scenario)
    fast = evaluate(faster(accelerator, 2), arch, wl, plans, needs=needs,
                    overheads=quicker(DEFAULT_OVERHEADS, 2))  # fmt: skip
    for name in STAGES:
        for field in ("seconds", "work_seconds", "depth_seconds"):
            np.testing.assert_allclose(
                getattr(fast.stages[name], field), getattr(base.stages[name], field) / 2,
                rtol=1e-9, atol=0, err_msg=f"{name}.{field}",
            )  # fmt: skip
    np.testing.assert_allclose(fast.step_seconds, base.step_seconds / 2, rtol=1e-9)
    np.testing.assert_allclose(fast.tokens_per_second, base.tokens_per_second * 2, rtol=1e-9)
    np.testing.assert_array_equal(fast.memory_train_gib, base.memory_train_gib)
    np.testing.assert_array_equal(fast.feasible, base.feasible)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(scenarios())
def test_one_plan_alone_equals_the_same_plan_in_a_batch(scenario: tuple) -> None:  # type: ignore[type-arg]
    accelerator, arch, wl, needs, plans = scenario
    batch = run(scenario)
    for i in range(len(plans)):
        alone = evaluate(accelerator, arch, wl, plans.take([i]), needs=needs)
        assert alone.row(0) == batch.row(i)


def test_row_has_the_design_json_keys() -> None:
    plans = random_plans(7, QWEN25_7B, 6)
    r = evaluate(H100, QWEN25_7B, Workload(prompts_per_step=64, samples_per_prompt=8,
                 prompt_tokens=512, response_tokens=1024), plans)  # fmt: skip
    for i in range(len(plans)):
        row = json.loads(json.dumps(r.row(i)))
        assert {"placement", "execution", "rollout", "train", "step_seconds", "tokens_per_second",
                "stages", "memory_gib_per_gpu", "bottleneck"} <= row.keys()  # fmt: skip
        assert set(row["rollout"]) == {
            "gpus",
            "tp",
            "pp",
            "dp",
            "ep",
            "attention_dp",
            "cp",
            "precision",
            "cuda_graphs",
            "memory_fraction",
        }
        train_keys = {"gpus", "tp", "pp", "cp", "dp", "ep", "etp", "zero", "recompute",
                      "precision", "lora_rank", "offload", "micro_batch_tokens",
                      "fp32_gradients", "sequence_parallel", "virtual_stages",
                      "first_stage_layers", "last_stage_layers", "expert_layout"}  # fmt: skip
        assert set(row["train"]) == train_keys
        assert set(row["memory_gib_per_gpu"]) == {"rollout", "train"}
        assert set(row["headroom_gib_per_gpu"]) == {"rollout", "train"}
        names = [s["name"] for s in row["stages"]]
        assert names[:4] == ["rollout", "assessment", "training", "weight_sync"]
        for stage in row["stages"]:
            assert {"name", "seconds", "lower_seconds", "upper_seconds", "work_flop", "hbm_bytes",
                    "link_bytes", "depth_seconds", "gpus", "bound"} <= stage.keys()  # fmt: skip
            assert stage["bound"] in (
                "compute",
                "memory-bandwidth",
                "scale-up",
                "scale-out",
                "depth",
            )
        assert row["bottleneck"] in names
        trained = 64 * 8 * (512 + 1024)
        assert row["tokens_per_second"] == trained / row["step_seconds"]
