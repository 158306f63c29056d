"""Mixed-accelerator clusters (rules.mixed, cost.mixed): plans on each part and across parts,
each pool costed on its own accelerator, weight sync over the link, billing per part."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st
from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.mixed import link_gbps
from rlmguide.cost.plans import EXECUTIONS, FUSIONS, PlanTable
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules import RECOMMEND_KINDS
from rlmguide.rules.mixed import CrossingRecommender, crossing, crossing_resolved, resolve_mixed
from rlmguide.rules.recommend import _cost, recommender_for
from rlmguide.rules.scenario import InputError, parse_scenario
from rlmguide.rules.sizing import Objective

from rlmguide.cli import cli

EXAMPLE = REPO / "examples" / "grpo-qwen2.5-7b-mixed-16xa100-8xh100.yaml"
BASE = yaml.safe_load(EXAMPLE.read_text())


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write(tmp: Path, data: dict[str, Any]) -> str:
    path = tmp / "mixed.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def with_cluster(**cluster: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(BASE))
    data["cluster"] = {**data["cluster"], **cluster}
    return data


@functools.cache
def recommend_json(path: str, *args: str) -> dict[str, Any]:
    done = invoke("recommend", path, "--format", "json", "--top", "2", *args)
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


@functools.cache
def catalog() -> Any:
    return load_catalog(record_roots(), RECOMMEND_KINDS)


# --- the bundled example ------------------------------------------------------------------


def test_mixed_cluster_yields_plans_on_each_part_and_on_both() -> None:
    mixed = recommend_json(str(EXAMPLE))["mixed"]
    pairs = {(o["rollout_part"], o["train_part"]) for o in mixed["options"]}
    assert pairs == {("a100", "a100"), ("h100", "h100"), ("a100", "h100"), ("h100", "a100")}
    for option in mixed["options"]:
        gpus = {"a100": 16, "h100": 8}
        parts = {option["rollout_part"], option["train_part"]}
        assert option["gpus"] == sum(gpus[p] for p in parts)
        # Across parts the pools are exactly the parts; on one part a colocated plan is allowed.
        if len(parts) == 2:
            assert option["placement"] == "disaggregated"
            assert option["weight_sync_between_parts"]["transport"] == "nccl"  # both NVIDIA
        assert [b["part"] for b in option["billing"]] == [
            option["rollout_part"],
            *([option["train_part"]] if len(parts) == 2 else []),
        ]


def test_each_option_is_billed_per_part_at_its_price() -> None:
    result = recommend_json(str(EXAMPLE))
    prices = {"a100": 2.79, "h100": 3.99}  # the accelerator records' cited defaults
    for option in result["mixed"]["options"]:
        step_hours = option["step_seconds"] / 3600
        total = 0.0
        for bill in option["billing"]:
            assert bill["price_per_gpu_hour"] == prices[bill["part"]]
            assert bill["gpu_hours_per_step"] == pytest.approx(bill["gpus"] * step_hours)
            assert bill["cost_per_step"] == pytest.approx(
                bill["gpus"] * step_hours * prices[bill["part"]]
            )
            total += bill["cost_per_step"]
        assert option["cost_per_step"] == pytest.approx(total)
        assert option["run_cost"] == pytest.approx(sum(b["run_cost"] for b in option["billing"]))
        assert option["run_gpu_hours"] == pytest.approx(
            sum(b["run_gpu_hours"] for b in option["billing"])
        )
    # Hand-checked: 16 A100s and 8 H100s cost 16 x 2.79 + 8 x 3.99 = 76.56 USD an hour.
    plan = result["plans"][0]
    if plan["parts"]["rollout"] != plan["parts"]["train"]:
        assert plan["cost_per_step"] == pytest.approx(plan["step_seconds"] / 3600 * 76.56)


def test_the_chosen_option_is_on_the_frontier_and_the_frontier_is_non_dominated() -> None:
    for objective in ("time", "cost"):
        mixed = recommend_json(str(EXAMPLE), "--objective", objective)["mixed"]
        t, c = mixed["time_axis"], mixed["cost_axis"]
        assert (t, c) == ("run_days", "run_cost")  # the example gives steps; both parts priced
        options = mixed["options"]
        chosen = [o for o in options if o["chosen"]]
        assert len(chosen) == 1 and chosen[0]["on_frontier"]
        assert mixed["chosen"] == chosen[0]["label"]
        key = t if objective == "time" else c
        assert chosen[0][key] == min(o[key] for o in options)
        for o in options:
            dominated = any(
                p[t] <= o[t] and p[c] <= o[c] and (p[t], p[c]) != (o[t], o[c]) for p in options
            )
            assert o["on_frontier"] == (not dominated)


def test_the_output_says_which_part_each_pool_uses() -> None:
    result = recommend_json(str(EXAMPLE))
    cluster = result["scenario"]["cluster"]
    assert [p["name"] for p in cluster["parts"]] == ["a100", "h100"]
    assert cluster["accelerator"] is None and cluster["link_gbps_between_parts"] == 100
    assert result["scenario"]["workload"]["samples_per_prompt"] == 8
    chosen = next(o for o in result["mixed"]["options"] if o["chosen"])
    for plan in result["plans"]:
        assert plan["parts"] == {"rollout": chosen["rollout_part"], "train": chosen["train_part"]}


def test_a_doubled_price_on_one_part_doubles_that_parts_cost_only(tmp_path: Path) -> None:
    base = recommend_json(str(EXAMPLE))["mixed"]["options"]
    data = with_cluster()
    data["cluster"]["parts"][1]["price_per_gpu_hour"] = 2 * 3.99
    doubled = recommend_json(write(tmp_path, data))["mixed"]["options"]
    for before, after in zip(base, doubled, strict=True):
        assert after["step_seconds"] == before["step_seconds"]  # no layout changes
        assert (after["placement"], after["execution"]) == (
            before["placement"],
            before["execution"],
        )
        for b0, b1 in zip(before["billing"], after["billing"], strict=True):
            factor = 2.0 if b0["part"] == "h100" else 1.0
            assert b1["cost_per_step"] == pytest.approx(factor * b0["cost_per_step"])
            assert b1["run_cost"] == pytest.approx(factor * b0["run_cost"])
            assert b1["gpu_hours_per_step"] == pytest.approx(b0["gpu_hours_per_step"])


# --- costing across parts -----------------------------------------------------------------


def _crossing(mixed: Any, rollout: Any, train: Any) -> tuple[PlanTable, Any, Any]:
    """Up to 50 plans of the crossing (rollout on one part, training on the other), with the
    recommender that costs them across the parts and its scenario."""
    cross = crossing(mixed, rollout, train)
    resolved = crossing_resolved(cross)
    recommender = recommender_for(
        resolved, catalog(), factory=lambda *a, **k: CrossingRecommender(cross, *a, **k)
    )
    costs, _ = recommender.run()
    return costs.plans.take(np.arange(min(len(costs), 50))), recommender, resolved


def _crossing_costs(mixed: Any, rollout: Any, train: Any) -> tuple[PlanTable, CostTable]:
    table, recommender, resolved = _crossing(mixed, rollout, train)
    return table, recommender.cost(resolved, table)


def test_a_fused_assessment_streams_behind_the_rollout_across_parts_too() -> None:
    # Inter-stage fusion on pools apart: a synchronous step takes max(rollout, assessment)
    # where it took their sum (Table 9), whichever parts the pools sit on.
    mixed = resolve_mixed(parse_scenario(BASE), catalog())
    table, recommender, resolved = _crossing(mixed, *mixed.parts)
    sync = table.take(np.flatnonzero(table.execution == EXECUTIONS.index("sync")))
    assert len(sync)
    fused = dataclasses.replace(
        sync, fusion=np.full(len(sync), FUSIONS.index("inter-stage"), dtype=np.int64)
    )
    plain, streamed = recommender.cost(resolved, sync), recommender.cost(resolved, fused)
    saved = plain.step_seconds - streamed.step_seconds
    overlap = np.minimum(plain.stages["rollout"].seconds, plain.stages["assessment"].seconds)
    assert np.all(saved > 0)
    assert np.all(saved <= overlap + 1e-9)


def test_each_pool_is_costed_on_its_own_parts_accelerator() -> None:
    mixed = resolve_mixed(parse_scenario(BASE), catalog())
    a100, h100 = mixed.parts
    table, mixed_costs = _crossing_costs(mixed, a100, h100)
    on_a100 = _cost(a100.resolved, table)
    on_h100 = _cost(h100.resolved, table)
    np.testing.assert_allclose(
        mixed_costs.stages["rollout"].seconds, on_a100.stages["rollout"].seconds
    )
    for stage in ("assessment", "training", "switch"):
        np.testing.assert_allclose(mixed_costs.stages[stage].seconds, on_h100.stages[stage].seconds)
    np.testing.assert_allclose(mixed_costs.memory_rollout_gib, on_a100.memory_rollout_gib)
    np.testing.assert_allclose(mixed_costs.memory_train_gib, on_h100.memory_train_gib)
    # The same rollout on H100s is faster than on A100s: the part matters.
    assert np.all(on_h100.stages["rollout"].seconds < on_a100.stages["rollout"].seconds)
    # A slower link between the parts slows the weight sync and nothing else.
    slow = crossing(mixed, a100, h100)
    slow = type(slow)(slow.rollout, slow.train, slow.link_gbps / 10, slow.transport)
    resolved = crossing_resolved(slow)
    slower = CrossingRecommender(slow, resolved, [], []).cost(resolved, table)
    assert np.all(slower.stages["weight_sync"].seconds > mixed_costs.stages["weight_sync"].seconds)
    np.testing.assert_allclose(
        slower.stages["rollout"].seconds, mixed_costs.stages["rollout"].seconds
    )


def test_old_log_probs_are_recomputed_on_the_trainer_across_parts() -> None:
    data = json.loads(json.dumps(BASE))
    data["workload"]["recompute_old_logprobs"] = False
    mixed = resolve_mixed(parse_scenario(data), catalog())
    resolved = crossing_resolved(crossing(mixed, *mixed.parts))
    assert resolved.scenario.workload.recompute_old_logprobs
    assert any("recomputes the old log-probs" in n for n in resolved.notes)
    # On one part the scenario's choice stands.
    assert not mixed.parts[0].resolved.scenario.workload.recompute_old_logprobs


def test_cross_vendor_weight_sync_is_staged_through_host_memory_unless_rdma() -> None:
    # Hand-checked: a 400 Gb/s link, host links of 32 and 64 GB/s (256 and 512 Gb/s).
    assert link_gbps(400, same_vendor=True, staged=True, host_gbytes_per_s=(32, 64)) == 400
    assert link_gbps(400, same_vendor=False, staged=True, host_gbytes_per_s=(32, 64)) == 256
    assert link_gbps(400, same_vendor=False, staged=False, host_gbytes_per_s=(32, 64)) == 400
    assert link_gbps(100, same_vendor=False, staged=True, host_gbytes_per_s=(32, 64)) == 100
    data = with_cluster(link_gbps_between_parts=400)
    data["cluster"]["parts"][0]["accelerator"] = "mi300x-192gb"
    mixed = resolve_mixed(parse_scenario(data), catalog())
    amd, nvidia = mixed.parts
    staged = crossing(mixed, amd, nvidia)
    assert staged.transport == "host-staged"
    assert staged.link_gbps == min(400, 8 * amd.host_gbytes_per_s, 8 * nvidia.host_gbytes_per_s)
    data["cluster"]["cross_vendor_sync"] = "rdma"
    rdma = crossing(resolve_mixed(parse_scenario(data), catalog()), amd, nvidia)
    assert (rdma.transport, rdma.link_gbps) == ("rdma", 400)


def test_cross_vendor_plans_cite_their_transport(tmp_path: Path) -> None:
    data = with_cluster()
    data["cluster"]["parts"][0]["accelerator"] = "mi300x-192gb"
    mixed = recommend_json(write(tmp_path, data))["mixed"]
    across = [o for o in mixed["options"] if o["rollout_part"] != o["train_part"]]
    assert across and all(
        o["weight_sync_between_parts"]["transport"] == "host-staged"
        and o["weight_sync_between_parts"]["sources"] == ["arxiv-2601.22585"]
        for o in across
    )


def test_an_unpriced_part_compares_options_on_gpu_hours(tmp_path: Path) -> None:
    data = with_cluster()
    # the part named a100 becomes H20s, which have no public price
    data["cluster"]["parts"][0]["accelerator"] = "h20-96gb"
    result = recommend_json(write(tmp_path, data))
    mixed = result["mixed"]
    assert mixed["cost_axis"] == "run_gpu_hours"
    assert any("no price for a100" in n for n in mixed["notes"])
    unpriced_alone = next(
        o for o in mixed["options"] if o["train_part"] == o["rollout_part"] == "a100"
    )
    assert (
        unpriced_alone["cost_per_step"] is None
        and unpriced_alone["billing"][0]["cost_per_step"] is None
    )


# --- input: clear one-line errors ---------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"accelerator": "h100-sxm-80gb"}, "each part gives its own accelerator"),
        ({"nodes": 2}, "each part gives its own nodes"),
        ({"parts": [BASE["cluster"]["parts"][0]]}, "at least two parts"),
        (
            {"parts": [BASE["cluster"]["parts"][0], BASE["cluster"]["parts"][0]]},
            "the name 'a100' is given twice",
        ),
        (
            {
                "parts": [
                    {**BASE["cluster"]["parts"][0], "price_per_gpu_hour": 2, "currency": "EUR"},
                    {**BASE["cluster"]["parts"][1], "price_per_gpu_hour": 3, "currency": "USD"},
                ]
            },
            "prices in EUR and USD",
        ),
        (
            {"parts": [{**BASE["cluster"]["parts"][0], "tp": 2}, BASE["cluster"]["parts"][1]]},
            "cluster.parts[0].tp: unknown field",
        ),
    ],
)
def test_schema_errors_are_clear(cluster: dict[str, Any], message: str, tmp_path: Path) -> None:
    done = invoke("recommend", write(tmp_path, with_cluster(**cluster)))
    assert done.exit_code == 2
    assert message in done.output and "Traceback" not in done.output
    assert len(done.output.strip().splitlines()) == 1


def test_single_cluster_fields_are_checked_too() -> None:
    with pytest.raises(InputError, match=r"give cluster\.accelerator, or cluster\.parts"):
        parse_scenario({**BASE, "cluster": {"nodes": 1}})
    single = {**BASE, "cluster": {"accelerator": "h100-sxm-80gb", "link_gbps_between_parts": 100}}
    with pytest.raises(InputError, match="applies to a mixed cluster"):
        parse_scenario(single)
    with pytest.raises(InputError, match=r"cluster.parts\[0\].*8,192"):
        data = with_cluster()
        data["cluster"]["parts"][0]["nodes"] = 10_000
        parse_scenario(data)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("estimate",), "planned by `rlmguide recommend` only"),
        (("export", "--framework", "verl"), "planned by `rlmguide recommend` only"),
        (("recommend", "--emit", "verl"), "a launch script runs on one accelerator"),
        (("recommend", "--max-nodes", "4"), "--max-nodes searches node counts"),
    ],
)
def test_commands_that_need_one_accelerator_refuse_in_one_line(
    args: tuple[str, ...], message: str
) -> None:
    done = invoke(args[0], str(EXAMPLE), *args[1:])
    assert done.exit_code == 2
    assert message in done.output and len(done.output.strip().splitlines()) == 1


def test_budget_needs_a_price_on_every_part(tmp_path: Path) -> None:
    data = with_cluster()
    data["cluster"]["parts"][0]["accelerator"] = "h20-96gb"
    done = invoke("recommend", write(tmp_path, data), "--budget", "1000")
    assert done.exit_code == 2 and "a100 has none" in done.output


def test_a_budget_too_small_for_every_option_names_the_cheapest() -> None:
    done = invoke("recommend", str(EXAMPLE), "--budget", "1")
    assert done.exit_code == 1
    assert "no searched option costs at most 1" in done.output and "part h100" in done.output


def test_single_accelerator_scenarios_are_unchanged() -> None:
    done = invoke("recommend", str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"),
                  "--format", "json", "--top", "1")  # fmt: skip
    result = json.loads(done.output)
    assert "mixed" not in result and "billing" not in result["plans"][0]
    assert "parts" not in result["plans"][0]


def test_objective_cost_picks_the_cheapest_option_by_library() -> None:
    from rlmguide.rules.mixed import recommend_mixed

    mixed = resolve_mixed(parse_scenario(BASE), catalog())
    result = recommend_mixed(mixed, catalog(), 1, Objective("cost"))
    options = result["mixed"]["options"]
    cheapest = min(options, key=lambda o: o["run_cost"])
    assert cheapest["chosen"]
    assert result["plans"][0]["parts"] == {
        "rollout": cheapest["rollout_part"],
        "train": cheapest["train_part"],
    }


def test_the_markdown_report_lists_every_option_with_its_bill() -> None:
    done = invoke("recommend", str(EXAMPLE), "--top", "1", "--format", "markdown")
    assert done.exit_code == 0, done.output
    assert "mixed cluster: options searched, objective time" in done.output
    for label in ("part a100", "part h100", "rollout on a100, training on h100"):
        assert f"| {label} |" in done.output
    assert "a100 16 x 2.79 = " in done.output and "<- chosen" in done.output
    assert "(on a100) |" in done.output and "(on h100) |" in done.output


@given(
    gpus=st.lists(st.integers(1, 4096), min_size=2, max_size=4),
    prices=st.lists(st.floats(0.01, 100), min_size=4, max_size=4),
    step_seconds=st.floats(1, 1e5),
    factor=st.floats(0.1, 10),
)
def test_billing_laws(
    gpus: list[int], prices: list[float], step_seconds: float, factor: float
) -> None:
    """The bill is the sum of the parts' bills; the blended price times the GPUs is the
    hourly bill; scaling one part's price scales that part's cost and no other."""
    from rlmguide.rules.runcost import BilledPart, _billing, blended_rate

    def parts(scale: float) -> list[BilledPart]:
        return [
            BilledPart(f"p{i}", g, {"per_gpu_hour": prices[i] * (scale if i == 0 else 1.0),
                                    "currency": "USD", "default": False, "origin": "test"},
                       None)
            for i, g in enumerate(gpus)
        ]  # fmt: skip

    total = sum(gpus)
    hours = step_seconds / 3600
    rate = blended_rate(parts(1.0))
    assert rate is not None
    bills = _billing(parts(1.0), hours, hours * total, total)
    hourly = sum(g * prices[i] for i, g in enumerate(gpus))
    assert rate["per_gpu_hour"] * total == pytest.approx(hourly)
    assert sum(b["cost_per_step"] for b in bills) == pytest.approx(hours * hourly)
    assert sum(b["run_gpu_hours"] for b in bills) == pytest.approx(hours * total)
    scaled = _billing(parts(factor), hours, hours * total, total)
    for i, (before, after) in enumerate(zip(bills, scaled, strict=True)):
        expected = factor if i == 0 else 1.0
        assert after["cost_per_step"] == pytest.approx(expected * before["cost_per_step"])
    unpriced = [*parts(1.0)[:-1], BilledPart("none", 1, None, None)]
    assert blended_rate(unpriced) is None


def test_rules_on_the_rollout_pool_read_the_rollout_parts_cluster_facts(tmp_path: Path) -> None:
    data = with_cluster()
    data["cluster"]["parts"][0].update(accelerator="l40s-48gb", gpus_per_node=4, nodes=4)
    mixed = resolve_mixed(parse_scenario(data), catalog())
    l40s, h100 = mixed.parts
    cross = crossing(mixed, l40s, h100)
    recommender = CrossingRecommender(cross, crossing_resolved(cross), [], [])
    # The training part's facts stay the scenario's; the rollout pool's are its own part's.
    # (each the memory nvidia-smi reports: 81559 MiB on an H100, 46068 MiB on an L40S)
    assert recommender.facts["cluster.memory_gib"] == 81559 / 1024
    assert recommender.rollout_facts["cluster.memory_gib"] == 46068 / 1024
    assert recommender.rollout_facts["cluster.gpus_per_node"] == 4
    result = recommend_json(write(tmp_path, data))
    across = next(
        o for o in result["mixed"]["options"] if o["rollout_part"] == "a100" != o["train_part"]
    )
    assert across["billing"][0]["gpus"] == 16 and across["billing"][0]["price_per_gpu_hour"] is None


def test_memory_of_each_pool_is_judged_against_its_own_parts_capacity() -> None:
    data = with_cluster()
    data["cluster"]["parts"][0]["accelerator"] = "l40s-48gb"
    mixed = resolve_mixed(parse_scenario(data), catalog())
    l40s, h100 = mixed.parts
    table, mixed_costs = _crossing_costs(mixed, l40s, h100)
    on_l40s, on_h100 = _cost(l40s.resolved, table), _cost(h100.resolved, table)
    rollout_room = mixed_costs.pool_overflow_gib["rollout"]
    np.testing.assert_allclose(rollout_room, on_l40s.pool_overflow_gib["rollout"])
    # 48 GiB cards leave 32 GiB less room than 80 GiB ones (x the usable fraction).
    assert np.all(rollout_room > on_h100.pool_overflow_gib["rollout"] + 25)
    np.testing.assert_allclose(
        mixed_costs.pool_overflow_gib["training"], on_h100.pool_overflow_gib["training"]
    )
    assert np.all(mixed_costs.feasible)  # the search kept only plans that fit on both parts


def test_a_part_whose_host_memory_is_assumed_says_so(tmp_path: Path) -> None:
    # The part named a100 becomes H20s, whose record gives no host memory: the cost core checks
    # its offloaded state against the assumed 2,048 GiB a node of 8 GPUs, and the notes say it,
    # for that part only, as a single-kind cluster's do.
    data = with_cluster()
    data["cluster"]["parts"][0]["accelerator"] = "h20-96gb"
    mixed = resolve_mixed(parse_scenario(data), catalog())
    h20, h100 = mixed.parts
    said = h20.assumed_host_memory()
    assert said is not None and said.startswith("part a100: host memory: the h20-96gb record")
    assert "assumed 2,048 GiB a node (256.0 GiB a GPU" in said
    assert h100.assumed_host_memory() is None
    # Rollout on the H20s, training on the H100s: the trainer's part assumes nothing, the
    # rollout part's note is carried over; the reverse crossing says it once, from the trainer.
    assert said in crossing_resolved(crossing(mixed, h20, h100)).notes
    reverse = crossing_resolved(crossing(mixed, h100, h20)).notes
    assert [n for n in reverse if "h20-96gb record gives no" in n] == [
        n for n in h20.resolved.notes if n.startswith("host memory")
    ]
    result = recommend_json(write(tmp_path, data))
    assert [n for n in result["mixed"]["notes"] if "host memory" in n] == [said]
    # A part that states its nodes' host memory assumes nothing.
    data["cluster"]["parts"][0]["host_memory_gib_per_node"] = 1024
    given = resolve_mixed(parse_scenario(data), catalog())
    assert all(p.assumed_host_memory() is None for p in given.parts)


# The audit's s11 (/work/notes/audit4/sc): a 3B policy small enough for every mapped framework
# to claim the plans across parts.
SMALL_MIXED = {
    "cluster": {
        "parts": [
            {"name": "h100", "accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
            {"name": "a100", "accelerator": "a100-sxm-40gb", "nodes": 2, "gpus_per_node": 8},
        ],
        "link_gbps_between_parts": 200,
    },
    "models": {"policy": "qwen2.5-3b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 256, "samples_per_prompt": 8,
                 "prompt_tokens": 512, "response_tokens": 4096, "max_response_tokens": 16384,
                 "minibatches_per_step": 4, "max_staleness": 1},
}  # fmt: skip


def test_no_mapped_framework_launches_a_plan_across_parts(tmp_path: Path) -> None:
    """`export` refuses every mixed cluster (one accelerator a launch), so a plan across parts
    lists no framework with an export mapping in `launchable_by` (README: only where export
    writes the plan): each one whose claims allow it is under `launch_refused_by` with that
    reason. A plan on one part is judged as that part's export judges it."""
    mappings = load_catalog(record_roots(), ("mapping",)).of("mapping")
    mapped = {m.framework for m in mappings.values()}  # type: ignore[attr-defined]
    path = write(tmp_path, SMALL_MIXED)
    across = recommend_json(path, "--objective", "time")
    assert across["mixed"]["chosen"] == "rollout on a100, training on h100"
    for plan in across["plans"]:
        assert plan["parts"] == {"rollout": "a100", "train": "h100"}
        assert not mapped & set(plan["launchable_by"]), plan["launchable_by"]
        assert plan["launchable_by"]  # released frameworks without a mapping still run it
        refused = plan["launch_refused_by"]
        assert {"slime", "nemo-rl"} <= set(refused)
        for framework, why in refused.items():
            assert why == (
                f"{framework}'s export writes a cluster of one accelerator and refuses a mixed "
                "one (cluster.parts), and this plan needs two: rollout on part a100, training "
                "on part h100"
            )
    alone = recommend_json(path, "--objective", "cost")
    assert alone["mixed"]["chosen"] == "part h100"
    for plan in alone["plans"]:
        assert not any("cluster.parts" in why for why in plan["launch_refused_by"].values())
