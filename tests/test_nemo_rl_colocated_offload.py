"""NeMo-RL parks a colocated policy's state on the host around every refit whatever the
launch says (mapping colocated_phase_offload; grpo.py L2341-L2343 and L2415-L2417 at
7ea279abf): `estimate --framework nemo-rl` costs its colocated plans with phase offload, as
review costs its launches; a disaggregated plan and other frameworks are left as given."""

from __future__ import annotations

from typing import Any

import pytest
from rlmguide.cost.units import GIB

from rlmguide import api

# Qwen2.5-7B: 7,615,616,512 parameters
P = 7_615_616_512


def _scenario(placement: str) -> dict[str, Any]:
    pools = (
        {"rollout": {"gpus": 8, "tp": 1, "pp": 1, "ep": 1}}
        if placement == "colocated"
        else {"rollout": {"gpus": 4, "tp": 1, "pp": 1, "ep": 1}}
    )
    train_gpus = 8 if placement == "colocated" else 4
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
        "models": {"policy": "qwen2.5-7b", "reward": "verifier"},
        "workload": {
            "algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
            "prompt_tokens": 512, "response_tokens": 2048, "max_response_tokens": 4096,
            "minibatches_per_step": 1, "epochs": 1,
        },
        "plan": {
            "placement": placement, "execution": "sync", **pools,
            "train": {"gpus": train_gpus, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 3,
                      "recompute": "full"},
        },
    }  # fmt: skip


def _plan(placement: str, framework: str) -> dict[str, Any]:
    found = api.estimate(_scenario(placement), framework=framework)
    return found.model_dump(mode="json")["plans"][0]


def test_a_colocated_nemo_rl_plan_parks_the_trainer_during_the_rollout() -> None:
    # ZeRO-3 over 8 GPUs: (2 + 2 + 12) P / 8 = 2P of trainer state a GPU, beside which verl
    # keeps its reference's bf16 weights, 2P / 8, resident through the rollout. NeMo-RL parks
    # the state (phase offload) and runs the reference in the policy's parameters (its
    # reference_swap: the reference's and the policy's copies, 2 x 2P / 8, on the host), so a
    # node's host holds 8 x (2P + 2 x 2P / 8) = 20P = 152,312,330,240 bytes and the rollout
    # sees none of it.
    verl, nemo = _plan("colocated", "verl"), _plan("colocated", "nemo-rl")
    assert not verl["train"]["offload"]["phase"] and nemo["train"]["offload"]["phase"]
    resident = verl["memory_breakdown_gib"]["rollout"]["trainer_state"] * GIB
    assert resident == pytest.approx(2 * P + 2 * P / 8, rel=1e-12)
    assert nemo["memory_breakdown_gib"]["rollout"]["trainer_state"] == 0
    host = nemo["memory_breakdown_gib"]["host"]["offloaded_state_per_node"] * GIB
    assert host == pytest.approx(20 * P, rel=1e-12) == 152_312_330_240


def test_a_disaggregated_nemo_rl_plan_parks_nothing() -> None:
    assert not _plan("disaggregated", "nemo-rl")["train"]["offload"]["phase"]
