"""`estimate --framework`: a fixed plan costed as one framework runs it, the way `recommend
--framework` costs the plans it ranks (rules.recommend.recommender_for's `costed_as`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from rlmguide import api
from rlmguide.cli import cli

SLIME_MOE = "slime-qwen3-30b-a3b-grpo-8xh100"
"""Megatron TP 4, EP 8, ETP 1 on 8 H100s, CPU Adam: slime's mapping keeps fp32 gradient
buffers (Megatron's accumulate-allreduce-grads-in-fp32 under bf16)."""


def _training(found: api.Estimate) -> dict[str, float]:
    return found.model_dump(mode="json")["plans"][0]["memory_breakdown_gib"]["training"]


@pytest.fixture(scope="module")
def neutral() -> api.Estimate:
    return api.estimate(api.Scenario.from_deployment(SLIME_MOE))


@pytest.fixture(scope="module")
def as_slime() -> api.Estimate:
    return api.estimate(api.Scenario.from_deployment(SLIME_MOE), framework="slime")


def test_gradient_buffers_follow_the_framework(neutral: api.Estimate, as_slime: api.Estimate):
    # Qwen3-30B-A3B: 1.5e9 dense parameters over TP 4 and 29e9 expert ones over EP 8 leave
    # about 4.0e9 on a GPU, 7.47 GiB of bf16 weights: 7.47 GiB of bf16 gradients as written,
    # 14.9 GiB of fp32 ones as slime's Megatron keeps them.
    plain, slime = _training(neutral), _training(as_slime)
    assert plain["weights"] == pytest.approx(7.47, abs=0.01)
    assert plain["gradients"] == pytest.approx(plain["weights"])
    assert slime["weights"] == pytest.approx(plain["weights"])
    assert slime["gradients"] == pytest.approx(2 * plain["weights"])
    assert neutral.costed_as is None
    assert as_slime.costed_as == "slime"


def test_a_framework_without_fp32_buffers_leaves_them_bf16(neutral: api.Estimate):
    # OpenRLHF trains with DeepSpeed: its mapping sets no fp32 gradient buffers.
    found = api.estimate(api.Scenario.from_deployment(SLIME_MOE), framework="openrlhf")
    assert _training(found)["gradients"] == pytest.approx(_training(neutral)["gradients"])


def test_cli_reports_what_it_costed_as():
    runner = CliRunner()
    done = runner.invoke(
        cli, ["estimate", "--deployment", SLIME_MOE, "--framework", "slime", "--format", "json"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["costed_as"] == "slime"
    table = runner.invoke(cli, ["estimate", "--deployment", SLIME_MOE, "--framework", "slime"])
    assert table.exit_code == 0, table.output
    assert "costed as" in table.output and "slime runs it" in table.output


def test_unknown_framework_is_one_line_with_suggestions():
    done = subprocess.run(
        [sys.executable, "-m", "rlmguide", "estimate", "--deployment", SLIME_MOE,
         "--framework", "slim"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "--framework: unknown framework 'slim'" in done.stderr
    assert "slime" in done.stderr


def test_tensor_parallelism_without_a_sequence_split_keeps_every_token_on_a_rank(
    neutral: api.Estimate,
):
    # OpenRLHF's --ds.tensor_parallel_size is DeepSpeed AutoTP, which has no sequence
    # parallelism (its mapping's sequence_parallel false): the plan's TP 4 ranks each hold the
    # whole micro-batch's norms and residuals, as the same plan costed with the split off.
    scenario = api.Scenario.from_deployment(SLIME_MOE)
    as_openrlhf = _training(api.estimate(scenario, framework="openrlhf"))
    unsplit = _training(api.estimate(scenario.updated({"plan.train.sequence_parallel": False})))
    assert as_openrlhf["activations"] == pytest.approx(unsplit["activations"])
    assert as_openrlhf["activations"] > _training(neutral)["activations"]


ROLL_ASYNC = {
    # audit6 a10: ROLL's own export of this scenario, given back to estimate as a fixed plan
    "cluster": {"accelerator": "a100-sxm-80gb", "nodes": 2, "gpus_per_node": 8},
    "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo",
        "prompts_per_step": 64,
        "samples_per_prompt": 8,
        "prompt_tokens": 1024,
        "response_tokens": 4000,
        "max_response_tokens": 8192,
        "minibatches_per_step": 2,
        "max_staleness": 1,
    },
    "plan": {
        "execution": "async",
        "placement": "disaggregated",
        "rollout": {"gpus": 8, "tp": 2, "pp": 1, "ep": 1},
        "train": {"gpus": 8, "tp": 8, "pp": 1, "cp": 1, "ep": 8, "etp": 1, "zero": 1,
                  "recompute": "none"},
    },
}  # fmt: skip


@pytest.mark.parametrize("offload", [None, {"frozen": False}])
def test_a_framework_that_parks_the_reference_itself_is_costed_with_it_parked(offload) -> None:
    # ROLL offloads the reference after every call in code (base_worker.py L130-L142 at
    # 8eb27cc2; its mapping's implied offload_frozen), whatever offload the plan fixes: the
    # 7.1 GiB bf16 copy of the policy's 7.1 GiB a GPU (TP 8 x EP 8) leaves the training GPUs.
    train = {**ROLL_ASYNC["plan"]["train"], "offload": offload}
    scenario = {**ROLL_ASYNC, "plan": {**ROLL_ASYNC["plan"], "train": train}}
    (neutral,) = api.estimate(scenario).model_dump(mode="json")["plans"]
    (roll,) = api.estimate(scenario, framework="roll").model_dump(mode="json")["plans"]
    plain, parked = (p["memory_breakdown_gib"]["training"] for p in (neutral, roll))
    assert plain["frozen_models"] == pytest.approx(plain["weights"])
    assert plain["weights"] == pytest.approx(7.11, abs=0.01)
    assert parked["frozen_models"] == 0.0
    assert roll["train"]["offload"]["frozen"] is True
    # with the copy on the GPUs the plan ROLL's export wrote overflowed them by 3.0 GiB
    assert roll["feasible"]


def _nemo_dtensor(minibatches: int) -> dict:
    # 36 prompts x 8 samples = 288 responses a step on 3 nodes; train DP 24 (TP 1, DTensor's
    # ZeRO-3), trainer state parked while the colocated engine generates, as NeMo-RL always does
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 3, "gpus_per_node": 8},
        "models": {"policy": "qwen3-8b", "reward": "verifier"},
        "workload": {"algorithm": "grpo", "prompts_per_step": 36, "samples_per_prompt": 8,
                     "prompt_tokens": 1024, "response_tokens": 3000, "max_response_tokens": 8192,
                     "minibatches_per_step": minibatches},
        "plan": {"placement": "colocated", "execution": "sync",
                 "rollout": {"gpus": 24, "tp": 2, "pp": 1, "ep": 1},
                 "train": {"gpus": 24, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 3,
                           "recompute": "full", "offload": {"phase": True}}},
    }  # fmt: skip


def test_a_plan_the_framework_refuses_is_costed_and_says_so() -> None:
    # NeMo-RL splits a step into global batches that divide over DP (batched_data_dict.py
    # L536-L543 at 7ea279ab): 288 / 4 = 72 = 3 x 24 runs (the boundary); 288 / 8 = 36 is no
    # multiple of 24. Megatron takes ZeRO-1 at most, so DTensor is the pair left either way.
    ok = api.estimate(_nemo_dtensor(4), framework="nemo-rl").plans[0]
    assert "nemo-rl" in ok.launchable_by and "nemo-rl" not in ok.launch_refused_by
    refused = api.estimate(_nemo_dtensor(8), framework="nemo-rl").plans[0]
    assert refused.feasible and "nemo-rl" not in refused.launchable_by
    why = refused.launch_refused_by["nemo-rl"]
    dtensor = why[why.index("on pytorch-fsdp") :]
    assert dtensor.endswith(": nemo-rl-train-batch-divides-over-dp")
    assert "nemo-rl-megatron-zero-at-most-1" in why
    # without --framework nothing is costed as NeMo-RL, and nothing is said for it
    assert "nemo-rl" not in api.estimate(_nemo_dtensor(8)).plans[0].launch_refused_by


def _offload_notes(found: api.Estimate) -> list[str]:
    notes = found.model_dump(mode="json")["notes"]
    return [n for n in notes if n.startswith("plan.train.offload is not given")]


def test_an_estimate_that_leaves_offload_out_names_the_parked_plan_the_planner_costs() -> None:
    # Without --framework an unset offload is none: the reference's 7.1 GiB a GPU (the
    # policy's TP 8 x EP 8 shard, above) stays on the training GPUs. The planner also costs
    # the plan with it parked (its parked twin; NeMo-RL, ROLL, SkyRL and slime run no other),
    # and the note gives that plan's figures, those of an estimate that fixes frozen: true.
    (note,) = _offload_notes(api.estimate(ROLL_ASYNC))
    train = {**ROLL_ASYNC["plan"]["train"], "offload": {"frozen": True}}
    fixed = {**ROLL_ASYNC, "plan": {**ROLL_ASYNC["plan"], "train": train}}
    (parked,) = api.estimate(fixed).model_dump(mode="json")["plans"]
    assert "frozen models kept on the training GPUs (7.1 GiB a GPU at the peak" in note
    memory, step = parked["memory_gib_per_gpu"]["train"], parked["step_seconds"]
    assert f"{memory:.1f} GiB a training GPU, {step:.1f} s a step" in note
    assert "the only way nemo-rl, roll, skyrl, slime run it" in note
    # nothing to say where the scenario fixes the offload or a framework costs the plan
    assert _offload_notes(api.estimate(fixed)) == []
    assert _offload_notes(api.estimate(ROLL_ASYNC, framework="roll")) == []
