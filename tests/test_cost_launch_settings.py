"""A launch's own memory settings in the cost: the engine's share of GPU memory, its cap on
sequences, the training micro-batch and fp32 gradient buffers (what `review` reads from a
launch and `estimate` costs instead of the search's choices)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.evaluate import evaluate
from rlmguide.cost.layouts import RolloutLayout, TrainLayout
from rlmguide.cost.memory import rollout_memory, trained_state
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.plans import PlanError, PlanTable
from rlmguide.cost.units import GIB
from rlmguide.kb.schema.scenario import Plan
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

P = float(QWEN7B_PARAMS)
FIG = ModelFigures.of(QWEN25_7B)
KV = 5120 * 57_344  # bytes of one mean sequence (1024 + 4096 tokens), tp 1


@pytest.mark.parametrize(
    ("zero", "expected"),
    [
        (0, 18 * P),  # 2 (bf16 weights) + 4 (fp32 gradients) + 12 (Adam), nothing sharded
        (1, 6 * P + 12 * P / 8),  # Megatron's distributed optimizer: 6 + 12/d bytes
        (2, 2 * P + 16 * P / 8),  # gradients sharded too
        (3, 16 * P / 8),  # FSDP's 16 bytes already hold the fp32 gradient shard
    ],
)
def test_fp32_gradients_by_hand(zero: int, expected: float) -> None:
    layout = TrainLayout.of(one_plan(train_zero=zero, train_fp32_gradients=True))
    assert trained_state(FIG, layout).total[0] == pytest.approx(expected, rel=1e-12)


def test_the_engine_share_a_launch_sets_sizes_the_kv_cache() -> None:
    # Qwen2.5-7B on one H100, gpu_memory_utilization 0.5: 40 GiB = 42,949,672,960 bytes, less
    # the weights (15,231,233,024) and the workspace (1 GiB) leaves 26,644,698,112 bytes of KV:
    # floor(26,644,698,112 / 293,601,280) = 90 sequences. A trainer's resident state does
    # not shrink a share the launch states (it decides whether the engine starts at all).
    usable = 0.9 * 80 * GIB

    def capacity(batch: Batch | None = None, **fields: object) -> float:
        layout = RolloutLayout.of(one_plan(rollout_gpus=1, train_gpus=1, **fields))
        batch = batch or Batch.of(workload(), Needs())
        mem = rollout_memory(
            FIG, layout, batch, usable, DEFAULT_OVERHEADS, resident=10 * GIB, total_bytes=80 * GIB
        )
        return float(mem.capacity[0])

    assert capacity(rollout_memory_fraction=0.5) == 90
    assert capacity(rollout_memory_fraction=0.5, rollout_max_seqs=64) == 64
    # unset, the budget is the usable memory less what stays resident: (0.9 x 80 - 10) GiB
    assert capacity() == (int(0.9 * 80 * GIB) - 10 * GIB - 2 * QWEN7B_PARAMS - GIB) // KV
    assert capacity(rollout_max_seqs=2048) == capacity()  # memory binds, not the cap
    # 128-token sequences: memory admits thousands, the cost model's cap 1024, the launch's 2048
    short = Batch.of(
        workload(prompt_tokens=64, response_tokens=64, max_response_tokens=64), Needs()
    )
    assert capacity(short) == DEFAULT_OVERHEADS.max_seqs_per_replica
    assert capacity(short, rollout_max_seqs=2048) == 2048


def test_an_engine_share_that_cannot_start_is_infeasible() -> None:
    # Colocated without offload, the trainer's ZeRO-3 state stays on the GPU: a share of 0.95
    # plus that state is more than the GPU, as vLLM's start-up check finds.
    plans = one_plan(rollout_memory_fraction=np.array([0.3, 0.95]))
    r = evaluate(H100, QWEN25_7B, workload(), plans)
    resident = r.memory_terms_gib["rollout"]["trainer_state"]
    assert resident[1] > 4.0
    assert r.feasible[0] and not r.feasible[1]
    assert r.pool_overflow_gib["rollout"][1] == pytest.approx(0.95 * 80 + resident[1] - 80)
    assert r.row(0)["rollout"]["memory_fraction"] == pytest.approx(0.3)


def test_a_launch_micro_batch_is_costed_as_set() -> None:
    # The search shrinks its budget to what fits; a launch's own budget is taken as it is
    # (up to the 256 x 5,120 tokens a rank trains per optimizer step),
    # and activations are linear in it.
    budgets = np.array([0, 20_000, 40_000, 1_000_000])
    r = evaluate(H100, QWEN25_7B, workload(), one_plan(train_micro_tokens=budgets), check=False)
    assert list(r.train_micro_tokens[1:]) == [20_000, 40_000, 1_000_000]
    acts = r.memory_terms_gib["training"]["activations"]
    assert acts[2] == pytest.approx(2 * acts[1], rel=1e-9)
    assert r.feasible[0] and not r.feasible[3]


def test_a_launch_forward_micro_batch_is_costed_apart_from_trainings() -> None:
    # ROLL's infer_batch_size: the forward-only passes (old log-probs, reference) run at a
    # micro-batch of their own. Set to the training budget nothing changes; far above it the
    # assessment phase peaks, its activations linear in it, and training's stay as they were.
    forward = np.array([0, 20_000, 1_000_000, 2_000_000])
    plans = one_plan(train_micro_tokens=20_000, train_forward_micro_tokens=forward)
    r = evaluate(H100, QWEN25_7B, workload(), plans, check=False)
    assert list(r.train_micro_tokens) == [20_000] * 4
    train = r.memory_train_gib
    assert train[1] == pytest.approx(train[0], rel=1e-12)
    acts = r.memory_terms_gib["training"]["activations"]
    assert acts[3] == pytest.approx(2 * acts[2], rel=1e-9)
    assert acts[2] > 10 * acts[0]
    assert r.feasible[0] and not r.feasible[3]
    assert plans.row(2)["train"]["forward_micro_batch_tokens"] == 1_000_000
    assert "forward_micro_batch_tokens" not in plans.row(0)["train"]


def test_a_forward_micro_batch_holds_at_least_the_longest_sequence() -> None:
    # A forward-only pass (old log-probs, the reference) cannot cut a sequence: below the
    # longest one (1,024 + 16,384 = 17,408 tokens here), its micro-batch is that sequence. With
    # the reference parked during training (offload frozen, ZeRO 1), the assessment phase is
    # the peak, so a 1,000-token forward budget costs what a 17,408-token one does (it was
    # 62.5 GiB against 77.0 while the budget was taken as is).
    forward = np.array([1_000, 17_408, 34_816])
    plans = one_plan(
        train_micro_tokens=1_000,
        train_forward_micro_tokens=forward,
        offload_frozen=True,
        train_zero=1,
    )
    r = evaluate(H100, QWEN25_7B, workload(), plans, check=False)
    train = r.memory_train_gib
    assert train[0] == pytest.approx(train[1], rel=1e-12)
    assert train[2] > train[1] + 20
    acts = r.memory_terms_gib["training"]["activations"]
    assert acts[2] == pytest.approx(2 * acts[1], rel=1e-9)


def test_bad_launch_settings_name_the_field() -> None:
    with pytest.raises(PlanError, match=r"rollout\.memory_fraction"):
        one_plan(rollout_memory_fraction=1.5)
    with pytest.raises(PlanError, match=r"train\.micro_batch_tokens"):
        one_plan(train_micro_tokens=-1)


def test_the_scenario_fields_reach_the_table() -> None:
    plan = Plan.model_validate(
        {
            "placement": "colocated",
            "execution": "sync",
            "rollout": {"gpus": 8, "tp": 1, "memory_fraction": 0.6, "max_seqs": 256},
            "train": {
                "tp": 1,
                "zero": 3,
                "recompute": "full",
                "micro_batch_tokens": 16_384,
                "fp32_gradients": True,
            },
        }
    )
    table = PlanTable.from_plans([plan])
    assert table.rollout_memory_fraction[0] == 0.6 and table.rollout_max_seqs[0] == 256
    assert table.train_micro_tokens[0] == 16_384 and table.train_fp32_gradients[0]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(low=st.floats(0.3, 0.85), high=st.floats(0.3, 0.85))
def test_a_larger_engine_share_is_never_slower(low: float, high: float) -> None:
    # Disaggregated (nothing resident beside the engine): more KV never slows the rollout.
    low, high = sorted((low, high))
    plans = one_plan(
        placement="disaggregated",
        rollout_gpus=8,
        train_gpus=8,
        rollout_memory_fraction=np.array([low, high]),
    )
    r = evaluate(H100, QWEN25_7B, workload(), plans, check=False)
    rollout = r.stages["rollout"].seconds
    assert rollout[1] <= rollout[0] * (1 + 1e-9)
