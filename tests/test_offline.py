"""Offline preference optimisation (DPO and its family): the cost core's offline iteration,
the scenario's checks, the search and the output.

The survey (arXiv:2608.27046, Table 4, Appendix B.2.2, §2.6 takeaway 6) gives DPO's work as
B_pairs (S+T) [C_f(policy) + C_f(reference) + C_b(policy)] with no generation stage; with the
backward pass at twice the forward, that is four forward passes' worth per trained token.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import Needs, evaluate
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.kb.schema import Workload
from rlmguide.kb.schema.specs import Architecture
from rlmguide.rules.engine import active, compile_rules
from test_cost_specs import H100, QWEN25_7B, one_plan

from rlmguide.cli import cli

DPO_EXAMPLE = str(REPO / "examples" / "dpo-qwen2.5-7b-8xh100.yaml")
DPO = Needs(needs_reference=True, samples_per_prompt=2, offline=True)
ORPO = Needs(needs_reference=False, samples_per_prompt=2, offline=True)
GRPO = Needs(needs_reference=True)

# A toy MHA model whose counts are easy by hand: 2 layers, hidden 64, 4 heads of 16, gated FFN
# 256, vocabulary 1000, untied embeddings, no biases.
TOY = Architecture(
    layers=2, hidden=64, heads=4, kv_heads=4, ffn=256, vocab=1000, max_context_tokens=4096
)
# Per layer: q, k, v, o 4 x 64 x 64 = 16,384, two norms 128, gated FFN 3 x 64 x 256 = 49,152;
# two layers 131,328; embeddings and head 2 x 1000 x 64 = 128,000; final norm 64.
TOY_PARAMS = 2 * (16_384 + 128 + 49_152) + 128_000 + 64
# Attention per token of context: 2 x layers x heads x (d_qk + d_v) = 2 x 2 x 4 x 32 = 512.
TOY_ATTENTION = 512


def pairs(prompts: int = 4, prompt: int = 96, response: int = 32) -> Workload:
    return Workload(
        algorithm="dpo",
        prompts_per_step=prompts,
        samples_per_prompt=2,
        prompt_tokens=prompt,
        response_tokens=response,
        max_response_tokens=response,
        minibatches_per_step=1,
    )


def test_toy_counts_by_hand() -> None:
    assert TOY.params_active == TOY_PARAMS == 259_392


def test_dpo_work_by_hand() -> None:
    """4 pairs of 96 + 32 tokens: 8 sequences, 1,024 tokens. The reference forward costs
    2 x 259,392 + 512 x 128 / 2 = 551,552 FLOPs per token, 564,789,248 in all; the policy's
    forward and backward without recomputation 6 x 259,392 + 3 x 32,768 = 1,654,656 per
    token, 1,694,367,744 in all: together four reference forwards, as Table 4 says."""
    costs = evaluate(H100, TOY, pairs(), one_plan(train_recompute="none"), needs=DPO)
    row = costs.row(0)
    stages = {s["name"]: s for s in row["stages"]}
    assert set(stages) == {"assessment", "training"}
    assert stages["assessment"]["work_flop"] == pytest.approx(564_789_248, rel=1e-12)
    assert stages["training"]["work_flop"] == pytest.approx(1_694_367_744, rel=1e-12)
    total = stages["assessment"]["work_flop"] + stages["training"]["work_flop"]
    assert total == pytest.approx(4 * 564_789_248, rel=1e-12)
    # No generation, no weight sync: the step is the trainer's two stages, one after the other.
    assert costs.stages["rollout"].seconds[0] == 0.0
    assert costs.stages["weight_sync"].seconds[0] == 0.0
    assert row["step_seconds"] == pytest.approx(
        stages["assessment"]["seconds"] + stages["training"]["seconds"], rel=1e-12
    )
    assert row["rollout"] is None and row["offline"] is True
    assert set(row["memory_gib_per_gpu"]) == {"train"}
    assert "rollout" not in row["memory_breakdown_gib"]


def test_reference_free_orpo_drops_exactly_the_reference_forward() -> None:
    plan = one_plan(train_recompute="none")
    dpo = evaluate(H100, TOY, pairs(), plan, needs=DPO)
    orpo = evaluate(H100, TOY, pairs(), plan, needs=ORPO)
    assert orpo.stages["assessment"].work_flop[0] == 0.0
    assert orpo.stages["training"].work_flop[0] == dpo.stages["training"].work_flop[0]
    assert orpo.step_seconds[0] == pytest.approx(
        dpo.step_seconds[0] - dpo.stages["assessment"].seconds[0], rel=1e-9
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    prompts=st.integers(1, 512),
    prompt=st.integers(16, 2048),
    response=st.integers(16, 4096),
    recompute=st.sampled_from(["none", "selective", "full"]),
    tp=st.sampled_from([1, 2, 4]),
)
def test_dpo_has_no_generation_and_costs_less_than_grpo(
    prompts: int, prompt: int, response: int, recompute: str, tp: int
) -> None:
    """On the same model, batch (prompts x 2 responses) and training layout, DPO's step is
    GRPO's minus the generation, the weight sync and the old log-probs: always shorter."""
    plan = one_plan(train_tp=tp, rollout_tp=tp, train_recompute=recompute)
    wl = pairs(prompts, prompt, response)
    dpo = evaluate(H100, QWEN25_7B, wl, plan, needs=DPO)
    grpo = evaluate(H100, QWEN25_7B, wl, plan, needs=GRPO)
    for name in ("rollout", "weight_sync"):
        s = dpo.stages[name]
        assert s.seconds[0] == s.work_flop[0] == s.hbm_bytes[0] == s.depth_seconds[0] == 0.0
    assert grpo.stages["rollout"].seconds[0] > 0.0
    assert dpo.step_seconds[0] < grpo.step_seconds[0]
    # The policy's training is the same work; the assessment lacks the old log-probs.
    assert dpo.stages["training"].work_flop[0] == grpo.stages["training"].work_flop[0]
    assert dpo.stages["assessment"].work_flop[0] < grpo.stages["assessment"].work_flop[0]
    assert dpo.step_lower_seconds[0] <= dpo.step_seconds[0] <= dpo.step_upper_seconds[0]


# -- the CLI ------------------------------------------------------------------------------


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def recommended() -> dict:
    code, out = invoke("recommend", DPO_EXAMPLE, "--format", "json", "--top", "3")
    assert code == 0, out
    return json.loads(out)


def test_recommend_dpo_shows_no_rollout(recommended: dict) -> None:
    assert recommended["scenario"]["models"]["reward"] == "none"
    assert recommended["scenario"]["plan"]["rollout"] is None
    for plan in recommended["plans"]:
        assert plan["rollout"] is None and plan["offline"] is True
        assert plan["placement"] == "colocated" and plan["execution"] == "sync"
        # a plan that parks its reference on the host moves it (the switch), nothing more
        parked = ["switch"] if plan["train"]["offload"]["frozen"] else []
        assert [s["name"] for s in plan["stages"]] == ["assessment", "training", *parked]
        assert plan["frameworks"], "DPO is claimed by frameworks in the KB"


def test_rules_about_generation_do_not_fire_on_dpo(recommended: dict) -> None:
    rules = {r.id: r for r in active(compile_rules(load_catalog(record_roots()))[0])}
    generation = {rid for rid, r in rules.items() if r.about_generation}
    # The rules this test is about exist and are recognised as being about generation.
    assert {
        "asynchrony-for-long-tails",
        "colocate-on-small-clusters",
        "prefix-caching-for-groups",
        "in-place-weight-sync-when-colocated",
        "release-memory-when-switching",
        "small-rollout-tensor-parallelism",
        "rollout-tp-divides-heads",
    } <= generation
    for plan in recommended["plans"]:
        fired = {r["id"] for r in plan["rules"]}
        assert fired, "training rules still fire"
        assert not fired & generation
        assert "verifier-on-cpu" not in fired  # nobody scores DPO's responses
    rejected = {r["reason"] for r in recommended["rejected"]}
    assert not rejected & generation


def test_the_same_rules_fire_on_grpo() -> None:
    code, out = invoke("recommend", str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"),
                       "--format", "json", "--top", "1")  # fmt: skip
    assert code == 0, out
    fired = {r["id"] for r in json.loads(out)["plans"][0]["rules"]}
    assert {"verifier-on-cpu", "prefix-caching-for-groups"} <= fired


def test_estimate_dpo_needs_only_the_trainer_layout() -> None:
    code, out = invoke(
        "estimate", DPO_EXAMPLE, "--format", "json",
        "--set", "plan.train.tp=1", "--set", "plan.train.zero=3",
        "--set", "plan.train.recompute=none",
    )  # fmt: skip
    assert code == 0, out
    result = json.loads(out)
    (plan,) = result["plans"]
    assert plan["rollout"] is None
    assert not [c for c in result["chosen"] if c.startswith("plan.rollout")]
    code, out = invoke("estimate", DPO_EXAMPLE, "--set", "plan.train.tp=1")
    assert code == 2 and "missing: plan.train.zero, plan.train.recompute" in out


def test_estimate_table_prints_no_rollout_block() -> None:
    code, out = invoke(
        "estimate", DPO_EXAMPLE, "--format", "markdown",
        "--set", "plan.train.tp=2", "--set", "plan.train.zero=1",
        "--set", "plan.train.recompute=selective",
    )  # fmt: skip
    assert code == 0, out
    assert "offline: nothing generated" in out
    assert "rollout" not in out.lower().replace("no rollout", "")


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("plan.placement=disaggregated", "plan.placement: DPO"),
        ("plan.execution=async", "plan.execution: DPO"),
        ("plan.rollout.tp=2", "plan.rollout.tp: DPO"),
        ("models.reward=verifier", "models.reward: DPO"),
        ("workload.samples_per_prompt=4", "workload.samples_per_prompt: DPO"),
        ("workload.max_staleness=1", "workload.max_staleness: DPO"),
        ("plan.train.offload.phase=true", "plan.train.offload.phase: DPO"),
    ],
)
def test_offline_checks_are_one_line(assignment: str, message: str) -> None:
    code, out = invoke("recommend", DPO_EXAMPLE, "--set", assignment)
    assert code == 2, out
    assert message in out and "offline" in out
    assert "Traceback" not in out


def test_reward_none_needs_an_offline_algorithm() -> None:
    grpo = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
    code, out = invoke("recommend", grpo, "--set", "models.reward=none")
    assert code == 2 and "models.reward: " in out and "scores its samples" in out


def test_reference_free_family_recommends_without_a_reference() -> None:
    for algorithm in ("orpo", "simpo"):
        code, out = invoke(
            "estimate", DPO_EXAMPLE, "--format", "json",
            "--set", f"workload.algorithm={algorithm}", "--set", "plan.train.tp=1",
            "--set", "plan.train.zero=3", "--set", "plan.train.recompute=none",
        )  # fmt: skip
        assert code == 0, out
        (plan,) = json.loads(out)["plans"]
        assessment = next(s for s in plan["stages"] if s["name"] == "assessment")
        assert assessment["work_flop"] == 0.0
        assert plan["memory_breakdown_gib"]["training"].get("frozen_models", 0.0) == 0.0


def test_specifications_of_algorithms_1_to_4() -> None:
    """PPO and GRPO run Algorithm 1's decode chain; DPO (Algorithm 4) has no generation; the
    reference and the actor of DPO run as one fork-join region (§5)."""
    algorithms = load_catalog(record_roots()).of("algorithm")
    for name, own in (("ppo", 2), ("grpo", 3)):
        steps = algorithms[name].specification  # type: ignore[attr-defined]
        generation = [s for s in steps if s.stage == "generation"]
        assert [s.algorithm for s in generation] == [1] and generation[0].sequential
        assert {s.algorithm for s in steps} == {1, own}
    ppo = algorithms["ppo"].specification  # type: ignore[attr-defined]
    assessment = [s for s in ppo if s.stage == "assessment"]
    assert {s.model for s in assessment} == {"reward", "critic", "reference"}
    assert all(set(s.concurrent_with) | {s.model} == {"reward", "critic", "reference"}
               for s in assessment)  # fmt: skip
    dpo = algorithms["dpo"]
    assert not dpo.online and dpo.reward == "none"  # type: ignore[attr-defined]
    steps = dpo.specification  # type: ignore[attr-defined]
    assert {s.algorithm for s in steps} == {4}
    assert not [s for s in steps if s.stage == "generation"]
    assert any(s.model == "reference" and s.concurrent_with == ["actor"] for s in steps)
    for family in ("ipo", "kto", "orpo", "simpo"):
        record = algorithms[family]
        assert not record.online and record.variant_of == "dpo"  # type: ignore[attr-defined]
    assert not algorithms["orpo"].needs_reference  # type: ignore[attr-defined]
    assert not algorithms["simpo"].needs_reference  # type: ignore[attr-defined]


def test_specification_is_a_json_column() -> None:
    code, out = invoke(
        "sql", "--format", "json",
        "SELECT id, json_array_length(specification) AS steps FROM algorithms "
        "WHERE specification IS NOT NULL ORDER BY id",
    )  # fmt: skip
    assert code == 0, out
    rows = {r["id"]: r["steps"] for r in json.loads(out)}
    assert rows == {"dpo": 3, "grpo": 5, "ppo": 8}


def test_offline_step_equals_its_stages_over_many_plans() -> None:
    """One formula over arrays: a table of plans gives each plan the sum of its stages."""
    from test_cost_specs import random_plans

    plans = random_plans(7, QWEN25_7B, 16)
    colocated = np.flatnonzero(plans.placement == 0)
    table = plans.take(colocated)
    costs = evaluate(H100, QWEN25_7B, pairs(64, 512, 512), table, needs=DPO)
    parts = sum(costs.stages[n].seconds for n in ("assessment", "training", "switch"))
    assert np.allclose(costs.step_seconds, parts, rtol=1e-12)
    assert np.all(costs.stages["rollout"].seconds == 0.0)


def test_survey_block_of_dpo_has_no_generation_and_the_b22_iteration() -> None:
    code, out = invoke(
        "estimate", DPO_EXAMPLE, "--survey", "--format", "json",
        "--set", "plan.train.tp=1", "--set", "plan.train.zero=3",
        "--set", "plan.train.recompute=none",
    )  # fmt: skip
    assert code == 0, out
    block = json.loads(out)["plans"][0]["survey_model"]
    assert block["offline"] and block["configuration"] == "offline (Algorithm 4, B.2.2)"
    assessment, training = block["stages"]
    assert (assessment["name"], training["name"]) == ("assessment", "training")
    # Table 4: the assessment's forwards (policy and reference) cost what the backward does
    # (C_b = 2 C_f); the iteration adds them.
    assert assessment["work_flop"] == pytest.approx(training["work_flop"])
    (iteration,) = block["table9"]
    assert iteration["work_flop"] == pytest.approx(assessment["work_flop"] + training["work_flop"])
    assert iteration["depth_ops"] > training["depth_ops"]


def test_the_family_is_recommended_where_a_framework_claims_it() -> None:
    """LLaMA-Factory claims IPO, KTO, ORPO and SimPO (pref_loss and stage kto); KTO trains one
    response per example, half DPO's sequences for the same prompts and plan."""
    code, out = invoke(
        "recommend", DPO_EXAMPLE, "--format", "json", "--top", "1",
        "--set", "workload.algorithm=kto", "--set", "workload.samples_per_prompt=1",
    )  # fmt: skip
    assert code == 0, out
    assert "llama-factory" in json.loads(out)["plans"][0]["frameworks"]
    flops = {}
    for algorithm, samples in (("dpo", "2"), ("kto", "1")):
        code, out = invoke(
            "estimate", DPO_EXAMPLE, "--format", "json",
            "--set", f"workload.algorithm={algorithm}",
            "--set", f"workload.samples_per_prompt={samples}",
            "--set", "plan.train.tp=2", "--set", "plan.train.zero=1",
            "--set", "plan.train.recompute=full",
        )  # fmt: skip
        assert code == 0, out
        (plan,) = json.loads(out)["plans"]
        flops[algorithm] = sum(s["work_flop"] for s in plan["stages"])
    assert flops["kto"] == pytest.approx(flops["dpo"] / 2, rel=1e-12)


def test_an_algorithm_no_framework_claims_is_said_so() -> None:
    grpo = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
    code, out = invoke("recommend", grpo, "--set", "workload.algorithm=raft")
    assert code == 1 and "no framework in the knowledge base claims RAFT" in out
