"""Fixed latencies and engine settings: the cost core's constants that are not efficiencies.

Like the efficiency factors these are named, defaulted with a reason and overridable (pass an
`Overheads` to `evaluate`); the formulas never hold a constant of their own. Latencies are
seconds per operation, so "doubling every rate" also means halving these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from rlmguide.cost.units import GIB


@dataclass(frozen=True, slots=True)
class Overheads:
    usable_memory_fraction: float = 0.9
    """Share of a rollout GPU's HBM the inference engine and whatever a colocated trainer
    keeps there may fill: vLLM's default `gpu_memory_utilization` (0.9,
    github-vllm-project-vllm); the rest is CUDA context, NCCL buffers and fragmentation outside
    the engine's own accounting."""

    train_runtime_reserve_bytes: float = 4.0 * GIB
    """HBM of a training GPU that the PyTorch allocator never sees: CUDA kernels and context
    (0.5-2 GiB once PyTorch first touches the GPU) and torch.distributed's NCCL communicators
    (1-2 GiB, more with more GPUs), measured in github-stas00-ml-engineering
    (training/performance/README.md, "Preloaded CUDA kernels memory usage" and
    "torch.distributed memory usage"): the upper ends, 2 + 2 GiB."""

    train_fragmentation_fraction: float = 0.15
    """Share of a training pool's activation bytes kept free for the caching allocator's
    fragmentation, beside train_runtime_reserve_bytes. Activations are the allocations that
    change size with every micro-batch (dynamic batch sizes, packed sequences, recomputation),
    which is where the PyTorch caching allocator fragments: GMLake (arxiv-2401.08156) removed
    15% fragmentation on average (up to 33%) and 9.2 GB of memory (up to 25 GB) from the
    default allocator training eight LLMs on A100-80GB with recomputation, offload and LoRA,
    so the default allocator wastes at least that much there."""

    rollout_workspace_bytes: float = 1.0 * GIB
    """Activation workspace and CUDA graphs of the inference engine per GPU (vLLM profiles it
    with `max_num_batched_tokens` = 8192, verl's default; about a GiB for 7-70B models)."""

    max_seqs_per_replica: int = 1024
    """Continuous-batching cap on concurrent sequences per engine: vLLM's default for its LLM
    class on GPUs of 70 GiB and more (vllm/engine/arg_utils.py get_batch_defaults at 0.12.0,
    github-vllm-project-vllm). Exports write the plan's concurrency into the engine's own key
    (verl's rollout.max_num_seqs, whose trainer YAML default is 256 at b178a3cd, the dataclass
    1024; NeMo-RL's vllm_kwargs; slime's --sglang-max-running-requests); OpenRLHF has no key,
    and its AsyncLLMEngine runs at vLLM's engine-context default (128 at 0.12.0 and 0.19.1),
    below this cap: its plans are costed at that (the mapping's engine_max_seqs)."""

    decode_step_seconds: float = 6e-3
    """Host-side cost of one decode step (scheduling, sampling, CUDA-graph launch) that no GPU
    count removes: the floor of the per-token latency. A calibration knob, fitted rather than
    measured: the grid of bench/fidelity.py (1, 2, 4, 6 ms, with the two constants below; 36
    points) fitted on every source picks 6 ms, 20 ms buckets and 200 us, and every source held
    out picks 6 ms too (13 of the 14 folds 6 ms / 20 ms / 200 us, the NeMo RL performance
    summary's fold 6 ms / 40 ms / 100 us, 10 ms buckets before DeepSpeed-Chat's rows took their
    launch's LoRA). At that point the 108 results are predicted within a median 1.14x (1.15x
    before those rows), the 65 RL step times 1.12x, and 106 of the 111 published orderings are kept
    (over the 97 results before NeMo RL's v0.4 table and Miles joined: 1.15x, 1.13x and 102 of
    107, against 1.18x, 1.19x and 101 at the earlier 4 ms / 40 ms / 50 us; bench/fidelity.py,
    2026-12-06); leave-one-source-out refits and does not depend on the default. 6 ms
    and 200 us are the grid's tops. The 21 ROCm verl results added later (129 in all) move
    the grid's best on every source to 6 ms / 40 ms / 100 us, which 16 of the 18 held-out
    folds choose; the defaults are kept at the earlier fit (not refitted with them). The runs
    it was fitted on are mostly x86 hosts (DGX H100);
    a GPU whose host CPU is slower per operation scales it by its accelerator record's
    host_overhead (cost.hardware.Hardware), a ratio of host times that does not depend on this
    figure."""

    eager_layer_seconds: float = 0.34e-3
    """Host time per layer and decode step in eager mode (no CUDA graphs: vLLM
    `enforce_eager`), on top of decode_step_seconds. Measured: Qwen2.5-Omni-7B's 28-layer
    thinker decodes at about 22.5 ms per token eager and 13 ms with CUDA graphs on A800
    (github-vllm-project-vllm-omni-issue-7960), 9.5 ms over 28 layers."""

    graph_batch_limit: int = 512
    """Largest decode batch (tokens of one forward pass) an engine of tensor-parallel degree 4
    and more replays a CUDA graph for; a larger step runs eagerly and pays eager_layer_seconds
    per layer. vLLM captures graphs up to min(2 x max_num_seqs, 512) by default and runs any
    batch above the largest captured size without one: 0.11.0 (the verl 0.6 ROCm blog's
    vllm0.11.0.dev image) sets the default in vllm/config/scheduler.py L222-L227 and falls back
    to eager in vllm/v1/worker/gpu_model_runner.py L1927-L1937 (`num_scheduled_tokens <=
    cudagraph_batch_sizes[-1]`); 0.17.1 keeps the same default (vllm/config/vllm.py
    L1369-L1383, max_cudagraph_capture_size). A running batch never exceeds max_num_seqs, so
    the 2 x max_num_seqs term never binds and 512 is the limit at any tensor-parallel degree
    (github-vllm-project-vllm, wheels read 2026-12-07). SGLang's default depends on the GPU and
    the degree (OWN_FRAMEWORK_CONSTANTS for the frameworks that launch SGLang)."""

    graph_batch_limit_below_tp4: int = 512
    """graph_batch_limit for an engine of tensor-parallel degree 1 to 3: vLLM's 512 again;
    SGLang captures fewer graphs there (`_sglang_graph_max_bs`)."""

    recurrent_state_bytes: float = 2.0
    """Bytes an element of a linear layer's recurrent state takes in the engine's cache (its
    conv window stays bf16): vLLM keeps it in the model's dtype, bf16; SGLang in float32
    (`_sglang_fp32_state`)."""

    linear_state_share: float = 0.0
    """Share of an engine's cache memory (what its weights and workspace leave) held apart for
    linear layers' recurrent states, the rest for the attention layers' KV, on a model with
    both; 0 (the default): one pool, each sequence taking its state and its KV from it. Where
    apart, the engine runs as many sequences as the fuller of the two pools admits
    (`_sglang_radix_state_share`)."""

    linear_state_slots: float = 1.0
    """State slots an engine's state pool keeps per running sequence where it is apart
    (`linear_state_share`): 1 the sequence's own; SGLang's prefix cache keeps more
    (`_sglang_radix_state_slots`)."""

    moe_layer_decode_seconds: float = 29.7e-6
    """GPU time per MoE layer and decode step beyond streaming the touched experts' weights: the
    fused-MoE kernels' fixed part (token sorting and alignment, the small gate/up and down
    grouped GEMMs' tails, the activation and the weighted sum), which a roofline of bytes over
    bandwidth misses at the few tokens per expert of a decode step. vLLM's benchmark_moe on
    H100 for Qwen3-30B-A3B FP8 at TP 1 (github-vllm-project-vllm-pr-24700, main-branch
    configs) takes 44.54 us at batch 1 (8 experts touched, 37.7 MB) and 262.73 us at batch 64
    (126 touched, 594 MB): the line through them streams at 2.55 TB/s (76% of 3.35 TB/s) plus
    29.7 us, while batch 1 alone reaches 25% of peak (that slope is
    EfficiencyFactors.expert_decode_hbm). Kept because it improved the
    leave-one-source-out figure of bench/fidelity.py (77 results: median 1.18x to 1.16x)."""

    scale_up_latency_seconds: float = 10e-6
    """Latency of one small collective inside the scale-up domain: a 32 KiB all-reduce on
    8x H200 takes ~10-20 us through torch.distributed (github-stas00-ml-engineering)."""

    scale_out_latency_seconds: float = 200e-6
    """Latency of one small collective across nodes. Measured: ~50-100 us for a 32 KiB
    all-reduce on 4x8 B200 (github-stas00-ml-engineering). The default is the calibration's
    fit instead (bench/fidelity.py, with decode_step_seconds, whose docstring gives the fit):
    200 us on every source and with 13 of the 14 sources held out (100 us with NeMo RL's
    performance summary held out), the grid's top (50, 100, 200 us) and twice the measured
    range's upper end: an effective figure the published runs ask for, not a measurement of
    one collective."""

    host_bytes_per_s: float = 50e9
    """Achieved host<->GPU copy bandwidth for offloading where neither the cluster nor the
    accelerator record gives the link (PCIe Gen5 x16: 64 GB/s per direction,
    datasheet-nvidia-h100, at host_link_efficiency)."""

    host_link_efficiency: float = 0.8
    """Share of the host link's line rate that pinned-memory copies reach (an assumption, as
    for the other link efficiencies: protocol overhead of PCIe is about a fifth)."""

    host_memory_usable_fraction: float = 0.8
    """Share of a node's host memory that offloaded state may take; the rest holds the OS, the
    framework's processes, Ray's object store and the data loader. An assumption no source
    states, held under what Ray's defaults allow (github-ray-project-ray, read 2026-12-06): its
    memory monitor kills workers once the node's used memory passes 0.95 of the total
    (src/ray/common/ray_config_def.h lines 70-74 at 903341435409, memory_usage_threshold), and
    its object store, not preallocated (preallocate_plasma_memory false, same file), may grow to
    0.3 of the memory available at start, at most 200 GB (python/ray/_private/ray_constants.py
    lines 53-57 at 00432a917573). On a 2,048 GiB node that leaves at most 0.95 - 186.3 / 2,048
    = 0.86 for offloaded state with the object store full, before the OS and the processes'
    own memory; on a node under about 620 GiB, where the 30% binds, 0.65."""

    unrecorded_host_memory_gib_per_gpu: float = 2048.0 / 8
    """Host memory per GPU assumed where neither the scenario (cluster.host_memory_gib_per_node)
    nor the accelerator record gives a figure: 2 TB a node of 8 GPUs, what every 8-GPU
    reference system the records cite carries (DGX A100 80GB, DGX H100/H200, DGX B200). Their
    2 TB is DIMM capacity, whose "GB" is JEDEC's binary unit (32 DIMMs of 64 GB in NVIDIA's
    DGX H100 system description, docs-jedec-memory-capacity-prefixes), so 2,048 GiB: 256 GiB a
    GPU. An assumption, said with the plans it binds (rules.scenario): an unknown figure must
    not let streamed parameters and CPU optimizers park terabytes on a host nobody measured."""

    cpu_adam_bytes_per_s_per_node: float = 200e9
    """Host memory traffic a node's CPU Adam step sustains: DeepSpeed's vectorised CPU Adam
    streams fp32 master weights, moments and gradients (about 28 bytes read and written per
    parameter). Two server sockets of 8 DDR5 channels peak near 600 GB/s; a third of it is
    assumed, not measured here, and can be overridden."""

    fallback_scale_out_gbits_per_s: float = 100.0
    """Network per GPU when neither the accelerator record nor the scenario gives one."""

    zero3_gradient_bytes_per_param: float = 2.0
    """Bytes per parameter of the gradient reduce-scatter ZeRO-3 issues every micro-batch (the
    weights are always gathered in bf16). DeepSpeed communicates in the model's dtype, bf16,
    unless a config sets communication_data_type (DeepSpeedEngine.communication_data_type in
    deepspeed/runtime/engine.py L1405-L1416 at edaa7221, github-deepspeedai-deepspeed, read
    2026-12-06). The PyTorch-FSDP frameworks reduce in float32 by default
    (OWN_FRAMEWORK_CONSTANTS)."""

    train_microbatch_tokens: float = 16384.0
    """Token budget of one training micro-batch per GPU (dynamic batch size): verl's default
    `ppo_max_token_len_per_gpu` (github-volcengine-verl). A sequence longer than the budget
    is its own micro-batch."""

    weight_sync_bucket_bytes: float = 512.0 * 2**20
    """Weights move to the rollout engine in buckets of 512 MiB: verl's
    `update_weights_bucket_megabytes` and slime's `--update-weight-buffer-size` defaults
    (github-volcengine-verl, github-thudm-slime)."""

    weight_broadcast_bucket_bytes: float = 512.0 * 2**20
    """Bucket of the network broadcast to rollout engines on other GPUs (disaggregated): the
    same 512 MiB as the colocated buckets where a framework sets none of its own (slime's
    `--update-weight-buffer-size`); NeMo RL packs its own (OWN_FRAMEWORK_CONSTANTS). verl is
    not one number: its fully-async trainer packs 4096 MB buffers with the checkpoint engine
    on (async_training.checkpoint_engine, the default in
    verl/experimental/fully_async_policy/config/fully_async_ppo_megatron_trainer.yaml at
    b178a3cd, github-volcengine-verl) and, with it off (the checkpoint-engine ablation rows
    of docs-verl-fully-async the knowledge base records), broadcasts and loads one tensor at
    a time (base_detach_sync.py _sync_vllm_weights), which plan.rollout.per_tensor_sync
    describes. It keeps this default."""

    weight_broadcast_buffers: float = 1.0
    """Buckets of the network broadcast in flight at once. One (the default): a bucket is
    gathered, packed, sent and loaded before the next starts, so the bucket costs and the
    transfer add up. NeMo RL's collective refit alternates two buffers on two CUDA streams (its
    own constant, OWN_FRAMEWORK_CONSTANTS): the next bucket is gathered and packed while the
    last one is broadcast and loaded, so with B buckets in flight a bucket takes
    max(its transfer, (its fixed cost + its transfer) / B) (Little's law) and the fixed costs
    hide behind one another and behind the bytes. NeMo RL measured the overlap when it came
    in: DeepSeek-V3's refit from 34 s to 14 s, Qwen3-235B's from 13 s to 5.5 s
    (github-nvidia-nemo-rl-pr-1379); two buffers give at most half."""

    weight_sync_bucket_seconds: float = 20e-3
    """Fixed cost per bucket (gather launch, IPC handle or broadcast set-up, engine
    `load_weights`). A calibration knob, fitted on a grid (10, 20, 40 ms) together with
    decode_step_seconds and scale_out_latency_seconds against the published runs and the
    deployments with step times (bench/fidelity.py): 20 ms on every source and with 13 of the
    14 sources held out (40 ms with NeMo RL's performance summary held out; decode_step_seconds
    gives the fit)."""

    load_call_seconds_per_engine_tensor: float = 1.78e-6
    """Host time an engine's `load_weights` call spends per parameter tensor of the engine's
    model, whatever it loads: vLLM's load_weights rebuilds dict(self.named_parameters()) at
    the top of every call (Qwen3MoeModel.load_weights in vllm/model_executor/models/qwen3_moe.py
    at 002456df, Qwen2Model.load_weights in qwen2.py at 013a2792, github-vllm-project-vllm;
    SGLang's MoE models alike, github-sgl-project-sglang-issue-30848), so a
    call costs this times the engine's parameter tensors (ModelFigures.engine_tensors). It
    matters where weights arrive one tensor per call (plan.rollout.per_tensor_sync); bucketed
    paths pay it once a bucket, inside weight_sync_bucket_seconds. Read from the one
    published per-tensor sync of a model small enough for this term alone: verl's fully-async
    Qwen2.5-Math-7B on 4 + 4 H20 GPUs of one node took 0.12 s without the checkpoint engine
    (docs-verl-fully-async, checkpoint-engine ablation table): 339 calls into a 199-tensor
    engine, 1.78 us each at most (the broadcast bytes share those 0.12 s). The source's
    Qwen3-30B-A3B and Qwen3-235B-A22B rows are predicted with it, so they are in sample for
    this constant."""

    expert_loop_seconds: float = 20e-6
    """Host time per expert, layer and pass when a mixture of experts trains without expert
    parallelism under ZeRO-3/FSDP: the Hugging Face model code those backends run loops over
    the experts in Python (select the expert's tokens, three small GEMMs, scatter back), a few
    kernel launches of ~5 us each per expert. An assumption, not a measurement; Megatron's
    grouped GEMM does not pay it, nor does NeMo-RL's DTensor backend (OWN_FRAMEWORK_CONSTANTS),
    which builds its MoE models from Automodel's own layers."""

    expert_skew_by_ep: tuple[tuple[float, float], ...] = (
        (8.0, 1.49),
        (16.0, 1.63),
        (32.0, 1.82),
        (64.0, 2.10),
    )
    """Measured straggler factor of expert parallelism: (EP degree, the most loaded expert
    rank's tokens over the mean) for one MoE layer, without a load balancer. The SGLang team's
    simulation of DeepSeek-V3's recorded expert distributions ("Effects of Scale and EPLB to
    Balancedness", blog-lmsys-large-scale-ep) gives the balancedness mean/max at 8, 16, 32 and
    64 GPUs as 0.673, 0.612, 0.548 and 0.476 (read off the plot): these are its inverses, the
    result records `lmsys-eplb-balancedness-ep*-without-eplb`. Rollout engines of RL
    frameworks and Megatron training run without EPLB (the routing shifts with the policy,
    survey §3.6.1), so the unbalanced figures apply. model_pass.expert_straggler interpolates
    them (1.0 at EP 1)."""

    loss_bytes_per_logit: float = 0.0
    """Bytes through HBM per vocabulary logit and trained token that the policy loss's
    elementwise kernels move (the log-probability of the sampled token and the entropy need
    the whole softmax; the logits' matmuls are in the parameter FLOPs already). Counted where
    a framework's loss code has been read (OWN_FRAMEWORK_CONSTANTS); zero elsewhere, where the
    term is left out rather than guessed."""

    head_fp32_matmuls: float = 0.0
    """Matmuls of the output layer's size (2 x hidden x vocab FLOPs per token) that a
    framework's loss runs in float32 per trained response token, on the CUDA cores
    (Hardware.fp32_flops: PyTorch keeps TF32 off for matmuls by default,
    docs-pytorch-numerical-accuracy). Counted where a framework's loss code has been read
    (OWN_FRAMEWORK_CONSTANTS); zero elsewhere."""

    entropy_copy_bytes_per_logit: float = 0.0
    """Bytes per vocabulary logit (over tp) that the policy's forward-only old-log-prob pass
    holds beyond its loss's on Megatron's path, to take the entropy beside the log-probs.
    verl's logits_processor clones the logits before its in-place entropy (logits_bak =
    logits.clone(), verl/workers/actor/megatron_actor.py L643-L660 at b178a3cd, called with
    calculate_entropy=not is_lora by megatron_workers.py L885; its 0.8 engine alike,
    verl/workers/engine/megatron/transformer_impl.py L912-L939 at 7aed6b23, with
    calculate_entropy=True from ray_trainer.py L1266): the bf16 logits, their bf16 clone and
    the cross-entropy's fp32 copy of the clone, 8 bytes where the loss alone keeps 6 (unless
    use_fused_kernels, off by default, which no mapping writes). 0 (the default): no copy."""

    reference_swap: float = 0.0
    """1 where a framework runs the reference in the trained policy's own parameters: the
    reference's weights wait on the host, and for its pass the policy's are copied to the
    host, the reference's copied in, and the policy's copied back, so no second model is on
    the GPU and 3x the weights cross the host link a step. NeMo RL's Megatron worker keeps
    reference_state_dict on the CPU (nemo_rl/models/megatron/setup.py L2159-L2168 at
    7ea279abf) and swaps it in use_reference_model (megatron_policy_worker.py L1971-L2036),
    its DTensor workers alike (dtensor_policy_worker.py L1775-L1793, dtensor_policy_worker_v2.py
    L353-L356 and L1007 with nemo_rl/models/automodel/setup.py L413-L436); slime backs the
    reference up on the host and restores it into the actor's model for its log-probs
    (slime/backends/megatron_utils/actor.py L121-L133, L302-L305, L435-L460 at 624b824a,
    github-thudm-slime). 0 (the default): a parked reference is loaded beside the policy."""

    group_admission: float = 0.0
    """1 where an asynchronous rollout admits a prompt's whole group as one unit and frees its
    in-flight slot only when the group's longest response has ended, so the group's finished
    responses hold slots they no longer decode in: NeMo RL's trajectory collector runs a
    thread per prompt group under a semaphore of num_prompts_per_step x
    max_trajectory_age_steps and releases it in the thread's finally, after the whole group's
    rollout and its push to the replay buffer (nemo_rl/algorithms/async_utils.py L281-L287,
    L493 and L637-L749 at v0.6.0 5fb58893, the same at v0.5.0 6c708930, the versions of its
    performance runs; github-nvidia-nemo-rl). 0 (the default): every response is its own
    request and its slot frees when it ends. verl's fully-async rollouter admits groups the
    same way (one task per prompt repeated rollout.n times, at most 16 per server:
    verl/experimental/fully_async_policy/fully_async_rollouter.py L207 and L542-L598 at
    b178a3cd) but is not given it: its rows' assumed 1,000-token mean under a 28,672 cap puts
    the length family's longest of 16 at 10,500 tokens, a tenth of the slots decoding: the
    16:16 run would then wait on its rollout (613 s predicted against 294.8 s published),
    where the doc's table shows the trainer waiting only 21.26 s per step for samples
    (docs-verl-fully-async)."""

    length_segments: int = 16
    """Segments of the response-length grid over which the rollout's shrinking batch is
    integrated (accuracy versus speed; 16 keeps the drain integral within a few percent)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.usable_memory_fraction <= 1.0:
            raise ValueError("usable_memory_fraction must lie in (0, 1]")
        if self.weight_broadcast_buffers < 1:
            raise ValueError("weight_broadcast_buffers counts buffers: at least 1")
        counts = (
            self.max_seqs_per_replica,
            self.length_segments,
            self.graph_batch_limit,
            self.graph_batch_limit_below_tp4,
        )
        if min(counts) < 1:
            raise ValueError(
                "max_seqs_per_replica, length_segments and the graph batch limits must be positive"
            )
        for f in fields(self):
            if f.name != "expert_skew_by_ep" and getattr(self, f.name) < 0:
                raise ValueError(f"overhead {f.name} is negative")
        degrees = [ep for ep, _ in self.expert_skew_by_ep]
        if degrees != sorted(set(degrees)) or any(ep <= 1 for ep in degrees):
            raise ValueError("expert_skew_by_ep needs increasing EP degrees above 1")
        if any(skew < 1.0 for _, skew in self.expert_skew_by_ep):
            raise ValueError("a max/mean expert load is at least 1")


DEFAULT_OVERHEADS = Overheads()

FITTED = ("decode_step_seconds", "weight_sync_bucket_seconds", "scale_out_latency_seconds")
"""The constants chosen by fitting the calibration table (bench/fidelity.py), not read from a
publication: the site shows them beside the table they were fitted to."""


def _vllm_max_num_seqs(gpu_gib: float, gpu_name: str) -> float:
    # vLLM's own default when a launch sets none (github-vllm-project-vllm,
    # vllm/engine/arg_utils.py at 99d7eb5): 1024 sequences on GPUs of at least 70 GiB other than
    # the A100, 256 elsewhere.
    return 1024 if gpu_gib >= 70 and "a100" not in gpu_name.lower() else 256


READ_FROM_ONE_FRAMEWORK: dict[str, tuple[str, Callable[[float, str], float]]] = {
    "max_seqs_per_replica": ("verl", _vllm_max_num_seqs),
    # OpenRLHF's --train.max_tokens_per_gpu default (github-openrlhf-openrlhf,
    # openrlhf/cli/train_ppo_ray.py L361 at 3c3be62).
    "train_microbatch_tokens": ("verl", lambda gpu_gib, gpu_name: 16192.0),
}
"""Constants read from one framework's defaults: that framework, and the value that holds where it
sets nothing (a function of the GPU's memory and name). weight_sync_bucket_bytes is read from
two (verl and slime give 512 MiB alike), so holding one out leaves it standing."""


def _nemo_rl_packed_bucket(gpu_gib: float, gpu_name: str) -> float:
    # NeMo RL's collective refit packs tensors into buffers of 2% of the GPU's memory, at most
    # 5 GiB (NRL_REFIT_BUFFER_MEMORY_RATIO default 0.02, nemo_rl/utils/packed_tensor.py
    # get_target_packed_tensor_size at 7ea279ab, github-nvidia-nemo-rl).
    return min(0.02 * gpu_gib * GIB, 5.0 * GIB)


def _prime_rl_fused_head_bytes(gpu_gib: float, gpu_name: str) -> float:
    # prime-rl's RL trainer computes log-probabilities and entropy in a fused head chunked over
    # the vocabulary (on by default: fused_lm_head_chunk_size "auto" is 2048 for RL; the
    # autograd function _ChunkedLogProbEntropyFn in src/prime_rl/trainer/models/layers/lm_head.py
    # at b798a90d, github-primeintellect-ai-prime-rl). Per logit element it moves, forward, 56
    # bytes (bf16 logits written 2, cast to fp32 6, temperature 8, max 4, shift 8, exp 8, sum 4,
    # exp x logit 12, sum 4) and, backward, 64 (the logits recomputed 2, cast 6, temperature 8,
    # shift 8, exp 8, times the gradient 8, temperature 8, two casts back to bf16 12, read by
    # the two matmuls 4). The head sits outside the recomputed layers, so recomputation adds
    # nothing to it.
    return 56.0 + 64.0


def _trl_chunked_head_fp32(gpu_gib: float, gpu_name: str) -> float:
    # TRL's chunked log-prob head (patch_chunked_lm_head, applied by AsyncGRPOTrainer with
    # chunk_size 8192; _ChunkedLogProbFunction in trl/trainer/utils.py at f2cd5771,
    # github-huggingface-trl) runs on the completion tokens alone; its backward recomputes each
    # vocabulary chunk's logits in bf16 and then forms the hidden states' gradient
    # (grad_logits @ w_chunk.float()) and the head weight's gradient (grad_logits.t() @
    # hidden.float()) as float32 matmuls over the whole vocabulary, the second even for a frozen
    # head (LoRA): two head-sized float32 matmuls per completion token. (The bf16 recompute of
    # the logits stands in for the bf16 backward-data matmul the parameter FLOPs already count.)
    return 2.0


def _nemo_rl_refit_buffers(gpu_gib: float, gpu_name: str) -> float:
    # NeMo RL's packed broadcast producer and consumer each cycle through NRL_REFIT_NUM_BUFFERS
    # buffers (default 2), one CUDA stream per buffer, waiting on a buffer's stream only when
    # they come back to it: one buffer is packed (or unpacked and loaded) while the other is in
    # the broadcast (nemo_rl/utils/packed_tensor.py get_num_buffers L34-L36, producer L68-L126,
    # consumer L187-L256 at 7ea279ab, github-nvidia-nemo-rl).
    return 2.0


def _whole_groups(gpu_gib: float, gpu_name: str) -> float:
    # Overheads.group_admission: NeMo RL's trajectory collector holds a prompt group's slot
    # until the whole group is done (the citation there).
    return 1.0


def _verl_entropy_clone(gpu_gib: float, gpu_name: str) -> float:
    # Overheads.entropy_copy_bytes_per_logit: the bf16 clone (the citation there).
    return 2.0


def _reference_in_policy(gpu_gib: float, gpu_name: str) -> float:
    # Overheads.reference_swap: the reference runs in the policy's parameters (the citation
    # there).
    return 1.0


def _fsdp_fp32_reduce(gpu_gib: float, gpu_name: str) -> float:
    # The PyTorch-FSDP backends reduce-scatter gradients in float32 unless a launch says
    # otherwise (MixedPrecision / MixedPrecisionPolicy reduce_dtype): verl's FSDP workers
    # (verl/workers/fsdp_workers.py L496-L503 at b178a3cd, github-volcengine-verl); NeMo-RL's
    # DTensor workers, v1 and v2 (nemo_rl/models/dtensor/parallelize.py L507-L511,
    # nemo_rl/models/automodel/setup.py L484-L488 at 7ea279abf, github-nvidia-nemo-rl); SkyRL
    # (skyrl/train/config/config.py L214 at a9564572, github-novasky-ai-skyrl); ROLL's FSDP2
    # strategy (roll/distributed/strategy/fsdp2_strategy.py L1005-L1015 at 8eb27cc2,
    # github-alibaba-roll); AReaL's FSDP engine (grad_reduce_dtype, areal/api/cli_args.py
    # L1181-L1183 at fee938ea, github-areal-project-areal); prime-rl (reduce_dtype,
    # src/prime_rl/trainer/config.py L226-L231 at b798a90d, github-primeintellect-ai-prime-rl).
    # All read 2026-12-06.
    return 4.0


def _automodel_grouped_experts(gpu_gib: float, gpu_name: str) -> float:
    # NeMo-RL's DTensor worker is v2 in its launch configs (dtensor_cfg._v2: true,
    # examples/configs/grpo_math_1B.yaml L141-L142 at 7ea279abf, github-nvidia-nemo-rl), which
    # loads MoE models through Automodel's registry (Qwen3MoeForCausalLM -> its own
    # components/models/qwen3_moe, nemo_automodel/_transformers/registry.py L160-L161 at
    # 24b47e85, github-nvidia-nemo-automodel, the submodule NeMo-RL pins). Their experts run as
    # one torch._grouped_mm per projection (GroupedExperts, components/moe/experts.py L229 and
    # L355), the default expert backend on CUDA (BackendConfig.experts "torch_mm",
    # components/models/common/utils.py L172), which NeMo-RL's empty automodel_kwargs keep:
    # no Python loop over the experts, with or without expert parallelism. Read 2026-12-06.
    return 0.0


def _sglang_graph_max_bs(gpu_gib: float, below_tp4: bool) -> float:
    # SGLang's decode CUDA-graph capture limit where the launch sets none (cuda_graph_max_bs
    # None): by the GPU's memory and, from 20 GiB, the engine's tensor-parallel degree
    # (ServerArgs._handle_gpu_memory_settings, python/sglang/srt/server_args.py L1166-L1222 at
    # 0.5.10.post1, the version AReaL pins at 4aef98d8 and fee938ea, whose SGLangConfig leaves
    # cuda_graph_max_bs None, areal/api/cli_args.py L1757 and L1944; the same table at
    # 0.5.15.post1, slime's image, L3497-L3550, and slime sets none). A larger batch runs
    # without a graph (CudaGraphRunner.can_run, `cuda_graph_bs <= self.max_bs`:
    # model_executor/cuda_graph_runner.py L683-L687 at 0.5.10.post1,
    # runner/decode_cuda_graph_runner.py L427-L431 at 0.5.15.post1; github-sgl-project-sglang,
    # the PyPI wheels read 2026-12-07; github-areal-project-areal).
    if gpu_gib < 20:
        return 8
    for memory, small, large in ((35, 24, 80), (60, 32, 160), (160, 256, 512)):
        if gpu_gib < memory:
            return small if below_tp4 else large
    return 512


def _sglang_fp32_state(gpu_gib: float, gpu_name: str) -> float:
    # Overheads.recurrent_state_bytes: SGLang keeps a linear layer's recurrent (SSM) state in
    # float32 unless the model's config or SGLANG_MAMBA_SSM_DTYPE says otherwise, and the conv
    # window in bf16 (mamba2_state_dtype, python/sglang/srt/configs/mamba_utils.py L47-L107 at
    # 0.5.15.post1, slime's image; github-sgl-project-sglang, the PyPI wheel read 2026-12-07);
    # neither slime (624b824a) nor AReaL (fee938ea) sets --mamba-ssm-dtype.
    return 4.0


def _sglang_radix_state_share(gpu_gib: float, gpu_name: str) -> float:
    # Overheads.linear_state_share: with its prefix (radix) cache on and no
    # --max-mamba-cache-size, SGLang splits the memory left for caches between the state pool
    # and the KV pool as mamba_full_memory_ratio r : 1, r = 0.9 by default (server_args.py
    # L1915-L1918; handle_max_mamba_cache, model_executor/model_runner_kv_cache_mixin.py
    # L186-L220 at 0.5.15.post1). slime leaves the radix cache on (its SGLang arguments name
    # neither the cache nor the ratio, slime/backends/sglang_utils at 624b824a); AReaL turns
    # it off (SGLangConfig.disable_radix_cache True, areal/api/cli_args.py L1933 at fee938ea),
    # and SGLang then sizes the state pool at max_running_requests, which AReaL's exports
    # write: one pool, as the default costs it.
    return 0.9 / 1.9


def _sglang_radix_state_slots(gpu_gib: float, gpu_name: str) -> float:
    # Overheads.linear_state_slots: with the radix cache on, SGLang runs at most (state pool
    # slots) // ratio sequences (_resolve_max_num_reqs, model_runner_kv_cache_mixin.py
    # L1239-L1252 at 0.5.15.post1), ratio 3 plus 2 for the extra buffer (L74-L77, L293-L312),
    # which it takes for the hybrid architectures of the KB's linear-attention models
    # (Qwen3-Next, Qwen3.5's, Nemotron-H: arg_groups/overrides.py L982-L1003) with the overlap
    # scheduler on (its default, and slime's) and the triton linear-attention backend (the
    # default, server_args.py L1949-L1955): L1038-L1046.
    return 5.0


def _sglang_graph_limit(gpu_gib: float, gpu_name: str) -> float:
    return _sglang_graph_max_bs(gpu_gib, below_tp4=False)


def _sglang_graph_limit_below_tp4(gpu_gib: float, gpu_name: str) -> float:
    return _sglang_graph_max_bs(gpu_gib, below_tp4=True)


SGLANG_FIRST = ("slime", "areal")
"""The frameworks whose export mappings list SGLang as their first rollout engine
(`components`), so their plans are launched, and costed, on SGLang."""


FSDP_FP32_REDUCE = ("verl", "nemo-rl", "skyrl", "roll", "areal", "prime-rl")
"""The frameworks whose ZeRO-3 (their FSDP backend) reduces gradients in float32."""


OWN_FRAMEWORK_CONSTANTS: dict[str, dict[str, Callable[[float, str], float]]] = {
    "zero3_gradient_bytes_per_param": dict.fromkeys(FSDP_FP32_REDUCE, _fsdp_fp32_reduce),
    "expert_loop_seconds": {"nemo-rl": _automodel_grouped_experts},
    "weight_broadcast_bucket_bytes": {"nemo-rl": _nemo_rl_packed_bucket},
    "weight_broadcast_buffers": {"nemo-rl": _nemo_rl_refit_buffers},
    "loss_bytes_per_logit": {"prime-rl": _prime_rl_fused_head_bytes},
    "head_fp32_matmuls": {"trl": _trl_chunked_head_fp32},
    "group_admission": {"nemo-rl": _whole_groups},
    "entropy_copy_bytes_per_logit": {"verl": _verl_entropy_clone},
    "reference_swap": dict.fromkeys(("nemo-rl", "slime"), _reference_in_policy),
    "graph_batch_limit": dict.fromkeys(SGLANG_FIRST, _sglang_graph_limit),
    "recurrent_state_bytes": dict.fromkeys(SGLANG_FIRST, _sglang_fp32_state),
    "linear_state_share": {"slime": _sglang_radix_state_share},
    "linear_state_slots": {"slime": _sglang_radix_state_slots},
    "graph_batch_limit_below_tp4": dict.fromkeys(SGLANG_FIRST, _sglang_graph_limit_below_tp4),
}
"""Constants a framework sets for its own launches in place of the default, by constant and
framework: a function of the GPU's memory (GiB) and name. Read from the framework's code at
the commit its mapping pins (prime-rl, without a mapping, at the commit of its benchmark runs),
never fitted, so they hold in and out of sample."""


def for_framework(overheads: Overheads, framework: str, gpu_gib: float, gpu_name: str) -> Overheads:
    """`overheads` with the constants `framework` sets for itself (OWN_FRAMEWORK_CONSTANTS)."""
    changes = {
        name: own[framework](gpu_gib, gpu_name)
        for name, own in OWN_FRAMEWORK_CONSTANTS.items()
        if framework in own
    }
    return replace(overheads, **changes) if changes else overheads


def without_framework(
    overheads: Overheads, framework: str, gpu_gib: float, gpu_name: str
) -> Overheads:
    """`overheads` with every constant read from `framework` alone replaced by its value from
    elsewhere, for judging that framework's own launches out of sample."""
    changes = {
        name: elsewhere(gpu_gib, gpu_name)
        for name, (source, elsewhere) in READ_FROM_ONE_FRAMEWORK.items()
        if source == framework
    }
    return replace(overheads, **changes) if changes else overheads
