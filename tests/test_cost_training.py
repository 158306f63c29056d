"""Training and assessment: FLOPs, the pipeline bubble, collectives, micro-batching."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch
from rlmguide.cost.collectives import (
    Fabric,
    all_reduce_bytes,
    gather_bytes,
    group_link,
    transfer_seconds,
)
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.memory import default_micro_tokens
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, for_framework
from rlmguide.cost.training import micro_batches
from test_cost_specs import H100, QWEN3_30B_A3B, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

P = float(QWEN7B_PARAMS)
EFF = EfficiencyFactors()
FABRIC = Fabric.of(Hardware.of(H100, 8, DEFAULT_OVERHEADS), EFF, DEFAULT_OVERHEADS)
ATTENTION = 401_408  # forward attention FLOPs per token per context token (Qwen2.5-7B)


def test_ring_all_reduce_time_by_hand() -> None:
    # 8 GPUs of a node over NVLink: 2 (n-1)/n * bytes / bw + latency
    #   = 2 * 7/8 * 1 GiB / (450e9 * 0.8) + 10 us = 1.75 * 1,073,741,824 / 3.6e11 + 1e-5
    #   = 5.2296 ms
    link = group_link(FABRIC, np.array([8.0]), 1.0)
    sent = all_reduce_bytes(np.array([2.0**30]), link)
    assert sent[0] == 1.75 * 2**30
    seconds = transfer_seconds(sent, link)[0]
    assert seconds == pytest.approx(1.75 * 2**30 / 3.6e11 + 1e-5)
    assert seconds == pytest.approx(5.2296e-3, rel=1e-4)


def test_groups_across_nodes_use_the_network() -> None:
    # 16 ranks with stride 1 on 8-GPU nodes: 8 members per node, 8 NICs of 50 GB/s * 0.8
    # stream 320 GB/s (below the 360 GB/s of NVLink); stride 8 (a DP group under tp 8): 1 NIC.
    wide = group_link(FABRIC, np.array([16.0]), 1.0)
    assert wide.scale_out[0] and wide.bytes_per_s[0] == pytest.approx(8 * 40e9)
    strided = group_link(FABRIC, np.array([16.0]), 8.0)
    assert strided.bytes_per_s[0] == pytest.approx(40e9)
    inside = group_link(FABRIC, np.array([4.0]), 2.0)
    assert not inside.scale_out[0] and inside.bytes_per_s[0] == pytest.approx(3.6e11)
    # all-gather of a 1 GiB buffer over 4 ranks sends 3/4 of it
    assert gather_bytes(np.array([2.0**30]), inside)[0] == 0.75 * 2**30


def test_training_flops_are_six_params_per_token_plus_attention() -> None:
    # 512 prompts x 16 x (1024 + 4096) tokens = 41,943,040 tokens, one epoch;
    # selective recompute repeats the attention core: (6P + 4 * 401,408 * 5120 / 2) per token
    wl = workload()
    tokens = 512 * 16 * 5120
    for recompute, per_token in [
        ("none", 6 * P + 3 * ATTENTION * 2560),
        ("selective", 6 * P + 4 * ATTENTION * 2560),
        ("full", 8 * P + 4 * ATTENTION * 2560),  # full recompute: one more forward
    ]:
        r = evaluate(H100, QWEN25_7B, wl, one_plan(train_recompute=recompute))
        assert r.stages["training"].work_flop[0] == pytest.approx(tokens * per_token)
    two_epochs = evaluate(H100, QWEN25_7B, workload(epochs=2), one_plan(train_recompute="none"))
    assert two_epochs.stages["training"].work_flop[0] == pytest.approx(
        2 * tokens * (6 * P + 3 * ATTENTION * 2560)
    )


def test_micro_batches_pack_to_the_token_budget() -> None:
    # 64 prompts x 8 = 512 sequences of 1024 + 1024 tokens, 1 minibatch, dp 8:
    # 64 per rank, floor(16384 / 2048) = 8 per micro-batch -> 8 micro-batches of 16,384 tokens
    wl = workload(prompts_per_step=64, samples_per_prompt=8, response_tokens=1024,
                  max_response_tokens=1024, minibatches_per_step=1)  # fmt: skip
    batch = Batch.of(wl, Needs())
    layout = TrainLayout.of(one_plan(rollout_gpus=8, train_gpus=8))
    budget = default_micro_tokens(layout, batch, DEFAULT_OVERHEADS)
    micro = micro_batches(512.0, layout, batch, budget)
    assert micro.count[0] == 8 and micro.tokens[0] == 16384
    # Pipelined (pp 4 on 32 GPUs, dp 8 again): one sequence per micro-batch, 64 of them.
    layout = TrainLayout.of(one_plan(rollout_gpus=32, train_gpus=32, train_pp=4))
    budget = default_micro_tokens(layout, batch, DEFAULT_OVERHEADS)
    micro = micro_batches(512.0, layout, batch, budget)
    assert micro.count[0] == 64 and micro.tokens[0] == 2048


def test_pipeline_bubble_by_hand() -> None:
    # pp 4, m = 64 one-sequence micro-batches (above): one optimizer step takes (m + pp - 1) = 67
    # micro-batch times, of which pp - 1 = 3 are the bubble: (p - 1) / (m + p - 1) = 3 / 67.
    wl = workload(prompts_per_step=64, samples_per_prompt=8, response_tokens=1024,
                  max_response_tokens=1024, minibatches_per_step=1)  # fmt: skip
    plan = one_plan(
        placement="disaggregated", rollout_gpus=8, train_gpus=32, train_pp=4, train_zero=1
    )
    training = evaluate(H100, QWEN25_7B, wl, plan).stages["training"]
    micro = training.depth_seconds[0] / 4  # depth = pp micro-batch times per optimizer step
    bubble = training.seconds[0] - training.work_seconds[0]
    assert bubble == pytest.approx(3 * micro)
    busy = training.seconds[0] - (training.work_seconds[0] - 64 * micro)  # without the sync
    assert bubble / busy == pytest.approx(3 / 67)


def test_interleaved_pipeline_bubble_by_hand() -> None:
    # The same pp 4, m = 64 step interleaved over v chunks per rank (Megatron's virtual
    # pipeline): fill and drain take (pp - 1) / v = 3 / v micro-batch times, the depth
    # 1 + 3 / v of them. Every micro-batch crosses v times as many stage boundaries: 2 sends a
    # micro-batch (activation forward, gradient back) of 2,048 tokens x 3,584 hidden x 2 bytes
    # = 14,680,064 bytes each, so v = 2 moves 32 GPUs x 64 x 2 x 14,680,064 bytes more.
    wl = workload(prompts_per_step=64, samples_per_prompt=8, response_tokens=1024,
                  max_response_tokens=1024, minibatches_per_step=1)  # fmt: skip
    pipelined = dict(placement="disaggregated", rollout_gpus=8, train_gpus=32, train_pp=4)
    stages = {
        v: evaluate(
            H100, QWEN25_7B, wl, one_plan(**pipelined, train_zero=1, train_virtual_stages=v)
        ).stages["training"]
        for v in (1, 2, 4)
    }
    for v, training in stages.items():
        bubble = training.seconds[0] - training.work_seconds[0]
        micro = training.depth_seconds[0] - bubble
        assert bubble == pytest.approx(3 / v * micro)
    extra = stages[2].link_bytes[0] - stages[1].link_bytes[0]
    assert extra == pytest.approx(32 * 64 * 2 * 2048 * 3584 * 2)
    # The interleaved sends overlap the other chunks' compute (Megatron's overlap_p2p_comm):
    # a micro-batch takes no longer than under the plain schedule, and the step is shorter.
    assert stages[4].seconds[0] < stages[2].seconds[0] < stages[1].seconds[0]


def test_training_chains_optimizer_steps() -> None:
    # depth is the pipeline fill per optimizer step, chained: 4 minibatches x 2 epochs = 8
    one = evaluate(H100, QWEN25_7B, workload(minibatches_per_step=1), one_plan(train_pp=2))
    eight = evaluate(
        H100, QWEN25_7B, workload(minibatches_per_step=4, epochs=2), one_plan(train_pp=2)
    )
    ratio = eight.stages["training"].depth_seconds[0] / one.stages["training"].depth_seconds[0]
    # micro-batches keep their token budget (fewer of them per step), so each optimizer step
    # has the same fill and drain: 8 steps, 8 times the depth (up to the rounding of m)
    assert ratio == pytest.approx(8, rel=0.01)


def test_ppo_trains_a_critic_and_prepares_values() -> None:
    grpo = evaluate(H100, QWEN25_7B, workload(), one_plan(), needs=Needs())
    ppo = evaluate(H100, QWEN25_7B, workload(), one_plan(), needs=Needs(needs_critic=True))
    # the critic (the policy's network ending in a scalar head instead of the 152,064 x 3,584
    # output projection) doubles training and adds a third forward pass, less the projection:
    # 2 (VH - H) FLOPs a token forward, 8 with full recomputation in training (forward,
    # recomputed forward, backward of twice the forward)
    tokens, head = 512 * 16 * 5120, 152_064 * 3_584 - 3_584
    assert ppo.stages["training"].work_flop[0] == pytest.approx(
        2 * grpo.stages["training"].work_flop[0] - 8 * tokens * head
    )
    assert ppo.stages["assessment"].work_flop[0] == pytest.approx(
        1.5 * grpo.stages["assessment"].work_flop[0] - 2 * tokens * head
    )
    assert ppo.memory_train_gib[0] > grpo.memory_train_gib[0]


def test_assessment_forward_flops_by_hand() -> None:
    # reference + old log-probs: 2 forwards of (2P + 401,408 * 5120 / 2) per token over
    # 41,943,040 tokens; a reward model adds its own forward over every generated sequence
    tokens = 512 * 16 * 5120
    forward = 2 * P + ATTENTION * 2560
    r = evaluate(H100, QWEN25_7B, workload(), one_plan())
    assert r.stages["assessment"].work_flop[0] == pytest.approx(2 * tokens * forward)
    verifier = evaluate(
        H100,
        QWEN25_7B,
        workload(),
        one_plan(),
        needs=Needs(needs_reference=False),
        old_log_probs=False,
    )
    assert verifier.stages["assessment"].seconds[0] == 0
    rm = evaluate(H100, QWEN25_7B, workload(), one_plan(), reward=QWEN25_7B)
    # the reward model ends in a scalar head: no 152,064 x 3,584 output projection
    scored = forward - 2.0 * (152_064 * 3_584 - 3_584)
    assert rm.stages["assessment"].work_flop[0] == pytest.approx(tokens * (2 * forward + scored))


def test_zero3_adds_all_gathers_that_hide_under_compute() -> None:
    # DDP (ZeRO-0) sends its gradients once per optimizer step; ZeRO-3 gathers weights per
    # micro-batch, 1.5x the traffic of an all-reduce per micro-batch, mostly under the compute
    zero0 = evaluate(H100, QWEN25_7B, workload(), one_plan(train_zero=0, train_recompute="full"))
    zero3 = evaluate(H100, QWEN25_7B, workload(), one_plan(train_zero=3, train_recompute="full"))
    assert zero3.stages["training"].link_bytes[0] > zero0.stages["training"].link_bytes[0]
    assert zero3.stages["training"].bound[0] == 0  # compute


@pytest.mark.parametrize("zero", [0, 1])
def test_megatron_gradient_sync_in_the_buffer_dtype_by_hand(zero: int) -> None:
    """Qwen2.5-7B on one node of 8 H100s, data-parallel 8, 4 optimizer steps. In bf16 either
    form sends 4 x 7/8 bytes per parameter and GPU a step: an all-reduce (2 x 7/8 x 2) or,
    under the distributed optimizer, a gradient reduce-scatter and a weight all-gather (7/8 x
    (2 + 2)). fp32 buffers (grad_reduce_in_fp32) add 7/8 x 2 bytes to the sharded form (7/8 x
    (4 + 2)) and 7/8 x 4 to the all-reduce (2 x 7/8 x 4): over the 4 optimizer steps and the
    8 GPUs, 8 x 4 x 7/8 x 2 P = 56 P bytes more (112 P for the all-reduce), and the stage
    takes 4 x 7/8 x 2 P bytes (4 x 7/8 x 4 P) longer at the NVLink rate, since the sync is not
    overlapped (verl's overlap_grad_reduce False). The micro-batch is fixed, so the fp32
    buffers' memory changes nothing else."""
    wl = workload(minibatches_per_step=4)
    training = {}
    for fp32 in (False, True):
        plan = one_plan(train_zero=zero, train_fp32_gradients=fp32, train_micro_tokens=16_384)
        training[fp32] = evaluate(H100, QWEN25_7B, wl, plan).stages["training"]
    bf16_sent = training[False].link_bytes[0]
    extra_per_param = 2.0 if zero >= 1 else 4.0
    extra = 8 * 4 * 7 / 8 * extra_per_param * P
    assert training[True].link_bytes[0] - bf16_sent == pytest.approx(extra, rel=1e-9)
    seconds = 4 * 7 / 8 * extra_per_param * P / FABRIC.scale_up_bytes_per_s
    assert training[True].seconds[0] - training[False].seconds[0] == pytest.approx(
        seconds, rel=1e-6
    )
    if zero == 0:
        sharded = one_plan(train_zero=1, train_micro_tokens=16_384)
        same = evaluate(H100, QWEN25_7B, wl, sharded).stages["training"].link_bytes[0]
        assert same == pytest.approx(bf16_sent, rel=1e-12)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    budget=st.sampled_from([8192, 16384, 32768]),
    moe=st.booleans(),
    gpus=st.sampled_from([8, 16]),
)
def test_zero3_traffic_grows_with_the_micro_batches_and_zero1_does_not(
    budget: int, moe: bool, gpus: int
) -> None:
    """ZeRO-3 gathers every weight (every local expert) per micro-batch, twice, and
    reduce-scatters its gradients: its traffic is affine in the micro-batch count, each
    micro-batch adding the same. ZeRO-1 reduces gradients once per optimizer step, and token
    traffic (expert dispatch) follows the tokens: neither depends on how they are cut."""
    arch = QWEN3_30B_A3B if moe else QWEN25_7B
    # 512 sequences of 2,048 tokens, one optimizer step: 64 or 32 per rank, so a budget of
    # 8,192 or more tokens halves twice into exactly twice and four times the micro-batches
    wl = workload(prompts_per_step=64, samples_per_prompt=8, response_tokens=1024,
                  max_response_tokens=1024, minibatches_per_step=1)  # fmt: skip
    sent = {}
    for zero in (1, 3):
        for tokens in (budget, budget // 2, budget // 4):
            plan = one_plan(train_gpus=gpus, rollout_gpus=gpus, train_zero=zero,
                            train_micro_tokens=tokens, train_ep=2 if moe else 1)  # fmt: skip
            sent[zero, tokens] = evaluate(H100, arch, wl, plan).stages["training"].link_bytes[0]
    first = sent[3, budget // 2] - sent[3, budget]  # m more micro-batches
    second = sent[3, budget // 4] - sent[3, budget // 2]  # 2m more
    assert first > 0
    assert second == pytest.approx(2 * first, rel=1e-9)
    assert sent[1, budget // 4] == pytest.approx(sent[1, budget], rel=1e-9)


def test_narrow_experts_lose_more_of_the_dense_rate_by_hand() -> None:
    # expert_compute 0.16 at the reference width 768 fixes w0 = 768 x (1 / 0.16 - 1) = 4,032
    # columns of per-token cost: Qwen3-30B-A3B's 768-wide experts take 1 + 5.25 times their
    # GEMMs' dense time (a share 0.16), Qwen3-235B-A22B's 1,536 1 + 2.625 (0.276), DeepSeek-V3's
    # 2,048 1 + 1.969 (0.337); a dense model has no routed experts to slow.
    from rlmguide.cost.model_pass import expert_slowdown
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import DEFAULT_ROOTS

    models = load_catalog(DEFAULT_ROOTS).records["model"]
    for model, slowdown in (
        ("qwen3-30b-a3b", 5.25),
        ("qwen3-235b-a22b", 2.625),
        ("deepseek-v3", 1.96875),
        ("qwen2.5-7b", 0.0),
    ):
        fig = ModelFigures.of(models[model].architecture)  # type: ignore[attr-defined]
        assert expert_slowdown(fig, EFF.expert_compute) == pytest.approx(slowdown)
    # Experts at the full dense rate: no per-token cost at any width.
    assert expert_slowdown(ModelFigures.of(QWEN3_30B_A3B), 1.0) == 0.0


def test_loss_over_the_vocabulary_by_hand() -> None:
    # 512 x 16 sequences of 5,120 tokens on 8 GPUs (dp 8, 4 minibatches): each GPU trains
    # 41,943,040 / 8 = 5,242,880 tokens over the step; Qwen2.5-7B's 152,064 logits each, 120
    # bytes a logit (prime-rl's fused head) at 3.35 TB/s x 0.60 (decode_hbm):
    #   5,242,880 x 152,064 x 120 / 2.01e12 = 47.597 s more than without the term.
    plan = one_plan(train_recompute="none")
    base = evaluate(H100, QWEN25_7B, workload(), plan)
    counted = evaluate(
        H100,
        QWEN25_7B,
        workload(),
        plan,
        overheads=replace(DEFAULT_OVERHEADS, loss_bytes_per_logit=120.0),
    )
    extra = counted.stages["training"].seconds[0] - base.stages["training"].seconds[0]
    assert extra == pytest.approx(5_242_880 * 152_064 * 120 / 2.01e12, rel=1e-6)
    assert extra == pytest.approx(47.597, rel=1e-4)
    hbm = counted.stages["training"].hbm_bytes[0] - base.stages["training"].hbm_bytes[0]
    assert hbm == pytest.approx(8 * 5_242_880 * 152_064 * 120, rel=1e-6)
    # Only prime-rl's loss code has been read: 56 bytes forward + 64 backward per logit.
    assert for_framework(DEFAULT_OVERHEADS, "prime-rl", 80.0, "").loss_bytes_per_logit == 120.0
    assert DEFAULT_OVERHEADS.loss_bytes_per_logit == 0.0


def test_float32_head_matmuls_by_hand() -> None:
    # TRL's chunked head forms two head-sized gradients as float32 matmuls per response token.
    # Each GPU trains 5,242,880 tokens of which 4,096 / 5,120 are responses: 4,194,304 tokens x
    # 2 matmuls x 2 x 3,584 x 152,064 FLOPs (Qwen2.5-7B) = 9.1435e15 FLOPs at 67 TFLOP/s (the
    # H100's CUDA cores) x 0.45 (train_compute): 303.27 s more than without the term.
    plan = one_plan(train_recompute="none")
    fp32 = H100.model_copy(update={"fp32_dense_tflops": 67.0})
    head = replace(DEFAULT_OVERHEADS, head_fp32_matmuls=2.0)
    base = evaluate(fp32, QWEN25_7B, workload(), plan)
    counted = evaluate(fp32, QWEN25_7B, workload(), plan, overheads=head)
    extra = counted.stages["training"].seconds[0] - base.stages["training"].seconds[0]
    assert extra == pytest.approx(4_194_304 * 2 * 2 * 3584 * 152_064 / (67e12 * 0.45), rel=1e-6)
    assert extra == pytest.approx(303.27, rel=1e-4)
    # An accelerator without a float32 figure leaves the term out rather than guessing it.
    blind = evaluate(H100, QWEN25_7B, workload(), plan, overheads=head)
    assert blind.stages["training"].seconds[0] == base.stages["training"].seconds[0]
    # Only TRL's loss code has been read.
    assert for_framework(DEFAULT_OVERHEADS, "trl", 141.0, "").head_fp32_matmuls == 2.0
    assert DEFAULT_OVERHEADS.head_fp32_matmuls == 0.0


def test_zero3_gradients_reduced_in_float32_by_hand() -> None:
    # Qwen2.5-7B on 8 GPUs under ZeRO-3, nothing else split: the training stage's only link
    # traffic is ZeRO-3's, 2 bf16 all-gathers and 1 gradient reduce-scatter per micro-batch.
    # 512 x 16 sequences of 5,120 tokens, 4 minibatches, dp 8: 256 sequences per rank and
    # minibatch, 16,384-token micro-batches of 3.2 sequences: 80 micro-batches, 320 in the
    # step. A float32 reduce-scatter sends (8 - 1) / 8 x 2 bytes more per parameter each:
    #   8 GPUs x 320 x 7/8 x 2 x P = 4,480 P bytes more, and 8/6 of the bf16 traffic.
    plan = one_plan(train_recompute="none", train_micro_tokens=16384)
    bf16 = evaluate(H100, QWEN25_7B, workload(), plan)
    fp32 = evaluate(
        H100, QWEN25_7B, workload(), plan,
        overheads=replace(DEFAULT_OVERHEADS, zero3_gradient_bytes_per_param=4.0),
    )  # fmt: skip
    sent_bf16 = bf16.stages["training"].link_bytes[0]
    sent_fp32 = fp32.stages["training"].link_bytes[0]
    assert sent_fp32 - sent_bf16 == pytest.approx(4480 * P, rel=1e-9)
    assert sent_fp32 / sent_bf16 == pytest.approx(8 / 6, rel=1e-9)
    # It hides under this plan's compute; forward passes reduce nothing.
    assert fp32.stages["training"].seconds[0] == bf16.stages["training"].seconds[0]
    assert fp32.stages["assessment"].link_bytes[0] == bf16.stages["assessment"].link_bytes[0]
    # DeepSpeed communicates in bf16 by default; the PyTorch-FSDP frameworks reduce in float32.
    assert DEFAULT_OVERHEADS.zero3_gradient_bytes_per_param == 2.0
    for framework, reduce_bytes in (("verl", 4.0), ("nemo-rl", 4.0), ("skyrl", 4.0),
                                    ("roll", 4.0), ("areal", 4.0), ("prime-rl", 4.0),
                                    ("openrlhf", 2.0), ("trl", 2.0)):  # fmt: skip
        own = for_framework(DEFAULT_OVERHEADS, framework, 80.0, "")
        assert own.zero3_gradient_bytes_per_param == reduce_bytes


def test_expert_loop_by_hand_and_not_under_automodel() -> None:
    # Qwen3-30B-A3B under ZeRO-3 without expert parallelism runs the model code's loop over its
    # 128 experts in each of its 48 layers, twice per micro-batch in training (forward and
    # backward, no recompute): 2 x 48 x 128 x 20 us = 0.24576 s a micro-batch. The workload
    # cuts into 320 micro-batches of 16,384 tokens per GPU (as above): 78.6432 s more.
    plan = one_plan(train_recompute="none", train_micro_tokens=16384)
    looped = evaluate(H100, QWEN3_30B_A3B, workload(), plan)
    grouped = evaluate(
        H100, QWEN3_30B_A3B, workload(), plan,
        overheads=replace(DEFAULT_OVERHEADS, expert_loop_seconds=0.0),
    )  # fmt: skip
    extra = looped.stages["training"].seconds[0] - grouped.stages["training"].seconds[0]
    assert DEFAULT_OVERHEADS.expert_loop_seconds == 20e-6
    assert extra == pytest.approx(320 * 2 * 48 * 128 * 20e-6, rel=1e-9)
    assert extra == pytest.approx(78.6432, rel=1e-9)
    # Expert parallelism spreads the experts: no loop over them.
    spread = one_plan(train_recompute="none", train_micro_tokens=16384, train_ep=2)
    with_ep = evaluate(H100, QWEN3_30B_A3B, workload(), spread)
    without_loop = evaluate(
        H100, QWEN3_30B_A3B, workload(), spread,
        overheads=replace(DEFAULT_OVERHEADS, expert_loop_seconds=0.0),
    )  # fmt: skip
    assert with_ep.stages["training"].seconds[0] == without_loop.stages["training"].seconds[0]
    # NeMo-RL's DTensor backend runs Automodel's grouped-GEMM experts; the others keep the loop.
    assert for_framework(DEFAULT_OVERHEADS, "nemo-rl", 80.0, "").expert_loop_seconds == 0.0
    assert for_framework(DEFAULT_OVERHEADS, "verl", 80.0, "").expert_loop_seconds == 20e-6
