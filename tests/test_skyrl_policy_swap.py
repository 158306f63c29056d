"""SkyRL's swap of the policy around a reference on its GPUs, costed by the search.

Outside colocate_all, a reference on the policy's GPUs runs under colocate_policy_ref (default
true, skyrl/train/config/config.py L588 at a9564572), and WorkerDispatch then moves the
policy's weights and optimizer to the host before every reference forward and back before
training (skyrl/backends/skyrl_train/workers/worker_dispatch.py L124-L176). Export writes
colocate_policy_ref=True for such a disaggregated plan and review reads the key back as phase
offload; the search ranked the plan without it, so the exported header promised less than the
launch runs (the audit's probe: 24.4 s exported, 25.0 s read back)."""

from __future__ import annotations

from pathlib import Path

import pytest
from launch_support import review_json

from rlmguide import api

# Not the audit's probe (two nodes): the same mechanism on one node.
DISAGGREGATED = """
cluster: {accelerator: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}
models: {policy: qwen2.5-7b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 64, samples_per_prompt: 8, prompt_tokens: 512,
           response_tokens: 2048, max_response_tokens: 8192, minibatches_per_step: 1}
plan: {placement: disaggregated, execution: async, max_staleness: 2}
"""

# Qwen2.5-7B's parameters from its config (28 layers, hidden 3584, FFN 18944, 4 KV heads of
# 128, vocabulary 152064, untied embeddings, QKV biases): per layer 2 x 3584^2 (q, o) + 3584
# (q bias) + 2 x (3584 x 512 + 512) (k, v) + 3 x 3584 x 18944 (MLP) + 2 x 3584 (norms), x 28,
# plus 2 x 152064 x 3584 (embedding, head) + 3584 (final norm).
QWEN25_7B_PARAMS = 7_615_616_512


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[api.Launch, Path]:
    where = tmp_path_factory.mktemp("swap")
    scenario = where / "s.yaml"
    scenario.write_text(DISAGGREGATED)
    done = api.export(scenario, "skyrl")
    script = where / "run.sh"
    script.write_text(done.script)
    return done, script


def test_the_exported_plan_costs_what_review_reads_back(
    exported: tuple[api.Launch, Path],
) -> None:
    """The plan export ranks parks the policy's state (phase offload) where its script shares
    the reference with the policy, and review of the script costs the same step."""
    done, script = exported
    plan = done.plan.model_dump()
    assert plan["placement"] == "disaggregated" and not plan["pools"].get("reference")
    assert "trainer.placement.colocate_policy_ref=True" in done.script
    read = review_json(script)
    assert read["estimate"]["step_seconds"] == pytest.approx(plan["step_seconds"], rel=2e-3)
    assert plan["train"]["offload"]["phase"] is True


def test_the_swap_by_hand(exported: tuple[api.Launch, Path]) -> None:
    """Per training GPU (ZeRO-3 over the pool's 5 GPUs) the policy holds 2 bytes a parameter
    of bf16 weights, 2 of gradients and 12 of fp32 master weights and Adam moments; phase
    offload moves them to the host and back (2 x 16) and loads the parked reference's bf16
    weights (2): 34 x P / 5 bytes over the H100's host link, PCIe Gen5 x16 at 64 GB/s times
    the 0.8 copy efficiency (cost.overheads.host_link_efficiency): 1.011 s. The reference's
    load alone, all the search costed before, is 2 x P / 5 bytes: 0.06 s."""
    done, _ = exported
    plan = done.plan.model_dump()
    assert plan["train"]["gpus"] == 5 and plan["train"]["zero"] == 3
    switch = next(s for s in plan["stages"] if s["name"] == "switch")
    moved = (2 * (2 + 2 + 12) + 2) * QWEN25_7B_PARAMS / 5
    assert switch["seconds"] == pytest.approx(moved / (64e9 * 0.8), rel=1e-6)
    assert switch["seconds"] == pytest.approx(1.0114, abs=1e-4)
