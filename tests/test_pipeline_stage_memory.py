"""Memory of an uneven pipeline is the fullest stage's own sum: its layers, the vocabulary
matrix it holds (embedding on the first stage, output layer on the last) and its
activations, not the fullest layer count with a vocabulary matrix and the heaviest stage's
activations added together."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.memory import FIRST, LAST, MIDDLE, trained_state, training_memory
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.units import GIB
from test_cost_specs import QWEN25_7B, one_plan, workload

from rlmguide.review import Hardware, review

SLIME = REPO / "tests" / "fixtures" / "review" / "slime-624b824" / "scripts"

# Qwen2.5-7B: 7,615,616,512 parameters, two 152,064 x 3,584 = 544,997,376 vocabulary
# matrices, so (7,615,616,512 - 1,089,994,752) / 28 = 233,057,920 a decoder layer.
LAYER, VOCABULARY = 233_057_920, 544_997_376


def _split_layout() -> TrainLayout:
    # Megatron's account-for-embedding-and-loss split of 28 layers over 6 stages: 4 | 5 x 4 | 4
    return TrainLayout.of(
        one_plan(train_gpus=6, train_pp=6, train_zero=1, train_recompute="none",
                 train_first_layers=4, train_last_layers=4)
    )  # fmt: skip


def test_each_stage_holds_its_layers_and_its_end_s_vocabulary_matrix() -> None:
    # ZeRO-1 over one data-parallel rank: 2 + 2 + 12 = 16 bytes a parameter
    fig, layout = ModelFigures.of(QWEN25_7B), _split_layout()
    first = 16 * (4 * LAYER + VOCABULARY)  # 23,635,664,896
    middle = 16 * 5 * LAYER  # 18,644,633,600: no vocabulary matrix
    assert trained_state(fig, layout, FIRST).total[0] == first == 23_635_664_896
    assert trained_state(fig, layout, MIDDLE).total[0] == middle == 18_644_633_600
    assert trained_state(fig, layout, LAST).total[0] == first  # the output layer, untied
    # the upper bound (5 layers with a vocabulary matrix) no stage holds
    assert trained_state(fig, layout).total[0] == 16 * (5 * LAYER + VOCABULARY)


def test_the_peak_is_one_stage_s_states_with_its_own_activations() -> None:
    # No recomputation, one 4,096-token micro-batch, 8 a rank: a layer keeps 158,832 bytes a
    # token (test_cost_memory's count). The first stage holds 6 micro-batches of 4 layers,
    # the second 5 of 5: activations 24 and 25 layers' worth. First: 23,635,664,896 +
    # 4,096 x 24 x 158,832 = 39,249,485,824; second: 18,644,633,600 + 4,096 x 25 x 158,832
    # = 34,909,030,400. The first stage is the peak, with its own (smaller) activations.
    fig, layout = ModelFigures.of(QWEN25_7B), _split_layout()
    wl = workload(
        prompts_per_step=12, samples_per_prompt=4, prompt_tokens=1024, response_tokens=3072,
        max_response_tokens=3072, minibatches_per_step=1,
    )  # fmt: skip
    batch = Batch.of(wl, Needs())
    yes = np.array([True])
    got = training_memory([(fig, yes)], [], layout, batch, 1e15, DEFAULT_OVERHEADS)
    assert got.costed_tokens[0] == 4096
    assert got.terms["weights"][0] == 2 * (4 * LAYER + VOCABULARY)
    assert got.terms["activations"][0] == 4096 * 24 * 158_832
    assert got.training[0] == 39_249_485_824


def test_slime_s_qwen35_27b_split_is_costed_on_its_lighter_last_stage() -> None:
    # slime's run-qwen3.5-27B.sh at 624b824: 64 layers, TP 4, PP 2 with
    # --decoder-last-pipeline-num-layers 30, so Megatron builds 34 | 30 (get_num_layers_to_build
    # at 103851dc); CP 4, full recomputation, fp32 main grads, CPU Adam, 8,192 tokens a GPU.
    # The record's 26,895,990,272 parameters less two 248,320 x 5,120 = 1,271,398,400
    # vocabulary matrices leave 380,518,648 a layer. Weights over TP 4 in bf16:
    #   first 2 x (34 x 380,518,648 + 1,271,398,400) / 4 = 7,104,516,216 bytes
    #   last  2 x (30 x 380,518,648 + 1,271,398,400) / 4 = 6,343,478,920 bytes
    # with fp32 gradients twice those. Activations a token over the 4 CP ranks of a 34,816-
    # token micro-batch (the 32,768-token cap and review's 2,048-token prompt: 8,704 tokens):
    #   first: 2 micro-batches x 34 layer inputs x 2 x 5,120 / 4 = 174,080, plus the layer
    #     rebuilt (norms 40,960, attention 28,768, SwiGLU 104,448, QK-norm 14,448 / 4 of the
    #     layers = 3,612: 177,788 / 4 = 44,447): 218,527
    #   last: 30 x 2,560 = 76,800, the output layer's gathered input 2 x 5,120 = 10,240, and
    #     the loss (norm 5,120 + (6 x 248,320 + 4) / 4 = 377,601): 464,641
    # With the 15% fragmentation reserve on activations: first 3 x 7,104,516,216 + 1.15 x
    # 8,704 x 218,527 = 23,500,916,507; last 3 x 6,343,478,920 + 1.15 x 8,704 x 464,641 =
    # 23,681,307,314. The last stage is the peak: 3 x 6,343,478,920 + 8,704 x 464,641 =
    # 23,074,672,024 bytes of tensors (costed as 32 | 32: 24,260,792,448; 34 layers beside
    # the logits: 25,357,783,912).
    got = review(SLIME / "run-qwen3.5-27B.sh", hardware=Hardware("h100-sxm-80gb"))
    train = got["scenario"]["plan"]["train"]
    assert train.get("first_stage_layers") is None and train["last_stage_layers"] == 30
    terms = got["estimate"]["memory_breakdown_gib"]["training"]
    assert terms["weights"] * GIB == pytest.approx(6_343_478_920, rel=1e-12)
    assert terms["gradients"] * GIB == pytest.approx(2 * 6_343_478_920, rel=1e-12)
    assert terms["activations"] * GIB == pytest.approx(8_704 * 464_641, rel=1e-12)
    peak = got["estimate"]["memory_gib_per_gpu"]["train"] * GIB
    assert peak == pytest.approx(23_074_672_024, rel=1e-12)
    reserve = terms["fragmentation_reserve"] * GIB
    assert peak + reserve == pytest.approx(23_681_307_314, rel=1e-10)
