"""plan.train.expert_layout: the survey's isolated EP (Tables 7-8, B.3.6) beside Megatron's
folding, as a what-if (issue 27 item 5).

Isolated, the ep ranks of a group share one data shard: each runs ep times the dense tokens,
its routed experts 1/ep of them, and the global work counts the dense path ep times. Checked
by hand on Qwen3-30B-A3B; laws over random layouts; the plan checks; and the search, which
shows it only under --what-if since no framework in the KB claims it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import run_cli, sets
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import PlanError, check_plans, evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.model_pass import routed_active_params
from rlmguide.cost.training import micro_batches
from test_cost_specs import H100, QWEN3_30B_A3B, QWEN25_7B, one_plan, workload

from rlmguide.cli import cli

MOE_PLAN = dict(
    rollout_gpus=16, rollout_tp=4, train_gpus=16, train_tp=1, train_ep=8, train_zero=1,
    train_recompute="none",
)  # fmt: skip


def both(**changes: object) -> object:
    """Folded and isolated, otherwise the same plan, as rows 0 and 1."""
    fields = {**MOE_PLAN, **changes}
    return one_plan(**fields).concat(one_plan(**fields, train_ep_isolated=True))


def test_training_work_by_hand() -> None:
    """Without recompute a trained token costs 6 FLOPs per active parameter plus the
    attention mixing; isolated over ep 8, every token's dense part (all but the routed
    experts' 6 x routed-active FLOPs) runs on 8 ranks: 7 more copies of it."""
    work = workload(prompts_per_step=64, samples_per_prompt=8, response_tokens=2048,
                    max_response_tokens=4096, minibatches_per_step=1)  # fmt: skip
    costs = evaluate(H100, QWEN3_30B_A3B, work, both(), gpus_per_node=8)
    folded, isolated = costs.stages["training"].work_flop
    fig = ModelFigures.of(QWEN3_30B_A3B)
    batch = Batch.of(work, Needs())
    routed = batch.trained_tokens * 6.0 * routed_active_params(fig)
    assert isolated - folded == pytest.approx(7.0 * (folded - routed), rel=1e-9)
    # Qwen3-30B-A3B: 8 of 128 experts of width 768 over 48 layers, 3 x 2048 x 768 weights
    # each: 8 x 48 x 4,718,592 = 1,811,939,328 routed parameters a token passes through.
    assert routed_active_params(fig) == pytest.approx(1_811_939_328)


def test_a_rank_runs_the_groups_tokens() -> None:
    """dp 16 with ep 8: folded, 512 sequences split 16 ways (32 a rank); isolated, the two
    EP groups hold one shard each (256 a rank), in eight times the micro-batches."""
    table = both()
    layout = TrainLayout.of(table)
    assert layout.data_shards.tolist() == [16.0, 2.0]
    batch = Batch.of(workload(prompts_per_step=64, samples_per_prompt=8), Needs())
    micro = micro_batches(512.0, layout, batch, np.full(2, 8.0 * batch.sequence_tokens))
    assert micro.count.tolist() == [4.0, 32.0]


def test_plan_checks() -> None:
    with pytest.raises(PlanError, match=r"train\.expert_layout"):
        check_plans(one_plan(**{**MOE_PLAN, "train_ep": 1}, train_ep_isolated=True),
                    QWEN3_30B_A3B)  # fmt: skip
    # cp 2 on 16 GPUs: dp 8; ep 16 folds over dp x cp = 16 but cannot share dp's 8 shards.
    with pytest.raises(PlanError, match="ep > 1 dividing dp"):
        check_plans(one_plan(**{**MOE_PLAN, "train_cp": 2, "train_ep": 16},
                             train_ep_isolated=True), QWEN3_30B_A3B)  # fmt: skip
    check_plans(one_plan(**{**MOE_PLAN, "train_cp": 2, "train_ep": 16}), QWEN3_30B_A3B)
    with pytest.raises(PlanError, match="etp = tp"):
        check_plans(one_plan(**{**MOE_PLAN, "train_tp": 2, "train_ep": 2, "train_etp": 1},
                             train_ep_isolated=True), QWEN3_30B_A3B)  # fmt: skip
    check_plans(both(), QWEN3_30B_A3B)
    assert both().row(1)["train"]["expert_layout"] == "isolated"


@settings(max_examples=25, deadline=None)
@given(
    ep=st.sampled_from([2, 4, 8, 16]),
    gpus=st.sampled_from([16, 32, 64]),
    zero=st.sampled_from([1, 3]),
    recompute=st.sampled_from(["none", "full"]),
)
def test_isolated_adds_work_and_keeps_memory(ep: int, gpus: int, zero: int, recompute: str) -> None:
    """Replicating the dense path never lowers the global work or the busy compute, and at
    the micro-batch the layout chooses it changes no GPU's memory (survey Table 8: the extra
    memory is the P_e replicas' activations, which micro-batches bound)."""
    table = both(train_gpus=gpus, rollout_gpus=gpus, train_ep=ep, train_zero=zero,
                 train_recompute=recompute)  # fmt: skip
    costs = evaluate(H100, QWEN3_30B_A3B, workload(prompts_per_step=64), table, gpus_per_node=8)
    train = costs.stages["training"]
    assert train.work_flop[1] > train.work_flop[0]
    assert train.compute_seconds[1] >= train.compute_seconds[0] * (1 - 1e-9)
    assert costs.memory_train_gib[1] == pytest.approx(costs.memory_train_gib[0])


def test_a_dense_model_has_no_isolated_plan() -> None:
    with pytest.raises(PlanError):
        check_plans(one_plan(train_ep_isolated=True), QWEN25_7B)


MOE_SCENARIO = {
    "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 2, "gpus_per_node": 8},
    "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
        "prompt_tokens": 512, "response_tokens": 2048, "max_response_tokens": 4096,
        "minibatches_per_step": 1, "epochs": 1,
    },
}  # fmt: skip


def invoke(tmp_path: Path, body: dict[str, object], *args: str) -> dict:
    path = tmp_path / "scenario.yaml"
    path.write_text(json.dumps(body))
    result = CliRunner().invoke(cli, [*args, str(path), "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_search_shows_it_only_as_a_what_if(tmp_path: Path) -> None:
    result = invoke(tmp_path, MOE_SCENARIO, "recommend", "--what-if")
    assert all(p["train"]["expert_layout"] == "folded" for p in result["plans"])
    isolated = [w for w in result["what_if"] if w["expert_layout"] == "isolated"]
    assert isolated
    assert isolated[0]["techniques"] == ["isolated-expert-parallelism"]
    assert isolated[0]["claimed_by"] == []


def test_estimate_costs_a_fixed_isolated_plan(tmp_path: Path) -> None:
    plan = {
        "placement": "colocated", "execution": "sync", "rollout": {"gpus": 16, "tp": 4},
        "train": {"gpus": 16, "tp": 1, "pp": 1, "cp": 1, "ep": 8, "zero": 1,
                  "recompute": "full"},
    }  # fmt: skip
    folded = invoke(tmp_path, {**MOE_SCENARIO, "plan": plan}, "estimate")["plans"][0]
    plan["train"] = {**plan["train"], "expert_layout": "isolated"}  # type: ignore[dict-item]
    isolated = invoke(tmp_path, {**MOE_SCENARIO, "plan": plan}, "estimate")["plans"][0]
    assert isolated["train"]["expert_layout"] == "isolated"
    assert isolated["frameworks"] == []
    seconds = {p["train"]["expert_layout"]: {s["name"]: s["seconds"] for s in p["stages"]}
               for p in (folded, isolated)}  # fmt: skip
    assert seconds["isolated"]["training"] > seconds["folded"]["training"]
    assert seconds["isolated"]["rollout"] == pytest.approx(seconds["folded"]["rollout"])


SMALL = str(Path(__file__).parent.parent / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
ISOLATED = ("--set", "plan.train.expert_layout=isolated")


@pytest.mark.parametrize(
    "command",
    [["recommend", SMALL], ["estimate", SMALL], ["export", SMALL, "--framework", "verl"]],
)
def test_isolated_on_a_dense_policy_is_an_input_error(command: list[str]) -> None:
    # It used to reach the search, whose every candidate was rejected: "no feasible plan".
    result = CliRunner().invoke(cli, [*command, *ISOLATED], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "plan.train.expert_layout" in lines[0] and "no experts" in lines[0]
    assert "qwen2.5-7b" in lines[0] and "no feasible plan" not in lines[0]


def test_isolated_on_a_dense_policy_is_one_line_from_a_real_process() -> None:
    done = run_cli("recommend", SMALL, *ISOLATED)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "Error: plan.train.expert_layout: isolated splits a mixture-of-experts policy's "
        "experts over ep ranks, and the policy qwen2.5-7b is dense (it has no experts); "
        "remove it or use folded"
    ]


def test_folded_on_a_dense_policy_stays_a_plain_search() -> None:
    result = CliRunner().invoke(
        cli, ["recommend", SMALL, "--set", "plan.train.expert_layout=folded", "--top", "1"]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("field", "rule"),
    [("plan.train.ep", "ep-only-for-moe"), ("plan.rollout.ep", "rollout-ep-only-for-moe")],
)
def test_expert_parallel_degree_on_a_dense_policy_names_the_rule(field: str, rule: str) -> None:
    # The rule's own examples resolve a dense plan with ep 2 and show the rule firing, so the
    # scenario accepts it and the search says which rule binds.
    result = CliRunner().invoke(cli, ["recommend", SMALL, "--set", f"{field}=2"])
    assert result.exit_code == 1, result.output
    assert f"no feasible plan: rule {rule} " in result.output
    assert "A dense model has no experts to distribute" in result.output


MOE_RUN = {
    **MOE_SCENARIO,
    "plan": {
        "placement": "colocated", "execution": "sync", "rollout": {"tp": 4},
        "train": {"tp": 1, "ep": 8, "zero": 1, "recompute": "full"},
    },
}  # fmt: skip


def survey_layout(tmp_path: Path, layout: str, tp: int = 1) -> dict[str, Any]:
    layout_set = sets(f"plan.train.expert_layout={layout}", f"plan.train.tp={tp}")
    found = invoke(tmp_path, MOE_RUN, "estimate", "--survey", *layout_set)
    return found["plans"][0]["survey_model"]["policy_training_layout"]


def test_estimate_survey_follows_the_expert_layout(tmp_path: Path) -> None:
    """16 ranks, ep 8: folded, the 16 ranks hold disjoint tokens (the survey's P_d = dp / ep =
    2, P_e = 8), so a rank's work is the global work over 16; isolated, each of the 2 shards
    of 8 ranks runs its shard's dense path 8 times (B.3.6), so the work per rank and globally
    grows, and the formulas are the survey's isolated ones."""
    folded = survey_layout(tmp_path, "folded")
    isolated = survey_layout(tmp_path, "isolated")
    assert folded["strategy"] == "Tables 7-8: 5D parallelism"
    assert isolated["strategy"] == "Tables 7-8: isolated EP"
    assert folded["global"]["work_flop"] == pytest.approx(16 * folded["per_rank"]["work_flop"])
    assert isolated["global"]["work_flop"] == pytest.approx(16 * isolated["per_rank"]["work_flop"])
    assert isolated["per_rank"]["work_flop"] > 4 * folded["per_rank"]["work_flop"]
    assert isolated["global"]["memory_elements"] > folded["global"]["memory_elements"]


def test_estimate_survey_states_no_isolated_formula_beside_tensor_parallelism(
    tmp_path: Path,
) -> None:
    lay = survey_layout(tmp_path, "isolated", tp=2)
    assert "no formula in the survey" in lay["strategy"]
    assert lay["per_rank"] == {"work_flop": None, "depth_ops": None, "memory_elements": None}
