"""Rollout: the decode-step roofline, prefill FLOPs, the length grid, continuous batching."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rlmguide.cost import evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.lengths import expected_longest, length_grid, mean_position, shape_exponent
from rlmguide.cost.memory import rollout_cache_bytes
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, for_framework
from rlmguide.cost.rollout import DecodeModel
from test_cost_specs import H100, QWEN3_30B_A3B, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

P = float(QWEN7B_PARAMS)
EFF = EfficiencyFactors()
HW = Hardware.of(H100, 8, DEFAULT_OVERHEADS)
FABRIC = Fabric.of(HW, EFF, DEFAULT_OVERHEADS)
COMPUTE = 989e12 * 0.5  # decode_compute default
HBM = 3.35e12 * 0.6  # decode_hbm default
NVLINK = 450e9 * 0.8  # one direction of 900 GB/s, scale_up_link default


def decode_model(arch=QWEN25_7B, **plan: object) -> DecodeModel:  # type: ignore[no-untyped-def]
    layout = RolloutLayout.of(one_plan(**plan))
    return DecodeModel(ModelFigures.of(arch), layout, HW, FABRIC, EFF, DEFAULT_OVERHEADS)


def test_decode_step_of_a_lone_sequence_is_memory_bound_by_hand() -> None:
    # Qwen2.5-7B, tp 1, batch 1 at context 1024:
    #   compute = (2 * 7,615,616,512 + 401,408 * 1024) / (989e12 * 0.5) = 31.6 us
    #   HBM     = (2 * 7,615,616,512 + 1024 * 57,344) / (3.35e12 * 0.6) = 7.607 ms
    #   step    = 7.607 ms + 6 ms host overhead = 13.607 ms
    step = decode_model().step(np.array([[1.0]]), np.array([[1024.0]]))
    hbm = (2 * P + 1024 * 57_344) / HBM
    assert step.compute[0, 0] == pytest.approx((2 * P + 401_408 * 1024) / COMPUTE)
    assert step.hbm[0, 0] == pytest.approx(hbm)
    assert step.seconds[0, 0] == pytest.approx(hbm + 6e-3)
    assert step.seconds[0, 0] == pytest.approx(13.6069e-3, rel=1e-4)


def test_decode_step_with_tensor_parallel_all_reduces_by_hand() -> None:
    # tp 2, batch 256 at context 3072, per GPU:
    #   compute = 256 * (P + 200,704 * 3072) / 4.945e14                      = 4.26 ms
    #   HBM     = (2P / 2 + 256 * 3072 * 28,672) / 2.01e12                   = 15.0 ms
    #   TP      = 2 all-reduces x 28 layers of 256 x 3584 x 2 B = 1,835,008 B:
    #             56 * (10 us + 2 * (1/2) * 1,835,008 / 360e9)               = 0.845 ms
    step = decode_model(rollout_tp=2).step(np.array([[256.0]]), np.array([[3072.0]]))
    compute = 256 * (P + 200_704 * 3072) / COMPUTE
    hbm = (P + 256 * 3072 * 28_672) / HBM
    tp = 56 * (10e-6 + 1_835_008 / NVLINK)
    assert step.compute[0, 0] == pytest.approx(compute)
    assert step.hbm[0, 0] == pytest.approx(hbm)
    assert step.scale_up[0, 0] == pytest.approx(tp)
    assert step.seconds[0, 0] == pytest.approx(max(compute, hbm) + tp + 6e-3)
    assert tp == pytest.approx(8.4544e-4, rel=1e-4)


def test_decode_turns_compute_bound_at_large_batch() -> None:
    # At 1024 sequences of short context the FLOPs (2P per token) outgrow the weight reads:
    # ridge = 989e12*0.5 / (3.35e12*0.6) = 246 FLOP/byte, i.e. ~246 tokens per step.
    step = decode_model().step(np.array([[1024.0]]), np.array([[16.0]]))
    assert step.compute[0, 0] > step.hbm[0, 0]


def test_pipeline_reads_weights_once_per_micro_batch() -> None:
    flat = decode_model().step(np.array([[1.0]]), np.array([[0.0]]))
    staged = decode_model(rollout_pp=4).step(np.array([[1.0]]), np.array([[0.0]]))
    # a lone token still crosses 4 stages of 1/4 of the weights: the same bytes, plus sends
    assert staged.hbm[0, 0] == pytest.approx(flat.hbm[0, 0])
    assert staged.seconds[0, 0] > flat.seconds[0, 0]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    b1=st.floats(1, 2048),
    b2=st.floats(1, 2048),
    context=st.floats(1, 32768),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    moe=st.booleans(),
)
def test_step_time_grows_and_time_per_token_falls_with_batch(
    b1: float, b2: float, context: float, tp: int, pp: int, moe: bool
) -> None:
    """The two properties the rollout's Brent bounds rest on; time per token falls on either
    side of the CUDA-graph limit, and a step above it adds the eager launches."""
    small, large = sorted((b1, b2))
    limit = (
        DEFAULT_OVERHEADS.graph_batch_limit
        if tp >= 4
        else DEFAULT_OVERHEADS.graph_batch_limit_below_tp4
    )
    assume((small / pp > limit) == (large / pp > limit))
    arch = QWEN3_30B_A3B if moe else QWEN25_7B
    model = decode_model(arch, rollout_gpus=tp * pp, rollout_tp=tp, rollout_pp=pp,
                         train_gpus=tp * pp, rollout_ep=tp if moe else 1)  # fmt: skip
    c = np.array([[context]])
    t_small = model.step_seconds(np.array([[small]]), c)[0, 0]
    t_large = model.step_seconds(np.array([[large]]), c)[0, 0]
    assert t_small <= t_large * (1 + 1e-12)
    assert t_large / large <= t_small / small * (1 + 1e-12)


def test_length_grid_integrates_tokens_exactly() -> None:
    # S(t) = 1 - (t/L)^a with a = r / (L - r) = 4096 / 12288 = 1/3: mean exactly r
    assert shape_exponent(4096, 16384) == pytest.approx(1 / 3)
    grid = length_grid(4096, 16384, 16384, 16)
    assert grid.end == 16384
    assert grid.tokens_per_sequence == pytest.approx(4096, rel=1e-12)
    # mean position of a decoded token: L (a+1) / (2 (a+2)) = 16384 * (4/3) / (14/3) = 4681.14
    centroid = (grid.widths * grid.survival * grid.position).sum() / grid.tokens_per_sequence
    assert centroid == pytest.approx(mean_position(4096, 16384), rel=1e-12)
    assert mean_position(4096, 16384) == pytest.approx(16384 * 4 / 14)
    # all responses at the cap: S = 1 everywhere
    same = length_grid(4096, 4096, 4096, 8)
    assert np.all(same.survival == 1) and same.tokens_per_sequence == 4096
    # a partial-rollout cap keeps only the first part of the distribution
    assert length_grid(4096, 16384, 8192, 16).tokens_per_sequence < 4096


def test_rollout_flops_by_hand() -> None:
    # No spread (max = mean = 4096): decode attention at mean context 1024 + 2048.
    #   decode  = 8192 sequences * 4096 tokens * (2P + 401,408 * 3072)
    #   prefill = 512 prompts (group of 16 shares its prompt) * 1024 * (2P + 401,408 * 512)
    wl = workload(max_response_tokens=4096)
    decode = 8192 * 4096 * (2 * P + 401_408 * 3072)
    prefill = 1024 * (2 * P + 401_408 * 512)
    shared = evaluate(H100, QWEN25_7B, wl, one_plan(prefix_caching=True))
    assert shared.stages["rollout"].work_flop[0] == pytest.approx(decode + 512 * prefill)
    alone = evaluate(H100, QWEN25_7B, wl, one_plan(prefix_caching=False))
    assert alone.stages["rollout"].work_flop[0] == pytest.approx(decode + 8192 * prefill)


def test_continuous_batching_is_limited_by_free_memory() -> None:
    # one H100 holds 207 sequences of 5120 tokens next to the 7B weights (test_cost_memory);
    # 8192 sequences on 8 replicas = 1024 per replica > 207: a queue forms.
    r = evaluate(H100, QWEN25_7B, workload(), one_plan(placement="disaggregated", rollout_gpus=8,
                                                       train_gpus=8))  # fmt: skip
    assert r.rollout_concurrency[0] == 207
    rollout = r.stages["rollout"]
    assert rollout.seconds[0] > rollout.depth_seconds[0]  # queued tokens before the drain


def test_partial_rollout_caps_the_decode_depth() -> None:
    # staleness 1: cap = ceil(16384 / 2) = 8192 decode steps; the tail carries over
    sync = evaluate(H100, QWEN25_7B, workload(), one_plan())
    part = evaluate(H100, QWEN25_7B, workload(), one_plan(execution="partial-rollout"))
    assert part.stages["rollout"].depth_seconds[0] < sync.stages["rollout"].depth_seconds[0]
    assert part.stages["rollout"].seconds[0] < sync.stages["rollout"].seconds[0]
    # the same tokens are generated either way
    assert part.stages["rollout"].work_flop[0] == sync.stages["rollout"].work_flop[0]


def test_eager_decode_adds_a_host_launch_per_layer_by_hand() -> None:
    # Qwen2.5-7B has 28 layers: eager mode adds 28 x 0.34 ms = 9.52 ms to every decode step,
    # the same with the layers cut into pipeline stages (each stage launches its own layers).
    batch, context = np.array([[64.0]]), np.array([[2048.0]])
    for pp in (1, 4):
        graphs = decode_model(rollout_pp=pp).step(batch, context)
        eager = decode_model(rollout_pp=pp, rollout_eager=True).step(batch, context)
        assert eager.seconds[0, 0] - graphs.seconds[0, 0] == pytest.approx(9.52e-3)
        assert eager.hbm[0, 0] == graphs.hbm[0, 0]


def test_a_batch_above_the_graph_limit_decodes_eagerly_by_hand() -> None:
    # vLLM replays CUDA graphs up to 512 sequences a step (at TP 1,
    # Overheads.graph_batch_limit_below_tp4): at 512 the step costs as with graphs (no
    # launches), at 513 it adds Qwen2.5-7B's 28 eager launches, 28 x 0.34 ms = 9.52 ms. With
    # pp 2 the limit applies to each stage's micro-batch: 1,024 sequences are two micro-batches
    # of 512, still graphed.
    context = np.array([[2048.0]])
    model = decode_model()
    at_limit = model.step(np.array([[512.0]]), context)
    compute = 512 * (2 * P + 401_408 * 2048) / COMPUTE
    hbm = (2 * P + 512 * 2048 * 57_344) / HBM
    assert at_limit.seconds[0, 0] == pytest.approx(max(compute, hbm) + 6e-3)
    above = model.step(np.array([[513.0]]), context)
    compute = 513 * (2 * P + 401_408 * 2048) / COMPUTE
    hbm = (2 * P + 513 * 2048 * 57_344) / HBM
    assert above.seconds[0, 0] == pytest.approx(max(compute, hbm) + 6e-3 + 9.52e-3)
    staged = decode_model(rollout_pp=2)
    ungraphed = replace(DEFAULT_OVERHEADS, graph_batch_limit_below_tp4=511)
    layout = RolloutLayout.of(one_plan(rollout_pp=2))
    eager = DecodeModel(ModelFigures.of(QWEN25_7B), layout, HW, FABRIC, EFF, ungraphed)
    batch = np.array([[1024.0]])
    extra = eager.step(batch, context).seconds - staged.step(batch, context).seconds
    assert extra[0, 0] == pytest.approx(2 * 14 * 0.34e-3)  # two stages of 14 layers


def test_the_drain_decodes_eagerly_until_the_batch_falls_under_the_limit_by_hand() -> None:
    # 1,024 sequences of mean 4,096 and longest 16,384 tokens: S(t) = 1 - (t/L)^(1/3) over 16
    # segments of 1,024 steps. The batch 1,024 x S exceeds 512 where S > 1/2, t < L/8 = 2,048:
    # the first two segments (mean S 1 - 0.75 (1/16)^(1/3) = 0.702 and
    # 1 - 12 ((1/8)^(4/3) - (1/16)^(4/3)) = 0.548; the third's is
    # 1 - 12 ((3/16)^(4/3) - (1/8)^(4/3)) = 0.462). Those 2,048 steps pay 28 x 0.34 ms:
    # 19.50 s more than with graphs throughout.
    grid = length_grid(4096, 16384, 16384, 16)
    assert grid.survival[:3] == pytest.approx([0.7023, 0.5476, 0.4622], abs=1e-4)
    batch = 1024 * grid.survival[None, :]
    context = 1024 + grid.position[None, :]
    widths = grid.widths[None, :]
    layout = RolloutLayout.of(one_plan())
    graphed = replace(DEFAULT_OVERHEADS, graph_batch_limit_below_tp4=1024)
    always = DecodeModel(ModelFigures.of(QWEN25_7B), layout, HW, FABRIC, EFF, graphed)
    seconds, _, _ = decode_model().drain(batch, context, widths)
    base, _, _ = always.drain(batch, context, widths)
    assert seconds[0] - base[0] == pytest.approx(2048 * 28 * 0.34e-3)
    assert seconds[0] - base[0] == pytest.approx(19.4970, rel=1e-4)


def test_a_full_batch_above_the_graph_limit_decodes_every_step_eagerly_by_hand() -> None:
    # 8,192 sequences on 8 replicas: 1,024 each, all held at once (128 + 256 tokens each).
    # Every response is 256 tokens, so the batch never shrinks: all 256 decode steps run at
    # 1,024 > 512 and pay 28 x 0.34 ms each, 2.437 s more; prefill and the other stages are
    # unchanged. At 64 prompts (128 sequences a replica) nothing changes.
    graphed = replace(DEFAULT_OVERHEADS, graph_batch_limit_below_tp4=1024)
    for prompts, extra in ((512, 256 * 28 * 0.34e-3), (64, 0.0)):
        wl = workload(prompts_per_step=prompts, prompt_tokens=128, response_tokens=256,
                      max_response_tokens=256)  # fmt: skip
        now = evaluate(H100, QWEN25_7B, wl, one_plan())
        before = evaluate(H100, QWEN25_7B, wl, one_plan(), overheads=graphed)
        assert now.rollout_concurrency[0] == prompts * 16 / 8
        rollout = now.stages["rollout"].seconds[0] - before.stages["rollout"].seconds[0]
        assert rollout == pytest.approx(extra, abs=1e-12)
        assert now.stages["training"].seconds[0] == before.stages["training"].seconds[0]


def test_sglang_engines_capture_graphs_by_gpu_memory_and_tensor_parallel_degree() -> None:
    # SGLang's default capture limit (cost.overheads._sglang_graph_max_bs): on an 80 GiB H100
    # 256 sequences below TP 4 and 512 from it; on 192 GiB (MI300X) 512 either way; on 40 GiB
    # (A100-40GB) 32 and 160. verl launches vLLM: 512 at every degree.
    for memory, small, large in ((80.0, 256, 512), (192.0, 512, 512), (40.0, 32, 160)):
        for framework in ("slime", "areal"):
            own = for_framework(DEFAULT_OVERHEADS, framework, memory, "")
            assert (own.graph_batch_limit_below_tp4, own.graph_batch_limit) == (small, large)
    verl = for_framework(DEFAULT_OVERHEADS, "verl", 80.0, "")
    assert (verl.graph_batch_limit_below_tp4, verl.graph_batch_limit) == (512, 512)
    # A TP-1 SGLang engine on an H100 decodes 257 sequences eagerly (Qwen2.5-7B's 28 launches,
    # 28 x 0.34 ms = 9.52 ms more than 256 would cost at the same per-sequence rate); a TP-4
    # engine does not at 300.
    sglang = for_framework(DEFAULT_OVERHEADS, "slime", 80.0, "")
    context = np.array([[2048.0]])
    for tp, batch, launches in ((1, 257.0, 28 * 0.34e-3), (1, 256.0, 0.0), (4, 300.0, 0.0)):
        layout = RolloutLayout.of(one_plan(rollout_tp=tp))
        fig = ModelFigures.of(QWEN25_7B)
        own = DecodeModel(fig, layout, HW, FABRIC, EFF, sglang).step(np.array([[batch]]), context)
        vllm = decode_model(rollout_tp=tp).step(np.array([[batch]]), context)
        assert own.seconds[0, 0] - vllm.seconds[0, 0] == pytest.approx(launches, abs=1e-12)


def test_a_slower_host_scales_the_host_side_of_a_decode_step_by_hand() -> None:
    # The same GPU behind a host 2.75x slower per operation (Grace against a DGX H100's Xeon,
    # the GB200 record's host_overhead): the 6 ms step floor becomes 2.75 x 6 = 16.5 ms, eager
    # mode's 28 x 0.34 ms = 9.52 ms becomes 26.18 ms, so the step grows by 1.75 x 6 = 10.5 ms
    # (1.75 x 15.52 = 27.16 ms eager); the GPU's own work (HBM, compute) is unchanged.
    batch, context = np.array([[64.0]]), np.array([[2048.0]])
    slow = Hardware.of(H100.model_copy(update={"host_overhead": 2.75}), 8, DEFAULT_OVERHEADS)
    for eager, host in ((False, 6e-3), (True, 6e-3 + 9.52e-3)):
        layout = RolloutLayout.of(one_plan(rollout_eager=eager))
        fig = ModelFigures.of(QWEN25_7B)
        base = DecodeModel(fig, layout, HW, FABRIC, EFF, DEFAULT_OVERHEADS).step(batch, context)
        step = DecodeModel(fig, layout, slow, FABRIC, EFF, DEFAULT_OVERHEADS).step(batch, context)
        assert step.seconds[0, 0] - base.seconds[0, 0] == pytest.approx(1.75 * host)
        assert step.hbm[0, 0] == base.hbm[0, 0]
        assert step.compute[0, 0] == base.compute[0, 0]


def test_the_gb200_host_is_slower_per_operation_than_the_x86_hosts() -> None:
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import DEFAULT_ROOTS

    accelerators = load_catalog(DEFAULT_ROOTS).records["accelerator"]
    assert accelerators["gb200-186gb"].host_overhead == 2.75  # type: ignore[attr-defined]
    assert "github-nvidia-transformerengine-issue-2053" in accelerators["gb200-186gb"].sources
    # DGX/HGX boards with x86 hosts are the reference the host constants were fitted on.
    for x86 in ("h100-sxm-80gb", "b200-sxm-180gb"):
        assert Hardware.of(accelerators[x86], 8, DEFAULT_OVERHEADS).host_overhead == 1.0  # type: ignore[arg-type]


def test_eager_mode_slows_the_rollout_and_nothing_else() -> None:
    graphs = evaluate(H100, QWEN25_7B, workload(), one_plan())
    eager = evaluate(H100, QWEN25_7B, workload(), one_plan(rollout_eager=True))
    assert eager.stages["rollout"].seconds[0] > graphs.stages["rollout"].seconds[0]
    for stage in ("assessment", "training", "weight_sync"):
        assert eager.stages[stage].seconds[0] == graphs.stages[stage].seconds[0]


def test_decode_context_parallelism_shares_out_the_kv_copies_by_hand() -> None:
    # Qwen2.5-7B has 4 KV heads of 128: at tp 8 every head sits on two ranks, 256 KV
    # elements per token and layer on each. Decode context parallelism over 2 of them keeps
    # one head per pair and half of its tokens: 128. At context 1024, one token reads
    #   cp 1: 28 layers x 256 x 1024 x 2 B = 14,680,064 B;  cp 2: 7,340,032 B.
    # The pair gathers its queries and combines its partial outputs per layer: 56 calls of
    # (2 - 1) / 2 x (3584 x 2 B x 2 / 8) = 896 B, 56 x (10 us + 896 B / 360 GB/s) = 560.1 us.
    batch, context = np.array([[1.0]]), np.array([[1024.0]])
    whole = decode_model(rollout_tp=8).step(batch, context)
    split = decode_model(rollout_tp=8, rollout_cp=2).step(batch, context)
    assert whole.hbm[0, 0] - split.hbm[0, 0] == pytest.approx((14_680_064 - 7_340_032) / HBM)
    gathers = 56 * (10e-6 + 896 / NVLINK)
    assert split.scale_up[0, 0] - whole.scale_up[0, 0] == pytest.approx(gathers)
    assert gathers == pytest.approx(560.14e-6, rel=1e-4)


def test_decode_context_parallelism_frees_nothing_where_tp_keeps_no_copies() -> None:
    # tp 4 holds one of Qwen2.5-7B's 4 KV heads per rank: splitting tokens over 2 ranks of
    # 2 heads each leaves the same KV per GPU, and only the collectives are added.
    layout = RolloutLayout.of(one_plan(rollout_tp=4, rollout_cp=2))
    whole = RolloutLayout.of(one_plan(rollout_tp=4))
    fig = ModelFigures.of(QWEN25_7B)
    tokens = np.array([4096.0])
    assert rollout_cache_bytes(fig, layout, tokens) == pytest.approx(
        rollout_cache_bytes(fig, whole, tokens)
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(tp_log=st.integers(0, 4), cp_log=st.integers(0, 4), tokens=st.integers(1, 1 << 17))
def test_decode_context_parallelism_never_adds_kv_per_gpu(
    tp_log: int, cp_log: int, tokens: int
) -> None:
    # Law: splitting a sequence over cp ranks of the engine's tensor group never raises a
    # GPU's KV bytes, and the group together still holds at least one copy of the cache.
    tp, cp = 1 << tp_log, 1 << min(cp_log, tp_log)
    fig = ModelFigures.of(QWEN25_7B)
    t = np.array([float(tokens)])
    gpus = max(tp, 8)
    split_plan = one_plan(rollout_gpus=gpus, rollout_tp=tp, rollout_cp=cp)
    split = rollout_cache_bytes(fig, RolloutLayout.of(split_plan), t)
    whole = rollout_cache_bytes(
        fig, RolloutLayout.of(one_plan(rollout_gpus=gpus, rollout_tp=tp)), t
    )
    single = rollout_cache_bytes(fig, RolloutLayout.of(one_plan()), t)
    assert split[0] <= whole[0] * (1 + 1e-12)
    assert split[0] * tp >= single[0] * (1 - 1e-12)


def test_the_longest_of_a_group_by_hand() -> None:
    # mean 4096 under a cap of 16384: a = 4096 / 12288 = 1/3. The longest of g responses has
    # F^g = (t/L)^(g/3), mean L (g/3) / (g/3 + 1): one response is the mean itself, 16 give
    # 16384 x 16/19 = 13,797.05; responses that all run to the cap give the cap.
    assert expected_longest(4096, 16384, 1) == pytest.approx(4096)
    assert expected_longest(4096, 16384, 16) == pytest.approx(16384 * 16 / 19)
    assert expected_longest(4096, 4096, 16) == 4096
    # more responses, a longer longest, never past the cap
    longest = [expected_longest(4096, 16384, g) for g in (1, 2, 8, 32, 1024)]
    assert longest == sorted(longest) and longest[-1] < 16384


def test_whole_group_admission_decodes_only_the_unfinished_share_by_hand() -> None:
    # Async, staleness 1, 32 engines of one H100: 8192 sequences / 32 = 256 in flight per
    # engine, more than the 207 its KV cache holds, so per-sequence admission decodes 207 at
    # once. Whole groups of 16 hold their slots until the longest of the 16
    # ends (13,797 tokens on average), so only 4096 / 13,797.05 = 19/64 of the 256 in flight
    # still decode: 76 at once, and producing a step's tokens takes longer.
    plan = one_plan(placement="disaggregated", execution="async", staleness=1,
                    rollout_gpus=32, train_gpus=8)  # fmt: skip
    alone = evaluate(H100, QWEN25_7B, workload(), plan)
    grouped = evaluate(H100, QWEN25_7B, workload(), plan,
                       overheads=replace(DEFAULT_OVERHEADS, group_admission=1.0))  # fmt: skip
    assert alone.stream_concurrency[0] == 207
    assert grouped.stream_concurrency[0] == pytest.approx(256 * 19 / 64)
    assert grouped.stream_produce_seconds[0] > alone.stream_produce_seconds[0]
    # the drained batch of the other modes is not a stream and does not change
    assert grouped.stages["rollout"].seconds[0] == alone.stages["rollout"].seconds[0]


def test_nemo_rl_admits_whole_groups_and_the_default_does_not() -> None:
    assert DEFAULT_OVERHEADS.group_admission == 0.0
    assert for_framework(DEFAULT_OVERHEADS, "nemo-rl", 80.0, "h100").group_admission == 1.0
    assert for_framework(DEFAULT_OVERHEADS, "verl", 80.0, "h100").group_admission == 0.0


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    mean=st.integers(64, 16384),
    spread=st.floats(1.0, 8.0),
    group=st.integers(1, 64),
    staleness=st.integers(1, 4),
    gpus=st.sampled_from([8, 16, 32, 64]),
)
def test_whole_groups_never_decode_more_at_once_nor_produce_faster(
    mean: int, spread: float, group: int, staleness: int, gpus: int
) -> None:
    """Holding a group's slots can only idle some of them: the steady batch shrinks or stays,
    so a step's sequences take at least as long (the time per token falls with the batch)."""
    longest = int(mean * spread)
    assert mean * (1 - 1e-12) <= expected_longest(mean, longest, group) <= longest
    wl = workload(response_tokens=mean, max_response_tokens=longest,
                  samples_per_prompt=group, prompts_per_step=max(1024 // group, 1))  # fmt: skip
    plan = one_plan(placement="disaggregated", execution="async", staleness=staleness,
                    rollout_gpus=gpus, train_gpus=8)  # fmt: skip
    alone = evaluate(H100, QWEN25_7B, wl, plan)
    grouped = evaluate(H100, QWEN25_7B, wl, plan,
                       overheads=replace(DEFAULT_OVERHEADS, group_admission=1.0))  # fmt: skip
    assert grouped.stream_concurrency[0] <= alone.stream_concurrency[0]
    assert grouped.stream_produce_seconds[0] >= alone.stream_produce_seconds[0] * (1 - 1e-12)
