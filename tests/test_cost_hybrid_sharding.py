"""Hybrid sharding (plan.train.shard_group): ZeRO/FSDP shards within groups of the dp x cp
ranks and replicates across them, as verl's, SkyRL's and ROLL's fsdp_size build a ddp x fsdp
mesh (verl/workers/fsdp_workers.py L98-L105 at b178a3c). States per GPU are one group's share;
gathers and reduce-scatters run inside the group; gradient shards are all-reduced across the
replicas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout, TrainLinks
from rlmguide.cost.memory import frozen_weight_bytes, trained_state, zero3_gather_bytes
from rlmguide.cost.model_pass import micro_pass, training_counts
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.plans import PlanError
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

from rlmguide.cli import cli

P = float(QWEN7B_PARAMS)
FIG = ModelFigures.of(QWEN25_7B)
HW = Hardware.of(H100, 8, DEFAULT_OVERHEADS)
FABRIC = Fabric.of(HW, EfficiencyFactors(), DEFAULT_OVERHEADS)


def layout(**fields: object) -> TrainLayout:
    return TrainLayout.of(one_plan(**fields))


@pytest.mark.parametrize(
    ("zero", "at_8", "at_2"),
    [
        # Qwen2.5-7B on 8 GPUs, tp = pp = 1: 2 + 2 + 12 bytes per parameter
        (1, 4 * P + 12 * P / 8, 4 * P + 12 * P / 2),  # Adam states: 5.5 P -> 10 P
        (2, 2 * P + 14 * P / 8, 2 * P + 14 * P / 2),  # and gradients: 3.75 P -> 9 P
        (3, 16 * P / 8, 16 * P / 2),  # and weights: 2 P -> 8 P
    ],
)
def test_states_per_gpu_are_one_groups_share_by_hand(zero: int, at_8: float, at_2: float) -> None:
    whole = trained_state(FIG, layout(train_zero=zero)).total[0]
    assert whole == pytest.approx(at_8, rel=1e-12)
    # a group of all 8 ranks is full sharding, exactly
    assert trained_state(FIG, layout(train_zero=zero, train_shard_group=8)).total[0] == whole
    pairs = trained_state(FIG, layout(train_zero=zero, train_shard_group=2)).total[0]
    assert pairs == pytest.approx(at_2, rel=1e-12)


def test_the_group_counts_context_ranks_and_keeps_the_gathered_layers_own_share() -> None:
    # cp 2 on 8 GPUs (dp 4): ZeRO-3 over a group of 4 of the 8 dp x cp ranks, 16 P / 4 = 4 P;
    # the two gathered layers hold all but the rank's own 1/4 of each layer
    lay = layout(train_cp=2, train_shard_group=4)
    assert (lay.shard_group[0], lay.replicas[0]) == (4.0, 2.0)
    assert trained_state(FIG, lay).total[0] == pytest.approx(4 * P, rel=1e-12)
    per_layer = (FIG.dense_params - FIG.embedding_params) / FIG.layers
    gathered = zero3_gather_bytes(FIG, lay, backward=False)[0]
    assert gathered == pytest.approx(2 * 2 * per_layer * 3 / 4, rel=1e-12)


def test_links_inside_the_group_and_across_the_replicas() -> None:
    links = TrainLinks.of(FABRIC, layout(train_shard_group=2))
    assert (links.shard.size[0], links.replica.size[0]) == (2.0, 4.0)
    links = TrainLinks.of(FABRIC, layout())
    assert (links.shard.size[0], links.replica.size[0]) == (8.0, 1.0)


def test_zero3_traffic_per_micro_batch_by_hand() -> None:
    # ZeRO-3 per micro-batch: 2 bf16 gathers and 1 bf16 reduce-scatter of P parameters, 6 P
    # bytes, of which a rank sends (g - 1) / g; hybrid adds a ring all-reduce of the reduced
    # bf16 shard (2 P / g bytes) over the r replicas, 2 (r - 1) / r of it.
    # g 8:            7/8 x 6 P = 5.25 P
    # g 2 (r 4):      1/2 x 6 P + 2 x 3/4 x 2 P / 2 = 3 P + 1.5 P = 4.5 P
    # g 1 (r 8, DDP): 0 + 2 x 7/8 x 2 P = 3.5 P, a plain gradient all-reduce
    tokens = np.array([4096.0])
    for group, expected in ((0, 5.25 * P), (2, 4.5 * P), (1, 3.5 * P)):
        lay = layout(train_shard_group=group)
        links = TrainLinks.of(FABRIC, lay)
        got = micro_pass(FIG, lay, links, 1e15, training_counts(lay), tokens, 4096.0)
        assert got.link_bytes[0] == pytest.approx(expected, rel=1e-12), group


def test_the_frozen_models_shard_over_their_own_group_where_the_plan_gives_one() -> None:
    """Qwen2.5-7B's reference beside an actor in groups of 2 of 8 ranks: in the actor's
    groups it holds 2 P / 2 = P bytes a GPU; in a group of its own over all 8 (SkyRL's
    ref.fsdp_config.fsdp_size left at -1), 2 P / 8 = P / 4, and a gathered layer lacks only
    the rank's 1/8 of it, not 1/2. The trained models' states keep their groups of 2."""
    paired = layout(train_shard_group=2)
    own = layout(train_shard_group=2, train_frozen_shard_group=8)
    assert frozen_weight_bytes(FIG, paired)[0] == pytest.approx(P, rel=1e-12)
    assert frozen_weight_bytes(FIG, own)[0] == pytest.approx(P / 4, rel=1e-12)
    assert trained_state(FIG, own).total[0] == trained_state(FIG, paired).total[0]
    per_layer = (FIG.dense_params - FIG.embedding_params) / FIG.layers
    gathered = zero3_gather_bytes(FIG, own.frozen_sharding(), backward=False)[0]
    assert gathered == pytest.approx(2 * 2 * per_layer * 7 / 8, rel=1e-12)
    # no group of their own: the very layout, whose frozen models share the trained groups
    assert paired.frozen_sharding() is paired


def test_the_frozen_group_raises_the_pools_memory_only_through_the_reference() -> None:
    """The training pool's frozen-model term of the whole cost core follows the group: the
    reference's weights, 1/4 of those in the actor's pairs (the P above less P / 4 is
    0.75 P bytes), in a GRPO plan that keeps the reference on the GPU."""
    plans = one_plan(train_shard_group=2, train_frozen_shard_group=[0, 8])
    cost = evaluate(H100, QWEN25_7B, workload(), plans, needs=Needs(needs_reference=True))
    frozen = cost.memory_terms_gib["training"]["frozen_models"] * 2**30
    assert frozen[0] - frozen[1] == pytest.approx(0.75 * P, rel=1e-9)


def test_a_group_that_does_not_divide_the_ranks_is_refused() -> None:
    with pytest.raises(PlanError, match=r"plan\.train\.shard_group: must divide"):
        one_plan(train_shard_group=3)
    with pytest.raises(PlanError, match=r"plan\.train\.shard_group: must divide"):
        one_plan(train_cp=2, train_shard_group=16)
    with pytest.raises(PlanError, match=r"plan\.train\.frozen_shard_group: must divide"):
        one_plan(train_frozen_shard_group=3)


SCENARIO = """
cluster: {accelerator: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}
models: {policy: qwen2.5-7b}
workload: {algorithm: grpo, prompts_per_step: 64, samples_per_prompt: 8, prompt_tokens: 512,
  response_tokens: 2048, minibatches_per_step: 4}
plan:
  placement: colocated
  execution: sync
  rollout: {gpus: 8, tp: 1}
  train: {gpus: 8, %s zero: 3, recompute: full, shard_group: %d}
"""


@pytest.mark.parametrize(
    ("layout", "group", "said"),
    [
        ("tp: 1, pp: 1,", 3, "plan.train.shard_group: 3 does not divide the 8 data-parallel"),
        ("", 2, "plan.train.shard_group: set plan.train.gpus, tp and pp with it"),
    ],
)
def test_a_scenario_group_the_layout_cannot_hold_is_one_line(
    tmp_path: Path, layout: str, group: int, said: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO % (layout, group))
    out = CliRunner().invoke(cli, ["estimate", str(path)])
    assert out.exit_code == 2, out.output
    assert said in out.output and "Traceback" not in out.output


def test_a_group_too_small_to_fit_says_a_larger_one_would_help(tmp_path: Path) -> None:
    # groups of 1: whole replicas, 16 bytes per parameter of Qwen2.5-7B (113 GiB) per GPU
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO % ("tp: 1, pp: 1,", 1))
    out = CliRunner().invoke(cli, ["estimate", str(path)])
    assert out.exit_code == 1, out.output
    assert "zero 3 in groups of 1" in out.output
    assert "it would fit with a larger shard group (plan.train.shard_group)" in out.output


@settings(max_examples=25, deadline=None)
@given(
    zero=st.integers(1, 3),
    cp=st.sampled_from([1, 2]),
    gpus=st.sampled_from([8, 16, 32]),
    critic=st.booleans(),
)
def test_memory_per_gpu_never_grows_with_the_shard_group(
    zero: int, cp: int, gpus: int, critic: bool
) -> None:
    # at a fixed micro-batch (a searched one would spend the room a larger group frees)
    groups = [g for g in (1, 2, 4, 8, 16, 32) if gpus % g == 0]
    plans = one_plan(
        rollout_gpus=gpus,
        train_gpus=gpus,
        train_cp=cp,
        train_zero=zero,
        train_micro_tokens=4096 * cp,
        train_shard_group=groups,
    )
    needs = Needs(needs_critic=critic, needs_reference=True)
    cost = evaluate(H100, QWEN25_7B, workload(), plans, needs=needs)
    memory = cost.memory_train_gib
    assert np.all(np.diff(memory) <= 1e-9 * memory[:-1]), memory
