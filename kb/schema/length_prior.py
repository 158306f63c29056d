"""The mean response length of a run that states only its cap: a prior from published runs.

Launch scripts give the cap (max_response_length, max_new_tokens); few runs publish the mean.
Taking the mean at the cap says every response runs to it: no long tail, so nothing for
one-step-off, asynchronous or partial rollouts to hide, and every token decoded and trained at
the longest length. No published RL run measures that: the mean sits well below the cap in
every one below. Where a workload gives max_response_tokens without response_tokens, the mean
is this share of the cap (the median of the runs below), and the cost core's length family
(cost.lengths) spreads the responses between that mean and the cap.

Each measurement is one workload (model, data, cap) as its source prints it, read from the
source's own table or text, never from a plot. NeMo RL's rows cap the whole sequence
(max_total_sequence_length, prompt and response); their prompts are about a hundred tokens,
so the share of the response cap is within a few percent of the share printed. The spread is
wide (a base model on hard maths writes a twentieth of a 16k cap; an instruct model on
OpenMathInstruct-2 at a 4k cap fills four fifths of it): the prior is the centre of published
practice, not a prediction for one run, and the outputs say so where they use it.

Checked 2026-12-06.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median, quantiles


@dataclass(frozen=True, slots=True)
class MeanLength:
    """One workload's published mean response length against its cap."""

    source: str
    """Source record id."""
    locator: str
    """Where in the source: file at a commit, table and row, section."""
    workload: str
    mean_tokens: float
    cap_tokens: float

    @property
    def share(self) -> float:
        return self.mean_tokens / self.cap_tokens


MEASUREMENTS: tuple[MeanLength, ...] = (
    MeanLength(
        "github-verl-project-verl-recipe",
        "async_flow/docs/performance.md at 48ea0a79, experiment configuration table "
        "(max_responses 16k, average_responses 1k)",
        "Qwen2.5-Math-7B, DAPO on dapo-math-17k, verl",
        1000,
        16384,
    ),
    MeanLength(
        "arxiv-2510.11345",
        "ROLL Flash §3.2 setup: Qwen3-8B-Base's responses about 2k tokens; the appendix "
        "config caps responses at 30,720 (as read in result roll-flash-think-sync-colocated-"
        "40gpu-step)",
        "Qwen3-8B-Base, DAPO-Math-18K, ROLL",
        2000,
        30720,
    ),
    MeanLength(
        "docs-verl-perf-dpsk",
        "docs/perf/dpsk.md, benchmark table, DeepSeek 671b 96 GPUs (mean response length "
        "1,960); cap 9,632 from examples/grpo_trainer/run_deepseek671b_math_megatron_96gb.sh "
        "(result verl-dpsk-deepseek-v3-96gpu-step)",
        "DeepSeek-V3, GRPO on dapo-math-17k, verl",
        1960,
        9632,
    ),
    MeanLength(
        "docs-nemo-rl-performance-summary-v0.5",
        "docs/about/performance-summary.md at v0.5.0, H100 BF16 table, GRPO "
        "Llama-3.1-8B-Instruct on policy 16 GPUs: G-Average Seq len 1,019, T-Max Sequence "
        "Length 4,096 (result nemo-rl-perf-llama-8b-grpo-16gpu)",
        "Llama-3.1-8B-Instruct, GRPO on OpenMathInstruct-2, NeMo RL",
        1019,
        4096,
    ),
    MeanLength(
        "arxiv-2510.11345",
        "ROLL Flash §3.2 setup: Qwen3-8B-Think's responses about 11k tokens; cap 30,720 as above",
        "Qwen3-8B (thinking), DAPO-Math-18K, ROLL",
        11000,
        30720,
    ),
    MeanLength(
        "blog-huggingface-asyncgrpo-lora-hfjobs",
        "asyncgrpo-lora-hfjobs.md at 081e91b5, 'Where the time goes': sequences of around "
        "1.2k tokens with prompts of about 120, max 3,000 generated tokens (result "
        "trl-async-grpo-lora-hfjobs-step-reference)",
        "Qwen2.5-Math-1.5B, async GRPO with LoRA, TRL",
        1080,
        3000,
    ),
    MeanLength(
        "docs-nemo-rl-performance-summary",
        "docs/about/performance-summary.md at v0.6.0, H100 BF16 table, GRPO DeepSeek V3 on "
        "policy 256 GPUs: G-Average Seq len 701, T-Max Sequence Length 1,536 (result "
        "nemo-rl-perf-deepseek-v3-grpo-256gpu-v0.6)",
        "DeepSeek-V3, GRPO on OpenMathInstruct-2, NeMo RL",
        701,
        1536,
    ),
    MeanLength(
        "docs-nemo-rl-performance-summary",
        "same table, GRPO Qwen3-235B on policy 128 GPUs: 5,698 of 8,192 (result "
        "nemo-rl-perf-qwen3-235b-grpo-128gpu-v0.6)",
        "Qwen3-235B-A22B, GRPO on OpenMathInstruct-2, NeMo RL",
        5698,
        8192,
    ),
    MeanLength(
        "docs-nemo-rl-performance-summary",
        "same table, GRPO Qwen3-30B-A3B on policy 32 GPUs: 3,203 of 4,096 (result "
        "nemo-rl-perf-qwen3-30b-a3b-grpo-32gpu-v0.6)",
        "Qwen3-30B-A3B, GRPO on OpenMathInstruct-2, NeMo RL",
        3203,
        4096,
    ),
    MeanLength(
        "docs-nemo-rl-performance-summary-v0.5",
        "docs/about/performance-summary.md at v0.5.0, H100 BF16 table, GRPO Qwen3-32B on "
        "policy 32 GPUs: 3,251 of 4,096 (result nemo-rl-perf-qwen3-32b-grpo-32gpu)",
        "Qwen3-32B, GRPO on OpenMathInstruct-2, NeMo RL",
        3251,
        4096,
    ),
)

MEAN_SHARE: float = median(m.share for m in MEASUREMENTS)
"""The prior: the median share of the cap a published run's mean response takes."""

MEAN_SHARE_QUARTILES: tuple[float, float] = tuple(  # type: ignore[assignment]
    quantiles((m.share for m in MEASUREMENTS), n=4, method="inclusive")[::2]
)
"""The lower and upper quartiles of the same shares: the prior's spread."""


def prior_mean_tokens(cap: int) -> int:
    """The mean response length the prior gives a run capped at `cap` tokens."""
    return max(1, round(MEAN_SHARE * cap))


def disclosure(cap: int) -> str:
    """What an output says when the prior supplied the mean."""
    low, high = MEAN_SHARE_QUARTILES
    return (
        f"workload.response_tokens is not given: the mean response is taken as "
        f"{prior_mean_tokens(cap):,} tokens, {MEAN_SHARE:.2f} of the {cap:,}-token cap, the "
        f"median over {len(MEASUREMENTS)} published runs (quartiles {low:.2f}-{high:.2f}; "
        f"sources: {', '.join(sorted({m.source for m in MEASUREMENTS}))}); step time uses "
        "that spread of lengths, memory is sized at the cap. State the run's mean to replace it"
    )
