"""Refusals name the check that binds (audit6 #9, audit7 #6)."""

from __future__ import annotations

import re
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


# audit6's a04: gpt-oss-120b async GRPO on 64 H200, exported to ROLL
GPT_OSS = {
    "cluster": {"accelerator": "h200-sxm-141gb", "nodes": 8, "gpus_per_node": 8},
    "models": {"policy": "gpt-oss-120b", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo",
        "prompts_per_step": 256,
        "samples_per_prompt": 8,
        "prompt_tokens": 512,
        "response_tokens": 4000,
        "max_response_tokens": 16384,
        "minibatches_per_step": 4,
        "max_staleness": 2,
    },
    "plan": {"execution": "async"},
}


def test_a_refusal_names_each_constraint_once(tmp_path: Path) -> None:
    # Before: "(constraint roll-megatron-needs-an-mcore-adapter-template,
    # roll-megatron-needs-an-mcore-adapter-template)", once per component that carries it.
    # Tensor parallelism keeps the plan on Megatron, which cannot build gpt_oss (FSDP2 now runs
    # the unfixed scenario: the next test).
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        yaml.safe_dump({**GPT_OSS, "plan": {"execution": "async", "train": {"tp": 2}}})
    )
    out = tmp_path / "run.yaml"
    done = CliRunner().invoke(
        cli, ["export", str(scenario), "--framework", "roll", "--out", str(out)]
    )
    said = " ".join(done.output.split())
    assert done.exit_code != 0 and "Traceback" not in said
    named = said[said.rindex("(constraint ") :].removeprefix("(constraint ").rstrip(")")
    ids = named.split(", ")
    assert ids and len(ids) == len(set(ids)), said


def test_roll_keeps_fsdp2_expert_parallelism_to_its_example_models(tmp_path: Path) -> None:
    """ROLL's FSDP2 expert parallelism swaps mlp.experts for a module that unpacks (hidden
    states, expert indices, top-k scores) (fsdp2_strategy.py L1062-L1074, L189-L197 at 8eb27cc2),
    run by ROLL's examples on qwen3_moe and qwen3_5_moe only: gpt-oss-120b exports on FSDP2
    without it (ep_size 1), where the newly mapped ep_size let an export write ep_size 2."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(GPT_OSS))
    done = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "roll"])
    assert done.exit_code == 0, done.output
    assert "Training backend pytorch-fsdp" in done.output
    sizes = [line.split(":")[1].strip() for line in done.output.splitlines() if "ep_size:" in line]
    assert sizes and set(sizes) == {"1"}, sizes
    # asked for, the refusal names the code path; Qwen3-30B-A3B keeps it
    fixed = {"execution": "async", "train": {"ep": 2, "zero": 3}}
    scenario.write_text(yaml.safe_dump({**GPT_OSS, "plan": fixed}))
    done = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "roll"])
    assert done.exit_code != 0
    assert "roll-fsdp2-expert-parallel-on-its-example-models" in " ".join(done.output.split())
    qwen = {**GPT_OSS, "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"}, "plan": fixed}
    scenario.write_text(yaml.safe_dump(qwen))
    done = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "roll"])
    assert done.exit_code == 0, done.output
    assert "ep_size: 2" in done.output


# audit6's a03: GLM-4.5-Air one-step-off GRPO on 16 B200, on verl only
GLM_AIR = {
    "cluster": {"accelerator": "b200-sxm-180gb", "nodes": 2, "gpus_per_node": 8},
    "models": {"policy": "glm-4.5-air", "reward": "verifier"},
    "workload": {
        "algorithm": "grpo",
        "prompts_per_step": 128,
        "samples_per_prompt": 8,
        "prompt_tokens": 1024,
        "response_tokens": 6000,
        "max_response_tokens": 16384,
        "minibatches_per_step": 2,
        "max_staleness": 1,
    },
    "plan": {"execution": "one-step-off"},
}


def test_a_constraint_refusal_counts_every_other_reason(tmp_path: Path) -> None:
    # Before: only the constraint that removed the most (27,300 of 56,550) was named.
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(GLM_AIR))
    done = CliRunner().invoke(cli, ["recommend", str(scenario), "--framework", "verl"])
    said = " ".join(done.output.split())
    assert done.exit_code != 0 and "Traceback" not in said
    head = re.search(r"refuses (\d+) of (\d+) candidates by constraint ", said)
    assert head is not None, said
    others = said.split("; of the others, ", 1)[1]
    counts = [int(n) for n in re.findall(r"(?:^|, )(\d+) (?:by|do not fit)", others)]
    # every candidate is accounted for, memory among the reasons
    assert int(head[1]) + sum(counts) == int(head[2])
    assert "do not fit in memory" in others
