"""A reasoning budget (workload.reasoning_budget; s1's budget forcing, arXiv 2501.19393; the
survey's §7 "reasoning budget as a first-class scheduling variable") cuts every response at the
budget: the lengths it leaves by hand, their effect on the step, the input it refuses, the facts
the rules read and the law that a smaller budget never costs more."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from rlmguide.cost import CostTable, Needs, evaluate
from rlmguide.cost.batch import Batch, response_lengths
from rlmguide.cost.lengths import budgeted, length_grid
from rlmguide.cost.run import mean_length
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Workload
from rlmguide.kb.schema.length_prior import prior_mean_tokens
from rlmguide.rules.facts import scenario_facts
from rlmguide.rules.scenario import InputError, parse_scenario, read_scenario, resolve
from test_cost_laws import scenarios
from test_cost_specs import H100, QWEN25_7B, one_plan

from rlmguide.cli import cli

SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
CATALOG = load_catalog(DEFAULT_ROOTS).records


def _workload(**fields: object) -> Workload:
    base: dict[str, object] = dict(
        prompts_per_step=64, samples_per_prompt=8, prompt_tokens=512, response_tokens=2000,
        max_response_tokens=4000,
    )  # fmt: skip
    base.update(fields)
    return Workload.model_validate(base)


def test_cut_lengths_by_hand() -> None:
    # Mean 2,000 of at most 4,000: a = 2000 / (4000 - 2000) = 1, so S(t) = 1 - t/4000. Cut at
    # 2,000: the mean is the integral of S over [0, 2000] = 2000 - 4000/2 x (1/2)^2 = 1,500.
    assert budgeted(2000, 4000, 2000) == pytest.approx((1500.0, 2000.0), rel=1e-12)
    # Mean 4,096 of 16,384: a = 1/3; cut at 8,192: 8192 - 12288 x (1/2)^(4/3) = 3,315.5.
    mean, longest = budgeted(4096, 16384, 8192)
    assert longest == 8192.0
    assert mean == pytest.approx(8192 - 12288 * 0.5 ** (4 / 3), rel=1e-12)
    assert round(mean) == 3316  # the figure the README quotes
    # The same integral as the rollout's grid sums it over the decode steps up to the cap.
    assert mean == pytest.approx(length_grid(4096, 16384, 8192, 64).tokens_per_sequence)
    # Every response as long as the mean (no maximum given): all of them end at the budget.
    assert budgeted(3000, 3000, 1000) == (1000.0, 1000.0)
    # A budget at or above the longest, or none, cuts nothing.
    assert budgeted(2000, 4000, 4000) == (2000.0, 4000.0)
    assert budgeted(2000, 4000, None) == (2000.0, 4000.0)


def test_the_batch_generates_and_trains_the_cut_lengths() -> None:
    batch = Batch.of(_workload(reasoning_budget=2000), Needs())
    assert (batch.response_tokens, batch.longest_response) == pytest.approx((1500.0, 2000.0))
    # 64 prompts x 8 responses of 512 + 1,500 tokens trained, 2,000 + 512 the longest sequence.
    assert batch.trained_tokens == pytest.approx(64 * 8 * (512 + 1500))
    assert batch.longest_sequence_tokens == pytest.approx(2512)
    assert response_lengths(_workload(reasoning_budget=2000)) == pytest.approx((1500.0, 2000.0))


def test_a_budget_costs_as_the_lengths_it_leaves() -> None:
    """Cut at 2,000, the step costs as a workload that states the cut lengths itself (mean
    1,500, longest 2,000); a budget at the longest costs as no budget."""
    plans = one_plan()

    def cost(workload: Workload) -> tuple[float, float, float]:
        c = evaluate(H100, QWEN25_7B, workload, plans, needs=Needs())
        return (
            float(c.step_seconds[0]),
            float(c.memory_rollout_gib[0]),
            float(c.memory_train_gib[0]),
        )

    cut = cost(_workload(reasoning_budget=2000))
    assert cut == cost(_workload(response_tokens=1500, max_response_tokens=2000))
    assert cost(_workload(reasoning_budget=4000)) == cost(_workload())
    assert cut[0] < cost(_workload())[0]


def test_an_agentic_budget_cuts_each_turn() -> None:
    agent = {"turns": 3, "observation_tokens": 100}
    whole = Batch.of(_workload(agent=agent), Needs())
    cut = Batch.of(_workload(agent=agent, reasoning_budget=2000), Needs())
    # Three turns of 1,500 instead of 2,000 with two observations of 100 between them.
    assert whole.response_tokens - cut.response_tokens == pytest.approx(3 * 500)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"reasoning_budget": 0}, "greater than 0"),
        ({"reasoning_budget": 4001}, "reasoning_budget (4001) is above the longest response"),
        (
            {"reasoning_budget": 2001, "max_response_tokens": None},
            "(response_tokens, 2000): it would cut nothing",
        ),
    ],
)
def test_impossible_budgets_are_refused(fields: dict[str, object], expected: str) -> None:
    with pytest.raises(ValidationError, match="reasoning_budget") as error:
        _workload(**fields)
    assert expected in str(error.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", "workload.reasoning_budget: Input should be greater than 0"),
        ("8193", "reasoning_budget (8193) is above the longest response (max_response_tokens"),
        ("5000000", "reasoning_budget (5000000) is above the longest response"),
    ],
)
def test_cli_refuses_an_impossible_budget_in_one_line(value: str, expected: str) -> None:
    result = CliRunner().invoke(
        cli, ["estimate", str(SMALL), "--set", f"workload.reasoning_budget={value}"]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.output


def test_an_offline_method_refuses_a_budget() -> None:
    data = read_scenario(REPO / "examples" / "dpo-qwen2.5-7b-8xh100.yaml").model_dump(
        exclude_unset=True
    )
    data["workload"]["reasoning_budget"] = 64
    with pytest.raises(InputError, match=r"workload\.reasoning_budget: .* is offline"):
        resolve(parse_scenario(data), CATALOG)


def test_rules_read_the_cut_lengths() -> None:
    """The long-tail facts are the lengths generated: a mean of 2,048 and at most 8,192 is a
    tail of 4; cut at 4,096, the longest is the budget and the mean falls."""
    scenario = read_scenario(SMALL)
    whole = scenario_facts(resolve(scenario, CATALOG))
    assert whole["workload.max_response_tokens"] == 8192
    assert whole["workload.tail_ratio"] == pytest.approx(4.0)
    assert whole["workload.reasoning_budget"] == 0
    cut_scenario = scenario.model_copy(
        update={"workload": scenario.workload.model_copy(update={"reasoning_budget": 4096})}
    )
    cut = scenario_facts(resolve(cut_scenario, CATALOG))
    # a = 2048 / (8192 - 2048) = 1/3: mean 4096 - 6144 x (1/2)^(4/3) = 1,657.6.
    mean = 4096 - 6144 * 0.5 ** (4 / 3)
    assert cut["workload.max_response_tokens"] == 4096
    assert cut["workload.response_tokens"] == round(mean) == 1658
    assert cut["workload.tail_ratio"] == pytest.approx(4096 / mean)
    assert cut["workload.reasoning_budget"] == 4096


def test_a_token_budgeted_run_counts_the_cut_mean() -> None:
    # No growth: one length, the cut mean. Growth 2 from 2,000 capped at 4,000: Simpson's
    # points 2,000, 3,000 and 4,000 (weights 1, 4, 1 over 6), each cut at 2,000.
    assert mean_length(2000, 1.0, 4000, 2000) == pytest.approx(1500.0)
    points = [budgeted(m, 4000, 2000)[0] for m in (2000, 3000, 4000)]
    # At 3,000 of 4,000, a = 3: 2000 - 1000 x (1/2)^4 = 1,937.5; at 4,000 every one is cut.
    assert points == pytest.approx([1500.0, 1937.5, 2000.0])
    expected = (points[0] + 4 * points[1] + points[2]) / 6
    assert mean_length(2000, 2.0, 4000, 2000) == pytest.approx(expected)
    assert mean_length(2000, 2.0, 4000) == pytest.approx((2000 + 4 * 3000 + 4000) / 6)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scenarios(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_a_smaller_budget_never_costs_more(scenario: tuple, x: float, y: float) -> None:  # type: ignore[type-arg]
    """Of two budgets, the smaller never lengthens the step, never raises the training memory,
    never makes a plan that fits stop fitting, and trains no more tokens. An engine whose KV
    cache is full holds whole sequences: shorter ones pack it tighter, so its memory may rise,
    by less than one sequence's KV cache."""
    accelerator, arch, wl, needs, plans = scenario
    longest = wl.max_response_tokens
    small, large = sorted(max(1, round(f * longest)) for f in (x, y))

    def cost(budget: int) -> tuple[CostTable, float]:
        workload = wl.model_copy(update={"reasoning_budget": budget})
        c = evaluate(accelerator, arch, workload, plans, needs=needs)
        return c, Batch.of(workload, needs).trained_tokens

    (lo, lo_tokens), (hi, hi_tokens) = cost(small), cost(large)
    slack = 1 + 1e-9
    # A pipelined plan's default micro-batch is its longest sequence (what its launch packs),
    # which a smaller budget shortens: fewer sequences a micro-batch, so its step may lengthen
    # (held, the law holds for it too: the next test).
    flat = plans.train_pp <= 1
    assert np.all((lo.step_seconds <= hi.step_seconds * slack) | ~flat)
    assert np.all(lo.memory_train_gib <= hi.memory_train_gib * slack)
    assert np.all(lo.feasible | ~hi.feasible)
    one_sequence = arch.kv_bytes_per_token * (wl.prompt_tokens + large) / 2**30
    assert np.all(lo.memory_rollout_gib <= hi.memory_rollout_gib * slack + one_sequence)
    assert lo_tokens <= hi_tokens * slack


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scenarios(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_a_smaller_budget_never_lengthens_a_step_whose_micro_batch_is_held(
    scenario: tuple,  # type: ignore[type-arg]
    x: float,
    y: float,
) -> None:
    """The law above for every plan, pipelined ones included, once the training micro-batch
    is held: a pipelined plan packed to the larger budget's longest sequence (its default
    there) and given the same budget under the smaller one never runs a longer step."""
    accelerator, arch, wl, needs, plans = scenario
    longest = wl.max_response_tokens
    small, large = sorted(max(1, round(f * longest)) for f in (x, y))
    held = Batch.of(wl.model_copy(update={"reasoning_budget": large}), needs)
    micro = np.where(plans.train_pp > 1, round(held.longest_sequence_tokens), 0)
    plans = dataclasses.replace(plans, train_micro_tokens=micro.astype(np.int64))

    def step(budget: int) -> np.ndarray:
        workload = wl.model_copy(update={"reasoning_budget": budget})
        return evaluate(accelerator, arch, workload, plans, needs=needs).step_seconds

    assert np.all(step(small) <= step(large) * (1 + 1e-9))


def test_the_context_holds_what_the_budget_leaves() -> None:
    """Qwen2.5-7B reads 131,072 tokens: responses of up to 200,000 cut at 8,000 fit; cut at
    150,000 they do not, and the error names the budget."""
    scenario = read_scenario(SMALL)

    def with_lengths(**fields: object) -> object:
        workload = scenario.workload.model_copy(update=fields)
        return resolve(scenario.model_copy(update={"workload": workload}), CATALOG)

    with pytest.raises(InputError, match=r"^workload\.max_response_tokens: longest prompt \(512\)"):
        with_lengths(max_response_tokens=200_000)
    assert with_lengths(max_response_tokens=200_000, reasoning_budget=8_000)
    named = (
        r"^workload\.reasoning_budget: longest prompt \(512\) \+ reasoning budget = 150512 tokens"
    )
    with pytest.raises(InputError, match=named):
        with_lengths(max_response_tokens=200_000, reasoning_budget=150_000)


def _budgeted_launch(tmp_path: Path, framework: str, budget: int = 4096) -> tuple[Path, float]:
    """The small example with a reasoning budget, exported: the file and its predicted step."""
    scenario = tmp_path / "budget.yaml"
    scenario.write_text(SMALL.read_text() + f"  reasoning_budget: {budget}\n")
    runner = CliRunner()
    args = ["export", str(scenario), "--framework", framework]
    out = runner.invoke(cli, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    exported = json.loads(out.output)
    launch = tmp_path / ("run.yaml" if exported["syntax"] == "yaml" else "run.sh")
    text = runner.invoke(cli, args)
    launch.write_text(text.output)
    return launch, exported["plan"]["step_seconds"]


def _review(launch: Path) -> dict:
    args = ["review", str(launch), "--accelerator", "h100-sxm-80gb", "--format", "json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("framework", ["verl", "roll"])
def test_review_reads_the_budget_an_export_wrote(tmp_path: Path, framework: str) -> None:
    # Before: the launch read as responses of 4,096 tokens on average and at most, no budget,
    # and costed at nearly twice the step the export predicted (182 s against 96 s for verl).
    launch, predicted = _budgeted_launch(tmp_path, framework)
    reviewed = _review(launch)
    workload = reviewed["scenario"]["workload"]
    assert workload["reasoning_budget"] == 4096
    assert workload["max_response_tokens"] == 8192
    assert workload["response_tokens"] == 2048
    assert reviewed["estimate"]["step_seconds"] == pytest.approx(predicted, rel=1e-6)
    said = {a["field"]: a["why"] for a in reviewed["assumed"]}
    assert "is a reasoning budget" in said["workload.reasoning_budget"]
    assert "workload.response_tokens" not in said


def test_a_cap_edited_after_export_sets_the_header_aside(tmp_path: Path) -> None:
    launch, _ = _budgeted_launch(tmp_path, "verl")
    launch.write_text(
        launch.read_text().replace("data.max_response_length=4096", "data.max_response_length=2048")
    )
    reviewed = _review(launch)
    workload = reviewed["scenario"]["workload"]
    assert workload.get("reasoning_budget") is None
    # the cap alone is stated: the mean is the published runs' share of it (the length prior)
    assert workload["max_response_tokens"] == 2048
    assert workload["response_tokens"] == prior_mean_tokens(2048)
    said = {a["field"]: a["why"] for a in reviewed["assumed"]}
    assert (
        "does not fit the launch's response cap (2048): set aside"
        in (said["workload.reasoning_budget"])
    )


def test_a_budget_round_trips_through_a_real_process(tmp_path: Path) -> None:
    launch, predicted = _budgeted_launch(tmp_path, "openrlhf")
    done = run_cli("review", str(launch), "--accelerator", "h100-sxm-80gb", "--format", "json")
    assert done.returncode == 0, done.stderr
    reviewed = json.loads(done.stdout)
    workload = reviewed["scenario"]["workload"]
    assert (workload["reasoning_budget"], workload["max_response_tokens"]) == (4096, 8192)
    assert reviewed["estimate"]["step_seconds"] == pytest.approx(predicted, rel=1e-6)


@pytest.mark.parametrize(
    "line",
    [
        "workload.reasoning_budget=4096 workload.response_tokens=2048",  # a field missing
        "workload.reasoning_budget=4096 workload.response_tokens=9999999999 "
        "workload.max_response_tokens=8192",  # past a token count
        "workload.reasoning_budget=4096 workload.response_tokens=9000 "
        "workload.max_response_tokens=8192",  # a mean above the longest
    ],
)
def test_a_hostile_header_line_is_never_taken(tmp_path: Path, line: str) -> None:
    launch, _ = _budgeted_launch(tmp_path, "verl")
    text = launch.read_text()
    head, _, rest = text.partition("# Reasoning budget (rlmguide review reads this line): ")
    launch.write_text(head + "# Reasoning budget (rlmguide review reads this line): " + line
                      + "\n" + rest.partition("\n")[2])  # fmt: skip
    workload = _review(launch)["scenario"]["workload"]
    assert workload.get("reasoning_budget") is None
    assert workload["max_response_tokens"] == 4096
    assert workload["response_tokens"] == prior_mean_tokens(4096)
