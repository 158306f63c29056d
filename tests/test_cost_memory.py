"""Memory per GPU: ZeRO stages, activations from the architecture, KV capacity, offload, LoRA."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.band import MEMORY_BAND
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import RolloutLayout, TrainLayout
from rlmguide.cost.memory import (
    LayerTerms,
    TrainMemory,
    activation_bytes,
    end_bytes,
    first_stage_in_flight,
    forward_activation_bytes,
    head_gather_bytes,
    host_state_bytes,
    layer_bytes,
    rollout_memory,
    trained_state,
    training_memory,
)
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, for_framework
from rlmguide.cost.plans import PlanTable
from rlmguide.cost.units import GIB
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Workload
from rlmguide.rules.search import stage_split
from test_cost_specs import (
    DEEPSEEK_V3,
    H100,
    LLAMA31_70B,
    QWEN3_30B_A3B,
    QWEN7B_PARAMS,
    QWEN25_7B,
    one_plan,
    workload,
)

P = float(QWEN7B_PARAMS)


def train_layout(**fields: object) -> TrainLayout:
    return TrainLayout.of(one_plan(**fields))


@pytest.mark.parametrize(
    ("zero", "expected"),
    [
        (0, 16 * P),  # 2 + 2 + 12 bytes per parameter, nothing sharded: 121.8 GB
        (1, 4 * P + 12 * P / 8),  # optimizer states / 8: 5.5 P = 41.9 GB
        (2, 2 * P + 14 * P / 8),  # gradients too: 3.75 P = 28.6 GB
        (3, 16 * P / 8),  # weights too: 2 P = 15.2 GB
    ],
)
def test_zero_stage_memory_by_hand(zero: int, expected: float) -> None:
    # Qwen2.5-7B, tp = pp = 1, ZeRO over dp = 8
    layout = train_layout(train_zero=zero)
    got = trained_state(ModelFigures.of(QWEN25_7B), layout).total[0]
    assert got == pytest.approx(expected, rel=1e-12)


def test_zero_shards_over_dp_times_cp_and_model_parallel_splits_first() -> None:
    # tp 2, cp 2 on 8 GPUs: dp 2, ZeRO-1 group dp * cp = 4; shard P / 2:
    # 4 * P/2 + 12 * P/2 / 4 = 2 P + 1.5 P = 3.5 P
    layout = train_layout(train_tp=2, train_cp=2, train_zero=1)
    got = trained_state(ModelFigures.of(QWEN25_7B), layout).total[0]
    assert got == pytest.approx(3.5 * P, rel=1e-12)


def test_expert_states_shard_over_expert_data_parallel_group() -> None:
    # Qwen3-30B-A3B on 8 GPUs, ep 8, ZeRO-1: experts / 8 per GPU and their optimizer states
    # shard over dp * cp / ep = 1 rank (no sharding); dense weights' over 8.
    fig = ModelFigures.of(QWEN3_30B_A3B)
    layout = train_layout(train_ep=8, train_zero=1)
    expert = fig.expert_params / 8
    expected = 16 * expert + 4 * fig.dense_params + 12 * fig.dense_params / 8
    assert trained_state(fig, layout).total[0] == pytest.approx(expected, rel=1e-12)


def test_zero3_holds_two_gathered_layers_and_one_layers_gradient_by_hand() -> None:
    # Qwen3-30B-A3B on 8 GPUs, ZeRO-3, ep 2: a layer's experts are 28,991,029,248 / 48 / 2 =
    # 301,989,888 parameters per rank, gathered over 8 / 2 = 4 ranks (3/4 not its own); its
    # dense weights (non-embedding) over all 8 (7/8). Forward: two layers gathered, 2 bytes
    # each; backward also the computing layer's whole bf16 gradient.
    from rlmguide.cost.memory import zero3_gather_bytes

    fig = ModelFigures.of(QWEN3_30B_A3B)
    layout = train_layout(train_ep=2, train_zero=3)
    expert = 28_991_029_248 / 48 / 2
    dense = (fig.dense_params - fig.embedding_params) / 48
    forward = 2 * 2 * (expert * 3 / 4 + dense * 7 / 8)
    assert zero3_gather_bytes(fig, layout, False)[0] == pytest.approx(forward, rel=1e-12)
    backward = forward + 2 * (expert + dense)
    assert zero3_gather_bytes(fig, layout, True)[0] == pytest.approx(backward, rel=1e-12)
    assert expert * 2 * (2 * 3 / 4 + 1) == pytest.approx(1.51e9, rel=1e-3)  # the experts' 1.5 GB
    # nothing gathered below ZeRO-3, no gradient under LoRA
    assert zero3_gather_bytes(fig, train_layout(train_ep=2, train_zero=1), True)[0] == 0
    lora = train_layout(train_ep=2, train_zero=3, train_lora_rank=16)
    assert zero3_gather_bytes(fig, lora, True)[0] == pytest.approx(forward, rel=1e-12)


def test_layer_terms_of_a_dense_gqa_swiglu_model_by_hand() -> None:
    # Qwen2.5-7B: h 3584, 28 heads and 4 KV heads of 128, SwiGLU FFN 18944, bytes per token.
    megatron = LayerTerms.of(ModelFigures.of(QWEN25_7B), megatron=True)
    assert megatron.norms == 2 * (2 + 2) * 3584  # TE LayerNormLinear: input and output, x2
    # q 28*128 + k, v 4*128 each, in bf16; output 28*128 in bf16; fp32 LSE per head
    assert megatron.attention == 2 * (3584 + 512 + 512) + 2 * 3584 + 4 * 28  # 16,496
    assert megatron.mlp == 2 * 3 * 18944  # fused gate|up output and the product: 113,664
    assert megatron.router == megatron.dispatch == megatron.combine == 0
    assert megatron.total == 158_832  # 44.3 h, not Korthikanti's 34 h
    hf = LayerTerms.of(ModelFigures.of(QWEN25_7B), megatron=False)
    assert hf.norms == 2 * (4 + 2 + 2) * 3584  # fp32 upcast, normalised bf16, output
    assert hf.mlp == 2 * 4 * 18944  # gate, SiLU(gate), up, product
    assert hf.total == 57_344 + 16_496 + 151_552  # 225,392


def test_layer_terms_of_a_llama_shape_match_korthikanti() -> None:
    # Llama-3.1-70B: h 8192, 64 heads, 8 KV heads, FFN 28672 = 3.5 h gated: 274,688 bytes,
    # 33.5 h: the 34 s h of Korthikanti et al. holds for this shape (4 h GeLU equivalent).
    terms = LayerTerms.of(ModelFigures.of(LLAMA31_70B), megatron=True)
    assert terms.norms == 8 * 8192
    assert terms.attention == 2 * (8192 + 1024 + 1024) + 2 * 8192 + 4 * 64  # 37,120
    assert terms.mlp == 6 * 28672  # 172,032
    assert terms.total == 274_688
    assert 33 * 8192 < terms.total < 34 * 8192


def test_layer_terms_of_an_moe_model_by_hand() -> None:
    # Qwen3-30B-A3B: h 2048, 32 heads, 4 KV heads of 128, 128 experts, top 8, expert FFN 768.
    fig = ModelFigures.of(QWEN3_30B_A3B)
    megatron = LayerTerms.of(fig, megatron=True)
    assert megatron.attention == 2 * (4096 + 512 + 512) + 2 * 4096 + 4 * 32  # 18,560
    assert megatron.router == 2 * 4 * 128  # fp32 probabilities, twice
    assert megatron.dispatch == 8 * 2 * 2048  # top-8 token copies kept by the grouped GEMM
    assert megatron.mlp == 8 * 6 * 768  # eight experts' fc1 output and product
    assert megatron.combine == 0  # Megatron weights inside the expert
    assert megatron.total == 16_384 + 18_560 + 1_024 + 32_768 + 36_864  # 105,600
    # expert tensor parallelism all-gathers the copies: etp 2 keeps twice them, over tp 2
    got = megatron.per_layer(np.array([2.0]), np.array([2.0]))[0]
    assert got == (105_600 + 32_768) / 2
    hf = LayerTerms.of(fig, megatron=False)
    assert hf.mlp == 8 * 8 * 768 and hf.combine == 8 * 2 * 2048  # expert outputs x weights
    assert hf.total == 32_768 + 18_560 + 1_024 + 32_768 + 49_152 + 32_768  # 167,040


def test_mla_attention_terms_by_hand() -> None:
    # DeepSeek-V3: 128 heads, qk 128 + 64 rope, v 128, q latent 1536, kv latent 512: q, and k
    # and v materialised per head, the output, and both latents' norm input and output.
    terms = LayerTerms.of(ModelFigures.of(DEEPSEEK_V3), megatron=True)
    elements = 128 * 192 + 128 * (192 + 128) + 128 * 128 + 2 * (1536 + 512)  # 86,016
    assert terms.attention == 2 * elements + 4 * 128


QWEN3_8B = QWEN25_7B.model_copy(
    update=dict(layers=36, hidden=4096, heads=32, kv_heads=8, ffn=12288, vocab=151936,
                qkv_bias=False, qk_norm=True)
)  # fmt: skip


def test_qk_norm_inputs_of_qwen3_8b_by_hand() -> None:
    # Qwen3-8B: h 4096, 32 heads and 8 KV heads of 128, q_norm and k_norm over each head.
    # Megatron (TE RMSNorm): a bf16 copy of q and k and an fp32 1/rms per head, 40 x 260;
    # Hugging Face (Qwen3RMSNorm): fp32 upcast and normalised bf16 copy, 40 x (6 x 128 + 4).
    fig = ModelFigures.of(QWEN3_8B)
    megatron = LayerTerms.of(fig, megatron=True)
    assert megatron.qk_norm == 40 * (2 * 128 + 4) == 10_400
    assert megatron.attention == 2 * (4096 + 1024 + 1024) + 2 * 4096 + 4 * 32  # 20,608
    assert megatron.total == 8 * 4096 + 20_608 + 6 * 12288 + 10_400  # 137,504, 8.2% more
    hf = LayerTerms.of(fig, megatron=False)
    assert hf.qk_norm == 40 * (6 * 128 + 4) == 30_880
    assert hf.total == 16 * 4096 + 20_608 + 8 * 12288 + 30_880  # 215,328
    # tp 2 with sequence parallelism, no pipeline, no recomputation, 16,384 tokens: 36 layers
    # of 137,504 / 2, the last stage's final norm (4 h / 2) and loss ((6 x 151,936 + 4) / 2),
    # and the output layer's all-gathered input (2 h, whole on each rank)
    layout = train_layout(train_tp=2, train_recompute="none")
    got = activation_bytes(fig, layout, np.array([16_384.0]), np.array([1.0]))[0]
    per_token = 36 * 137_504 / 2 + 4 * 4096 / 2 + (6 * 151_936 + 4) / 2 + 2 * 4096  # 2,947,266
    assert got == pytest.approx(16_384 * per_token, rel=1e-12)
    assert got / GIB == pytest.approx(44.97, abs=0.005)  # 42.12 GiB without the q/k inputs
    unknown = ModelFigures.of(QWEN3_8B.model_copy(update=dict(qk_norm=None)))
    plain = activation_bytes(unknown, layout, np.array([16_384.0]), np.array([1.0]))[0]
    assert plain / GIB == pytest.approx(42.12, abs=0.005)


def test_qk_norm_counts_attention_layers_only() -> None:
    # Qwen3.5-27B: three Gated DeltaNet layers to one gated full-attention layer; only the
    # full-attention layers normalise q and k. MLA keeps its latent norms in `attention`.
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import DEFAULT_ROOTS

    models = load_catalog(DEFAULT_ROOTS, ("model",)).of("model")
    arch = models["qwen3.5-27b"].architecture  # type: ignore[attr-defined]
    fig = ModelFigures.of(arch)
    assert arch.qk_norm and fig.qk_norm_layers == arch.layers // 4
    full = LayerTerms.of(replace(fig, qk_norm_layers=fig.layers), megatron=True).qk_norm
    assert LayerTerms.of(fig, megatron=True).qk_norm == pytest.approx(full / 4)
    mla = ModelFigures.of(DEEPSEEK_V3)
    assert LayerTerms.of(replace(mla, qk_norm_layers=mla.layers), megatron=True).qk_norm == 0


@settings(max_examples=60, deadline=None)
@given(
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    recompute=st.sampled_from(["none", "selective", "full"]),
    tokens=st.integers(1, 65_536),
)
def test_qk_norm_never_lowers_activations(tp: int, pp: int, recompute: str, tokens: int) -> None:
    layout = train_layout(train_gpus=8 * tp * pp, train_tp=tp, train_pp=pp,
                          train_recompute=recompute)  # fmt: skip
    t, m = np.array([float(tokens)]), np.array([4.0])
    with_norm = activation_bytes(ModelFigures.of(QWEN3_8B), layout, t, m)[0]
    unknown = ModelFigures.of(QWEN3_8B.model_copy(update=dict(qk_norm=None)))
    without = activation_bytes(unknown, layout, t, m)[0]
    # full recomputation rebuilds one layer, which the logits may outweigh
    assert with_norm > without if recompute != "full" else with_norm >= without


def test_stage_layers_by_hand() -> None:
    # Qwen2.5-7B (28 layers) over 6 stages: even stages are costed at ceil(28 / 6) = 5 each;
    # Megatron's account-for-embedding-and-loss split is (28 + 2) / 6 = 5 a stage, 4 decoder
    # layers at each end, 4 x 5 in the middle. Qwen3-235B-A22B's 94 over 8: 11, 6 x 12, 11.
    fig = ModelFigures.of(QWEN25_7B)
    pp, none = np.array([6.0]), np.array([0.0])
    assert [x[0] for x in fig.stage_layers(pp, none, none)] == [5, 5, 5]
    assert [x[0] for x in fig.stage_layers(pp, np.array([4.0]), np.array([4.0]))] == [4, 5, 4]
    two = fig.stage_layers(np.array([2.0]), np.array([10.0]), np.array([18.0]))
    assert [x[0] for x in two] == [10, 0, 18]  # no middle stage
    assert [x[0] for x in fig.stage_layers(pp, np.array([3.0]), none)] == [3, 5, 5]  # 25 / 5
    assert fig.fullest_stage_share(pp, np.array([4.0]), np.array([4.0]))[0] == 5 / 28
    assert list(stage_split(28, np.array([1, 2, 3, 4, 5, 6, 10]))) == [0, 0, 9, 0, 5, 4, 2]
    assert list(stage_split(94, np.array([7, 8, 16]))) == [0, 11, 5]


def test_uneven_stages_activations_by_hand() -> None:
    # Qwen2.5-7B, tp 1, pp 6, no recomputation, 8 micro-batches a rank, 4,096 tokens: a layer
    # keeps 158,832 bytes a token. Even: the first stage holds min(6, 8) = 6 micro-batches of 5
    # layers (30). Split 4 | 5 x 4 | 4: the first holds 6 x 4 = 24, the second 5 x 5 = 25,
    # which is now the peak; the last 4 layers and the loss (926,724 bytes) stay below.
    fig = ModelFigures.of(QWEN25_7B)
    m = np.array([8.0])
    for first, layers in ((0, 30), (4, 25)):
        layout = train_layout(train_gpus=6, train_pp=6, train_recompute="none",
                              train_first_layers=first, train_last_layers=first)  # fmt: skip
        in_flight = first_stage_in_flight(layout, m)
        second = first_stage_in_flight(layout, m, rank=1.0)
        assert (in_flight[0], second[0]) == (6, 5)
        got = activation_bytes(fig, layout, np.array([4096.0]), in_flight, second)[0]
        assert got == 4096 * layers * 158_832
    last = 4096 * (4 * 158_832 + 4 * 3584 + 6 * 152_064 + 4)
    assert last < 4096 * 25 * 158_832


@settings(max_examples=80, deadline=None)
@given(
    layers=st.integers(4, 128),
    pp=st.integers(3, 16),
    m=st.integers(1, 64),
    recompute=st.sampled_from(["none", "full"]),
)
def test_the_account_for_split_never_costs_more(
    layers: int, pp: int, m: int, recompute: str
) -> None:
    # Where Megatron's account-for split applies it keeps the fullest stage (the pace) and
    # lowers no stage's peak below what the split holds: the activation peak never rises
    # above the even costing's, and any split's fullest stage holds at least layers / pp.
    arch = QWEN25_7B.model_copy(update={"layers": layers})
    fig = ModelFigures.of(arch)
    split = int(stage_split(layers, np.array([pp]))[0])
    if pp > layers:
        return
    args = dict(train_gpus=pp, train_pp=pp, train_recompute=recompute)
    even, uneven = train_layout(**args), train_layout(**args, train_first_layers=split,
                                                      train_last_layers=split)  # fmt: skip
    share = fig.fullest_stage_share(np.array([float(pp)]), np.array([float(split)]),
                                    np.array([float(split)]))[0]  # fmt: skip
    assert share == fig.stage_share(np.array([float(pp)]))[0] and share >= 1 / pp
    firsts, middles, lasts = fig.stage_layers(np.array([float(pp)]), np.array([float(split)]),
                                              np.array([float(split)]))  # fmt: skip
    assert firsts[0] + (pp - 2) * middles[0] + lasts[0] >= layers  # every layer has a stage
    t = np.array([1024.0])

    def peak(layout: TrainLayout) -> float:
        mb = np.array([float(m)])
        flight = first_stage_in_flight(layout, mb), first_stage_in_flight(layout, mb, 1.0)
        return float(activation_bytes(fig, layout, t, *flight)[0])

    assert peak(uneven) <= peak(even)


def test_logits_and_loss_copies_by_hand() -> None:
    # Qwen2.5-7B, vocabulary 152,064: Megatron's vocab-parallel cross-entropy holds bf16
    # logits and their fp32 softmax (6 bytes an entry, over tp); the Hugging Face path the
    # fp32 upcast and its fp32 gradient (8 bytes); plus the final norm (4 h / 8 h) and the
    # fp32 loss per token. A critic's scalar head has no logits.
    fig = ModelFigures.of(QWEN25_7B)
    yes, no, one, two = np.array([True]), np.array([False]), np.array([1.0]), np.array([2.0])
    assert end_bytes(fig, yes, two)[0] == (4 * 3584 + 6 * 152_064 + 4) / 2
    assert end_bytes(fig, no, one)[0] == 8 * 3584 + 8 * 152_064 + 4
    assert end_bytes(fig.scoring(), no, one)[0] == 8 * 3584 + 4


@pytest.mark.parametrize(
    ("layout", "per_token"),
    [
        # Megatron, tp 2 with sequence parallelism: (28 layers x 158,832 + ends 926,724) / 2,
        # and the output layer's all-gathered input, 2 h = 7,168 whole on each rank
        (dict(train_tp=2, train_recompute="none"), (28 * 158_832 + 926_724) / 2 + 7_168),
        # core-attention recompute keeps what fused attention keeps anyway
        (dict(train_tp=2, train_recompute="selective"), (28 * 158_832 + 926_724) / 2 + 7_168),
        # the same without sequence parallelism: the two norms of a layer (2 x 4 h = 28,672
        # bytes) and the final norm (4 h = 14,336) whole on both ranks, the rest over tp 2
        (
            dict(train_tp=2, train_recompute="none", train_sequence_parallel=False),
            28 * (28_672 + (158_832 - 28_672) / 2) + 14_336 + (926_724 - 14_336) / 2,
        ),
        # FSDP (tp 1, ZeRO-3): the Hugging Face layers and loss
        (dict(train_recompute="none"), 28 * 225_392 + 1_245_188),
        # full recompute: each layer's input (2 h), then the larger of the loss's backward
        # and one rebuilt layer (the loss runs first, then the layers one by one)
        (dict(train_recompute="full"), 28 * 2 * 3584 + max(1_245_188, 225_392)),
        # full recompute at tp 2 without sequence parallelism: each layer's input whole
        (
            dict(train_tp=2, train_recompute="full", train_sequence_parallel=False),
            28 * 2 * 3584 + max(14_336 + (926_724 - 14_336) / 2, 28_672 + (158_832 - 28_672) / 2),
        ),
    ],
)
def test_activations_by_hand(layout: dict[str, object], per_token: float) -> None:
    fig = ModelFigures.of(QWEN25_7B)
    got = activation_bytes(fig, train_layout(**layout), np.array([4096.0]), np.array([1.0]))
    assert got[0] == pytest.approx(4096 * per_token, rel=1e-12)


def test_full_recompute_of_an_moe_model_peaks_at_the_loss_by_hand() -> None:
    # Qwen3-30B-A3B (48 layers, h 2048, vocabulary 151,936), Megatron tp 4 with sequence
    # parallelism, ep 8, full recompute, 32,768 tokens. The checkpoints: 48 x 2 h / 4 = 49,152
    # bytes a token. The loss's peak, (4 h + 6 x 151,936 + 4) / 4 = 229,953, is far above one
    # rebuilt MoE layer (about 26 kB a token over tp 4), and Megatron frees the loss's fp32
    # softmax and the logits' gradient before it rebuilds the first layer, so the two do not
    # add up. Beside them the output layer's gathered input, 2 h = 4,096 whole on each rank.
    fig = ModelFigures.of(QWEN3_30B_A3B)
    layout = train_layout(train_tp=4, train_ep=8, train_zero=1, train_recompute="full")
    assert layer_bytes(fig, layout)[0] < 229_953 / 2
    got = activation_bytes(fig, layout, np.array([32_768.0]), np.array([1.0]))[0]
    assert got == pytest.approx(32_768 * (49_152 + 229_953 + 4_096), rel=1e-12)


def test_only_megatrons_sequence_parallel_head_gathers_its_input() -> None:
    # 2 h bytes a token (Qwen2.5-7B: 7,168) at tp > 1 with sequence parallelism on Megatron's
    # path; nothing without sequence parallelism, at tp 1, or on the Hugging Face path.
    fig = ModelFigures.of(QWEN25_7B)
    cases = [
        (dict(train_tp=2, train_zero=1), 7_168.0),
        (dict(train_tp=2, train_zero=1, train_sequence_parallel=False), 0.0),
        (dict(train_tp=1, train_ep=1, train_zero=1), 0.0),
        (dict(train_tp=1, train_zero=3), 0.0),
    ]
    for fields, expected in cases:
        assert head_gather_bytes(fig, train_layout(**fields))[0] == expected, fields
    # a forward-only pass holds it too: one layer, the ends and the buffer
    layout = train_layout(train_tp=2, train_zero=1, train_recompute="none")
    forward = forward_activation_bytes(fig, layout, np.array([4096.0]))[0]
    assert forward == pytest.approx(4096 * ((158_832 + 926_724) / 2 + 7_168), rel=1e-12)


@pytest.mark.parametrize(
    ("pp", "v", "m", "expected"),
    [
        (4, 1, 64, 4.0),  # plain 1F1B: min(pp, m)
        (4, 1, 2, 2.0),
        # Megatron's interleaved warm-up on the first rank: 2 (pp - 1) + (v - 1) pp chunk
        # passes, one more in the steady state, each 1/v of the stage:
        (16, 8, 32, (2 * 15 + 7 * 16 + 1) / 8),  # 143 chunks = 17.875 stages
        (16, 8, 16, 16 * 8 / 8),  # capped by the m v = 128 chunks there are
        (4, 2, 64, (2 * 3 + 1 * 4 + 1) / 2),  # 5.5 = pp (1 + (pp - 1) / (pp v))
    ],
)
def test_first_stage_in_flight_by_hand(pp: int, v: int, m: int, expected: float) -> None:
    layout = train_layout(
        rollout_gpus=8 * pp, train_gpus=8 * pp, train_pp=pp, train_virtual_stages=v
    )
    assert first_stage_in_flight(layout, np.array([float(m)]))[0] == pytest.approx(expected)


def test_pipeline_holds_its_first_stage_micro_batches_or_the_last_stages_loss() -> None:
    # Qwen2.5-7B, Megatron tp 1 pp 4 (7 layers a stage), 4096 tokens a micro-batch: the first
    # stage keeps 4 micro-batches of 7 layers, the last one of 7 layers plus the loss.
    fig = ModelFigures.of(QWEN25_7B)
    layout = train_layout(train_pp=4, train_recompute="none")
    staged = activation_bytes(fig, layout, np.array([4096.0]), np.array([4.0]))
    first, last = 4 * 7 * 158_832, 7 * 158_832 + 926_724
    assert staged[0] == pytest.approx(4096 * max(first, last), rel=1e-12)
    one = activation_bytes(fig, layout, np.array([4096.0]), np.array([1.0]))
    assert one[0] == pytest.approx(4096 * last, rel=1e-12)


def test_rollout_kv_capacity_by_hand() -> None:
    # Qwen2.5-7B on one H100, tp 1: usable 0.9 * 80 GiB = 77,309,411,328 bytes;
    # weights 2 * 7,615,616,512 = 15,231,233,024; workspace 1 GiB = 1,073,741,824;
    # free for KV 61,004,436,480; per sequence (1024 + 4096) * 57,344 = 293,601,280 bytes:
    # floor(61,004,436,480 / 293,601,280) = 207 concurrent sequences.
    layout = RolloutLayout.of(one_plan(rollout_gpus=1, train_gpus=1))
    batch = Batch.of(workload(), Needs())
    usable = 0.9 * 80 * GIB
    mem = rollout_memory(ModelFigures.of(QWEN25_7B), layout, batch, usable, DEFAULT_OVERHEADS)
    assert mem.weights[0] == 2 * QWEN7B_PARAMS
    assert mem.kv_per_sequence[0] == 5120 * 57_344
    assert mem.capacity[0] == 207
    # less than weights + workspace + one longest sequence (1024 + 16384 tokens) cannot run
    assert mem.minimum[0] == 2 * QWEN7B_PARAMS + GIB + 17408 * 57_344


def test_offload_moves_the_terms_frameworks_move() -> None:
    # Qwen2.5-7B on 8 GPUs, ZeRO-1, tp 1: on the GPU 2P weights + 2P gradients + 12P/8 Adam.
    fig = ModelFigures.of(QWEN25_7B)
    plain = trained_state(fig, train_layout(train_zero=1))
    assert plain.optimizer[0] == pytest.approx(1.5 * P)
    # A CPU optimizer for 60% keeps 40% of the Adam states (0.6 P) on the GPU; the host holds
    # 60% of the fp32 master, moments and gradient: 0.6 x 16 P / 8 = 1.2 P.
    cpu = train_layout(train_zero=1, offload_optimizer=0.6)
    assert trained_state(fig, cpu).optimizer[0] == pytest.approx(0.6 * P)
    assert trained_state(fig, cpu).weights[0] == plain.weights[0]
    assert host_state_bytes(fig, cpu)[0] == pytest.approx(1.2 * P)
    # Streamed parameters (ZeRO-3): nothing persists on the GPU; the host holds 18 P / 8.
    streamed = train_layout(train_zero=3, offload_params=True)
    assert trained_state(fig, streamed).total[0] == 0
    assert host_state_bytes(fig, streamed)[0] == pytest.approx(18 * P / 8)


def test_phase_offload_lowers_rollout_and_assessment_not_training() -> None:
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    batch, fig = Batch.of(wl, Needs()), ModelFigures.of(QWEN25_7B)
    usable = 0.9 * 80 * GIB
    yes = np.array([True])

    def memory(**fields: object):  # type: ignore[no-untyped-def]
        layout = train_layout(train_zero=1, train_recompute="full", **fields)
        return training_memory(
            [(fig, yes)], [(fig, yes, 2.0)], layout, batch, usable, DEFAULT_OVERHEADS
        )

    plain, phase = memory(), memory(offload_phase=True, offload_frozen=True)
    assert plain.terms["frozen_models"][0] == pytest.approx(2 * P)
    assert phase.terms["frozen_models"][0] == 0  # the reference is parked while training
    assert phase.micro_tokens[0] >= plain.micro_tokens[0]
    # Kept during the rollout: 2P + 2P + 1.5P trained state and the 2P reference; none parked.
    assert plain.resident[0] == pytest.approx(7.5 * P)
    assert phase.resident[0] == 0
    # Each step moves the trained state out and back and loads the reference once.
    assert phase.switch[0] == pytest.approx(2 * 5.5 * P + 2 * P)
    assert phase.assessment[0] < plain.assessment[0]


def test_a_reference_run_in_the_actors_parameters_holds_no_gpu_bytes() -> None:
    # NeMo RL and slime swap the reference into the policy's parameters for its pass
    # (Overheads.reference_swap): against the reference parked and loaded beside the policy,
    # the assessment holds 2P less (its bf16 weights), the host holds it and, during the
    # swap, the policy's copy (2 x 2P), and a step moves 3 x 2P (policy out, reference in,
    # policy back) instead of the reference's 2P once.
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    batch, fig = Batch.of(wl, Needs()), ModelFigures.of(QWEN25_7B)
    usable, yes, no = 0.9 * 80 * GIB, np.array([True]), np.array([False])
    layout = train_layout(train_zero=1, train_recompute="full", offload_frozen=True)
    parked = training_memory([(fig, yes)], [(fig, yes, 2.0)], layout, batch, usable,
                             DEFAULT_OVERHEADS)  # fmt: skip
    swapped = training_memory([(fig, yes)], [(fig, no, 2.0)], layout, batch, usable,
                              DEFAULT_OVERHEADS, swapped=[(fig, yes, 2.0)])  # fmt: skip
    assert parked.assessment[0] - swapped.assessment[0] == pytest.approx(2 * P)
    assert swapped.training[0] == pytest.approx(parked.training[0])
    assert swapped.terms["frozen_models"][0] == 0
    assert swapped.host[0] - parked.host[0] == pytest.approx(2 * P)
    assert parked.switch[0] == pytest.approx(2 * P)
    assert swapped.switch[0] == pytest.approx(6 * P)


def test_nemo_rl_and_slime_run_the_reference_in_the_policy() -> None:
    assert DEFAULT_OVERHEADS.reference_swap == 0.0
    for framework, swaps in (("nemo-rl", 1.0), ("slime", 1.0), ("verl", 0.0), ("skyrl", 0.0)):
        assert for_framework(DEFAULT_OVERHEADS, framework, 80.0, "h100").reference_swap == swaps


def test_lora_trains_adapters_only() -> None:
    # Rank 16 on Qwen2.5-7B: the adapters of every attention and MLP projection, per layer
    # (3584 + 3584) + 2 (3584 + 512) + (3584 + 3584) + 3 (3584 + 18944) = 90,112 widths,
    # x 28 layers x 16 = 40,370,176 parameters.
    fig = ModelFigures.of(QWEN25_7B)
    assert fig.lora_width == 28 * 90_112
    layout = train_layout(train_zero=0, train_lora_rank=16)
    state = trained_state(fig, layout)
    adapters = 16 * 28 * 90_112
    assert state.weights[0] == pytest.approx(2 * (P + adapters))
    assert state.gradients[0] == pytest.approx(2 * adapters)
    assert state.optimizer[0] == pytest.approx(12 * adapters)


def test_lora_adapts_a_shared_expert_at_its_own_width() -> None:
    # Qwen1.5-MoE-A2.7B: its shared expert is 5,632 wide, its routed experts 1,408. Per layer
    # the attention's (2048 + 2048) + 2 (2048 + 2048) + (2048 + 2048) = 16,384 widths and the
    # shared expert's gated MLP 3 (2048 + 5632) = 23,040; no dense layers; x 24 layers.
    # (Read at the routed width, the shared expert gave 3 (2048 + 1408) = 10,368.)
    model = load_catalog(DEFAULT_ROOTS, ["model"]).of("model")["qwen1.5-moe-a2.7b"]
    assert model.architecture is not None
    assert ModelFigures.of(model.architecture).lora_width == 24 * (16_384 + 23_040)


def test_micro_batches_shrink_to_fit_with_the_fragmentation_reserve() -> None:
    # Qwen2.5-7B, 8 GPUs, tp 1, ZeRO-3 (the Hugging Face path), selective recompute, 128 x 8
    # sequences of 512 + 2048 (longest 512 + 4096): states 16P/8 + reference 2P/8 = 17.1 GB,
    # two gathered layers of 233,057,920 weights (7/8 remote) and one layer's bf16 gradient:
    # 5.5 bytes x 233,057,920 = 1.28 GB; usable 77.3 GB; activations per token
    # 28 x 225,392 + the loss 1,245,188 = 7,556,164 B, each with a 15% fragmentation reserve:
    # (77.31e9 - 18.42e9) / (1.15 x 7,556,164) = 6,777 tokens < the 16,384 budget: the
    # micro-batch shrinks, and the allocator's peak leaves the reserve free.
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=4096)  # fmt: skip
    layout = train_layout(train_recompute="selective")
    fig = ModelFigures.of(QWEN25_7B)
    usable = 0.9 * 80 * GIB
    yes = np.array([True])

    def memory(wl: Workload, layout: TrainLayout) -> TrainMemory:
        batch = Batch.of(wl, Needs())
        return training_memory([(fig, yes)], [(fig, yes, 2.0)], layout, batch, usable,
                               DEFAULT_OVERHEADS)  # fmt: skip

    mem = memory(wl, layout)
    states = 16 * P / 8 + 2 * P / 8
    layer = (P - 2 * 152_064 * 3584) / 28
    gathered = 2 * 2 * layer * 7 / 8 + 2 * layer
    per_token = 28 * 225_392 + 1_245_188
    assert mem.resident[0] == pytest.approx(states)
    tokens = (usable - states - gathered) / (1.15 * per_token)
    assert mem.micro_tokens[0] == np.floor(tokens)  # whole tokens, rounded down
    tokens = np.floor(tokens)
    assert tokens == 6_777
    assert mem.required[0] == pytest.approx(usable, rel=1e-3)
    assert mem.required[0] <= usable
    assert mem.reserve[0] == pytest.approx(0.15 * per_token * tokens)
    # The longest sequence of 512 + 8192 tokens does not fit without recomputation ...
    longer = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                      response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    assert memory(longer, layout).required[0] > usable
    # ... and does with full recomputation, at the whole 16,384-token budget.
    full = memory(longer, train_layout(train_recompute="full"))
    assert full.micro_tokens[0] == 16_384 and full.required[0] < usable


def test_infeasible_plan_reports_overflow() -> None:
    # Llama-3.1-70B trained unsharded (ZeRO-0, tp 1) on 8 GPUs: 16 bytes x 70.6 B params
    # is ~1.05 TiB per GPU, far beyond 72 GiB usable.
    r = evaluate(H100, LLAMA31_70B, workload(), one_plan(train_zero=0))
    assert not r.feasible[0]
    assert r.overflow_gib[0] > 900
    assert r.row(0)["feasible"] is False


def _train_memory(arch, table: PlanTable) -> np.ndarray:  # type: ignore[no-untyped-def]
    return evaluate(H100, arch, workload(prompts_per_step=64), table, check=False).memory_train_gib


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.sampled_from([2, 4, 8]),
    zero=st.integers(0, 3),
    recompute=st.sampled_from(["none", "selective", "full"]),
    moe=st.booleans(),
)
def test_memory_never_rises_when_tp_pp_or_zero_grows(
    tp: int, pp: int, dp: int, zero: int, recompute: str, moe: bool
) -> None:
    """At a fixed GPU count, doubling tp or pp (dp halves) or raising the ZeRO stage never
    raises the training memory per GPU, but for the vocabulary matrix a pipeline stage holds
    whole: doubling pp may shard it over fewer ranks (at most its 16 bytes a weight, over tp)."""
    arch = QWEN3_30B_A3B if moe else LLAMA31_70B
    vocabulary = 16 * arch.vocab * arch.hidden / tp / 2**30
    gpus = tp * pp * dp

    def table(t: int, p: int, z: int) -> PlanTable:
        return PlanTable.from_arrays(
            placement="disaggregated", execution="sync", rollout_gpus=8, rollout_tp=8,
            train_gpus=gpus, train_tp=t, train_pp=p, train_zero=z, train_recompute=recompute,
        )  # fmt: skip

    base = _train_memory(arch, table(tp, pp, zero))[0]
    assert _train_memory(arch, table(2 * tp, pp, zero))[0] <= base * (1 + 1e-12)
    assert _train_memory(arch, table(tp, 2 * pp, zero))[0] <= (base + vocabulary) * (1 + 1e-12)
    if zero < 3:
        assert _train_memory(arch, table(tp, pp, zero + 1))[0] <= base * (1 + 1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 2, 4]))
def test_rollout_minimum_memory_never_rises_with_tp_or_pp(tp: int, pp: int, dp: int) -> None:
    batch = Batch.of(workload(), Needs())
    fig = ModelFigures.of(LLAMA31_70B)

    def minimum(t: int, p: int) -> float:
        layout = RolloutLayout.of(one_plan(rollout_gpus=t * p * dp, rollout_tp=t, rollout_pp=p,
                                           train_gpus=t * p * dp))  # fmt: skip
        return float(rollout_memory(fig, layout, batch, 1e12, DEFAULT_OVERHEADS).minimum[0])

    assert minimum(2 * tp, pp) <= minimum(tp, pp)
    assert minimum(tp, 2 * pp) <= minimum(tp, pp)


@pytest.mark.parametrize(
    ("layers", "pp", "share"),
    [(28, 4, 7 / 28), (61, 2, 31 / 61), (61, 16, 4 / 61), (61, 61, 1 / 61), (80, 3, 27 / 80)],
)
def test_fullest_pipeline_stage_share_by_hand(layers: int, pp: int, share: float) -> None:
    fig = ModelFigures.of(QWEN25_7B.model_copy(update={"layers": layers}))
    assert fig.stage_share(np.array([float(pp)]))[0] == pytest.approx(share, rel=1e-12)


def test_uneven_stages_hold_the_fullest_stages_weights() -> None:
    # Qwen2.5-7B's 28 layers over pp 3 (10 + 9 + 9): the state on a GPU is that of 10 layers'
    # share, more than a third of the layers; over pp 4 (7 each) exactly a quarter. Beside
    # them a pipelined stage holds one whole vocabulary matrix (152,064 x 3,584 = 544,997,376
    # weights): Megatron's first stage builds the embedding, its last the output layer.
    fig = ModelFigures.of(QWEN25_7B)
    vh = 152_064 * 3_584
    layers = P - 2 * vh
    even = trained_state(fig, train_layout(train_pp=4, train_zero=0)).total[0]
    assert even == pytest.approx(16 * (layers / 4 + vh), rel=1e-12)
    assert even == pytest.approx(16 * (P / 4 + vh / 2), rel=1e-12)  # 34.8 GB, not 30.5
    uneven = trained_state(
        fig, train_layout(train_pp=3, train_zero=0, rollout_gpus=6, train_gpus=6)
    ).total[0]
    assert uneven == pytest.approx(16 * (layers * 10 / 28 + vh), rel=1e-12)
    # without a pipeline the one GPU group holds both matrices
    whole = trained_state(fig, train_layout(train_pp=1, train_zero=0)).total[0]
    assert whole == pytest.approx(16 * P, rel=1e-12)


def test_folded_experts_split_over_tensor_ranks_too() -> None:
    # Qwen3-30B-A3B on 8 GPUs, tp 2, dp 4: with etp = tp = 2 experts shard over ep x etp
    # and ep must divide dp = 4; folding (etp 1) lets ep 8 span the tensor ranks, each GPU
    # keeping 1/8 of the experts whole with no expert-data-parallel peer to shard ZeRO over.
    fig = ModelFigures.of(QWEN3_30B_A3B)
    classic = train_layout(train_tp=2, train_ep=4, train_zero=1)
    assert classic.expert_shard_group[0] == 1.0  # dp * cp * tp / (ep * etp) = 4 * 2 / 8
    folded = train_layout(train_tp=2, train_ep=8, train_etp=1, train_zero=1)
    assert folded.expert_shard_group[0] == 1.0  # 4 * 2 / (8 * 1)
    dense = fig.dense_params / 2
    expected = 16 * fig.expert_params / 8 + 4 * dense + 12 * dense / 4
    for layout in (classic, folded):
        assert trained_state(fig, layout).total[0] == pytest.approx(expected, rel=1e-12)


def test_the_plan_states_the_engine_fraction_micro_batch_and_headroom() -> None:
    # The per-plan memory contract exports build on. Qwen2.5-7B colocated on 8 H100s:
    # the engine's budget is HBM minus what the trainer keeps resident minus the reserve,
    # the micro-batch holds at least the longest sequence, and each pool's headroom is HBM
    # minus its peak.
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    r = evaluate(H100, QWEN25_7B, wl, one_plan(rollout_tp=2, train_recompute="full"))
    row = r.row(0)
    assert row["feasible"]
    hbm = 80.0
    rollout = row["memory_breakdown_gib"]["rollout"]
    engine = row["rollout"]["memory_fraction"] * hbm
    assert engine >= rollout["weights"] + rollout["workspace"] + rollout["kv_cache"] - 1e-9
    headroom = row["headroom_gib_per_gpu"]
    assert headroom["rollout"] == pytest.approx(hbm - rollout["trainer_state"] - engine)
    assert headroom["train"] == pytest.approx(hbm - row["memory_gib_per_gpu"]["train"])
    assert min(headroom.values()) > 0.0
    assert row["train"]["micro_batch_tokens"] >= 512 + 8192
    # Disaggregated, nothing of the trainer stays: the engine gets the whole budget.
    apart = evaluate(H100, QWEN25_7B, wl, one_plan(placement="disaggregated", rollout_gpus=4,
                                                   train_gpus=4, rollout_tp=2))  # fmt: skip
    assert apart.row(0)["rollout"]["memory_fraction"] > row["rollout"]["memory_fraction"]


ARCHS = {"dense": QWEN25_7B, "llama": LLAMA31_70B, "moe": QWEN3_30B_A3B, "mla": DEEPSEEK_V3}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    arch=st.sampled_from(sorted(ARCHS)),
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4]),
    cp=st.sampled_from([1, 2]),
    zero=st.sampled_from([1, 3]),
    tokens=st.floats(1024.0, 65536.0),
    more=st.floats(1.0, 4.0),
    in_flight=st.sampled_from([1.0, 2.0, 4.0]),
)
def test_activation_laws(
    arch: str, tp: int, pp: int, cp: int, zero: int, tokens: float, more: float, in_flight: float
) -> None:
    """Monotone in the micro-batch's tokens; full recomputation never keeps more than none;
    selective (core attention with fused kernels) keeps what none keeps; context parallelism
    divides by cp; a forward-only pass keeps less than the pass it precedes without
    recomputation."""
    fig = ModelFigures.of(ARCHS[arch])
    gpus = tp * pp * cp * 2

    def bytes_(recompute: str, t: float, c: int = cp) -> float:
        layout = train_layout(train_gpus=gpus, rollout_gpus=gpus, train_tp=tp, train_pp=pp,
                              train_cp=c, train_zero=zero, train_recompute=recompute)  # fmt: skip
        return float(activation_bytes(fig, layout, np.array([t]), np.array([in_flight]))[0])

    none = bytes_("none", tokens)
    assert bytes_("none", tokens * more) >= none * (1 - 1e-12)
    assert bytes_("full", tokens) <= none * (1 + 1e-12)
    assert bytes_("selective", tokens) == none
    assert bytes_("none", tokens * cp, c=cp) == pytest.approx(bytes_("none", tokens, c=1))
    layout = train_layout(train_gpus=gpus, rollout_gpus=gpus, train_tp=tp, train_pp=pp,
                          train_cp=cp, train_zero=zero, train_recompute="none")  # fmt: skip
    forward = forward_activation_bytes(fig, layout, np.array([tokens]))[0]
    assert forward <= none * (1 + 1e-12) or fig.layers * fig.stage_share(pp) < 2


@settings(max_examples=40, deadline=None, derandomize=True)
@given(arch=st.sampled_from(["dense", "llama"]), tp=st.sampled_from([1, 2, 4]),
       tokens=st.floats(1024.0, 65536.0))  # fmt: skip
def test_sequence_parallelism_divides_dense_activations_by_tp(
    arch: str, tp: int, tokens: float
) -> None:
    """Megatron with sequence parallelism: doubling tp halves every term of a dense model
    but the output layer's all-gathered input, 2 h a token whole on each rank from tp 2 on
    (experts are the other exception: their all-gathered copies grow with etp)."""
    fig = ModelFigures.of(ARCHS[arch])

    def bytes_(t: int) -> float:
        layout = train_layout(train_gpus=16, rollout_gpus=16, train_tp=t, train_pp=2,
                              train_recompute="none")  # fmt: skip
        got = float(activation_bytes(fig, layout, np.array([tokens]), np.array([1.0]))[0])
        return got - (tokens * 2 * fig.hidden if t > 1 else 0.0)

    assert bytes_(2 * tp) == pytest.approx(bytes_(tp) / 2, rel=1e-12)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(arch=st.sampled_from(["dense", "llama"]), tp=st.sampled_from([1, 2, 4, 8]),
       recompute=st.sampled_from(["none", "selective", "full"]),
       hf=st.booleans(), tokens=st.floats(1024.0, 65536.0))  # fmt: skip
def test_without_sequence_parallelism_activations_only_grow(
    arch: str, tp: int, recompute: str, hf: bool, tokens: float
) -> None:
    """Turning sequence parallelism off keeps the norms whole on each tensor rank: never
    fewer bytes, and the same at tp 1, where there is nothing to split."""
    fig = ModelFigures.of(ARCHS[arch])

    def bytes_(sp: bool) -> float:
        layout = train_layout(train_gpus=8, rollout_gpus=8, train_tp=1 if hf else tp,
                              train_zero=3 if hf else 1, train_recompute=recompute,
                              train_sequence_parallel=sp)  # fmt: skip
        return float(activation_bytes(fig, layout, np.array([tokens]), np.array([1.0]))[0])

    if hf or tp == 1:
        assert bytes_(False) == bytes_(True)
    else:
        assert bytes_(False) > bytes_(True)


@settings(max_examples=80, deadline=None)
@given(
    layers=st.integers(4, 128),
    pp=st.integers(2, 16),
    ends=st.tuples(st.integers(0, 40), st.integers(0, 40)),
    m=st.integers(1, 64),
    recompute=st.sampled_from(["none", "full"]),
)
def test_no_split_holds_less_than_an_average_stage(
    layers: int, pp: int, ends: tuple[int, int], m: int, recompute: str
) -> None:
    # Whatever the first and last stages hold, some stage holds at least layers / pp of them
    # for one micro-batch at least: the peak never drops below the even split's average stage.
    first, last = ends
    # the plans plan_problems lets through (two stages given both counts hold every layer)
    if pp > layers or (first or 1) + (last or 1) + pp - 2 > layers:
        return
    if pp == 2 and first and last and first + last != layers:
        return
    fig = ModelFigures.of(QWEN25_7B.model_copy(update={"layers": layers}))
    layout = train_layout(train_gpus=pp, train_pp=pp, train_recompute=recompute,
                          train_first_layers=first, train_last_layers=last)  # fmt: skip
    counts = fig.stage_layers(layout.pp, layout.first_layers, layout.last_layers)
    assert counts[0][0] + (pp - 2) * counts[1][0] + counts[2][0] >= layers
    assert fig.fullest_stage_share(layout.pp, layout.first_layers, layout.last_layers)[0] >= 1 / pp
    mb, t = np.array([float(m)]), np.array([1024.0])
    flight = first_stage_in_flight(layout, mb), first_stage_in_flight(layout, mb, 1.0)
    peak = activation_bytes(fig, layout, t, *flight)[0]
    kept = 2.0 * fig.hidden if recompute == "full" else layer_bytes(fig, layout)[0]
    assert peak >= 1024 * kept * layers / pp * (1 - 1e-12)


def test_the_rollout_band_spares_what_the_engine_reserves() -> None:
    # A rollout GPU holds the engine's share, exactly what the plan writes as its memory
    # fraction (vLLM and SGLang reserve it, filled or not), beside what the trainer leaves
    # resident; only that rest is an estimate, so only it carries the measured band
    # (cost.band.MEMORY_BAND). The training figure is all estimate and keeps the whole band.
    low_share, high_share = MEMORY_BAND
    apart = evaluate(
        H100, QWEN25_7B, workload(),
        one_plan(placement="disaggregated", rollout_gpus=4, train_gpus=4),
    ).row(0)  # fmt: skip
    rollout = apart["memory_gib_per_gpu"]["rollout"]
    assert rollout == pytest.approx(apart["rollout"]["memory_fraction"] * H100.memory_gib)
    assert apart["memory_gib_per_gpu_band"]["rollout"] == pytest.approx([rollout, rollout])
    train = apart["memory_gib_per_gpu"]["train"]
    band = apart["memory_gib_per_gpu_band"]["train"]
    assert band == pytest.approx([low_share * train, high_share * train])
    # Colocated, whatever the trainer does not park stays beside the engine: the band is the
    # engine's share plus that state at the measured spread.
    together = evaluate(H100, QWEN25_7B, workload(), one_plan(train_zero=1)).row(0)
    resident = together["memory_breakdown_gib"]["rollout"]["trainer_state"]
    engine = together["rollout"]["memory_fraction"] * H100.memory_gib
    assert resident > 0
    assert together["memory_gib_per_gpu"]["rollout"] == pytest.approx(engine + resident)
    assert together["memory_gib_per_gpu_band"]["rollout"] == pytest.approx(
        [engine + low_share * resident, engine + high_share * resident]
    )
