"""The scenario file: cluster x models x workload x (partly fixed) plan x efficiency overrides."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kb.schema.common import Positive, PositiveInt, Slug, Strict, Text
from kb.schema.specs import AcceleratorFigures, Architecture

Placement = Literal["colocated", "disaggregated"]
Execution = Literal["sync", "one-step-off", "async", "partial-rollout"]
Recompute = Literal["none", "selective", "full"]
Fraction = Annotated[float, Field(gt=0, le=1)]


class InlineAccelerator(AcceleratorFigures):
    """An accelerator given in the scenario itself instead of by catalog id."""

    name: Text = "inline accelerator"


class InlineModel(Architecture):
    """A model given in the scenario itself instead of by catalog id."""

    name: Text = "inline model"


class Cluster(Strict):
    accelerator: Slug | InlineAccelerator
    nodes: PositiveInt = 1
    gpus_per_node: PositiveInt = 8
    scale_out_gbps_per_gpu: Positive | None = None

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


class Models(Strict):
    policy: Slug | InlineModel
    critic: Slug | InlineModel | None = None
    reward: Literal["verifier"] | Slug | InlineModel = "verifier"


class Workload(Strict):
    algorithm: Slug = "grpo"
    prompts_per_step: PositiveInt
    samples_per_prompt: PositiveInt | None = None
    prompt_tokens: PositiveInt
    response_tokens: PositiveInt
    max_response_tokens: PositiveInt | None = None
    minibatches_per_step: PositiveInt = 1
    epochs: PositiveInt = 1

    @model_validator(mode="after")
    def _lengths(self) -> Workload:
        if self.max_response_tokens is not None and self.max_response_tokens < self.response_tokens:
            raise ValueError(
                f"max_response_tokens ({self.max_response_tokens}) is below the mean "
                f"response_tokens ({self.response_tokens})"
            )
        return self


class RolloutPlan(Strict):
    gpus: PositiveInt | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    ep: PositiveInt | None = None
    prefix_caching: bool | None = None


class TrainPlan(Strict):
    gpus: PositiveInt | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    cp: PositiveInt | None = None
    ep: PositiveInt | None = None
    etp: PositiveInt | None = None
    """Expert tensor parallelism (Megatron's expert_tensor_parallel_size); unset means tp."""
    zero: Annotated[int, Field(ge=0, le=3)] | None = None
    recompute: Recompute | None = None


class Plan(Strict):
    """What the user fixes; every field left out is searched."""

    placement: Placement | None = None
    execution: Execution | None = None
    max_staleness: Annotated[int, Field(ge=1, le=16)] | None = None
    rollout: RolloutPlan = RolloutPlan()
    train: TrainPlan = TrainPlan()


class Efficiency(Strict):
    """Overrides of the achieved fractions of peak; unset ones take the cost core's defaults."""

    prefill_compute: Fraction | None = None
    decode_hbm: Fraction | None = None
    decode_compute: Fraction | None = None
    forward_compute: Fraction | None = None
    train_compute: Fraction | None = None
    scale_up_link: Fraction | None = None
    scale_out_link: Fraction | None = None


class Scenario(Strict):
    cluster: Cluster
    models: Models
    workload: Workload
    plan: Plan = Plan()
    efficiency: Efficiency = Efficiency()
