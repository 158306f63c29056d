"""The length prior (kb.schema.length_prior): a run that states only its response cap gets the
median share of the cap that published runs' means take. Its figures by hand, the records it
cites, how a workload takes it, the law that it never lowers memory below the cap's, and the
disclosure in recommend, estimate and review."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from hypothesis import given, settings
from pydantic import ValidationError
from rlmguide.cost import evaluate
from rlmguide.cost.batch import Batch, Needs
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Workload, length_prior
from test_cost_laws import scenarios

from rlmguide.cli import cli
from rlmguide.review import Hardware, review

SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
REVIEW_FIXTURES = Path(__file__).parent / "fixtures" / "review"
CATALOG = load_catalog(DEFAULT_ROOTS).records


def test_the_prior_by_hand() -> None:
    # The ten shares, sorted: 1000/16384, 2000/30720, 1960/9632, 1019/4096, 11000/30720,
    # 1080/3000, 701/1536, 5698/8192, 3203/4096, 3251/4096; the median is the mean of the
    # fifth and sixth: (0.358073 + 0.36) / 2.
    assert pytest.approx((11000 / 30720 + 1080 / 3000) / 2) == length_prior.MEAN_SHARE
    assert pytest.approx(0.359036, abs=1e-6) == length_prior.MEAN_SHARE
    # Quartiles at positions 2.25 and 6.75 of 0..9: 1960/9632 + (1019/4096 - 1960/9632) / 4 and
    # 701/1536 + 3/4 (5698/8192 - 701/1536).
    low, high = length_prior.MEAN_SHARE_QUARTILES
    assert low == pytest.approx(0.214811, abs=1e-6)
    assert high == pytest.approx(0.635763, abs=1e-6)
    # 0.359036 x 8,192 = 2,941.3; x 28,672 = 10,294.3; never below one token.
    assert length_prior.prior_mean_tokens(8192) == 2941
    assert length_prior.prior_mean_tokens(28672) == 10294
    assert length_prior.prior_mean_tokens(1) == 1


def test_every_measurement_cites_a_source_and_sits_below_its_cap() -> None:
    for m in length_prior.MEASUREMENTS:
        assert m.source in CATALOG["source"], m.source
        assert 0 < m.mean_tokens < m.cap_tokens, m.workload
    # one reading per workload
    assert len({m.workload for m in length_prior.MEASUREMENTS}) == len(length_prior.MEASUREMENTS)


def _workload(**fields: object) -> Workload:
    base: dict[str, object] = {"prompts_per_step": 64, "prompt_tokens": 512}
    base.update(fields)
    return Workload.model_validate(base)


def test_a_workload_with_only_its_cap_takes_the_prior() -> None:
    prior = _workload(max_response_tokens=8192)
    assert (prior.response_tokens, prior.response_tokens_from) == (2941, "prior")
    stated = _workload(response_tokens=3000, max_response_tokens=8192)
    assert (stated.response_tokens, stated.response_tokens_from) == (3000, "stated")
    # the normalised scenario round-trips as it was filled
    assert Workload.model_validate(prior.model_dump()) == prior
    with pytest.raises(ValidationError, match="response_tokens"):
        _workload()


def test_the_batch_sizes_memory_at_the_cap_only_under_the_prior() -> None:
    prior = Batch.of(_workload(max_response_tokens=8192), Needs())
    assert prior.sized_at_cap
    assert prior.sequence_tokens == 512 + 2941
    assert prior.for_memory().sequence_tokens == 512 + 8192
    stated = Batch.of(_workload(response_tokens=2941, max_response_tokens=8192), Needs())
    assert not stated.sized_at_cap
    assert stated.for_memory() is stated
    assert stated.sequence_tokens == 512 + 2941


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios())
def test_the_prior_never_lowers_memory_below_the_caps(scenario: tuple) -> None:  # type: ignore[type-arg]
    """Against the same run recorded with its mean at the cap, the prior never lowers the
    training memory, never makes a plan fit that did not, and never lengthens the step."""
    accelerator, arch, wl, needs, plans = scenario
    cap = wl.max_response_tokens
    at_cap = wl.model_copy(update={"response_tokens": cap})
    prior = Workload.model_validate(
        wl.model_dump(exclude={"response_tokens", "response_tokens_from"})
    )
    assert prior.response_tokens_from == "prior"
    hi = evaluate(accelerator, arch, at_cap, plans, needs=needs)
    lo = evaluate(accelerator, arch, prior, plans, needs=needs)
    slack = 1 + 1e-9
    assert np.all(lo.memory_train_gib * slack >= hi.memory_train_gib)
    assert np.all(lo.feasible == hi.feasible)
    assert np.all(lo.step_seconds <= hi.step_seconds * slack)


def _without_mean(tmp_path: Path) -> Path:
    data = yaml.safe_load(SMALL.read_text())
    del data["workload"]["response_tokens"]
    path = tmp_path / "cap-only.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_recommend_and_estimate_disclose_the_prior(tmp_path: Path) -> None:
    path = str(_without_mean(tmp_path))
    text = " ".join(_invoke("recommend", path, "--top", "1").split())
    assert "workload.response_tokens is not given" in text
    assert "0.36 of the 8,192-token cap" in text
    found = json.loads(_invoke("recommend", path, "--top", "1", "--format", "json"))
    assert found["scenario"]["workload"]["response_tokens_from"] == "prior"
    assert found["scenario"]["workload"]["response_tokens"] == 2941
    prior = found["length_prior"]
    assert prior["share"] == pytest.approx(0.359, abs=1e-3)
    assert len(prior["measurements"]) == len(length_prior.MEASUREMENTS)
    assert any("response_tokens is not given" in n for n in found["resolution_notes"])
    plan = found["plans"][0]
    fixed = [
        f"plan.placement={plan['placement']}",
        f"plan.execution={plan['execution']}",
        *(f"plan.rollout.{k}={plan['rollout'][k]}" for k in ("gpus", "tp", "pp")),
        *(f"plan.train.{k}={plan['train'][k]}" for k in ("gpus", "tp", "pp", "cp", "zero")),
        f"plan.train.recompute={plan['train']['recompute']}",
    ]
    sets = [arg for f in fixed for arg in ("--set", f)]
    estimated = json.loads(_invoke("estimate", path, *sets, "--format", "json"))
    assert estimated["length_prior"]["response_tokens"] == 2941
    # a stated mean says nothing of the prior
    stated = json.loads(_invoke("recommend", str(SMALL), "--top", "1", "--format", "json"))
    assert "length_prior" not in stated
    assert stated["scenario"]["workload"]["response_tokens_from"] == "stated"


def test_deployments_without_a_published_mean_take_the_prior() -> None:
    deployments = CATALOG["deployment"]
    prior = [d for d in deployments.values() if d.scenario.workload.response_tokens_from == "prior"]
    assert len(prior) == 49
    fully_async = deployments["verl-qwen2.5-math-7b-dapo-fully-async-32xh20"].scenario.workload
    assert (fully_async.response_tokens, fully_async.max_response_tokens) == (10294, 28672)
    for d in prior:
        assert any("length prior" in line for line in d.defaults), d.id


def test_review_of_a_launch_with_only_its_cap_takes_the_prior() -> None:
    """NeMo-RL's long Llama recipe bounds the sequence only: the response cap is the bound
    less the assumed prompt, and the mean is the prior's share of it, cited."""
    name = "nemo-rl-5fb5889/examples/configs/recipes/llm/"
    name += "grpo-llama3.1-8b-instruct-4n8g-fsdp2tp1-long.v3.yaml"
    got = review(REVIEW_FIXTURES / name, hardware=Hardware("h100-sxm-80gb"))
    workload = got["scenario"]["workload"]
    assert workload["response_tokens_from"] == "prior"
    assert workload["response_tokens"] == length_prior.prior_mean_tokens(
        workload["max_response_tokens"]
    )
    (mean,) = [a for a in got["assumed"] if a["field"] == "workload.response_tokens"]
    assert mean["value"] == workload["response_tokens"]
    assert set(mean["source"]) == {m.source for m in length_prior.MEASUREMENTS}
    assert "workload.response_tokens" in got["rests_on_assumptions"]
