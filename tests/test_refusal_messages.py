"""Refusals name the check that binds (audit6 #9, audit7 #6)."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from rlmguide.cli import cli

# verl Megatron's rv/r1 of audit6: TP 2 with EP 8 and ETP 2 on 8 GPUs
EXPERTS = {
    "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
    "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo",
        "prompts_per_step": 64,
        "samples_per_prompt": 8,
        "prompt_tokens": 512,
        "response_tokens": 2048,
        "max_response_tokens": 4096,
    },
    "plan": {"placement": "colocated", "train": {"tp": 2, "etp": 2, "ep": 8}},
}


def test_fixed_expert_degrees_no_pool_hosts_name_megatrons_check(tmp_path: Path) -> None:
    # Before: "no candidate plan fits the fixed plan fields of the scenario".
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(EXPERTS))
    done = CliRunner().invoke(cli, ["recommend", str(scenario)])
    said = " ".join(done.output.split())
    assert done.exit_code != 0 and "Traceback" not in said
    assert "plan.train.etp=2 x plan.train.ep=8: 16 expert ranks" in said  # 2 x 8 x pp 1
    assert "do not divide the train GPUs of any placement this cluster allows (8)" in said
    assert "parallel_state.py L792-L795" in said


def test_an_unset_etp_is_searched_so_the_same_degrees_fit(tmp_path: Path) -> None:
    # etp 1 gives 8 expert ranks, which 8 GPUs host: the check must not refuse it
    plan = {"placement": "colocated", "train": {"tp": 2, "ep": 8}}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({**EXPERTS, "plan": plan}))
    done = CliRunner().invoke(cli, ["recommend", str(scenario), "--format", "json"])
    assert done.exit_code == 0, done.output
