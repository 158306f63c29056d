"""The activation model against published memory measurements: every result record with a
memory metric (kb/records/results) is predicted from its own setting and must lie within 15%.

Like is compared with like: `activation_memory_gb` is what the allocator's peak adds to the
state left after a step (activations and the loss), predicted by `LayerTerms` and
`end_bytes`; `peak_memory_gb` is the whole peak, predicted with the weights, gradients and
Adam states of `trained_state` besides.
"""

from __future__ import annotations

import numpy as np
import pytest
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.memory import LayerTerms, end_bytes, trained_state
from rlmguide.cost.plans import PlanTable
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Model, Result
from rlmguide.kb.schema.specs import Architecture

TOLERANCE = 0.15

CATALOG = load_catalog(DEFAULT_ROOTS).records
RESULTS = sorted(
    (r for r in CATALOG["result"].values() if isinstance(r, Result) and r.memory is not None),
    key=lambda r: r.id,
)


def _architecture(result: Result) -> Architecture:
    assert result.scenario is not None
    policy = result.scenario.models.policy
    if isinstance(policy, str):
        model = CATALOG["model"][policy]
        assert isinstance(model, Model) and model.architecture is not None
        return model.architecture
    return policy


def _layout(result: Result) -> TrainLayout:
    assert result.scenario is not None
    train = result.scenario.plan.train
    gpus = train.gpus or 1
    table = PlanTable.from_arrays(
        placement="disaggregated", execution="sync", rollout_gpus=1, rollout_tp=1,
        train_gpus=gpus, train_tp=train.tp or 1, train_pp=train.pp or 1,
        train_cp=train.cp or 1, train_ep=train.ep or 1, train_etp=train.etp,
        train_zero=train.zero or 0, train_recompute=train.recompute or "none",
    )  # fmt: skip
    return TrainLayout.of(table)


def predicted_gb(result: Result) -> float:
    """The model's figure for the result's metric, in GB (1e9 bytes)."""
    setting = result.memory
    assert setting is not None
    fig = ModelFigures.of(_architecture(result))
    layout = _layout(result)
    megatron = setting.code_path == "megatron"
    terms = LayerTerms.of(fig, megatron=megatron, dropout=setting.dropout)
    layer = terms.per_layer(layout.tp, layout.etp, setting.sequence_parallel)
    kept = layer * setting.layers_on_gpu * setting.micro_batches_in_flight
    ends = end_bytes(fig, np.array([megatron]), layout.tp, setting.sequence_parallel)
    tokens = setting.micro_batch_tokens / layout.cp
    activations = tokens * (kept + (ends if setting.loss_on_gpu else 0.0))
    total = activations
    if result.metric == "peak_memory_gb":
        total = activations + trained_state(fig, layout).total
    return float(total[0]) / 1e9


def test_there_are_at_least_five_measurements() -> None:
    assert len(RESULTS) >= 5
    assert {r.metric for r in RESULTS} == {"activation_memory_gb", "peak_memory_gb"}


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: r.id)
def test_activation_model_within_15_percent(result: Result) -> None:
    predicted = predicted_gb(result)
    assert abs(predicted / result.value - 1.0) <= TOLERANCE, (result.id, predicted, result.value)
