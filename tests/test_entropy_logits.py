"""verl's old-log-prob pass on Megatron's path clones the logits to take the entropy beside
the log-probs (Overheads.entropy_copy_bytes_per_logit): 8 bytes a vocabulary entry at its peak
where the loss alone keeps 6."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.memory import (
    LOSS_BYTES_MEGATRON,
    end_bytes,
    forward_activation_bytes,
    training_memory,
)
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, for_framework
from test_cost_specs import QWEN25_7B, one_plan, workload

TOKENS = np.array([8192.0])


def _layout(**fields: object) -> TrainLayout:
    # Qwen2.5-7B on Megatron's path: tp 2 with sequence parallelism, no pipeline
    return TrainLayout.of(one_plan(train_tp=2, train_zero=1, **fields))


def test_verl_s_clone_adds_two_bytes_a_logit_over_tp_by_hand() -> None:
    # vocabulary 152,064 over tp 2: the loss keeps (2 + 4) x 76,032 = 456,192 bytes a token,
    # with verl's bf16 clone (2 + 2 + 4) x 76,032 = 608,256: 152,064 more, 8,192 tokens
    # 1,245,708,288 bytes
    fig, layout = ModelFigures.of(QWEN25_7B), _layout()
    assert layout.model_parallel[0]
    assert LOSS_BYTES_MEGATRON * 76_032 == 456_192
    verl = for_framework(DEFAULT_OVERHEADS, "verl", 80.0, "H100").entropy_copy_bytes_per_logit
    assert verl == 2.0 and DEFAULT_OVERHEADS.entropy_copy_bytes_per_logit == 0.0
    plain = forward_activation_bytes(fig, layout, TOKENS)[0]
    cloned = forward_activation_bytes(fig, layout, TOKENS, logit_copy_bytes=verl)[0]
    assert cloned - plain == 1_245_708_288
    head = end_bytes(fig, layout.model_parallel, layout.tp)[0]
    assert head + 152_064 == pytest.approx((2 + 2 + 4) * 76_032 + (4 * 3584 + 4) / 2)


def test_no_copy_under_lora_for_a_value_head_or_on_the_hugging_face_path() -> None:
    fig = ModelFigures.of(QWEN25_7B)
    for layout, model in (
        (_layout(train_lora_rank=16), fig),  # verl computes no entropy under LoRA
        (_layout(), fig.scoring()),  # a critic's values have no logits
        (TrainLayout.of(one_plan(train_zero=3)), fig),  # FSDP: the 8-byte HF loss holds it
    ):
        plain = forward_activation_bytes(model, layout, TOKENS)[0]
        assert forward_activation_bytes(model, layout, TOKENS, logit_copy_bytes=2.0)[0] == plain


def test_the_policy_s_pass_holds_the_copy_and_the_reference_s_does_not() -> None:
    # The actor's old-log-prob pass and the reference's (verl's ref runs calculate_entropy=False,
    # megatron_workers.py L852 at b178a3cd): only the actor's grows, by 1,245,708,288 bytes at
    # an 8,192-token forward micro-batch.
    fig, yes = ModelFigures.of(QWEN25_7B), np.array([True])
    layout = replace(_layout(), forward_micro_tokens=TOKENS)
    wl = workload(prompt_tokens=1024, response_tokens=2048, max_response_tokens=4096)
    batch = Batch.of(wl, Needs())
    verl = for_framework(DEFAULT_OVERHEADS, "verl", 80.0, "H100")
    args = ([(fig, yes)], [(fig, yes, 2.0)], layout, batch, 1e15)
    plain, cloned = training_memory(*args, DEFAULT_OVERHEADS), training_memory(*args, verl)
    assert cloned.assessment[0] - plain.assessment[0] == 1_245_708_288
    no_actor = training_memory([], [(fig, yes, 2.0)], layout, batch, 1e15, verl)
    no_actor_plain = training_memory([], [(fig, yes, 2.0)], layout, batch, 1e15, DEFAULT_OVERHEADS)
    assert no_actor.assessment[0] == no_actor_plain.assessment[0]
