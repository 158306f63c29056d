"""Plans experts would run: framework-true candidates, step-time ranking with ties broken toward
the simpler plan, distinct rows, the off-policy tolerance, and a pruned search that finds the
exhaustive search's best plan."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.ranking import NEAR_FRACTION, TIE_FRACTION, Ranker, complexity, degrees
from rlmguide.rules.recommend import lagging, recommend, recommender_for, scores_of
from rlmguide.rules.scenario import read_scenario, resolve

from rlmguide.cli import cli

CATALOG = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
EXAMPLES = REPO / "examples"
SMALL = str(EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml")


def run(*args: str) -> tuple[int, dict | str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if result.exit_code:
        return result.exit_code, result.output
    return 0, json.loads(result.output)


def search(path: str, top: int = 5, **options: object) -> dict:
    resolved = resolve(read_scenario(EXAMPLES / path), CATALOG.records)
    return recommend(recommender_for(resolved, CATALOG, **options), top)


def test_every_top_plan_names_a_framework_that_can_run_it() -> None:
    for path in ("grpo-qwen2.5-7b-8xh100.yaml", "grpo-qwen2.5-32b-64xh100.yaml"):
        for plan in search(path)["plans"]:
            assert plan["frameworks"], plan


def test_one_framework_and_the_constraints_that_removed_candidates() -> None:
    code, result = run("recommend", SMALL, "--framework", "verl", "--format", "json")
    assert code == 0, result
    assert all(p["frameworks"] == ["verl"] for p in result["plans"])
    assert all(p["rollout"]["pp"] == 1 for p in result["plans"])  # verl refuses rollout PP
    reasons = {r["reason"] for r in result["rejected"]}
    # judged at verl's newest mapping: the refusal as read at v0.8.0
    assert "constraint verl-rollout-no-pipeline-parallelism-v0.8" in reasons


def test_plans_are_distinct_and_ordered_by_step_time_up_to_the_tie() -> None:
    plans = search("grpo-qwen2.5-7b-8xh100.yaml", top=8)["plans"]
    fields = ("placement", "execution", "rollout", "train", "pools", "critic", "fusion")
    keys = [json.dumps({k: p[k] for k in fields}) for p in plans]
    assert len(set(keys)) == len(keys)
    # One more than asked only to show the plan the last one won a tie over.
    assert len(plans) == 8 or (len(plans) == 9 and plans[7]["tie"]["faster_rank"] == 9)
    best = plans[0]["step_seconds"]
    for earlier, later in itertools.pairwise(plans):
        # A later row is never faster than an earlier one by more than the tie.
        assert later["step_seconds"] >= earlier["step_seconds"] * (1 - TIE_FRACTION) - 1e-9
    assert all(p["step_seconds"] >= best * (1 - TIE_FRACTION) for p in plans)
    folded = plans[0]["also_as"]
    assert folded["step_seconds"][0] == pytest.approx(plans[0]["step_seconds"], abs=0.01)


def _choice(plan: dict) -> str:
    rollout = {k: plan["rollout"][k] for k in ("gpus", "tp", "pp", "ep", "attention_dp")}
    return json.dumps([plan["placement"], plan["execution"], rollout, plan["pools"]])


@pytest.mark.parametrize(
    "path", ["grpo-qwen2.5-7b-8xh100.yaml", "grpo-qwen2.5-32b-64xh100.yaml",
             "grpo-qwen2.5-7b-llm-judge-16xh100.yaml"]
)  # fmt: skip
def test_near_identical_rows_are_one_row_and_every_tie_is_anchored_in_the_list(path: str) -> None:
    plans = search(path, top=6)["plans"]
    for a, b in itertools.combinations(plans, 2):
        if _choice(a) == _choice(b):
            gap = abs(a["step_seconds"] - b["step_seconds"])
            assert gap >= NEAR_FRACTION * min(a["step_seconds"], b["step_seconds"]) - 1e-6
    for plan in plans:
        for also in plan["also"]:
            assert abs(also["change_percent"]) < 100 * NEAR_FRACTION + 0.05
            assert also["differs"], also
        tie = plan["tie"]
        if tie is None:
            continue
        assert 0 < tie["slower_by_percent"] <= 100 * TIE_FRACTION + 1e-6
        if tie["faster_rank"] is None:
            assert tie["faster_listed_under"] == "also"
            continue
        faster = plans[tie["faster_rank"] - 1]
        assert faster["rank"] == plan["rank"] + 1  # shown right after the plan that won
        assert faster["step_seconds"] < plan["step_seconds"]


def test_one_ranker_ranks_narrowing_tables_as_fresh_ones_do() -> None:
    """Recommend's launch check ranks again with one Ranker as plans leave: what it keeps
    (each row's groups, the distinct near rows) must not leak from one ranking into the
    next, and each tie's pick is the simplest plan of the tie, then the fastest."""
    recommender = recommender_for(resolve(read_scenario(SMALL), CATALOG.records), CATALOG)
    costs, _ = recommender.run()
    scores = scores_of(recommender, costs.plans)
    eligible = recommender.launchable & ~lagging(recommender, costs.plans)
    ranker, seconds = Ranker(costs, scores), costs.step_seconds
    for _ in range(6):
        kept = ranker.rank(3, eligible)
        assert kept == Ranker(costs, scores).rank(3, eligible)
        rows = np.flatnonzero(eligible)
        tie = rows[seconds[rows] <= seconds[rows].min() * (1 + TIE_FRACTION)]
        simplest = tie[np.lexsort((seconds[tie], scores[tie]))[0]]
        assert kept.places[0].row == simplest
        eligible = eligible.copy()
        eligible[kept.rows] = False  # as the launch check moves refused plans out


def test_a_tie_goes_to_the_simpler_plan() -> None:
    result = search("grpo-qwen2.5-32b-64xh100.yaml", top=5)
    plans = result["plans"]
    for plan in plans:
        if plan["tie"]:
            assert 0 < plan["tie"]["faster_by_percent"] <= 100 * TIE_FRACTION
    departure = result["departure"]
    if departure is not None:
        # The simplest plan lost only because it lies beyond the tie of the fastest plan.
        assert departure["slower_than_fastest_percent"] > 100 * TIE_FRACTION
        assert departure["gain_percent"] > 0
        assert f"beyond the {100 * TIE_FRACTION:.0f}% tie" in departure["why"]


def test_the_departure_note_measures_the_tie_from_the_fastest_plan() -> None:
    # The README example: the top plan is the simplest within the tie of the fastest plan; a
    # simpler plan outside that tie is reported with how far outside it lies.
    result = search("grpo-qwen2.5-7b-8xh100.yaml", top=3)
    departure = result["departure"]
    assert departure is not None
    top = result["plans"][0]
    fastest = (
        top["step_seconds"]
        if top["tie"] is None
        else min(p["step_seconds"] for p in result["plans"][:2])
    )
    beyond = departure["simplest_step_seconds"] / fastest - 1
    assert departure["slower_than_fastest_percent"] == pytest.approx(100 * beyond, abs=0.1)
    gain = 1 - top["step_seconds"] / departure["simplest_step_seconds"]
    assert departure["gain_percent"] == pytest.approx(100 * gain, abs=0.1)


def test_complexity_orders_execution_modes_as_the_issue_asks() -> None:
    from rlmguide.cost.plans import PlanTable

    table = PlanTable.from_arrays(
        placement=np.array(["colocated", "disaggregated", "disaggregated", "disaggregated"]),
        execution=np.array(["sync", "one-step-off", "partial-rollout", "async"]),
        rollout_gpus=np.array([8, 4, 4, 4]), rollout_tp=1, train_gpus=np.array([8, 4, 4, 4]),
        train_tp=1, train_zero=3, train_recompute="none",
    )  # fmt: skip
    scores = complexity(table, 8)
    assert list(scores) == sorted(scores) and len(set(scores)) == 4


def test_simplicity_counts_every_degree() -> None:
    from rlmguide.cost.plans import PlanTable

    # Worked by hand on 8-GPU nodes, rollout tp 1 everywhere: training tp 2 is one doubling,
    # pp 12 four (ceil log2 12), cp 4 two, tp 16 four plus one for the doubling past the node.
    dense = PlanTable.from_arrays(
        placement="colocated", execution="sync", rollout_gpus=192, rollout_tp=1,
        train_gpus=192, train_tp=np.array([1, 2, 1, 1, 16]), train_pp=np.array([1, 1, 12, 1, 1]),
        train_cp=np.array([1, 1, 1, 4, 1]), train_zero=1, train_recompute="full",
    )  # fmt: skip
    assert list(degrees(dense, 8)) == [0, 1, 4, 2, 5]
    # A rollout engine of 16 GPUs spans two nodes: four doublings and one more.
    engine = PlanTable.from_arrays(
        placement="colocated", execution="sync", rollout_gpus=64, rollout_tp=np.array([2, 16]),
        train_gpus=64, train_tp=1, train_zero=3, train_recompute="full",
    )  # fmt: skip
    assert list(degrees(engine, 8)) == [1, 5]
    # A mixture of experts: an expert group is free and its absence costs one.
    moe = PlanTable.from_arrays(
        placement="colocated", execution="sync", rollout_gpus=64, rollout_tp=1,
        train_gpus=64, train_tp=np.array([1, 1, 2, 1]), train_ep=np.array([1, 8, 8, 1]),
        train_pp=np.array([1, 1, 1, 4]), train_zero=np.array([3, 1, 1, 1]),
        train_recompute="full",
    )  # fmt: skip
    assert list(degrees(moe, 8, moe=True)) == [1, 0, 1, 3]
    assert list(degrees(moe, 8, moe=False)) == [0, 3, 4, 2]


def test_the_frameworks_moe_launches_train_with_expert_parallelism() -> None:
    # rules.ranking prefers expert groups for a mixture of experts because the frameworks'
    # own MoE launches use them: every model-parallel MoE deployment record does.
    found = []
    for d in CATALOG.of("deployment").values():
        scenario = d.scenario  # type: ignore[attr-defined]
        policy = resolve(scenario, CATALOG.records).policy
        train = scenario.plan.train
        if policy.moe is None or (train.zero or 1) >= 3:
            continue
        found.append((d.id, train.ep))
    assert len(found) >= 8, found
    assert all((ep or 1) >= 4 for _, ep in found), found


def test_strictly_on_policy_workloads_get_only_synchronous_plans() -> None:
    code, result = run(
        "recommend", SMALL, "--set", "workload.max_staleness=0", "--format", "json", "--top", "5"
    )
    assert code == 0, result
    assert {p["execution"] for p in result["plans"]} == {"sync"}
    code, result = run(
        "recommend", SMALL, "--set", "workload.max_staleness=4", "--format", "json", "--top", "1"
    )
    assert code == 0
    assert result["plans"][0]["max_staleness"] <= 4


def test_on_policy_by_default_with_the_lagging_plans_as_what_ifs() -> None:
    # GRPO's record states no off-policy tolerance: every ranked plan is synchronous, and the
    # faster plans that lag the policy are listed with their gain and what would allow them.
    code, result = run("recommend", SMALL, "--format", "json", "--top", "5")
    assert code == 0, result
    assert {p["execution"] for p in result["plans"]} == {"sync"}
    assert any("no off-policy tolerance" in n for n in result["resolution_notes"])
    lagging = result["off_policy_what_if"]
    assert lagging, "the README example has faster lagging plans"
    top = result["plans"][0]["step_seconds"]
    for w in lagging:
        assert w["execution"] != "sync" and w["max_staleness"] >= 1
        assert w["step_seconds"] < top
        assert w["gain_percent"] == pytest.approx(100 * (1 - w["step_seconds"] / top), abs=0.1)
        assert w["allowed_by"] == f"workload.max_staleness: {w['max_staleness']}"
    # Allowed, the fastest of them is ranked; a plan that fixes a lagging mode allows it too.
    code, allowed = run("recommend", SMALL, "--set", "workload.max_staleness=1", "--format", "json")
    assert code == 0, allowed
    fastest = min(w["step_seconds"] for w in lagging)
    assert min(p["step_seconds"] for p in allowed["plans"]) == pytest.approx(fastest, abs=0.01)
    assert allowed["off_policy_what_if"] == []
    code, fixed = run(
        "recommend", SMALL, "--set", "plan.execution=one-step-off", "--format", "json"
    )
    assert code == 0, fixed
    assert {p["execution"] for p in fixed["plans"]} == {"one-step-off"}


def test_a_fixed_plan_beyond_the_tolerance_is_refused() -> None:
    result = CliRunner().invoke(
        cli,
        ["recommend", SMALL, "--set", "workload.max_staleness=0", "--set", "plan.execution=async"],
    )
    assert result.exit_code == 2
    assert "strictly on-policy" in result.output


@pytest.mark.parametrize("path", ["grpo-qwen2.5-7b-8xh100.yaml", "grpo-qwen2.5-32b-64xh100.yaml"])
def test_pruned_search_finds_the_exhaustive_best_plan(path: str) -> None:
    pruned = search(path, top=1)["plans"][0]
    exhaustive = search(path, top=1, exhaustive=True)["plans"][0]
    assert pruned["step_seconds"] == pytest.approx(exhaustive["step_seconds"], rel=1e-9)
    fields = ("placement", "execution", "rollout", "train")
    assert {k: pruned[k] for k in fields} == {k: exhaustive[k] for k in fields}


def _exhaustive_is_quick(deployment_id: str) -> bool:
    """Dense models at any size here, mixtures of experts on one node: the exhaustive search
    of the larger MoE clusters takes a minute or more each, so bench/bench_pruning.py compares
    those instead."""
    scenario = CATALOG.of("deployment")[deployment_id].scenario  # type: ignore[attr-defined]
    policy = resolve(scenario, CATALOG.records).policy
    return policy.moe is None or scenario.cluster.gpus <= 8


QUICK = [i for i in sorted(CATALOG.of("deployment")) if _exhaustive_is_quick(i)]


@pytest.mark.parametrize("deployment_id", QUICK)
def test_pruned_search_finds_the_exhaustive_best_plan_of_a_deployment(deployment_id: str) -> None:
    scenario = CATALOG.of("deployment")[deployment_id].scenario  # type: ignore[attr-defined]
    assert scenario.cluster.gpus <= 512
    resolved = resolve(scenario.model_copy(update={"plan": type(scenario.plan)()}), CATALOG.records)
    pruned = recommend(recommender_for(resolved, CATALOG), 1)["plans"][0]
    exhaustive = recommend(recommender_for(resolved, CATALOG, exhaustive=True), 1)["plans"][0]
    assert pruned["step_seconds"] == pytest.approx(exhaustive["step_seconds"], rel=1e-9)


def test_the_quick_exhaustive_comparisons_cover_most_deployments() -> None:
    assert len(QUICK) >= 18, QUICK


def test_coarse_split_grid_is_said() -> None:
    result = search("grpo-deepseek-v3-4096xh800.yaml", top=1)
    assert result["search"]["split_every_gpus"] > 8
    notes = result["resolution_notes"]
    assert any("splits were searched every" in n for n in notes)
    coarse, around = (result["search"][k] for k in ("coarse_splits_rollout_gpus",
                                                    "refined_around_rollout_gpus"))  # fmt: skip
    assert len(coarse) >= 16 and around and set(around) <= set(coarse)
    assert any(f"neighbours of the best ({around[0]}" in n for n in notes)
    assert any("each rollout layout was costed beside 5 training layouts" in n for n in notes)


COARSE_CASES = [
    ("grpo-deepseek-v3-4096xh800.yaml", None),
    ("slime-qwen3-30b-a3b-grpo-8xh100", 96),
    ("nemo-rl-llama-3.1-8b-grpo-fsdp2-32xh100", 256),
    ("slime-qwen3-235b-a22b-gspo-128xh100", None),
]


@pytest.mark.parametrize(("case", "nodes"), COARSE_CASES)
def test_the_probed_and_coarse_search_keeps_the_full_grid_top_plans(
    case: str, nodes: int | None
) -> None:
    # bench/bench_coarse.py compares the two on every deployment at 96 and 256 nodes.
    if case.endswith(".yaml"):
        scenario = read_scenario(EXAMPLES / case)
    else:
        published = CATALOG.of("deployment")[case].scenario  # type: ignore[attr-defined]
        nodes = nodes or published.cluster.nodes
        scenario = published.model_copy(
            update={
                "plan": type(published.plan)(),
                "cluster": published.cluster.model_copy(update={"nodes": nodes}),
            }
        )
    resolved = resolve(scenario, CATALOG.records)
    keys = ("placement", "execution", "rollout", "train", "step_seconds")
    pruned = recommender_for(resolved, CATALOG)
    coarse = recommend(pruned, 3)
    full = recommend(recommender_for(resolved, CATALOG, full_grid=True), 3)
    assert pruned.probed or pruned.coarse
    # The top plan and the plan its tie passed over. Further down, a layout of an engine
    # shape whose fastest layout already took a place can differ: the probe keeps the fastest
    # layout of each shape (DeepSeek-V3 on 4,096 H800s, rank 3: rollout tp 8 or tp 4, both an
    # engine of 64 GPUs, equally simple, within the tie).
    assert [{k: p[k] for k in keys} for p in coarse["plans"][:2]] == [
        {k: p[k] for k in keys} for p in full["plans"][:2]
    ]
    assert (
        coarse["search"]["candidates"] < full["search"]["candidates"]
        or not (full["search"]["coarse_splits_rollout_gpus"])
    )
    assert full["search"]["coarse_splits_rollout_gpus"] == []


def test_the_faster_published_mode_ranks_ahead_not_tied() -> None:
    # NeMo-RL's performance summary: Llama-3.1-8B on the same 16 H100s, 92.8 s on-policy and
    # 64.8 s one-step-off. The model must put one-step-off ahead by more than the tie.
    from rlmguide.rules.fidelity import calibration

    predicted = {c.result.id: c.predicted for c in calibration(CATALOG.records)}
    sync = predicted["nemo-rl-perf-llama-8b-grpo-16gpu"]
    one_off = predicted["nemo-rl-perf-llama-8b-grpo-1off-16gpu"]
    assert sync is not None and one_off is not None
    # A tie is a difference below TIE_FRACTION of the faster step (rules.ranking.rank).
    assert sync > one_off * (1 + TIE_FRACTION)


def test_every_constraint_record_compiles_and_cites_code() -> None:
    from rlmguide.rules.frameworks import compile_constraints

    compiled, problems = compile_constraints(CATALOG)
    assert not problems
    assert len(compiled) >= 30
    assert {c.record.framework for c in compiled} >= {"verl", "nemo-rl", "openrlhf", "slime", None}
    for c in compiled:
        assert c.record.commit in c.record.url and c.record.file in c.record.url


def test_a_framework_runs_a_plan_only_where_its_code_allows_it() -> None:
    from rlmguide.cost.plans import PlanTable
    from rlmguide.rules.facts import scenario_facts
    from rlmguide.rules.frameworks import compile_constraints, supports
    from rlmguide.rules.recommend import plan_facts

    resolved = resolve(read_scenario(EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml"), CATALOG.records)
    components = {c.id: c.role for c in CATALOG.of("component").values()}
    verl = next(
        x
        for x in supports(
            CATALOG.of("framework").values(), compile_constraints(CATALOG)[0], components, "grpo"
        )
        if x.id == "verl"
    )
    table = PlanTable.from_arrays(
        placement="colocated", execution=np.array(["sync", "sync", "partial-rollout"]),
        rollout_gpus=8, rollout_tp=2, rollout_pp=np.array([1, 2, 1]), train_gpus=8, train_tp=1,
        train_zero=3, train_recompute="full",
    )  # fmt: skip
    env = {**scenario_facts(resolved), **plan_facts(table)}
    ok, fails = verl.runnable(env, len(table))
    # verl runs the plain colocated plan, refuses rollout PP and colocated partial rollouts.
    assert list(ok) == [True, False, False]
    assert fails["verl-rollout-no-pipeline-parallelism"][1]
    assert fails["verl-fully-async-requires-separate-pools"][2]


def test_a_components_refusal_binds_every_framework_on_it() -> None:
    from rlmguide.rules.frameworks import compile_constraints, supports

    components = {c.id: c.role for c in CATALOG.of("component").values()}
    found = supports(
        CATALOG.of("framework").values(), compile_constraints(CATALOG)[0], components, "ppo"
    )
    on_deepspeed = [x for x in found if "deepspeed" in x.claimed]
    assert on_deepspeed
    for support in on_deepspeed:
        assert "deepspeed-zero-2-3-no-pipeline-parallelism" in {c.id for c in support.constraints}
    for support in found:
        if "deepspeed" not in support.claimed:
            assert "deepspeed-zero-2-3-no-pipeline-parallelism" not in {
                c.id for c in support.constraints
            }


def test_a_model_library_is_not_a_backend_and_a_layer_inherits_its_base() -> None:
    # verl claims Hugging Face Transformers (its models) and MindSpeed (Megatron on Ascend):
    # neither may open a backend without constraints. A ZeRO-3 plan with tensor parallelism
    # is refused by verl's FSDP (no TP) and by Megatron-LM (ZeRO-1 at most), so by MindSpeed.
    from rlmguide.cost.plans import PlanTable
    from rlmguide.rules.facts import scenario_facts
    from rlmguide.rules.frameworks import compile_constraints, inherit, supports
    from rlmguide.rules.recommend import plan_facts

    every = CATALOG.of("component").values()
    components = {c.id: c.role for c in every}
    extends = {c.id: c.extends for c in every if c.extends}
    assert extends == {"mindspeed": "megatron-lm"}
    constraints = inherit(compile_constraints(CATALOG)[0], extends)
    bound = {(c.id, c.record.component) for c in constraints}
    assert ("verl-megatron-data-parallel-optimizer-only", "mindspeed") in bound
    verl = next(
        x
        for x in supports(CATALOG.of("framework").values(), constraints, components, "grpo")
        if x.id == "verl"
    )
    assert {b for b, _ in verl.pairs} == {"megatron-lm", "mindspeed", "pytorch-fsdp"}
    resolved = resolve(read_scenario(EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml"), CATALOG.records)
    table = PlanTable.from_arrays(
        placement="colocated", execution="sync", rollout_gpus=8, rollout_tp=2, train_gpus=8,
        train_tp=np.array([1, 2, 2]), train_zero=np.array([3, 3, 1]), train_recompute="full",
    )  # fmt: skip
    ok, _ = verl.runnable({**scenario_facts(resolved), **plan_facts(table)}, len(table))
    assert list(ok) == [True, False, True]


def test_the_smaller_rollout_engine_is_the_simpler_and_wide_expert_parallelism_last() -> None:
    from rlmguide.cost.plans import PlanTable

    # Engines of 8 (tp 4 x ep 8), 16 (tp 16) and 16 (tp 4 x ep 16): 8 first, then at equal
    # size the one without expert parallelism beyond its tensor group.
    table = PlanTable.from_arrays(
        placement="colocated", execution="sync", rollout_gpus=128,
        rollout_tp=np.array([4, 16, 4]), rollout_ep=np.array([8, 1, 16]), train_gpus=128,
        train_tp=1, train_zero=3, train_recompute="full",
    )  # fmt: skip
    a, b, c = complexity(table, 8)
    assert a < b < c


def test_the_tie_is_the_models_measured_error_on_differences() -> None:
    from rlmguide.rules.fidelity import calibration, paired

    pairs = paired(calibration(CATALOG.records))
    assert len(pairs) >= 5
    factors = sorted(p.factor for p in pairs)
    median = factors[len(factors) // 2]
    # TIE_FRACTION is this median, rounded: it should follow the data if the data move.
    assert abs((median - 1) - TIE_FRACTION) <= 0.05, factors
    for p in pairs:
        a, b = p.first, p.second
        reported = a.result.value / b.result.value
        predicted = a.predicted / b.predicted
        assert p.factor == pytest.approx(max(predicted / reported, reported / predicted))


def test_a_held_out_framework_loses_its_own_defaults_and_constants() -> None:
    from rlmguide.cost.overheads import DEFAULT_OVERHEADS, without_framework

    # verl's max_num_seqs (1024) and ppo_max_token_len_per_gpu (16384) give way to vLLM's own
    # default (1024 from 70 GiB up except on A100, 256 there) and OpenRLHF's 16,192 tokens.
    h100 = without_framework(DEFAULT_OVERHEADS, "verl", 80.0, "h100-sxm-80gb")
    a100 = without_framework(DEFAULT_OVERHEADS, "verl", 80.0, "a100-sxm-80gb")
    assert (h100.max_seqs_per_replica, h100.train_microbatch_tokens) == (1024, 16192.0)
    assert (a100.max_seqs_per_replica, a100.train_microbatch_tokens) == (256, 16192.0)
    # The weight-sync bucket is read from verl and slime alike: holding one out keeps it.
    assert without_framework(DEFAULT_OVERHEADS, "slime", 80.0, "h100-sxm-80gb") == DEFAULT_OVERHEADS
    assert h100.weight_sync_bucket_bytes == DEFAULT_OVERHEADS.weight_sync_bucket_bytes

    scenario = CATALOG.of("deployment")["verl-qwen3-235b-a22b-grpo-megatron-32xh20"].scenario  # type: ignore[attr-defined]
    resolved = resolve(scenario.model_copy(update={"plan": type(scenario.plan)()}), CATALOG.records)
    # verl's own rollout TP 2; verl records no family threshold, so NeMo RL's (model-parallel
    # above 100B, the only one recorded) stands in: Qwen3-235B-A22B trains model-parallel.
    own = recommender_for(resolved, CATALOG, only="verl")
    assert own.framework_defaults() == (2, True)
    held = recommender_for(resolved, CATALOG, only="verl", held_out="verl")
    assert held.framework_defaults() == (1, True)
    assert held.overheads.train_microbatch_tokens == 16192.0
    other = recommender_for(resolved, CATALOG, only="verl", held_out="slime")
    assert other.framework_defaults() == (2, True) and other.overheads == own.overheads


def test_a_held_out_or_unrecorded_default_is_the_median_of_the_other_released_frameworks() -> None:
    scenario = CATALOG.of("deployment")["verl-qwen3-235b-a22b-grpo-megatron-32xh20"].scenario  # type: ignore[attr-defined]
    resolved = resolve(scenario.model_copy(update={"plan": type(scenario.plan)()}), CATALOG.records)
    held = recommender_for(resolved, CATALOG, only="verl", held_out="verl").tie_defaults()
    tp = held["default_rollout_tp"]
    # every other released framework that records one engines at TP 1 (verl's 2 held out)
    assert (tp.value, tp.own) == (1, False)
    assert tp.frameworks == ("nemo-rl", "openrlhf", "prime-rl", "skyrl", "slime", "trl")
    family = held["model_parallel_above_params_b"]
    assert (family.value, family.frameworks, family.own) == (100, ("nemo-rl",), False)
    # NeMo RL held out: verl's 2 and five 1s give TP 1 (the lower middle of six), and no
    # other framework records a family threshold; Qwen3-235B-A22B is a mixture of experts,
    # for which AReaL, SkyRL and verl state the rule NeMo RL does not (Megatron): it decides
    nemo = recommender_for(resolved, CATALOG, only="nemo-rl", held_out="nemo-rl")
    assert nemo.tie_defaults()["default_rollout_tp"].frameworks[-1] == "verl"
    assert "model_parallel_above_params_b" not in nemo.tie_defaults()
    moe = nemo.tie_defaults()["moe_model_parallel"]
    assert (moe.value, moe.frameworks, moe.own) == (True, ("areal", "skyrl", "verl"), False)
    assert nemo.framework_defaults() == (1, True)
    # a search over every framework has no one framework's defaults
    assert recommender_for(resolved, CATALOG).tie_defaults() == {}


def test_a_mixture_of_experts_leans_to_the_family_the_frameworks_state_for_moe() -> None:
    # Qwen3-30B-A3B is below NeMo RL's 100B threshold (the only one recorded), which alone
    # would lean to data-parallel sharding; verl states Megatron for MoE (its model-engine
    # matrix: FSDP's scalability "MoE is bad"), and held out, AReaL's and SkyRL's statements
    # say the same: the MoE rule names the case and decides, the size threshold does not.
    moe = CATALOG.of("deployment")["verl-qwen3-30b-a3b-dapo-megatron-ep8-8xh20"].scenario  # type: ignore[attr-defined]
    resolved = resolve(moe.model_copy(update={"plan": type(moe.plan)()}), CATALOG.records)
    assert resolved.policy.moe is not None and resolved.policy.params_total < 100e9
    own = recommender_for(resolved, CATALOG, only="verl")
    rule = own.tie_defaults()["moe_model_parallel"]
    assert (rule.value, rule.frameworks, rule.own) == (True, ("verl",), True)
    assert own.framework_defaults() == (2, True)
    held = recommender_for(resolved, CATALOG, only="verl", held_out="verl")
    rule = held.tie_defaults()["moe_model_parallel"]
    assert (rule.value, rule.frameworks, rule.own) == (True, ("areal", "skyrl"), False)
    assert held.framework_defaults() == (1, True)
    assert set(held.deciding_defaults()) == {"default_rollout_tp", "moe_model_parallel"}
    why = recommend(held, 1)["plans"][0]["tie"]["why"]
    assert "model-parallel for a mixture of experts (the median of areal, skyrl)" in why
    assert "100B" not in why
    # A dense model of the same framework: the MoE rule does not apply, the threshold decides.
    dense = CATALOG.of("deployment")["verl-qwen2.5-32b-ppo-critic-fsdp-32xa100"].scenario  # type: ignore[attr-defined]
    resolved = resolve(dense.model_copy(update={"plan": type(dense.plan)()}), CATALOG.records)
    held = recommender_for(resolved, CATALOG, only="verl", held_out="verl")
    assert "moe_model_parallel" in held.tie_defaults()
    assert set(held.deciding_defaults()) == {"default_rollout_tp", "model_parallel_above_params_b"}
    assert held.framework_defaults() == (1, False)


def test_a_tie_names_the_defaults_that_broke_it() -> None:
    scenario = CATALOG.of("deployment")["openrlhf-llama-3-8b-ppo-hybrid-engine-8xa100"].scenario  # type: ignore[attr-defined]
    resolved = resolve(scenario.model_copy(update={"plan": type(scenario.plan)()}), CATALOG.records)
    result = recommend(recommender_for(resolved, CATALOG, only="openrlhf", held_out="openrlhf"), 1)
    assert result["tie_defaults"]["default_rollout_tp"]["own"] is False
    assert "openrlhf" not in result["tie_defaults"]["default_rollout_tp"]["frameworks"]
    why = result["plans"][0]["tie"]["why"]
    said = "for openrlhf, ties lean to the defaults rollout TP 1 (the median of nemo-rl, prime-rl"
    assert said in why
    assert "model-parallel above 100B parameters (the median of nemo-rl)" in why
    assert "mixture of experts" not in why  # Llama 3 8B is dense: the MoE rule is not used


def test_one_framework_is_costed_with_the_constants_it_sets_for_itself() -> None:
    # NeMo RL packs its network refit into buffers of 2% of the GPU (H20: the 97871 MiB its
    # driver reports -> 1.91 GiB, where the datasheet's 96 GiB gave 1.92).
    scenario = CATALOG.of("deployment")["verl-qwen3-235b-a22b-grpo-megatron-32xh20"].scenario  # type: ignore[attr-defined]
    resolved = resolve(scenario.model_copy(update={"plan": type(scenario.plan)()}), CATALOG.records)
    assert resolved.accelerator.memory_gib == 96.0
    assert resolved.accelerator.capacity_gib == 97871 / 1024
    nemo = recommender_for(resolved, CATALOG, only="nemo-rl")
    assert nemo.overheads.weight_broadcast_bucket_bytes == pytest.approx(0.02 * 97871 * 2**20)
    verl = recommender_for(resolved, CATALOG, only="verl")
    assert verl.overheads.weight_broadcast_bucket_bytes == 512 * 2**20
