"""Achieved fractions of peak: named, bounded in (0, 1], defaulted from publications, overridable.

The formulas divide work by `peak x factor`, never by a bare peak, and never carry a factor of
their own: every derating of a datasheet figure in the cost core is one of the fields below.
The names are the fields of `kb.schema.Efficiency`, so a scenario overrides any of them.
Each default names the sources (knowledge-base source ids) it is taken from, so the knowledge
base and the site can cite them; the lead calibrates them against published RL runs.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from rlmguide.kb.schema import Efficiency


@dataclass(frozen=True, slots=True)
class Default:
    """A default efficiency, where it comes from, and the measurement behind it."""

    value: float
    sources: tuple[str, ...]
    basis: str


DEFAULTS: dict[str, Default] = {
    # Prefill runs large GEMMs over thousands of tokens: close to the matmul ceiling. The
    # maximum achievable bf16 matmul throughput on H100 SXM is ~80% of the 989 TFLOP/s peak
    # (MAMF table, stas00/ml-engineering); attention, norms and sampling keep prefill below it.
    "prefill_compute": Default(
        0.60,
        ("github-stas00-ml-engineering",),
        "large-GEMM prefill below the ~80% maximum achievable matmul FLOP/s of H100",
    ),
    # Decode is a stream of weight and KV-cache reads; serving measurements put the achieved
    # model bandwidth utilisation of small-batch decode at roughly 50-70% of HBM peak
    # (Databricks/MosaicML inference engineering); PagedAttention keeps the KV reads paged but
    # contiguous enough to stream (vLLM, arXiv 2309.06180). The cost core also uses it for
    # the other streaming HBM kernels it charges: the Adam update and loading synced weights.
    "decode_hbm": Default(
        0.60,
        ("blog-databricks-llm-inference-performance-engineering", "arxiv-2309.06180"),
        "model bandwidth utilisation of memory-bound decode, ~50-70% of HBM peak",
    ),
    # The routed experts' weights stream through vLLM's fused-MoE kernel, whose own benchmark
    # (Qwen3-30B-A3B FP8 on H100 at TP 1, github-vllm-project-vllm-pr-24700) takes 44.54 us
    # for the 8 experts one token touches and 262.73 us for the 126 that 64 tokens touch: the
    # line through the two streams at 2.55 TB/s, 76% of the 3.35 TB/s peak, on top of a fixed
    # 29.7 us per layer (Overheads.moe_layer_decode_seconds is that intercept, so the slope
    # that goes with it is this rate, not the whole-model decode_hbm).
    "expert_decode_hbm": Default(
        0.76,
        ("github-vllm-project-vllm-pr-24700",),
        "fused-MoE decode streams the touched experts at 2.55 of 3.35 TB/s (H100, benchmark_moe)",
    ),
    # At large batch decode becomes compute-bound on skinny GEMMs (a few hundred rows) that
    # reach a lower share of the matmul ceiling than prefill does.
    "decode_compute": Default(
        0.50,
        ("github-stas00-ml-engineering",),
        "skinny decode GEMMs below the ~80% maximum achievable matmul FLOP/s of H100",
    ),
    # Forward-only passes (log-probs, values, rewards) run in the training framework with the
    # same kernels and micro-batches as the forward half of training.
    "forward_compute": Default(
        0.45,
        ("arxiv-2407.21783", "arxiv-2104.04473"),
        "as train_compute: the forward half of a training step",
    ),
    # End-to-end MFU of large training runs: 38-43% bf16 on 8K-16K H100 (Llama 3,
    # arXiv 2407.21783) and 52% on 3072 A100 (Megatron-LM, arXiv 2104.04473). The cost core
    # charges pipeline bubbles and exposed communication separately, so the kernel-level
    # fraction is taken at the upper half of that range.
    "train_compute": Default(
        0.45,
        ("arxiv-2407.21783", "arxiv-2104.04473"),
        "MFU of Megatron-style training: 38-43% (Llama 3, H100) to 52% (Megatron-LM, A100)",
    ),
    # The routed experts of a mixture train far below the dense rate, and the narrower the
    # expert the further: each routed token pays a fixed cost (routing, permutation, dispatch and
    # combine, the activation) on top of its expert's GEMMs, which grow with the expert's FFN
    # width w, so the experts reach w / (w + w0) of the dense rate (model_pass.expert_slowdown).
    # This factor is that share at the reference width EXPERT_REFERENCE_FFN (768, Qwen3-30B-A3B)
    # and fixes w0 = 768 x (1 / factor - 1). Megatron-Bridge's pre-training table (26.04.01
    # container, DGX-H100, FP8) reports 206 model TFLOP/s/GPU for Qwen3-30B-A3B (w 768) and
    # 253 for Qwen3-235B-A22B (w 1,536) against 731 for dense Llama-3-70B; with the experts'
    # share of the active FLOPs (55% and 64%) and the rest at the dense rate, the experts run at
    # 1/5.7 and 1/4.0 of it: w0 = 3,610 and 4,608 columns. 0.16 (w0 = 4,032) lies between; the
    # same table's wider experts (DeepSeek-V3 2,048, GPT-OSS-120B 2,880) are predicted, not
    # fitted.
    "expert_compute": Default(
        0.16,
        ("github-nvidia-nemo-megatron-bridge",),
        "routed experts in training at w / (w + w0) of the dense rate, 0.16 at w = 768 "
        "(Megatron-Bridge MoE vs dense model TFLOP/s on H100)",
    ),
    # NCCL ring all-reduce on one 8x H200 NVSwitch node reaches 367.6 GB/s bus bandwidth
    # with NVLink SHARP disabled: 82% of the 450 GB/s unidirectional NVLink 4 figure.
    "scale_up_link": Default(
        0.80,
        ("github-stas00-ml-engineering",),
        "NCCL ring all-reduce bus bandwidth, 82% of unidirectional NVLink 4 (8x H200)",
    ),
    # All-reduce over 4 nodes of 8x B200 reaches ~94% of the nodes' 400 Gbit/s-per-GPU NICs at
    # 16 GiB payloads but ~65-70% at the 128-512 MiB of gradient buckets; 0.8 sits between.
    "scale_out_link": Default(
        0.80,
        ("github-stas00-ml-engineering",),
        "NCCL inter-node all-reduce: ~94% of NIC line rate at 16 GiB, ~70% at bucket sizes",
    ),
}


EXPERT_REFERENCE_FFN = 768.0
"""The expert FFN width at which `expert_compute` is the routed experts' share of the dense
rate (Qwen3-30B-A3B's moe_intermediate_size)."""


@dataclass(frozen=True, slots=True)
class EfficiencyFactors:
    """The resolved factors one evaluation uses (defaults with the scenario's overrides)."""

    prefill_compute: float = DEFAULTS["prefill_compute"].value
    decode_hbm: float = DEFAULTS["decode_hbm"].value
    expert_decode_hbm: float = DEFAULTS["expert_decode_hbm"].value
    decode_compute: float = DEFAULTS["decode_compute"].value
    forward_compute: float = DEFAULTS["forward_compute"].value
    train_compute: float = DEFAULTS["train_compute"].value
    expert_compute: float = DEFAULTS["expert_compute"].value
    scale_up_link: float = DEFAULTS["scale_up_link"].value
    scale_out_link: float = DEFAULTS["scale_out_link"].value

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"efficiency {f.name} = {value} is outside (0, 1]")


def resolve_efficiency(
    overrides: Efficiency | EfficiencyFactors | None = None,
) -> EfficiencyFactors:
    """The defaults with every factor the scenario sets replaced by its value."""
    if isinstance(overrides, EfficiencyFactors):
        return overrides
    if overrides is None:
        return EfficiencyFactors()
    given = {k: v for k, v in overrides.model_dump().items() if v is not None}
    return EfficiencyFactors(**given)


def default_sources() -> list[str]:
    """Every source id the default factors cite, for the knowledge base to check."""
    return sorted({s for d in DEFAULTS.values() for s in d.sources})
