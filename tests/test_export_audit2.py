"""Launches the second held-out audit found would stop at start-up or be read wrong: a
checkpoint with its own code (N1), frameworks whose install has no AMD path (N7), the older
AReaL mapping's engine context (N2), and review's mapping and node count (N9, N10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlmguide import api

# the audit's b11: GRPO on Moonlight-16B-A3B over 3 nodes of H800
MOONLIGHT = """
cluster: {accelerator: h800-sxm-80gb, nodes: 3, gpus_per_node: 8}
models: {policy: moonlight-16b-a3b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 96, samples_per_prompt: 8, prompt_tokens: 1024,
           response_tokens: 2048, max_response_tokens: 6144, minibatches_per_step: 3}
"""
QWEN = MOONLIGHT.replace("moonlight-16b-a3b", "qwen3-8b")
VERL_VERSIONS = ("verl-0.8.0", "verl-0.7.0-125-gb178a3cd5")
TRUST = ("actor_rollout_ref.model.trust_remote_code", "data.trust_remote_code")


def scenario(text: str, tmp_path: Path, name: str = "s.yaml") -> api.Scenario:
    path = tmp_path / name
    path.write_text(text)
    return api.Scenario.from_yaml(path)


@pytest.mark.parametrize("version", VERL_VERSIONS)
def test_verl_turns_trust_remote_code_on_for_a_checkpoint_with_its_own_code(
    version: str, tmp_path: Path
) -> None:
    """Moonlight's tokenizer is Python code in its checkpoint; verl's flags default to false
    (_generated_ppo_trainer.yaml L380 and L466 at 7aed6b23, L300 and L362 at b178a3cd)."""
    written = api.export(scenario(MOONLIGHT, tmp_path), "verl", version=version).script
    for key in TRUST:
        assert f"{key}=True" in written
    plain = api.export(scenario(QWEN, tmp_path, "q.yaml"), "verl", version=version).script
    assert "trust_remote_code" not in plain
