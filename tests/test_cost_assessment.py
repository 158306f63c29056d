"""Assessment by reward kind, reference model and old log-probs: numbers worked by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from rlmguide.cost import Needs, Scoring, evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.assessment import verdict_decode
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout, TrainLinks
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.units import GIB
from rlmguide.kb.schema import AcceleratorFigures, Architecture
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, random_plans, workload

P = float(QWEN7B_PARAMS)
ATTENTION = 401_408  # forward attention FLOPs per token per context token (Qwen2.5-7B)
KV_TOKEN = 57_344  # 2 (K, V) x 4 KV heads x 128 x 2 bytes x 28 layers, at tp 1
EFF = EfficiencyFactors()
HW = Hardware.of(H100, 8, DEFAULT_OVERHEADS)
# H100 with its fp8 figure (the test H100 has none, so its fp8 rate falls back to bf16).
H100_FP8 = H100.model_copy(update={"fp8_dense_tflops": 1979})
# Qwen2.5-1.5B: 28 layers, hidden 1536, 12 heads, 2 KV heads, FFN 8960, tied embeddings.
QWEN25_1_5B = Architecture(
    layers=28, hidden=1536, heads=12, kv_heads=2, ffn=8960, vocab=151936,
    max_context_tokens=131072, qkv_bias=True, tied_embeddings=True,
)  # fmt: skip
NO_REFERENCE = Needs(needs_reference=False)
# workload(): 512 prompts x 16 responses = 8192 responses of 1024 + 4096 tokens


def flop(accelerator: AcceleratorFigures = H100, **options: object) -> float:
    r = evaluate(accelerator, QWEN25_7B, workload(), one_plan(), **options)  # type: ignore[arg-type]
    return float(r.stages["assessment"].work_flop[0])


def test_judge_verdict_decode_by_hand() -> None:
    # Qwen2.5-7B as judge on 8 GPUs at tp 1: 8 replicas, 64 verdicts -> 8 per replica.
    # context 3000 tokens read, 200 written: mean context 3000 + 100 = 3100.
    # FLOPs per token: 2P + 401,408 x 3100 = 15,231,233,024 + 1,244,364,800 = 16,475,597,824
    # compute per step: 8 x 16,475,597,824 / (989e12 x 0.5) = 2.6654e-4 s
    # HBM per step: 2P (weights) + 8 x 57,344 x 3100 (KV) = 16,653,364,224 B
    #   / (3.35e12 x 0.6) = 8.2852e-3 s, the bound; + 6 ms host time per step
    # 200 steps: 200 x (8.2852e-3 + 6e-3) = 200 x 14.2852e-3 = 2.8570 s; a lone verdict:
    #   HBM 15,408,999,424 B -> 7.6662e-3 + 6e-3 = 13.6662e-3 s per step, depth 2.7332 s
    layout = TrainLayout.of(one_plan())
    links = TrainLinks.of(Fabric.of(HW, EFF, DEFAULT_OVERHEADS), layout)
    fig = ModelFigures.of(QWEN25_7B)
    stage = verdict_decode(fig, 64, 3000.0, 200, layout, links, HW, EFF, DEFAULT_OVERHEADS)
    assert 2 * P + ATTENTION * 3100 == 16_475_597_824
    assert stage.seconds[0] == pytest.approx(200 * (16_653_364_224 / 2.01e12 + 6e-3))
    assert stage.seconds[0] == pytest.approx(2.8570, rel=1e-4)
    assert stage.depth_seconds[0] == pytest.approx(200 * (15_408_999_424 / 2.01e12 + 6e-3))
    assert stage.compute_seconds[0] == pytest.approx(200 * 8 * 16_475_597_824 / 4.945e14)
    assert stage.work_flop[0] == pytest.approx(64 * 200 * 16_475_597_824)


def test_judge_kv_cache_that_does_not_fit_runs_in_waves() -> None:
    # 8000 verdicts over 8 replicas: 1000 each. Room for KV: 0.9 x 80 GiB - 2P - 1 GiB
    #   = 77,309,411,328 - 15,231,233,024 - 1,073,741,824 = 61,004,436,480 B
    # one sequence's KV: 57,344 x 3100 = 177,766,400 B -> 343 fit, so ceil(1000/343) = 3
    # waves of ceil(1000/3) = 334; a step: HBM (2P + 334 x 177,766,400) = 74,605,210,624 B
    #   / 2.01e12 = 37.117e-3 s > compute 334 x 16,475,597,824 / 4.945e14 = 11.128e-3 s
    # 3 waves x 200 steps x (37.117e-3 + 6e-3) = 600 x 43.117e-3 = 25.870 s
    layout = TrainLayout.of(one_plan())
    links = TrainLinks.of(Fabric.of(HW, EFF, DEFAULT_OVERHEADS), layout)
    fig = ModelFigures.of(QWEN25_7B)
    stage = verdict_decode(fig, 8000, 3000.0, 200, layout, links, HW, EFF, DEFAULT_OVERHEADS)
    assert (0.9 * 80 * GIB - 2 * P - GIB) // 177_766_400 == 343
    step = (2 * P + 334 * 177_766_400) / 2.01e12 + 6e-3
    assert stage.seconds[0] == pytest.approx(3 * 200 * step)
    assert stage.seconds[0] == pytest.approx(25.870, rel=1e-4)


def test_llm_judge_flops_by_hand() -> None:
    # Only the judge runs (no reference, old log-probs trusted): 8192 responses x 2 calls.
    # Prefill: 16,384 sequences of 1024 + 512 (rubric) + 4096 = 5632 tokens, each token
    #   2P + 401,408 x 5632 / 2 FLOPs. Decode: 16,384 x 256 tokens at mean context
    #   5632 + 128 = 5760: 2P + 401,408 x 5760 FLOPs each.
    judge = Scoring("llm-judge", calls_per_response=2, rubric_tokens=512, verdict_tokens=256)
    got = flop(needs=NO_REFERENCE, old_log_probs=False, reward=QWEN25_7B, scoring=judge)
    prefill = 16_384 * 5632 * (2 * P + ATTENTION * 2816)
    decode = 16_384 * 256 * (2 * P + ATTENTION * 5760)
    assert got == pytest.approx(prefill + decode)


def test_process_reward_model_cost_by_hand() -> None:
    # One pass (step scores read at the step separators): a reward model's forward,
    #   8192 x 5120 tokens at 2P + 401,408 x 2560 FLOPs each.
    # Per prefix, 4 steps: 4 passes per response over 1024 + 4096 x k/4 tokens (k = 1..4),
    #   4 x 1024 + 4096 x 5/2 = 14,336 tokens = 4 sequences of mean 1024 + 2560 = 3584,
    #   attention at the mean context 3584 / 2 = 1792.
    base = {"needs": NO_REFERENCE, "old_log_probs": False, "reward": QWEN25_7B}
    one = flop(**base, scoring=Scoring("process-reward-model", steps_per_response=4))
    assert one == pytest.approx(8192 * 5120 * (2 * P + ATTENTION * 2560))
    # an outcome reward model is the same network without the untied output projection
    # (152,064 x 3,584, replaced by a one-row scalar head): 2 (VH - H) FLOPs less a token
    head = 2.0 * (152_064 * 3_584 - 3_584)
    assert one - flop(**base) == pytest.approx(8192 * 5120 * head)
    prm = Scoring("process-reward-model", steps_per_response=4, per_prefix=True)
    per_prefix = flop(**base, scoring=prm)
    assert 4 * 3584 == 4 * 1024 + 4096 * 5 / 2
    assert per_prefix == pytest.approx(4 * 8192 * 3584 * (2 * P + ATTENTION * 1792))


def test_old_log_probs_from_the_rollout_save_one_policy_forward() -> None:
    # Reference + old log-probs: 2 forwards of 8192 x 5120 tokens; trusting the rollout
    # engine's log-probs leaves the reference's: one forward of 2P + 401,408 x 2560 per token.
    forward = 8192 * 5120 * (2 * P + ATTENTION * 2560)
    assert flop() == pytest.approx(2 * forward)
    assert flop(old_log_probs=False) == pytest.approx(forward)


@pytest.mark.parametrize("seed", [0, 1])
def test_old_log_probs_per_plan_cost_each_plan_as_its_own_switch(seed: int) -> None:
    """A launch that skips the pass in some execution modes (SkyRL's fully asynchronous
    trainer, trainer.py L1279-L1303 at a9564572) gives the switch per plan: every row costs
    exactly as the whole table does with the switch on, or off, for that row."""
    plans = random_plans(seed, QWEN25_7B, 40)
    skipped = np.arange(len(plans)) % 3 == 0
    kw = {"needs": Needs()}
    mixed = evaluate(H100, QWEN25_7B, workload(), plans, old_log_probs=~skipped, **kw)  # type: ignore[arg-type]
    on = evaluate(H100, QWEN25_7B, workload(), plans, old_log_probs=True, **kw)  # type: ignore[arg-type]
    off = evaluate(H100, QWEN25_7B, workload(), plans, old_log_probs=False, **kw)  # type: ignore[arg-type]
    for name in ("seconds", "work_flop"):
        got = getattr(mixed.stages["assessment"], name)
        want = np.where(
            skipped, getattr(off.stages["assessment"], name), getattr(on.stages["assessment"], name)
        )
        assert np.allclose(got, want), name
    assert np.allclose(mixed.step_seconds, np.where(skipped, off.step_seconds, on.step_seconds))
    assert (off.stages["assessment"].work_flop < on.stages["assessment"].work_flop).all()


def test_smaller_and_fp8_reference() -> None:
    # A Qwen2.5-1.5B reference: its forward replaces the policy's in the reference pass.
    small = ModelFigures.of(QWEN25_1_5B)
    own = flop(reference=QWEN25_1_5B)
    policy_forward = 8192 * 5120 * (2 * P + ATTENTION * 2560)
    ref_forward = 8192 * 5120 * (2 * small.params_active + small.attention_flops_per_context * 2560)
    assert own == pytest.approx(policy_forward + ref_forward)
    # fp8 runs the same FLOPs at twice the matmul rate (1979 vs 989 TFLOP/s): the compute
    # part of the reference pass halves (less than half of it overall: links and HBM stay).
    plan = one_plan()
    kw = {"needs": Needs(), "old_log_probs": False}
    bf16 = evaluate(H100_FP8, QWEN25_7B, workload(), plan, **kw)  # type: ignore[arg-type]
    fp8 = evaluate(H100_FP8, QWEN25_7B, workload(), plan, reference_fp8=True, **kw)  # type: ignore[arg-type]
    b, f = bf16.stages["assessment"], fp8.stages["assessment"]
    assert f.work_flop[0] == pytest.approx(b.work_flop[0])
    assert f.compute_seconds[0] == pytest.approx(b.compute_seconds[0] * 989 / 1979)
    assert f.seconds[0] < b.seconds[0]
    # Memory: ZeRO-3 over 8 ranks shards the frozen reference: 2P / 8 bytes in bf16, P / 8
    # in fp8 (one byte per weight).
    frozen = [r.memory_terms_gib["training"]["frozen_models"][0] for r in (bf16, fp8)]
    assert frozen[0] == pytest.approx(2 * P / 8 / GIB)
    assert frozen[1] == pytest.approx(P / 8 / GIB)


def test_assessment_parts_add_up_to_the_stage_on_one_pool() -> None:
    judge = Scoring("llm-judge", verdict_tokens=128)
    r = evaluate(H100, QWEN25_7B, workload(), one_plan(), reward=QWEN25_7B, scoring=judge)
    parts = r.row(0)["assessment_seconds_by_model"]
    assert set(parts) == {"reference", "actor", "reward"}
    assert sum(parts.values()) == pytest.approx(r.stages["assessment"].seconds[0])


@pytest.mark.parametrize("seed", [3, 11])
def test_assessment_time_is_monotone_in_judge_calls_verdicts_and_steps(seed: int) -> None:
    plans = random_plans(seed, QWEN25_7B, 40)
    wl = workload(prompts_per_step=64)

    def seconds(scoring: Scoring) -> np.ndarray:
        r = evaluate(H100, QWEN25_7B, wl, plans, reward=QWEN25_7B, scoring=scoring)
        return r.stages["assessment"].seconds

    calls = [
        seconds(Scoring("llm-judge", calls_per_response=c, verdict_tokens=64)) for c in (1, 2, 4)
    ]
    verdicts = [seconds(Scoring("llm-judge", verdict_tokens=v)) for v in (16, 128, 1024)]
    steps = [
        seconds(Scoring("process-reward-model", steps_per_response=s, per_prefix=True))
        for s in (1, 4, 16)
    ]
    for series in (calls, verdicts, steps):
        for low, high in itertools.pairwise(series):
            assert np.all(high >= low * (1 - 1e-12))
            assert np.any(high > low)
