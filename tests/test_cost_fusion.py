"""Stage fusion's memory and granularity (survey §4.3, Table 9's stage-fusion row, takeaway 23):
the figures of a fused and an unfused plan worked by hand on a small model, and the laws
fusion and its chunk obey."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, PlanTable, evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.memory import activation_bytes
from rlmguide.cost.plans import FUSION_BOTH, FUSION_INTER, FUSION_INTRA, PlanError
from rlmguide.cost.survey_iteration import Iteration, Models
from rlmguide.cost.survey_model import SurveyShape
from rlmguide.cost.survey_plan import PlanShape, plan_iteration
from rlmguide.cost.units import GIB
from rlmguide.kb.schema import Workload
from rlmguide.kb.schema.specs import Architecture
from test_cost_configurations import variant, with_critic
from test_cost_laws import run, scenarios
from test_cost_specs import H100, one_plan

# Qwen2.5-0.5B config.json: 24 layers, hidden 896, 14 heads of 64, 2 KV heads, FFN 4864
# (SwiGLU), vocab 151936, tied embeddings, q/k/v biases.
QWEN25_05B = Architecture(
    layers=24, hidden=896, heads=14, kv_heads=2, ffn=4864, vocab=151936,
    max_context_tokens=32768, tied_embeddings=True, qkv_bias=True,
)  # fmt: skip
# 64 prompts x 8 samples of 512 + 1,536 tokens (no spread: every sequence is 2,048 tokens).
SMALL = Workload(
    algorithm="grpo", prompts_per_step=64, samples_per_prompt=8, prompt_tokens=512,
    response_tokens=1536, max_response_tokens=1536, minibatches_per_step=1, epochs=1,
)  # fmt: skip
# Forward-only bytes per token on the Hugging Face path at tp 1 (cost.memory.LayerTerms,
# end_bytes): one layer's norms 2 x (4 + 2 + 2) x 896 = 14,336; attention q, k, v and output
# (14 x 64 + 2 x 128 + 14 x 64 = 2,048 bf16 elements) and the fp32 log-sum-exp per head,
# 4,096 + 56 = 4,152; the gated MLP's gate, activation, up and product, 4 x 2 x 4,864 =
# 38,912; then the final norm, 8 x 896 = 7,168, the fp32 logits and their gradient,
# 8 x 151,936 = 1,215,488, and the fp32 loss, 4: 57,400 + 1,222,660.
FORWARD_BYTES_PER_TOKEN = 57_400 + 1_222_660
FRAGMENTS = 1.15  # the allocator's reserve on activations (Overheads.train_fragmentation_fraction)


def small(**fields: object) -> CostTable:
    """GRPO on 8 H100s, colocated and synchronous, ZeRO-1 (no gathers), one row."""
    plan = one_plan(train_zero=1, **fields)
    return evaluate(H100, QWEN25_05B, SMALL, plan, needs=Needs())


def test_fused_memory_worked_by_hand() -> None:
    plain, fused, fine = small(), small(fusion=FUSION_INTER), small(fusion=FUSION_INTER,
                                                                    fusion_chunk=8)  # fmt: skip
    # Unfused, the rollout engine sits beside the trainer's resident state alone.
    assert "fused_assessment" not in plain.memory_terms_gib["rollout"]
    # The default chunk is one assessment micro-batch per rank: 8 ranks x floor(16,384 /
    # 2,048) = 64 samples, 512 / 64 = 8 hand-offs; a rank's share, 8 sequences of 2,048
    # tokens, is the 16,384-token budget.
    assert (fused.fusion_chunk[0], fused.fusion_handoffs[0]) == (64, 8)
    held = FRAGMENTS * 16_384 * FORWARD_BYTES_PER_TOKEN  # 24,118,378,496 bytes
    assert fused.memory_terms_gib["rollout"]["fused_assessment"][0] == pytest.approx(held / GIB)
    assert held / GIB == pytest.approx(22.462, abs=1e-3)
    # 64 sequences per replica of 25 MB of KV each fit either way: the rollout peak rises by
    # exactly the streamed assessment, the trainer's own phases are unchanged.
    assert plain.rollout_concurrency[0] == fused.rollout_concurrency[0] == 64
    low, high = (sum(r.memory_terms_gib["rollout"].values())[0] for r in (plain, fused))
    assert high - low == pytest.approx(held / GIB)
    # The engine's budget gives the streamed assessment its room: its share of the 80 GiB falls
    # by exactly that, and the GPU holds the same 0.9 x 80 GiB while it generates.
    shrink = plain.rollout_memory_fraction[0] - fused.rollout_memory_fraction[0]
    assert shrink == pytest.approx(held / (80 * GIB))
    assert fused.memory_rollout_gib[0] == plain.memory_rollout_gib[0] == pytest.approx(72.0)
    assert fused.memory_train_gib[0] == plain.memory_train_gib[0]
    # A chunk of 8 samples is one 2,048-token sequence per rank: 1.15 x 2,048 x 1,280,060.
    assert fine.fusion_handoffs[0] == 64
    assert fine.memory_terms_gib["rollout"]["fused_assessment"][0] == pytest.approx(
        FRAGMENTS * 2_048 * FORWARD_BYTES_PER_TOKEN / GIB
    )
    assert pytest.approx(2.808, abs=1e-3) == FRAGMENTS * 2_048 * FORWARD_BYTES_PER_TOKEN / GIB


def test_fused_step_worked_by_hand() -> None:
    # 8 hand-offs of 64 samples: all but the last eighth of the assessment hides under the
    # decode, and each hand-off is a 10 us sync on one node (scale-up latency). On one pool
    # the assessment also only fills what the rollout leaves idle: at least W_G + W_A.
    plain, fused = small(), small(fusion=FUSION_INTER)
    stages = {k: fused.stages[k] for k in fused.stages}
    r, a = stages["rollout"], stages["assessment"]
    pair = max(r.seconds[0] + a.seconds[0] / 8, a.seconds[0], r.work_seconds[0] + a.work_seconds[0])
    rest = sum(stages[k].seconds[0] for k in ("training", "weight_sync", "switch"))
    assert fused.step_seconds[0] == pytest.approx(pair + 8 * 10e-6 + rest)
    assert fused.fusion_overhead_seconds[0] == pytest.approx(8 * 10e-6)
    # This rollout's time is its work (the small model's decode keeps the GPUs busy): on one
    # pool nothing hides, and fusion costs its syncs.
    assert r.seconds[0] == pytest.approx(r.work_seconds[0])
    assert fused.step_seconds[0] == pytest.approx(plain.step_seconds[0] + 8 * 10e-6)
    # On pools of their own (4 + 4 GPUs, still one node) the assessment runs beside the
    # decode: the rollout, the last chunk's assessment, the syncs, then training.
    apart = {"placement": "disaggregated", "rollout_gpus": 4, "train_gpus": 4}
    beside, streamed = small(**apart), small(fusion=FUSION_INTER, **apart)
    parts = {k: streamed.stages[k].seconds[0] for k in streamed.stages}
    # 4 ranks x 8 samples per micro-batch = 32 samples per hand-off, 16 hand-offs
    assert streamed.fusion_handoffs[0] == 16
    tail = parts["rollout"] + parts["assessment"] / 16 + 16 * 10e-6
    rest = parts["training"] + parts["weight_sync"] + parts["switch"]
    assert streamed.step_seconds[0] == pytest.approx(tail + rest)
    assert streamed.step_seconds[0] < beside.step_seconds[0]
    # One chunk of the whole batch is the unfused step plus one sync.
    whole = small(fusion=FUSION_INTER, fusion_chunk=512)
    assert whole.step_seconds[0] == pytest.approx(plain.step_seconds[0] + 10e-6)
    # 4 samples per hand-off leave 4 of the 8 ranks idle: the assessment takes twice as long.
    idle = small(fusion=FUSION_INTER, fusion_chunk=4)
    assert idle.fusion_overhead_seconds[0] == pytest.approx(
        128 * 10e-6 + plain.stages["assessment"].seconds[0]
    )


def test_intra_stage_fusion_holds_both_models_activations() -> None:
    # PPO, the critic on the actor's GPUs, micro-batches fixed at 8,192 tokens: in turn the
    # pool holds the larger model's activations, pipelined both at once.
    plan = one_plan(train_zero=1, train_micro_tokens=8192)
    ppo = Needs(needs_critic=True)
    plain = evaluate(H100, QWEN25_05B, SMALL, plan, needs=ppo)
    fused = evaluate(H100, QWEN25_05B, SMALL, variant(plan, fusion=FUSION_INTRA), needs=ppo)
    layout, ones = TrainLayout.of(plan), np.ones(1)
    actor = ModelFigures.of(QWEN25_05B)
    critic = actor.scoring()
    per_token = [float(activation_bytes(f, layout, ones, ones)[0]) for f in (actor, critic)]
    # the policy's logits make it the larger; the critic ends in a scalar head
    assert per_token[0] > per_token[1]
    terms = ("training", "activations")
    plain_act = plain.memory_terms_gib[terms[0]][terms[1]][0] * GIB
    fused_act = fused.memory_terms_gib[terms[0]][terms[1]][0] * GIB
    # In turn the assessment's forward binds (its logits at the 8,192-token budget, as worked
    # above), above the actor's training activations; pipelined, the two models' training
    # activations together bind.
    assert 8192 * per_token[0] < plain_act == pytest.approx(8192 * FORWARD_BYTES_PER_TOKEN)
    assert fused_act == pytest.approx(8192 * sum(per_token))
    assert fused_act > plain_act
    assert fused.memory_train_gib[0] > plain.memory_train_gib[0]


def test_calibrated_and_survey_models_hold_the_same_terms_at_once() -> None:
    """Table 9's stage-fusion row holds generation and assessment at once on one group
    (M_G/A^fused = M_G + M_A), and nothing more on separate groups; the calibrated plan holds
    the assessment's phase beside the engine exactly where the survey's plan adds them."""
    pi = SurveyShape.of(QWEN25_05B)
    models, it = Models(policy=pi, reference=pi), Iteration(64, 8, 512, 1536)
    for placement in ("colocated", "disaggregated"):
        apart = placement == "disaggregated"
        unfused = plan_iteration(models, it, PlanShape(rollout_apart=apart))
        fused = plan_iteration(models, it, PlanShape(rollout_apart=apart, inter_fusion=True))
        survey_rises = fused.memory > unfused.memory
        gpus = 4 if apart else 8
        plain = small(placement=placement, rollout_gpus=gpus, train_gpus=gpus)
        streamed = small(
            placement=placement, rollout_gpus=gpus, train_gpus=gpus, fusion=FUSION_INTER
        )
        terms = streamed.memory_terms_gib["rollout"]
        calibrated_rises = terms.get("fused_assessment", np.zeros(1))[0] > 0
        assert survey_rises == calibrated_rises == (not apart)
        if not apart:
            # the survey's group holds M_G + M_A: generation and assessment both counted
            gen = fused.generation
            assert gen is not None
            assert fused.groups["trainer"] >= gen.memory + sum(p.weights for p in fused.assessment)
            low, high = (sum(r.memory_terms_gib["rollout"].values())[0] for r in (plain, streamed))
            assert high > low


def test_a_chunk_needs_inter_stage_fusion() -> None:
    with pytest.raises(PlanError, match="fusion_chunk"):
        small(fusion_chunk=8)


# -- laws ----------------------------------------------------------------------------------


def fixed_micro_batches(scenario: tuple) -> tuple:  # type: ignore[type-arg]
    """The scenario with each plan's micro-batches fixed at what the search chose for it,
    so that fused and unfused plans train the same micro-batches."""
    tokens = run(scenario).train_micro_tokens.astype(np.int64)
    return (*scenario[:4], dataclasses.replace(scenario[4], train_micro_tokens=tokens))


def peaks(costs: CostTable) -> dict[str, np.ndarray]:
    return {pool: v for pool, v in costs.pool_overflow_gib.items() if pool != "host"}


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios(), st.sampled_from([FUSION_INTER, FUSION_INTRA, FUSION_BOTH]))
def test_fusion_never_lowers_peak_memory(scenario: tuple, fusion: int) -> None:  # type: ignore[type-arg]
    scenario = fixed_micro_batches(with_critic(scenario))
    plain = run(scenario)
    fused = run((*scenario[:4], variant(scenario[4], fusion=fusion)))
    for pool, peak in peaks(plain).items():
        assert np.all(peaks(fused)[pool] >= peak - 1e-9), pool
    assert np.all(fused.memory_train_gib >= plain.memory_train_gib - 1e-9)


def chunked(scenario: tuple, chunk: np.ndarray) -> CostTable:  # type: ignore[type-arg]
    plans: PlanTable = scenario[4]
    fused = dataclasses.replace(
        plans, fusion=np.full(len(plans), FUSION_INTER), fusion_chunk=chunk.astype(np.int64)
    )
    return run((*scenario[:4], fused))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios(), st.integers(1, 64), st.integers(1, 8))
def test_finer_chunks_never_lower_overhead_and_coarser_never_lower_memory(
    scenario: tuple,  # type: ignore[type-arg]
    fine: int,
    factor: int,
) -> None:
    n = len(scenario[4])
    small_chunks = chunked(scenario, np.full(n, fine))
    large_chunks = chunked(scenario, np.full(n, fine * factor))
    assert np.all(small_chunks.fusion_handoffs >= large_chunks.fusion_handoffs)
    assert np.all(
        small_chunks.fusion_overhead_seconds >= large_chunks.fusion_overhead_seconds - 1e-12
    )
    for pool, peak in peaks(small_chunks).items():
        assert np.all(peaks(large_chunks)[pool] >= peak - 1e-9), pool
