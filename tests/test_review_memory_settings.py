"""A launch's memory keys enter review's estimate (issue 31 item 9): the engine's memory share
(vLLM's as written, SGLang's converted), its cap on sequences, the micro-batch it packs by
tokens and the gradient buffers its backend keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import REPO

from rlmguide.cli import cli
from rlmguide.review import Hardware, review

FIXTURES = REPO / "tests" / "fixtures" / "review"
EXAMPLE = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
H100 = Hardware("h100-sxm-80gb")


def _exported(tmp_path: Path, framework: str) -> Path:
    done = CliRunner().invoke(cli, ["export", EXAMPLE, "--framework", framework])
    assert done.exit_code == 0, done.output
    path = tmp_path / f"{framework}.sh"
    path.write_text(done.output)
    return path


def _edited(path: Path, old: str, new: str) -> Path:
    text = path.read_text()
    assert old in text, old
    out = path.with_name(f"edited-{path.name}")
    out.write_text(text.replace(old, new))
    return out


def _plan(result: dict[str, Any]) -> dict[str, Any]:
    return result["scenario"]["plan"]


def test_a_smaller_engine_share_is_estimated_slower(tmp_path: Path) -> None:
    script = _exported(tmp_path, "verl")
    as_exported = review(script, hardware=H100)
    share = _plan(as_exported)["rollout"]["memory_fraction"]
    assert as_exported["estimate"]["feasible"]
    assert all(row["verdict"] == "as the plan needs" for row in as_exported["memory_keys"])
    # the header's mean response (2,048 tokens, not the prior's 2,941 of the 8,192 cap) still
    # fits in 0.35 of the GPU at no cost; a quarter holds too little of it
    smaller = _edited(script, f"gpu_memory_utilization={share}", "gpu_memory_utilization=0.25")
    got = review(smaller, hardware=H100)
    assert _plan(got)["rollout"]["memory_fraction"] == 0.25
    assert got["estimate"]["rollout"]["memory_fraction"] == pytest.approx(0.25)
    assert got["estimate"]["step_seconds"] > as_exported["estimate"]["step_seconds"]
    (row,) = [r for r in got["memory_keys"] if r["setting"] == "engine memory fraction"]
    assert row["launch"] == 0.25 and row["verdict"].startswith("below the plan's")


def test_a_micro_batch_beyond_memory_is_estimated_not_to_fit(tmp_path: Path) -> None:
    script = _exported(tmp_path, "verl")
    tokens = _plan(review(script, hardware=H100))["train"]["micro_batch_tokens"]
    key = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"
    huge = _edited(script, f"{key}={tokens}", f"{key}={tokens * 40}")
    got = review(huge, hardware=H100)
    assert _plan(got)["train"]["micro_batch_tokens"] == tokens * 40
    assert not got["estimate"]["feasible"]
    assert got["estimate"]["train"]["micro_batch_tokens"] > tokens


def test_without_batching_by_tokens_the_budget_is_not_the_launch_s(tmp_path: Path) -> None:
    # verl reads ppo_max_token_len_per_gpu only with use_dynamic_bsz (its default is false)
    script = _exported(tmp_path, "verl")
    off = _edited(script, "use_dynamic_bsz=True", "use_dynamic_bsz=False")
    assert "micro_batch_tokens" not in _plan(review(off, hardware=H100))["train"]


def test_sglang_s_static_fraction_is_converted_to_a_share_of_the_gpu() -> None:
    # slime's Qwen3-4B script: --sglang-mem-fraction-static 0.7 on a colocated pool whose
    # trainer offloads (nothing resident): weights and KV take 0.7 of the 79.65 GiB free (the
    # H100's 81559 MiB as the driver reports it), the engine's 1 GiB workspace lies outside
    # it: (0.7 x 79.65 + 1) / 79.65 = 0.7126 of the GPU, to the 4 decimals review keeps.
    got = review(
        FIXTURES / "slime-624b824/scripts/run-qwen3-4B.sh",
        hardware=Hardware("h100-sxm-80gb", prompt_tokens=2048),
    )
    plan = _plan(got)
    assert plan["rollout"]["memory_fraction"] == round(0.7 + 1024 / 81559, 4) == 0.7126
    # --max-tokens-per-gpu 9216 with context parallelism 1; Megatron-LM's fp32 main grads
    assert plan["train"]["micro_batch_tokens"] == 9216
    assert plan["train"]["fp32_gradients"] is True


def test_slime_fraction_sized_as_if_the_trainer_were_resident_does_not_fit(
    tmp_path: Path,
) -> None:
    # slime starts SGLang on the empty GPU, so a fraction sized over HBM less the resident
    # trainer (the audit's D1) gives weights + KV of that share of the whole GPU, beside the
    # trainer loaded afterwards: the estimate must overflow where the export fits
    scenario = tmp_path / "colocated.yaml"
    text = Path(EXAMPLE).read_text()
    assert "\nplan:" not in text
    scenario.write_text(text + "\nplan: {placement: colocated, execution: sync}\n")
    done = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "slime"])
    assert done.exit_code == 0, done.output
    script = tmp_path / "slime.sh"
    script.write_text(done.output)
    assert "--no-offload-train" in done.output
    as_exported = review(script, hardware=H100)
    assert as_exported["estimate"]["feasible"]
    terms = as_exported["estimate"]["memory_breakdown_gib"]["rollout"]
    (row,) = [r for r in as_exported["memory_keys"] if r["setting"] == "engine memory fraction"]
    fraction, hbm = row["launch"], 81559 / 1024
    resident = terms["trainer_state"]
    trainer_first = round((fraction * hbm) / (hbm - resident), 3)
    assert trainer_first * hbm + terms["workspace"] + resident > hbm  # the old conversion
    edited = _edited(
        script, f"--sglang-mem-fraction-static {fraction}",
        f"--sglang-mem-fraction-static {trainer_first}",
    )  # fmt: skip
    got = review(edited, hardware=H100)
    assert not got["estimate"]["feasible"]
    (row,) = [r for r in got["memory_keys"] if r["setting"] == "engine memory fraction"]
    assert row["launch"] == trainer_first and row["verdict"].startswith("above the plan's")


def test_gradient_buffers_as_each_framework_keeps_them(tmp_path: Path) -> None:
    # NeMo-RL's recipes set grad_reduce_in_fp32 false; verl's Megatron workers default to fp32
    nemo = (
        FIXTURES
        / "nemo-rl-5fb5889/examples/configs/recipes/llm/performance/grpo-qwen3-235b-16n8g.yaml"
    )
    got = review(nemo, hardware=Hardware("h100-sxm-80gb", prompt_tokens=128))
    assert _plan(got)["train"]["fp32_gradients"] is False
    verl = review(
        FIXTURES / "verl-run_qwen3moe-30b_megatron_96gb.sh", hardware=Hardware("h20-96gb")
    )
    assert _plan(verl)["train"]["fp32_gradients"] is True
    # a slime launch that reduces in bf16 is estimated with bf16 gradients, and less memory
    script = _exported(tmp_path, "slime")
    bf16 = _edited(script, "--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16")
    fp32_train = review(script, hardware=H100)["estimate"]["memory_gib_per_gpu"]["train"]
    got = review(bf16, hardware=H100)
    assert _plan(got)["train"]["fp32_gradients"] is False
    assert got["estimate"]["memory_gib_per_gpu"]["train"] < fp32_train


def test_a_model_placed_by_a_key_review_does_not_read_is_named_not_costed(
    tmp_path: Path,
) -> None:
    """ROLL places every worker with its device_mapping; an LLM judge added to an exported
    launch holds GPUs the plan does not: review names it beside the memory settings instead of
    costing the launch as if it were not there."""
    import yaml

    done = CliRunner().invoke(cli, ["export", EXAMPLE, "--framework", "roll"])
    assert done.exit_code == 0, done.output
    config = yaml.safe_load(done.output)
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(config))
    config["rewards"]["llm_judge"] = {"device_mapping": "list(range(4,8))", "world_size": 4}
    judged = tmp_path / "judged.yaml"
    judged.write_text(yaml.safe_dump(config))
    named = [
        row
        for row in review(judged, hardware=H100)["memory_keys"]
        if row["setting"].endswith("(rewards.llm_judge.device_mapping)")
    ]
    assert [row["launch"] for row in named] == ["list(range(4,8))"]
    assert named[0]["verdict"].startswith("not costed")
    assert not [r for r in review(plain, hardware=H100)["memory_keys"] if r["plan"] is None]


def test_pools_that_leave_gpus_to_an_unread_model_name_it_in_the_refusal(tmp_path: Path) -> None:
    """rv10's r15 (ROLL's "seperate" example): train on 8 GPUs, rollout on 4 and an LLM judge
    on the last 4 of two nodes. The judge's device_mapping is read by no entry, so the pools
    cover 12 of 16 GPUs and no split matches: the refusal names the judge's key and GPUs, not
    only "no split"."""
    import yaml

    done = CliRunner().invoke(cli, ["export", EXAMPLE, "--framework", "roll"])
    assert done.exit_code == 0, done.output
    config = yaml.safe_load(done.output)
    for worker in ("actor_train", "reference"):
        config[worker]["device_mapping"] = "list(range(0,8))"
    config["actor_infer"]["device_mapping"] = "list(range(8,12))"
    config["rewards"]["llm_judge"] = {"device_mapping": "list(range(12,16))", "world_size": 4}
    judged = tmp_path / "judged.yaml"
    judged.write_text(yaml.safe_dump(config))
    refused = CliRunner().invoke(cli, ["review", str(judged), "--accelerator", "h100-sxm-80gb"])
    said = " ".join(refused.output.split())
    assert refused.exit_code != 0 and "Traceback" not in said
    assert "no split of the cluster matches" in said
    assert (
        "rewards.llm_judge.device_mapping (list(range(12,16)): a model on GPUs the plan does "
        "not hold)" in said
    )
