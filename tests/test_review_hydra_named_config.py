"""The config a verl launch names with --config-path/--config-name is read under the command
line's overrides, as Hydra composes it; where it is not beside the launch, review says so in one
line and names the keys it may set.

verl's multi-turn GSM8K example (examples/sglang_multiturn at b178a3cd) keeps
`multi_turn.max_assistant_turns: 5` only in that config, so the launch read alone is one turn."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review import Hardware, review
from rlmguide.review.budget import Budget
from rlmguide.review.hydra_named import named_config

REVIEW = Path(__file__).parent / "fixtures" / "review"
CONFIG = REVIEW / "verl-b178a3c-sglang-multiturn" / "examples" / "sglang_multiturn" / "config"
FLAT = REVIEW / "verl-run_qwen2.5-3b_gsm8k_multiturn.sh"
H100 = Hardware("h100-sxm-80gb")


def test_the_named_configs_turns_are_read_from_the_checkout(tmp_path: Path) -> None:
    # the launch and its config in their places in a verl checkout at tmp_path
    example = tmp_path / "examples" / "sglang_multiturn"
    shutil.copytree(CONFIG, example / "config")
    script = example / FLAT.name
    shutil.copy(FLAT, script)
    # CONFIG_PATH="$(pwd)/examples/sglang_multiturn/config": $(pwd) is not run, and the path's
    # tail is found under the checkout the script sits in
    got = review(script, hardware=H100)
    understood = {u["key"]: u["value"] for u in got["understood"]}
    assert understood["actor_rollout_ref.rollout.multi_turn.max_assistant_turns"] == 5
    workload = got["scenario"]["workload"]
    assert workload["agent"] == {"turns": 5, "max_turns": 5}
    # data.max_response_length=1024 on the command line (the config says the same), over 5 turns
    assert workload["max_response_tokens"] == 1024 // 5 == 204
    assert got["config_missing"] is None
    # a key only the config sets, that no entry reads, is listed as the launch's own
    assert "actor_rollout_ref.hybrid_engine" in {u["key"] for u in got["unmapped"]}


def test_a_config_not_beside_the_launch_is_one_line_naming_the_keys() -> None:
    got = review(FLAT, hardware=H100)
    assert got["scenario"]["workload"].get("agent") is None
    line = got["config_missing"]
    assert "\n" not in line
    assert line.startswith("--config-name gsm8k_multiturn_grpo at --config-path ")
    assert "actor_rollout_ref.rollout.multi_turn.max_assistant_turns" in line
    # a key the command line sets is not among those the config might set
    assert "data.max_response_length," not in line
    args = ["review", str(FLAT), "--accelerator", "h100-sxm-80gb"]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0 and "Traceback" not in done.output
    assert "Named but not found" in done.output


def _checkout(tmp_path: Path, config: str, *overrides: str) -> Path:
    """A launch of verl's main_ppo in a checkout at tmp_path, with a config named `run` in the
    module's folder (where a relative --config-path points)."""
    folder = tmp_path / "verl" / "trainer" / "config"
    folder.mkdir(parents=True)
    (folder / "run.yaml").write_text(config)
    (folder / "base.yaml").write_text("data: {max_prompt_length: 256, max_response_length: 300}\n")
    script = tmp_path / "run.sh"
    launch = "python3 -m verl.trainer.main_ppo --config-path=config --config-name=run"
    script.write_text(" ".join((launch, *overrides)))
    return script


def _keys(script: Path, *overrides: str) -> dict[str, object]:
    config = {"config-path": "config", "config-name": "run"}
    config |= dict(o.split("=", 1) for o in overrides)
    found = named_config(config, "verl.trainer.main_ppo", script, Budget())
    assert found is not None and found.missing is None
    return found.keys


def test_a_relative_config_path_is_the_modules_folder_and_defaults_merge_in_order(
    tmp_path: Path,
) -> None:
    # the config's own keys win over its defaults (an implicit or trailing _self_); a default
    # that is not beside it (verl's ppo_trainer, on Hydra's search path) is not read
    text = "defaults:\n  - ppo_trainer\n  - base\n  - _self_\ndata: {max_response_length: 600}\n"
    script = _checkout(tmp_path, text)
    assert _keys(script) == {"data.max_prompt_length": 256, "data.max_response_length": 600}


def test_self_first_lets_the_defaults_win(tmp_path: Path) -> None:
    text = "defaults:\n  - _self_\n  - base\ndata: {max_response_length: 600}\n"
    assert _keys(_checkout(tmp_path, text))["data.max_response_length"] == 300


def test_the_command_line_wins_over_the_named_config(tmp_path: Path) -> None:
    text = (
        "actor_rollout_ref:\n  rollout:\n    multi_turn: {enable: true, max_assistant_turns: 3}\n"
        "data: {max_prompt_length: 512, max_response_length: 2048}\n"
    )
    overrides = (
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4",
        "trainer.n_gpus_per_node=8",
        "trainer.nnodes=1",
    )
    script = _checkout(tmp_path, text, *overrides)
    got = review(script, "verl", hardware=H100)
    understood = {u["key"]: u["value"] for u in got["understood"]}
    assert understood["actor_rollout_ref.rollout.multi_turn.max_assistant_turns"] == 4
    # the config's response budget, 2,048 tokens over the command line's 4 turns
    assert got["scenario"]["workload"]["max_response_tokens"] == 2048 // 4


def test_a_defaults_entry_that_is_no_list_is_one_line(tmp_path: Path) -> None:
    script = _checkout(tmp_path, "defaults: {base: x}\n", "trainer.nnodes=1")
    done = CliRunner().invoke(cli, ["review", str(script), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 2
    assert done.output.strip() == (
        "Error: cannot read the base config: run.yaml: `defaults:` is a list of config names"
    )
