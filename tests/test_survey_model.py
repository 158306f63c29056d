"""The survey's idealised model (cost.survey_model, cost.survey_iteration) against numbers worked
by hand for a canonical MHA model, beside the byte-accurate figures of the calibrated model, and
the laws its formulas obey."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.memory import trained_state as calibrated_state
from rlmguide.cost.survey_iteration import (
    Iteration,
    Layouts,
    Models,
    configurations,
    offline_stages,
    stages,
)
from rlmguide.cost.survey_model import (
    Degrees,
    SurveyShape,
    backward_depth,
    decode_flops,
    forward_depth,
    generation_depth,
    global_,
    isolated_ep_global,
    isolated_ep_rank,
    kv_cache,
    parameters,
    per_rank,
    prefill_flops,
    train_depth,
    zero_state,
)
from rlmguide.kb.schema.specs import Architecture
from test_cost_specs import one_plan

# The canonical model of the survey's Table 3: multi-head attention (kv_heads = heads), a
# two-projection FFN, no bias. L = 2, d = 8, d_ff = 32, h = 2 (head width 4), V = 16. Embeddings
# are tied so that the calibrated count differs from the survey's only by the norms.
CANONICAL = Architecture(
    layers=2, hidden=8, heads=2, kv_heads=2, ffn=32, ffn_kind="plain", vocab=16,
    max_context_tokens=64, tied_embeddings=True,
)  # fmt: skip
SHAPE = SurveyShape.of(CANONICAL)
# An MoE variant for the expert rows: E = 4 experts of width d_e = 16, E_a = 2 active.
MOE = SurveyShape(layers=2, hidden=8, ffn=32, heads=2, vocab=16, experts=4, active_experts=2,
                  expert_ffn=16)  # fmt: skip
# |pi| = L(4d^2 + 2 d d_ff) + V d = 2(4*64 + 2*8*32) + 16*8 = 2(256 + 512) + 128 = 1664
SURVEY_PARAMS = 1664
# Calibrated count (kb.schema.specs): per layer attention 4d^2 = 256, two norms 2*8 = 16, FFN
# 2*8*32 = 512: 2*(256 + 16 + 512) = 1568; tied embedding 16*8 = 128; final norm 8: 1704.
CALIBRATED_PARAMS = 1704


def test_parameter_counts_by_hand() -> None:
    assert parameters(SHAPE, "policy") == SURVEY_PARAMS
    assert parameters(SHAPE, "critic") == SURVEY_PARAMS + 8  # the scalar head adds d
    assert CANONICAL.params_total == CALIBRATED_PARAMS  # the survey leaves out the 40 norms


def test_dpo_iteration_in_the_surveys_units_by_hand() -> None:
    # B.2.2 / Table 4, DPO column: 3 pairs (6 sequences: chosen and rejected), S = 4, T = 6,
    # so B_pairs(S+T) = 60 tokens. C_f^tok(pi) at m = 10: 2L[4d^2 + 2 d d_ff + m d] + 2Vd =
    # 4[256 + 512 + 80] + 256 = 3648.
    it = Iteration(prompts=3, samples=2, prompt_tokens=4, response_tokens=6)
    dpo = offline_stages(Models(policy=SHAPE, reference=SHAPE), it)
    orpo = offline_stages(Models(policy=SHAPE), it)
    assert (dpo.gen_work, dpo.gen_depth, dpo.gen_memory) == (0.0, 0.0, 0.0)
    assert dpo.assess_work == 60 * (3648 + 3648)  # policy and reference forwards
    assert orpo.assess_work == 60 * 3648  # reference-free: the policy's forward only
    assert dpo.train_work == orpo.train_work == 60 * 2 * 3648  # C_b = 2 C_f
    # Memory in elements: both models' weights and the policy's activations L d per token
    # (60 x 16 = 960); the reference's group holds d per token (60 x 8 = 480).
    assert dpo.assess_memory_sum == 2 * SURVEY_PARAMS + 960 == 4288
    assert dpo.assess_memory_groups == (SURVEY_PARAMS + 960, SURVEY_PARAMS + 480)
    assert dpo.train_memory_sum == 4 * SURVEY_PARAMS + 960 == 7616
    # Depth: the forwards run concurrently (max) or on one group (sum); the backward is
    # D_b = D_f + log(B(S+T)).
    d_f = float(forward_depth(SHAPE, 10))
    assert dpo.assess_depth_max == pytest.approx(d_f)
    assert dpo.assess_depth_sum == pytest.approx(2 * d_f)
    assert dpo.train_depth_sum == pytest.approx(d_f + math.log2(60))


def test_decode_closed_form_of_b13_by_hand() -> None:
    # S = 4, T = 4: T - 1 = 3 decode steps after the prefill.
    # 2(T-1)L(4d^2 + 2 d d_ff)          = 2*3*2*(256 + 512)      = 9216
    # 4 L d ((T-1)S + (T-1)T/2)         = 4*2*8*(12 + 6)         = 1152
    # 2(T-1) V d                        = 2*3*16*8               = 768
    #                                                      total = 11136
    assert decode_flops(SHAPE, 4, 4) == 11136
    # Table 3's sum, step by step: 2L(4d^2 + 2d d_ff + 2(S+t)d) + 2Vd = 4(768 + 16(4+t)) + 256
    # t = 1: 3072 + 320 + 256 = 3648; t = 2: 3712; t = 3: 3776; 3648 + 3712 + 3776 = 11136
    assert 3648 + 3712 + 3776 == 11136
    # Prefill: 2 L S (4d^2 + 2 d d_ff + S d) + 2Vd = 2*2*4*(256 + 512 + 32) + 256 = 13056
    assert prefill_flops(SHAPE, 4) == 13056
    # One decode step (T = 2) is t = 1 alone: 3648
    assert decode_flops(SHAPE, 4, 2) == 3648


def test_kv_cache_beside_its_bytes() -> None:
    # M_KV = 2(S+T) L d = 2*8*2*8 = 256 elements a rollout; B K = 4 rollouts hold 1024.
    assert kv_cache(SHAPE, 4, 4) == 256
    assert 4 * kv_cache(SHAPE, 4, 4) == 1024
    # The calibrated cache keeps keys and values of kv_heads x head_dim per layer in bf16:
    # 2 * 2 * 4 * 2 bytes * 2 layers = 64 bytes a token, 512 bytes for 8 tokens: for MHA the
    # same 256 elements at 2 bytes each.
    per_token = float(ModelFigures.of(CANONICAL).kv_bytes_per_token(1.0, 1.0))
    assert per_token == 64
    assert 8 * per_token == 2 * kv_cache(SHAPE, 4, 4)


def test_log_depths_by_hand() -> None:
    # log2 d = 3, log2 d_ff = 5, log2 h = 1, m = S + T = 8: log2 m = 3.
    # D_f = L(4*3 + 5 + 3 - 1) + log d = 2*19 + 3 = 41
    assert forward_depth(SHAPE, 8) == 41
    # D_f^TP, P_t = 2: L(19 - 2 log 2) + log(d/2) = 2*17 + 2 = 36
    assert forward_depth(SHAPE, 8, 2) == 36
    # D_b = D_f + log(B m) with B = 4 sequences: 41 + log2 32 = 46; D_tr = 41 + 46 = 87
    assert backward_depth(SHAPE, 8, 4) == 46
    assert train_depth(SHAPE, 8, 4) == 87
    # D_gen, S = 4, T = 4: four passes over contexts 4, 5, 6, 7. Without its log(context) a
    # pass is L(12 + 5 - 1) + 3 = 35; the contexts add L * log2(4*5*6*7) = 2 log2 840.
    assert generation_depth(SHAPE, 4, 4) == pytest.approx(4 * 35 + 2 * math.log2(840))
    # T = 1 is the prefill alone: D_f(S = 4) = 2(12 + 5 + 2 - 1) + 3 = 39
    assert generation_depth(SHAPE, 4, 1) == pytest.approx(39)


# B = 4 sequences of m = 8 tokens. Stored activations B m L d = 4*8*2*8 = 512. Dense model state
# L(16d^2 + 8 d d_ff) + 4Vd = 2(1024 + 2048) + 512 = 6656 = 4 |pi|.
# Work: 6 B m L (4d^2 + 2 d d_ff + m d) = 6*4*8*2*(256 + 512 + 64) = 384 * 832 = 319488.
# Depth: 2L log2(d^4 d_ff m / h) + log2(B m) = 4 log2(4096*32*8/2) + 5 = 4*19 + 5 = 81.
@pytest.mark.parametrize(
    ("degrees", "rank", "whole"),
    [
        # none: 6656 + 512
        (Degrees(), (319488, 81, 7168), (319488, 81, 7168)),
        # DP 2: activations / 2 -> 6656 + 256; depth log2(B m / 2) = 4; global 2*6656 + 512
        (Degrees(dp=2), (159744, 80, 6912), (319488, 81, 13824)),
        # PP 2: (L/2)(3072) + 4Vd + 512/2 = 3072 + 512 + 256; depth 2*1*19 + 5; global ~ base
        (Degrees(pp=2), (159744, 43, 3840), (319488, 81, 7168)),
        # TP 2: everything / 2 = 3584; depth 4*(19 - 2) + 5 = 73, kept in the global depth
        (Degrees(tp=2), (159744, 73, 3584), (319488, 73, 7168)),
        # CP 2: activations / 2; depth log2(B m / 2) = 4; global 2*6656 + 512
        (Degrees(cp=2), (159744, 80, 6912), (319488, 81, 13824)),
        # 3D (2, 2, 2): 6144/4 + 512/2 + 512/8 = 1536 + 256 + 64; depth 2*1*17 + log2 16;
        # work 319488 / 8; global memory 2*6656 + 512, global depth 4*17 + 5
        (Degrees(dp=2, pp=2, tp=2), (39936, 38, 1856), (319488, 73, 13824)),
    ],
)
def test_dense_layouts_per_rank_and_global_by_hand(
    degrees: Degrees, rank: tuple[float, ...], whole: tuple[float, ...]
) -> None:
    got_rank = per_rank(SHAPE, 4, 8, degrees)
    got_global = global_(SHAPE, 4, 8, degrees)
    assert (got_rank.work, got_rank.depth, got_rank.memory) == pytest.approx(rank)
    assert (got_global.work, got_global.depth, got_global.memory) == pytest.approx(whole)


def test_expert_layouts_per_rank_and_global_by_hand() -> None:
    # MoE: E = 4, E_a = 2, d_e = 16. Expert state 8 L E d d_e = 8*2*4*8*16 = 8192; dense
    # 16 L d^2 = 2048; 4Vd = 512; activations B m L d = 512.
    # Isolated EP, P_e = 2: L(16d^2 + 8 E d d_e / 2) + 4Vd + BmLd = 2(1024 + 2048) + 1024 = 7168
    # global: P_e(16Ld^2 + 4Vd + BmLd) + 8LEd d_e = 2(2048 + 512 + 512) + 8192 = 14336
    assert isolated_ep_rank(MOE, 4, 8, 2).memory == 7168
    assert isolated_ep_global(MOE, 4, 8, 2).memory == 14336
    # Work per rank: 6 B m L (4d^2 + 2 E_a d d_e / P_e + m d) = 384 (256 + 256 + 64) = 221184;
    # global 6 B m L (P_e(4d^2 + m d) + 2 E_a d d_e) = 384 (640 + 512) = 442368 (dense twice)
    assert isolated_ep_rank(MOE, 4, 8, 2).work == 221184
    assert isolated_ep_global(MOE, 4, 8, 2).work == 442368
    # 5D, every degree 2 (32 ranks): 2048/4 + 8192/8 + 512/2 + 512/32 = 512 + 1024 + 256 + 16
    five = Degrees(dp=2, pp=2, tp=2, cp=2, ep=2)
    assert per_rank(MOE, 4, 8, five).memory == 1808
    # global: P_d P_c P_e (2048 + 512) + 8 P_d P_c L E d d_e + BmLd = 8*2560 + 4*8192 + 512
    assert global_(MOE, 4, 8, five).memory == 20480 + 32768 + 512
    # depth per rank: 2 (L/P_p) log2(d^4 d_e m / (P_t^2 h)) + log2(B m / (P_d P_e P_c))
    #               = 2 * 1 * log2(4096*16*8/8) + log2(32/8) = 2*16 + 2 = 34
    assert per_rank(MOE, 4, 8, five).depth == 34


@pytest.mark.parametrize(
    ("zero", "elements", "nbytes"),
    [
        # survey (P = 1664, P_z = 4)          calibrated bf16 + fp32 Adam (P = 1704, dp = 4)
        (0, 4 * 1664, 16 * 1704),  # 4P = 6656      2 + 2 + 12 bytes: 27264
        (1, 2 * 1664 + 2 * 1664 / 4, 4 * 1704 + 12 * 1704 / 4),  # 4160   11928
        (2, 1664 + 3 * 1664 / 4, 2 * 1704 + 14 * 1704 / 4),  # 2912       9372
        (3, 4 * 1664 / 4, 16 * 1704 / 4),  # 1664                         6816
    ],
)
def test_zero_state_in_elements_beside_calibrated_bytes(
    zero: int, elements: float, nbytes: float
) -> None:
    assert zero_state(SURVEY_PARAMS, zero, 4) == elements
    layout = TrainLayout.of(one_plan(train_gpus=4, rollout_gpus=4, train_zero=zero))
    got = float(calibrated_state(ModelFigures.of(CANONICAL), layout).total[0])
    assert got == nbytes
    # Unsharded or fully sharded, every element is 4 bytes (16 bytes over the survey's 4
    # elements a parameter), up to the norms the survey does not count. ZeRO-1 and ZeRO-2 shard
    # half and three quarters of the survey's elements, but 3/4 and 7/8 of the bytes (the fp32
    # master copy sits with the moments), so their bytes per element fall below 4.
    per_element = got / elements * SURVEY_PARAMS / CALIBRATED_PARAMS
    expected = {0: 4.0, 1: 7 / 2.5, 2: 5.5 / 1.75, 3: 4.0}[zero]
    assert per_element == pytest.approx(expected)


# PPO with four models of the canonical shape; B = 2 prompts, K = 2, S = T = 4, so B K = 4
# sequences of m = 8 tokens. D_f = 41 for each assessed model, D_tr = 87 for each trained one.
PPO = Models(policy=SHAPE, reference=SHAPE, reward=SHAPE, critic=SHAPE)
ITERATION = Iteration(prompts=2, samples=2, prompt_tokens=4, response_tokens=4)
D_G = 4 * 35 + 2 * math.log2(840)  # see test_log_depths_by_hand


def test_table9_iteration_depths_by_hand() -> None:
    found = {c.name: c for c in configurations(PPO, ITERATION, Layouts(2.0, 2.0))}
    # baseline: D_G + (41 + 41 + 41) + (87 + 87)
    assert found["baseline"].depth == pytest.approx(D_G + 123 + 174)
    # shared actor-critic: one trained model, the critic's forward by the shared backbone
    assert found["shared actor-critic"].depth == pytest.approx(D_G + 123 + 87)
    # disaggregated: D_G + max of assessment + max of training
    assert found["disaggregated"].depth == pytest.approx(D_G + 41 + 87)
    # hybrid, TP 2 for generation and assessment: D_gen^TP = 4(2(12 + 5 - 1 - 2) + 2) +
    # 2 log2 840 = 120 + 2 log2 840; D_f^TP = 36 each; training unchanged 174
    assert found["hybrid"].depth == pytest.approx(120 + 2 * math.log2(840) + 3 * 36 + 174)
    # stage fusion: max(D_G, 41) + 87
    assert found["stage fusion"].depth == pytest.approx(D_G + 87)
    # asynchrony: max(D_G + 41, 87) = D_G + 41 (D_G is about 159)
    assert found["asynchronous"].depth == pytest.approx(D_G + 41)
    # combined: max(max(D_gen^TP, 41), 87) = D_gen^TP
    assert found["combined"].depth == pytest.approx(120 + 2 * math.log2(840))


def test_table9_memory_and_shared_work_by_hand() -> None:
    st_ = stages(PPO, ITERATION)
    # M_G = |pi| + B K M_KV = 1664 + 4*256 = 2688
    assert st_.gen_memory == 2688
    # M_T^sum = 4(|pi| + |V|) + B K m (L d + L d) = 4(1664 + 1672) + 32*32 = 13344 + 1024
    assert st_.train_memory_sum == 14368
    found = {c.name: c for c in configurations(PPO, ITERATION, Layouts())}
    assert found["baseline"].memory == 14368
    # disaggregated: the largest group is the critic's training, 4*1672 + 32*16 = 7200
    assert found["disaggregated"].memory == 7200
    # shared: the critic's work goes; training is one model. Work drops by
    # B K m (3 C_f(V) - 3 C_f(shared) + ...): checked here as strictly less
    assert found["shared actor-critic"].work < found["baseline"].work
    # every other configuration keeps the baseline's work (it reduces depth, not work)
    assert {c.work for n, c in found.items() if n != "shared actor-critic"} == {
        found["baseline"].work
    }


def test_grpo_has_no_shared_actor_critic_row() -> None:
    grpo = Models(policy=SHAPE, reference=SHAPE)
    names = [c.name for c in configurations(grpo, ITERATION, Layouts())]
    assert "shared actor-critic" not in names and len(names) == 6


powers = st.sampled_from([1, 2, 4, 8])
shapes = st.builds(
    SurveyShape,
    layers=st.integers(1, 96),
    hidden=st.sampled_from([512, 1024, 4096, 8192]),
    ffn=st.sampled_from([1024, 4096, 14336]),
    heads=st.sampled_from([8, 16, 32]),
    vocab=st.sampled_from([32000, 152064]),
    experts=st.sampled_from([1, 8, 64]),
    active_experts=st.sampled_from([1, 2]),
    expert_ffn=st.sampled_from([0, 1024]),
)


@settings(max_examples=200, deadline=None)
@given(
    s=shapes,
    dp=powers, pp=powers, tp=powers, cp=powers, ep=powers,
    sequences=st.integers(1, 4096), context=st.integers(2, 65536),
)  # fmt: skip
def test_per_rank_times_ranks_covers_the_global_figures(
    s: SurveyShape, dp: int, pp: int, tp: int, cp: int, ep: int, sequences: int, context: int
) -> None:
    degrees = Degrees(dp=dp, pp=pp, tp=tp, cp=cp, ep=ep)
    ranks = dp * pp * tp * cp * ep
    rank, whole = per_rank(s, sequences, context, degrees), global_(s, sequences, context, degrees)
    # Memory: the PP boundary stage's 4Vd is counted on every rank, so x ranks >= global.
    assert rank.memory * ranks >= whole.memory * (1 - 1e-12)
    # Work: 5D splits every FLOP once.
    assert rank.work * ranks == pytest.approx(whole.work, rel=1e-9)
    # Depth: a rank's critical path is part of the whole's (tp <= heads keeps layers positive).
    assert rank.depth <= whole.depth + 1e-9
    iso_rank = isolated_ep_rank(s, sequences, context, ep)
    iso_global = isolated_ep_global(s, sequences, context, ep)
    assert iso_rank.memory * ep == pytest.approx(iso_global.memory, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    s=shapes, prompt=st.integers(1, 8192), response=st.integers(1, 8192),
    longer=st.integers(1, 4096), tp=powers,
)  # fmt: skip
def test_depths_grow_with_sequence_length(
    s: SurveyShape, prompt: int, response: int, longer: int, tp: int
) -> None:
    assert generation_depth(s, prompt, response + longer, tp) > generation_depth(
        s, prompt, response, tp
    )
    assert generation_depth(s, prompt + longer, response, tp) > generation_depth(
        s, prompt, response, tp
    )
    m = prompt + response
    assert forward_depth(s, m + longer, tp) > forward_depth(s, m, tp)
    assert train_depth(s, m + longer, 8) > train_depth(s, m, 8)
    # tensor parallelism never lengthens a pass
    assert forward_depth(s, m, tp) <= forward_depth(s, m, 1)


@settings(max_examples=100, deadline=None)
@given(
    policy=shapes, critic=shapes, prompt=st.integers(1, 4096), response=st.integers(1, 8192),
    prompts=st.integers(1, 512), samples=st.integers(1, 16), tp=powers,
)  # fmt: skip
def test_table9_orderings(
    policy: SurveyShape,
    critic: SurveyShape,
    prompt: int,
    response: int,
    prompts: int,
    samples: int,
    tp: int,
) -> None:
    it = Iteration(prompts, samples, prompt, response)
    # The critic has the policy's shape (the scenarios' default), the reward model any shape:
    # with a much smaller critic a shared backbone can cost more than it saves (§4.1, B.4.3).
    ppo = Models(policy=policy, reference=policy, reward=critic, critic=policy)
    found = {c.name: c for c in configurations(ppo, it, Layouts(tp, tp))}
    base = found["baseline"]
    # Most schemes turn sums into maxima: depth never rises; shared actor-critic cuts work.
    assert found["disaggregated"].depth <= base.depth
    assert found["stage fusion"].depth <= found["disaggregated"].depth + 1e-9
    assert found["asynchronous"].depth <= found["disaggregated"].depth + 1e-9
    assert found["combined"].depth <= found["asynchronous"].depth + 1e-9
    assert found["hybrid"].depth <= base.depth + 1e-9
    assert found["shared actor-critic"].work < base.work
    assert found["disaggregated"].memory <= base.memory
    # Depth of every configuration grows with the response length.
    longer = {
        c.name: c
        for c in configurations(ppo, Iteration(prompts, samples, prompt, response + 64),
                                Layouts(tp, tp))
    }  # fmt: skip
    assert all(longer[n].depth > c.depth for n, c in found.items())


@settings(max_examples=100, deadline=None)
@given(params=st.integers(1, 10**12), group=st.integers(1, 4096))
def test_zero_stages_only_shrink_the_state(params: int, group: int) -> None:
    states = [float(zero_state(params, k, group)) for k in range(4)]
    assert states[0] == 4 * params
    assert all(a >= b for a, b in itertools.pairwise(states))
    assert states[3] * group == pytest.approx(4 * params)


ESTIMATE = [
    "estimate", str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"),
    "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
    "--set", "plan.rollout.tp=1", "--set", "plan.train.tp=1", "--set", "plan.train.zero=3",
    "--set", "plan.train.recompute=full", "--survey",
]  # fmt: skip


def test_estimate_survey_shows_the_survey_model_beside_the_calibrated_seconds() -> None:
    from click.testing import CliRunner

    from rlmguide.cli import cli

    done = CliRunner().invoke(cli, [*ESTIMATE, "--format", "json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    (plan,) = json.loads(done.output)["plans"]
    block = plan["survey_model"]
    assert block["source"] == "arxiv-2608.27046"
    # One group, tp 1 and pp 1 in both stages, but ZeRO-3 shards the parameters the rollout
    # holds whole: stage-specific layouts resharded on one group, Table 9's hybrid.
    assert block["configuration"] == "hybrid"
    rows = {r["configuration"]: r for r in block["table9"]}
    # GRPO with a verifier: no critic, so no shared actor-critic row.
    assert "shared actor-critic" not in rows and len(rows) == 6 + 1
    mine = [r["configuration"] for r in block["table9"] if r["this_plan"]]
    assert mine == ["hybrid", "this plan: hybrid"]
    # Its own row is Table 9's hybrid: TP 1 everywhere, so the same depth and memory.
    assert rows["this plan: hybrid"]["depth_ops"] == pytest.approx(rows["hybrid"]["depth_ops"])
    assert rows["this plan: hybrid"]["peak_memory_elements"] == pytest.approx(
        rows["hybrid"]["peak_memory_elements"]
    )
    stages_ = {s["name"]: s for s in block["stages"]}
    calibrated = {s["name"]: s for s in plan["stages"]}
    assert stages_["generation"]["calibrated_seconds"] == calibrated["rollout"]["seconds"]
    # The reference's pass and the actor's recomputed log-probs (B.4.1), one after the other on
    # the trainer's group: twice the depth of one, as the two models have one shape.
    assert [p["model"] for p in stages_["assessment"]["parts"]] == ["reference", "actor"]
    assert stages_["assessment"]["depth_ops"] == pytest.approx(
        2 * stages_["assessment"]["depth_ops_group_per_model"]
    )
    # The survey's FLOPs leave out GQA's narrower K/V and the gated FFN's third projection,
    # and the calibrated ones add recomputation: the same order of magnitude, not equal.
    for name, own in (("generation", "rollout"), ("training", "training")):
        ratio = stages_[name]["work_flop"] / calibrated[own]["work_flop"]
        assert 0.3 < ratio < 3, (name, ratio)
    # ZeRO-3 over 8 ranks: 4P/8 elements a rank.
    lay = block["policy_training_layout"]
    assert lay["zero_group"] == 8
    whole = rows["baseline"]["peak_memory_elements"]
    assert lay["zero_state_elements_per_rank"] * 8 < whole
    text = CliRunner().invoke(cli, ESTIMATE, catch_exceptions=False).output
    assert "iteration by Table 9" in text and "> hybrid" in text
