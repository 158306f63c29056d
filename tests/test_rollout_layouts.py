"""The search's rollout layouts keep every expert on a GPU: a pipeline stage's experts spread
over that stage's ranks only (ep divides tp x dp, cost.plans.plan_problems' own rule)."""

from __future__ import annotations

import pytest
from rlmguide.cost.plans import PlanTable, plan_problems
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Scenario
from rlmguide.rules.scenario import resolve
from rlmguide.rules.search import rollout_layouts

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
WORKLOAD = {"algorithm": "dapo", "prompts_per_step": 512, "samples_per_prompt": 16}
WORKLOAD |= {"prompt_tokens": 1024, "response_tokens": 4096}


def resolved(gpus: int) -> object:
    return resolve(
        Scenario.model_validate(
            {
                "cluster": {"accelerator": "h20-96gb", "nodes": gpus // 8, "gpus_per_node": 8},
                "models": {"policy": "deepseek-v3", "reward": "verifier"},
                "workload": WORKLOAD,
            }
        ),
        CATALOG.records,
    )


@pytest.mark.parametrize("gpus", [8, 32, 128])
def test_every_rollout_layout_lays_out_the_whole_model(gpus: int) -> None:
    r = resolved(gpus)
    layouts = rollout_layouts(r, gpus)  # type: ignore[arg-type]
    found = set(zip(layouts["tp"], layouts["pp"], layouts["ep"], strict=True))
    assert found
    # the layouts pass the cost core's own validation of a plan table
    n = len(layouts["tp"])
    table = PlanTable.from_arrays(
        placement=["colocated"] * n, execution=["sync"] * n, rollout_gpus=[gpus] * n,
        rollout_tp=layouts["tp"], rollout_pp=layouts["pp"], rollout_ep=layouts["ep"],
        train_gpus=[gpus] * n, train_tp=[1] * n, train_zero=[3] * n, train_recompute=["full"] * n,
    )  # fmt: skip
    assert not [p for p in plan_problems(table, r.policy) if p.field.startswith("rollout")]  # type: ignore[attr-defined]
    for tp, pp, ep in found:
        # an engine of max(tp, ep) x pp GPUs fits the pool: its stages hold all the experts
        assert max(tp, ep) * pp <= gpus and (gpus // pp) % ep == 0


def test_deepseek_v3_on_8_gpus_has_no_pipelined_engine_wider_than_a_stage() -> None:
    # tp 2 x pp 4 on 8 GPUs leaves each stage 2 ranks: ep 8 would split the experts 32 ways
    # over 8 GPUs (44 GiB of weights a GPU instead of the 156 the bf16 model needs)
    layouts = rollout_layouts(resolved(8), 8)  # type: ignore[arg-type]
    found = set(zip(layouts["tp"], layouts["pp"], layouts["ep"], strict=True))
    assert (2, 4, 8) not in found and (2, 4, 4) not in found
    assert {(2, 4, 2), (2, 1, 8), (8, 1, 8)} <= found
