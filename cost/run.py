"""A whole RL run from the steady-state step: GPU-hours, wall time, price and energy.

A run is more than steps x step time. Each extra term is a named, defaulted and overridable
constant of `RunTerms` (as `Overheads` holds the step's latencies): responses that grow during
training, dynamic sampling that over-generates, checkpoints of the optimizer state, evaluation,
start-up, and restarts after failures. Defaults say whether they come from a source or are an
assumption. The functions take scalars or arrays (one entry per plan) and do no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt
from rlmguide.cost.lengths import budgeted
from rlmguide.cost.units import BF16_BYTES, FP32_BYTES

Number = float | npt.NDArray[np.float64]

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0

LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16384
"""Meta's Llama 3 405B pre-training: 419 unexpected interruptions in a 54-day snapshot on
16,384 H100 GPUs (arXiv-2407.21783, the section on reliability and Table 5)."""


@dataclass(frozen=True, slots=True)
class RunTerms:
    response_growth: float = 1.0
    """Mean response length at the last step over that at the first (workload.response_tokens),
    growing linearly and capped at max_response_tokens. Responses of reasoning runs often
    lengthen as RL proceeds, but by how much is the run's own: 1 (no growth) is an assumption
    to override."""

    oversampling: float = 1.0
    """Responses generated per response kept: dynamic sampling (DAPO, arXiv-2503.14476)
    discards groups whose rewards are all equal and samples more. 1 means none (assumption)."""

    checkpoint_every_steps: float = 50.0
    """Steps between checkpoints of the trained state (an assumption: verl's `save_freq` is off
    by default, so every run sets its own)."""

    checkpoint_bytes_per_param: float = BF16_BYTES + 3 * FP32_BYTES
    """bf16 weights plus fp32 master weights and two Adam moments per trained parameter: 14
    bytes (the mixed-precision Adam state of ZeRO, arXiv-1910.02054, without gradients)."""

    storage_bytes_per_s_per_node: float = 2e9
    """Checkpoint write bandwidth per training node to shared storage: an assumption (a few
    NVMe-backed parallel-filesystem clients); Llama 3's Tectonic sustained 2 TB/s for 16K GPUs
    (arXiv-2407.21783), about 1 GB/s per 8-GPU node."""

    evaluation_every_steps: float = 0.0
    """Steps between evaluations; 0 runs none (assumption: evaluation is the run's choice)."""

    evaluation_seconds: float = 0.0
    """Wall time of one evaluation on the run's cluster (assumption, 0 without evaluation)."""

    startup_seconds: float = 600.0
    """Start-up of the run and of each restart: loading weights, starting the inference
    engines and capturing CUDA graphs (an assumption of ten minutes)."""

    failures_per_gpu_hour: float = LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * 24 * LLAMA3_GPUS)
    """Unexpected interruptions per GPU-hour: 419 in 54 days on 16,384 GPUs in the Llama 3
    report (arXiv-2407.21783), 1.97e-5. Each stops the whole synchronous job."""

    pue: float = 1.2
    """Power usage effectiveness of the data centre (facility power over IT power): an
    assumption for a modern GPU hall, to override with the operator's figure."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if not np.isfinite(getattr(self, f.name)) or getattr(self, f.name) < 0:
                raise ValueError(f"run term {f.name} must be finite and non-negative")
        if self.response_growth <= 0 or self.oversampling < 1 or self.pue < 1:
            raise ValueError("response_growth must be positive, oversampling and pue at least 1")


DEFAULT_RUN_TERMS = RunTerms()

ASSUMED = (
    "response_growth",
    "oversampling",
    "checkpoint_every_steps",
    "storage_bytes_per_s_per_node",
    "evaluation_every_steps",
    "evaluation_seconds",
    "startup_seconds",
    "pue",
)
"""The terms whose defaults are assumptions rather than figures read from a source."""


def length_schedule(
    response_tokens: float, growth: float, cap: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Mean response lengths at which to cost a step, and their weights in the run's mean step
    time: Simpson's rule over a linear growth from `response_tokens` to `growth` times it,
    capped at `cap`. Without growth, one length of weight 1."""
    if growth == 1.0:
        return np.array([float(response_tokens)]), np.array([1.0])
    ends = np.array([1.0, (1.0 + growth) / 2.0, growth]) * response_tokens
    return np.minimum(ends, cap), np.array([1.0, 4.0, 1.0]) / 6.0


def mean_length(
    response_tokens: float, growth: float, cap: float, budget: float | None = None
) -> float:
    """The run's mean response length under the schedule's weights (exact for an uncapped
    linear growth; used to turn a token budget into steps), each length of the schedule cut at
    the reasoning budget where there is one (cost.lengths.budgeted)."""
    lengths, weights = length_schedule(response_tokens, growth, cap)
    cut = np.array([budgeted(float(length), cap, budget)[0] for length in lengths])
    return float(cut @ weights)


@dataclass(frozen=True, slots=True)
class RunTime:
    """Wall seconds of a run, term by term (arrays over plans, or scalars)."""

    steps: Number
    oversampling: Number
    checkpoints: Number
    evaluation: Number
    startup: Number
    failures: Number
    expected_failures: Number

    @property
    def total(self) -> Number:
        return (
            self.steps
            + self.oversampling
            + self.checkpoints
            + self.evaluation
            + self.startup
            + self.failures
        )


def run_time(
    steps: float,
    step_seconds: Number,
    rollout_seconds: Number,
    gpus: Number,
    train_nodes: Number,
    trained_params: float,
    terms: RunTerms = DEFAULT_RUN_TERMS,
) -> RunTime:
    """The wall time of `steps` RL steps of mean `step_seconds` (over the length schedule), of
    which `rollout_seconds` is rollout, on `gpus` GPUs whose trainer spans `train_nodes`.

    Over-generation adds (oversampling - 1) rollouts per step (an upper bound where the
    rollout overlaps training). Checkpoints write `trained_params` x bytes per parameter from
    the training nodes in parallel. Failures arrive at a rate per GPU-hour over the run; each
    costs a start-up and, on average, half a checkpoint interval of steps redone (first order:
    failures during the redone time are not counted again)."""
    t = terms
    stepping = steps * step_seconds
    extra = (t.oversampling - 1.0) * steps * rollout_seconds
    interval = t.checkpoint_every_steps
    count = np.floor(steps / interval) if interval > 0 else 0.0
    write = trained_params * t.checkpoint_bytes_per_param
    checkpoints = count * write / (np.asarray(train_nodes) * t.storage_bytes_per_s_per_node)
    evals = np.floor(steps / t.evaluation_every_steps) if t.evaluation_every_steps > 0 else 0.0
    evaluation = evals * t.evaluation_seconds
    base = stepping + extra + checkpoints + evaluation + t.startup_seconds
    expected = t.failures_per_gpu_hour * np.asarray(gpus) * base / SECONDS_PER_HOUR
    # Without checkpoints a failure redoes on average half the run so far.
    redone_steps = interval / 2.0 if interval > 0 else steps / 2.0
    per_failure = t.startup_seconds + redone_steps * (step_seconds + extra / steps)
    return RunTime(
        steps=stepping,
        oversampling=extra,
        checkpoints=checkpoints,
        evaluation=evaluation,
        startup=t.startup_seconds,
        failures=expected * per_failure,
        expected_failures=expected,
    )


def gpu_hours(gpus: Number, seconds: Number) -> Number:
    return np.asarray(gpus) * seconds / SECONDS_PER_HOUR


def energy_kwh(gpu_hours_used: Number, watts_per_gpu: float, pue: float) -> Number:
    """Facility energy: GPU-hours x power per GPU x PUE, in kWh."""
    return gpu_hours_used * watts_per_gpu * pue / 1000.0
