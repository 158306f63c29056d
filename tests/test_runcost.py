"""Run totals (cost.run, rules.runcost) and the cluster-size search (rules.sizing), through the
library, click's runner and one real process."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import REPO, run_cli, sets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rlmguide.cost.run import DEFAULT_RUN_TERMS, RunTerms, length_schedule, run_time
from rlmguide.rules.sizing import (
    Objective,
    SizingError,
    Unfit,
    choose_size,
    frontier,
    node_counts,
)

from rlmguide.cli import cli

SMALL = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
NO_EXTRAS = (
    "run.startup_seconds=0",
    "run.failures_per_gpu_hour=0",
    "run.checkpoint_every_steps=100000",
)
"""Run terms that make a run exactly its steps (no start-up, failures or checkpoints)."""


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@functools.cache
def recommend_json(*args: str) -> dict[str, Any]:
    done = invoke("recommend", SMALL, "--format", "json", *args)
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


# --- the cost core's run formulas, by hand --------------------------------------------------


def test_llama3_failure_rate_is_419_in_54_days_on_16384_gpus() -> None:
    # 54 days x 24 h x 16,384 GPUs = 21,233,664 GPU-hours
    assert DEFAULT_RUN_TERMS.failures_per_gpu_hour == pytest.approx(419 / 21_233_664)
    assert DEFAULT_RUN_TERMS.failures_per_gpu_hour == pytest.approx(1.9733e-5, rel=1e-4)


def test_run_time_terms_by_hand() -> None:
    t = run_time(100, 60.0, 30.0, 16, 2, 7e9)
    assert t.steps == 6000.0
    assert t.oversampling == 0.0
    # two checkpoints of 7e9 x 14 bytes written by 2 nodes at 2 GB/s each: 24.5 s apiece
    assert t.checkpoints == pytest.approx(49.0)
    assert t.startup == 600.0
    # 6649 s on 16 GPUs at 1.9733e-5 per GPU-hour; each costs 600 s + 25 steps of 60 s
    expected = 419 / 21_233_664 * 16 * 6649 / 3600
    assert t.expected_failures == pytest.approx(expected)
    assert t.failures == pytest.approx(expected * 2100)
    assert t.total == pytest.approx(6000 + 49 + 600 + expected * 2100)


def test_oversampling_and_evaluation_terms() -> None:
    terms = RunTerms(oversampling=1.5, evaluation_every_steps=10, evaluation_seconds=120,
                     failures_per_gpu_hour=0, startup_seconds=0)  # fmt: skip
    t = run_time(100, 60.0, 30.0, 8, 1, 7e9, terms)
    assert t.oversampling == pytest.approx(0.5 * 100 * 30)
    assert t.evaluation == pytest.approx(10 * 120)


def test_length_schedule_is_simpson_over_a_capped_line() -> None:
    lengths, weights = length_schedule(1000, 2.0, 8000)
    assert list(lengths) == [1000, 1500, 2000]
    assert list(weights) == pytest.approx([1 / 6, 4 / 6, 1 / 6])
    assert list(length_schedule(1000, 2.0, 1200)[0]) == [1000, 1200, 1200]
    assert list(length_schedule(1000, 1.0, 8000)[0]) == [1000]


@pytest.mark.parametrize("bad", [{"pue": 0.9}, {"oversampling": 0.5}, {"startup_seconds": -1}])
def test_run_terms_refuse_impossible_values(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RunTerms(**bad)


# --- run totals on every plan -------------------------------------------------------------------


def test_run_totals_are_per_step_totals_times_steps() -> None:
    result = recommend_json(*sets("workload.steps=400", *NO_EXTRAS))
    for plan in result["plans"]:
        assert plan["run_steps"] == 400
        assert plan["gpu_hours_per_step"] == pytest.approx(8 * plan["step_seconds"] / 3600)
        assert plan["run_gpu_hours"] == pytest.approx(400 * plan["gpu_hours_per_step"])
        assert plan["run_cost"] == pytest.approx(400 * plan["cost_per_step"])
        assert plan["run_days"] == pytest.approx(400 * plan["step_seconds"] / 86400)
        # 700 W (the H100 record's TDP) x PUE 1.2 per GPU-hour
        assert plan["energy_kwh"] == pytest.approx(plan["run_gpu_hours"] * 0.7 * 1.2)


def test_default_price_is_the_records_and_labelled_so() -> None:
    result = recommend_json(*sets("workload.steps=10"))
    price = result["run"]["price"]
    assert price["default"] is True and price["per_gpu_hour"] == 3.99
    assert price["source"] == "github-api-evangelist-lambda-labs-pricing"
    assert price["origin"].startswith("default: public on-demand price of h100-sxm-80gb")
    terms = result["run"]["terms"]
    assert terms["failures_per_gpu_hour"]["origin"] == "arxiv-2407.21783"
    assert terms["pue"]["origin"] == "assumption"
    assert result["plans"][0]["currency"] == "USD"


def test_doubled_price_doubles_cost_and_changes_no_layout() -> None:
    one = recommend_json(*sets("workload.steps=100", "cluster.price_per_gpu_hour=2.5"))
    two = recommend_json(*sets("workload.steps=100", "cluster.price_per_gpu_hour=5"))
    assert one["run"]["price"]["default"] is False
    for a, b in zip(one["plans"], two["plans"], strict=True):
        assert (a["rollout"], a["train"], a["placement"], a["execution"]) == (
            b["rollout"], b["train"], b["placement"], b["execution"])  # fmt: skip
        assert b["step_seconds"] == a["step_seconds"]
        assert b["cost_per_step"] == pytest.approx(2 * a["cost_per_step"])
        assert b["run_cost"] == pytest.approx(2 * a["run_cost"])


def test_a_part_without_a_public_price_has_no_cost() -> None:
    result = recommend_json(*sets("cluster.accelerator=h800-sxm-80gb", "workload.steps=10"))
    plan = result["plans"][0]
    assert result["run"]["price"] is None
    assert plan["cost_per_step"] is None and plan["run_cost"] is None
    assert plan["run_gpu_hours"] > 0


def test_sample_budget_and_length_growth() -> None:
    # 128 prompts x 8 samples a step: 100,000 samples take ceil(97.66) = 98 steps
    result = recommend_json(*sets("workload.trained_samples=100000", "run.response_growth=2"))
    plan = result["plans"][0]
    assert plan["run_steps"] == 98
    # responses growing from 2,048 to 4,096 tokens make the mean step slower than the first
    assert plan["run_step_seconds"] > plan["step_seconds"]
    assert plan["run_seconds_terms"]["steps"] == pytest.approx(98 * plan["run_step_seconds"])


def test_without_a_run_length_only_per_step_figures() -> None:
    plan = recommend_json()["plans"][0]
    assert plan["gpu_hours_per_step"] > 0 and plan["cost_per_step"] > 0
    assert plan["run_gpu_hours"] is None and plan["run_days"] is None


# --- the frontier and the choice ----------------------------------------------------------------


def test_node_counts() -> None:
    assert node_counts(5) == [1, 2, 3, 4, 5]
    assert node_counts(40) == [*range(1, 17), 32, 40]


def test_frontier_by_hand() -> None:
    points = [(10.0, 5.0), (8.0, 6.0), (9.0, 7.0), (12.0, 4.0), (8.0, 6.0), (20.0, 4.0)]
    # (9, 7) is beaten by (8, 6); the second (8, 6) repeats it; (20, 4) is beaten by (12, 4)
    assert frontier(points) == [1, 0, 3]


@given(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 30)), min_size=1, max_size=40))
def test_frontier_holds_exactly_the_non_dominated_points(raw: list[tuple[int, int]]) -> None:
    points = [(float(a), float(b)) for a, b in raw]
    kept = frontier(points)

    def beats(p: tuple[float, float], q: tuple[float, float]) -> bool:
        return p[0] <= q[0] and p[1] <= q[1] and p != q

    for i in kept:
        assert not any(beats(p, points[i]) for p in points)
    for i, q in enumerate(points):
        if i not in kept:
            assert any(beats(points[k], q) or points[k] == q for k in kept)


def synthetic(days: dict[int, float], cost: dict[int, float]) -> Any:
    """recommend_at over made-up sizes: the run days and cost of each node count's top plan."""

    def recommend_at(nodes: int) -> dict[str, Any]:
        if nodes not in days:
            raise Unfit("does not fit")
        plan = {"gpus_billed": 8 * nodes, "placement": "colocated", "execution": "sync",
                "step_seconds": days[nodes], "run_days": days[nodes], "cost_per_step": 1.0,
                "run_cost": cost[nodes], "currency": "USD"}  # fmt: skip
        return {"plans": [plan]}

    return recommend_at


DAYS = {1: 40.0, 2: 21.0, 3: 15.0, 4: 12.0}
COST = {1: 100.0, 2: 105.0, 3: 104.0, 4: 120.0}


def test_choice_by_objective_deadline_and_budget() -> None:
    at = synthetic(DAYS, COST)
    _, summary = choose_size(at, 4, Objective("cost"))
    assert summary["chosen_nodes"] == 1
    assert [s["nodes"] for s in summary["frontier"]] == [4, 3, 1]  # 2 is beaten by 3
    _, summary = choose_size(at, 4, Objective("cost", deadline_days=20))
    assert summary["chosen_nodes"] == 3 and "within 20 days" in summary["why"]
    assert summary["why"].endswith("; the fastest size (4 nodes) takes 12 days for 120")
    _, summary = choose_size(at, 4, Objective("time", budget=110))
    assert summary["chosen_nodes"] == 3
    chosen = [s for s in summary["sizes"] if s["chosen"]]
    assert chosen[0]["on_frontier"]


@pytest.mark.parametrize(
    ("objective", "message"),
    [
        (Objective("cost", deadline_days=10), "the deadline binds: no searched size finishes "
         "within 10 days; the fastest (4 nodes) takes 12 days"),
        (Objective("time", budget=90), "the budget binds: no searched size costs at most 90; "
         "the cheapest (1 node) costs 100"),
        (Objective("time", deadline_days=13, budget=110), "the deadline and the budget bind "
         "together: within 13 days the cheapest size (4 nodes) costs 120"),
    ],
)  # fmt: skip
def test_unmeetable_constraints_say_which_binds(objective: Objective, message: str) -> None:
    with pytest.raises(SizingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        choose_size(synthetic(DAYS, COST), 4, objective)


def test_sizes_without_a_plan_are_listed() -> None:
    _, summary = choose_size(synthetic({2: 5.0, 4: 3.0}, {2: 10.0, 4: 12.0}), 4, Objective("time"))
    assert [s["nodes"] for s in summary["infeasible"]] == [1, 3]
    assert summary["chosen_nodes"] == 4


# --- the real search over node counts ----------------------------------------------------------

TWO_PER_NODE = ("cluster.gpus_per_node=2", "workload.steps=200")


@functools.cache
def sized(max_nodes: int, objective: str = "time") -> dict[str, Any]:
    return recommend_json(
        *sets(*TWO_PER_NODE), "--objective", objective, "--max-nodes", str(max_nodes), "--top", "1"
    )


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 2, 3, 4]), st.sampled_from([1, 2, 3, 4]))
def test_a_larger_max_nodes_never_raises_the_best_time(m: int, n: int) -> None:
    small, large = sorted((m, n))
    best = {k: sized(k)["plans"][0]["run_days"] for k in (small, large)}
    assert best[large] <= best[small]


def test_real_frontier_is_non_dominated_and_holds_the_choice() -> None:
    for objective in ("time", "cost"):
        sizing = sized(4, objective)["sizing"]
        assert sizing["searched_nodes"] == [1, 2, 3, 4]
        assert (sizing["time_axis"], sizing["cost_axis"]) == ("run_days", "run_cost")
        points = [(s["run_days"], s["run_cost"]) for s in sizing["sizes"]]
        for s in sizing["frontier"]:
            p = (s["run_days"], s["run_cost"])
            assert not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)
        (chosen,) = [s for s in sizing["sizes"] if s["chosen"]]
        assert chosen["on_frontier"]
        assert sized(4, objective)["plans"][0]["gpus_billed"] == 2 * chosen["nodes"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (sets("cluster.price_per_gpu_hour=-2"), 2, "cluster.price_per_gpu_hour"),
        (["--max-nodes", "2", "--budget", "-5"], 2, "--budget"),
        (["--max-nodes", "2", "--deadline", "3"], 2, "--deadline needs the run's length"),
        ([*sets("cluster.accelerator=h800-sxm-80gb"), "--max-nodes", "2", "--budget", "10"], 2,
         "--budget needs a price: h800-sxm-80gb has no public price"),
        ([*sets(*TWO_PER_NODE), "--max-nodes", "2", "--deadline", "0.001"], 1,
         "the deadline binds"),
        (sets("workload.steps=5", "workload.trained_samples=10"), 2, "give the run's length once"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_message(args: list[str], code: int, message: str) -> None:
    done = CliRunner().invoke(cli, ["recommend", SMALL, *args])
    assert done.exit_code == code, done.output
    assert message in done.output


def test_table_report_and_plot(tmp_path: Any) -> None:
    plot = tmp_path / "frontier.svg"
    done = invoke("recommend", SMALL, *sets(*TWO_PER_NODE), "--objective", "cost",
                  "--max-nodes", "2", "--top", "1", "--plot", str(plot))  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "cost of plan 1" in done.output and "<- chosen" in done.output
    assert "Cluster sizes" in plot.read_text()


def test_real_process_cost_objective() -> None:
    done = run_cli("recommend", SMALL, "--set", "workload.steps=50", "--objective", "cost",
                   "--max-nodes", "2", "--format", "json", "--top", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    sizing = result["sizing"]
    assert sizing["objective"] == "cost" and sizing["searched_nodes"] == [1, 2]
    chosen = sizing["chosen_nodes"]
    cheapest = min(s["run_cost"] for s in sizing["sizes"])
    assert math.isclose(next(s for s in sizing["sizes"] if s["nodes"] == chosen)["run_cost"],
                        cheapest)  # fmt: skip


def test_estimate_of_a_deployment_carries_run_totals() -> None:
    done = invoke("estimate", "--deployment", "slime-qwen3-4b-grpo-8xh100", "--format", "json",
                  *sets("workload.steps=20", *NO_EXTRAS))  # fmt: skip
    assert done.exit_code == 0, done.output
    (plan,) = json.loads(done.output)["plans"]
    assert plan["run_gpu_hours"] == pytest.approx(20 * plan["gpu_hours_per_step"])
    assert plan["run_cost"] == pytest.approx(20 * plan["gpu_hours_per_step"] * 3.99)
