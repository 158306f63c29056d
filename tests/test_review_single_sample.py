"""A grouped estimator on one sample per prompt is read as the framework runs it.

verl asserts nothing about rollout.n for RLOO: its estimator gives a group of one a zero
baseline and leaves the score unscaled (verl/trainer/ppo/core_algos.py L622-L623, L630-L633 at
7aed6b23), so each response's advantage is its own score, REINFORCE without a baseline; its
GRPO estimator does the same with a zero mean and a unit deviation (L315-L317, L326). Review
refused such a launch ("RLOO compares a group of responses per prompt, so it needs at least
2"); it now reads it as reinforce (Mapping.single_sample), and where a KL switch stays on, verl
still loads the reference (verl/trainer/ppo/utils.py L75-L79), so the reference is costed
(workload.reference_kl).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from launch_support import catalogs
from rlmguide.rules.scenario import InputError, parse_scenario, resolve

from rlmguide.review import Hardware, review

LAUNCH = REPO / "tests" / "fixtures" / "review" / "verl-rloo-one-sample.sh"


def _reviewed(tmp_path: Path, *edits: tuple[str, str]) -> dict:
    text = LAUNCH.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "run.sh"
    path.write_text(text)
    return review(path, hardware=Hardware("h100-sxm-80gb"))


def test_rloo_on_one_sample_is_reviewed_as_verl_runs_it() -> None:
    got = review(LAUNCH, hardware=Hardware("h100-sxm-80gb"))
    workload = got["scenario"]["workload"]
    assert (workload["algorithm"], workload["samples_per_prompt"]) == ("reinforce", 1)
    (why,) = [a["why"] for a in got["assumed"] if a["field"] == "workload.algorithm"]
    assert "core_algos.py L622-L623, L630-L633 at 7aed6b23" in why
    # use_kl_in_reward keeps the reference: its pass is costed beside the actor's
    assert workload["reference_kl"] == "reward"
    assert got["estimate"]["assessment_seconds_by_model"]["reference"] > 0
    assert got["startup"] == []


def test_with_every_kl_switch_off_no_reference_is_costed(tmp_path: Path) -> None:
    got = _reviewed(tmp_path, ("use_kl_in_reward=True", "use_kl_in_reward=False"))
    workload = got["scenario"]["workload"]
    assert workload["algorithm"] == "reinforce" and "reference_kl" not in workload
    assert "reference" not in got["estimate"]["assessment_seconds_by_model"]


@pytest.mark.parametrize(("estimator", "samples"), [("rloo", 2), ("grpo", 1)])
def test_groups_stay_grouped_and_grpo_on_one_sample_is_reinforce(
    tmp_path: Path, estimator: str, samples: int
) -> None:
    got = _reviewed(
        tmp_path,
        ("adv_estimator=rloo", f"adv_estimator={estimator}"),
        ("rollout.n=1", f"rollout.n={samples}"),
    )
    wanted = "rloo" if samples > 1 else "reinforce"
    assert got["scenario"]["workload"]["algorithm"] == wanted


def _scenario(**workload: object) -> dict:
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
        "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
        "workload": {
            "algorithm": "reinforce",
            "prompts_per_step": 256,
            "samples_per_prompt": 1,
            "prompt_tokens": 512,
            "response_tokens": 1024,
            **workload,
        },
    }


def test_a_reference_kl_gives_reinforce_its_reference() -> None:
    catalog = catalogs()[0].records
    plain = resolve(parse_scenario(_scenario()), catalog)
    kept = resolve(parse_scenario(_scenario(reference_kl="reward")), catalog)
    assert not plain.algorithm.needs_reference
    assert kept.algorithm.needs_reference and kept.algorithm.kl_placement == "reward"
    with pytest.raises(InputError, match="contradict"):
        resolve(parse_scenario(_scenario(reference_kl="loss", no_reference=True)), catalog)
