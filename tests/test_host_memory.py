"""Host memory: state a plan parks or streams on the host is checked against the node's host
memory, the scenario's or the accelerator record's figure, and where neither gives one against
an assumed 2 TB a node of 8 GPUs (Overheads.unrecorded_host_memory_gib_per_gpu), said in the
output: an unknown figure never means unlimited."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost.evaluate import evaluate, fullest_node
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.units import GIB
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema.records import Accelerator
from rlmguide.rules.scenario import parse_scenario, resolve
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

TWO_TB = 2048 * GIB
"""DGX H100/H200, DGX B200 and NVIDIA's DGX A100 80GB system description: 2 TB a node, of
DIMMs whose GB is JEDEC's 2^30 bytes (the DGX H100's 32 x 64 GB)."""


@cache
def records() -> dict[str, dict[str, object]]:
    return load_catalog(DEFAULT_ROOTS).records  # type: ignore[return-value]


def accelerator(name: str) -> Accelerator:
    return records()["accelerator"][name]  # type: ignore[return-value]


def test_the_assumed_figure_is_2_tb_a_node_of_8_gpus() -> None:
    assert DEFAULT_OVERHEADS.unrecorded_host_memory_gib_per_gpu * 8 * GIB == pytest.approx(TWO_TB)
    # the H20 record gives none; the A100 80GB record gives NVIDIA's DGX A100 figure
    h20, a100 = accelerator("h20-96gb"), accelerator("a100-sxm-80gb")
    assert h20.host_memory_gib_per_gpu is None
    assert Hardware.of(h20, 8, DEFAULT_OVERHEADS).host_memory_bytes == pytest.approx(TWO_TB)
    assert a100.host_memory_gib_per_gpu == 256.0
    assert Hardware.of(a100, 8, DEFAULT_OVERHEADS).host_memory_bytes == TWO_TB
    # a node's own figure wins over both
    given = Hardware.of(h20, 8, DEFAULT_OVERHEADS, host_memory_gib_per_node=4096)
    assert given.host_memory_bytes == 4096 * GIB


def test_streamed_parameters_overflow_an_unrecorded_host_by_hand() -> None:
    # Qwen2.5-7B streamed (ZeRO-3, parameters on the host) on 8 GPUs of figures with no host
    # memory: the node holds 18 bytes a parameter (test_cost_memory's streamed state), 18 P =
    # 137.1 GB. The room is 0.8 of the assumed 2 TB.
    assert H100.host_memory_gib_per_gpu is None
    plan = one_plan(train_zero=3, offload_params=True)
    room = DEFAULT_OVERHEADS.host_memory_usable_fraction * TWO_TB
    r = evaluate(H100, QWEN25_7B, workload(), plan)
    assert r.pool_overflow_gib["host"][0] * GIB == pytest.approx(18 * QWEN7B_PARAMS - room)
    # on a node of 100 GiB the same state (127.7 GiB) no longer fits
    small = evaluate(H100, QWEN25_7B, workload(), plan, host_memory_gib_per_node=100)
    over = small.pool_overflow_gib["host"][0] * GIB
    assert over == pytest.approx(18 * QWEN7B_PARAMS - 80 * GIB) and over > 0


def _notes(cluster: dict[str, object]) -> tuple[str, ...]:
    scenario = {
        "cluster": {"nodes": 4, "gpus_per_node": 8, **cluster},
        "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
        "workload": {"algorithm": "grpo", "prompts_per_step": 512, "samples_per_prompt": 16,
                     "prompt_tokens": 1024, "response_tokens": 4096,
                     "max_response_tokens": 16384},
    }  # fmt: skip
    return resolve(parse_scenario(scenario, "test"), records()).notes


def test_the_assumption_is_said_only_where_it_is_made() -> None:
    (said,) = [n for n in _notes({"accelerator": "h20-96gb"}) if n.startswith("host memory")]
    assert "h20-96gb record gives no" in said and "assumed 2,048 GiB a node" in said
    assert "cluster.host_memory_gib_per_node" in said
    for quiet in (
        {"accelerator": "a100-sxm-80gb"},
        {"accelerator": "h20-96gb", "host_memory_gib_per_node": 2048},
    ):
        assert not [n for n in _notes(quiet) if n.startswith("host memory")], quiet


def test_a_search_the_host_binds_says_so_and_that_the_figure_is_assumed() -> None:
    # DeepSeek-V3 GRPO on 32 H20s fits only with streamed parameters and a CPU optimizer:
    # 3,124.7 GiB a node on the host, over 0.8 x 2,048 GiB = 1,638.4 GiB (the atlas row fitted
    # while the H20's unrecorded host memory went unchecked).
    from rlmguide.rules.atlas import Setup
    from rlmguide.rules.recommend import NoFeasiblePlan, recommend, recommender_for

    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    scenario = parse_scenario(Setup("deepseek-v3", "h20-96gb", 32, "grpo").scenario(), "test")
    with pytest.raises(NoFeasiblePlan) as failed:
        recommend(recommender_for(resolve(scenario, catalog.records), catalog), 1)
    said = str(failed.value)
    assert "with a CPU optimizer and streamed parameters, closest:" in said
    assert "overflows the host pool by 1486.3 GiB per node" in said
    assert "(usable 1,638.4 GiB a node)" in said
    assert said.endswith("(host memory assumed, 2 TB per 8 GPUs: the h20-96gb record gives none)")


def test_pools_smaller_than_a_node_share_its_host_memory_by_hand() -> None:
    # Qwen2.5-7B streamed as above (18 bytes a parameter over the trainer's GPUs), trained on 4
    # GPUs of one 8-GPU node while the other 4 generate (NeMo-RL's one-node 4 + 4 split): the
    # node holds the 4 training GPUs' share, 18 P in all, the same as when 8 GPUs train it.
    # It was counted as if the node held 8 training GPUs (2 x 18 P), which a node of 200 GiB
    # then refused.
    split = one_plan(
        placement="disaggregated", execution="one-step-off", rollout_gpus=4, train_gpus=4,
        train_zero=3, offload_params=True,
    )  # fmt: skip
    room = DEFAULT_OVERHEADS.host_memory_usable_fraction * 200 * GIB
    r = evaluate(H100, QWEN25_7B, workload(), split, host_memory_gib_per_node=200)
    assert r.pool_overflow_gib["host"][0] * GIB == pytest.approx(18 * QWEN7B_PARAMS - room)
    assert r.pool_overflow_gib["host"][0] < 0
    # a trainer of 16 GPUs fills two nodes alone: 8 of its GPUs (9 P) on each
    wide = one_plan(
        placement="disaggregated", execution="one-step-off", rollout_gpus=8, train_gpus=16,
        train_zero=3, offload_params=True,
    )  # fmt: skip
    r = evaluate(H100, QWEN25_7B, workload(), wide, host_memory_gib_per_node=200)
    assert r.pool_overflow_gib["host"][0] * GIB == pytest.approx(9 * QWEN7B_PARAMS - room)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.floats(0, 1e12), st.integers(0, 64)), min_size=1, max_size=4),
    st.sampled_from([1, 2, 4, 8, 16]),
)
def test_the_fullest_node_lies_between_its_bounds(pools: list, node: int) -> None:  # type: ignore[type-arg]
    """No node holds more than node_gpus GPUs of the pool that parks the most a GPU, nor less
    than any one pool's GPUs on a node; a larger node never holds less."""
    arrays = [(np.array([h]), np.array([g])) for h, g in pools]
    got = fullest_node(arrays, node)[0]
    slack = 1e-9 * max(h for h, _ in pools) * node + 1e-6
    assert got <= max(h for h, _ in pools) * node + slack
    assert got >= max(h * min(g, node) for h, g in pools) - slack
    assert fullest_node(arrays, 2 * node)[0] >= got - slack
