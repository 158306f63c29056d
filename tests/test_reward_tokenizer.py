"""OpenRLHF scores the policy's token ids with the reward model as they are (no
re-tokenising: experience_maker.py L541-L547 at c250c21a, L141-L148 at 3c3be623), so an export
pairing a policy and a reward model of different tokenizers says so (audit8 b01: Qwen3-8B with
Skywork-Reward-Llama-3.1-8B, whose 128,257 embedding rows end below Qwen's chat-template ids at
151,644 and up)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rlmguide.cli import cli

WARNING = "a sign of another tokenizer"


def scenario(policy: str) -> dict:
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 2, "gpus_per_node": 8},
        "models": {"policy": policy, "critic": policy, "reward": "skywork-reward-llama-3.1-8b"},
        "workload": {
            "algorithm": "ppo",
            "prompts_per_step": 256,
            "samples_per_prompt": 1,
            "prompt_tokens": 1024,
            "response_tokens": 2048,
            "max_response_tokens": 4096,
            "minibatches_per_step": 4,
        },
    }


def export(tmp_path: Path, policy: str, version: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(policy)))
    out = tmp_path / "run.sh"
    done = CliRunner().invoke(
        cli,
        ["export", str(path), "--framework", "openrlhf", "--framework-version", version,
         "--out", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return out.read_text()


@pytest.mark.parametrize("version", ["openrlhf-0.8.9.post1-5-gc250c21a", "openrlhf-0.11.0"])
def test_a_reward_model_of_another_vocabulary_is_named(tmp_path: Path, version: str) -> None:
    # Qwen3-8B's 151,936 rows against the reward model's 128,257: 15.6% fewer
    script = export(tmp_path, "qwen3-8b", version)
    (line,) = [x for x in script.splitlines() if WARNING in x]
    assert line.startswith("# Departure") and "experience_maker.py" in line


def test_the_same_tokenizer_padded_one_row_longer_is_not(tmp_path: Path) -> None:
    # Llama-3.1-8B's 128,256 rows against 128,257 (Skywork adds a padding token): 0.001% apart
    script = export(tmp_path, "llama-3.1-8b", "openrlhf-0.11.0")
    assert WARNING not in script


def test_review_of_the_export_names_it(tmp_path: Path) -> None:
    export(tmp_path, "qwen3-8b", "openrlhf-0.11.0")
    done = CliRunner().invoke(cli, ["review", str(tmp_path / "run.sh"), "--format", "json"])
    assert done.exit_code == 0, done.output
    assert WARNING in done.output
