"""Agentic episodes exported and reviewed: verl's agent loop keys and SkyRL's turns and input
cap at the mappings' commits, the refusals of the frameworks whose launch cannot bound the
turns, and the reading back.

The bundled coding agent: 8 turns on average and 16 at most, turns of 1,024 tokens on average
and 4,096 at most, 512 tokens of tool output per environment step, a 2,048-token prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO
from launch_support import catalogs
from rlmguide.rules.scenario import parse_scenario, resolve
from round_trip import Case, round_trip
from test_export import SMALL, assert_verl_keys, read_back

from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.render import DEPARTURE_LINE
from rlmguide.review import Hardware, review

AGENT = REPO / "examples" / "grpo-qwen3-32b-coding-agent-64xh100.yaml"
TURN_KEYS = (
    "actor_rollout_ref.rollout.multi_turn.enable",
    "actor_rollout_ref.rollout.multi_turn.max_assistant_turns",
    "actor_rollout_ref.rollout.multi_turn.tool_config_path",
    "actor_rollout_ref.rollout.agent.default_agent_loop",
)


def export(path: Path, framework: str, **agent: Any) -> Exported:
    """The scenario at `path` (its agent block updated with `agent`) exported to `framework`."""
    data = yaml.safe_load(path.read_text())
    if agent:
        data["workload"]["agent"] = {**data["workload"].get("agent", {}), **agent}
    catalog, mappings = catalogs()
    return build(
        resolve(parse_scenario(data, str(path)), catalog.records), catalog, mappings, framework
    )


def test_verl_writes_the_agent_loop_with_the_episode_budget() -> None:
    done = export(AGENT, "verl")
    args = read_back(done)
    assert args["actor_rollout_ref.rollout.agent.default_agent_loop"] == "tool_agent"
    assert args["actor_rollout_ref.rollout.multi_turn.enable"] is True
    assert args["actor_rollout_ref.rollout.multi_turn.max_assistant_turns"] == 16
    assert args["actor_rollout_ref.rollout.multi_turn.tool_config_path"] == "${TOOL_CONFIG}"
    # the budget over all turns: 15 turns of the mean 1,024 tokens, each followed by 512 of
    # tool output, then the longest turn of 4,096
    assert args["data.max_response_length"] == 15 * (1024 + 512) + 4096 == 27136
    assert args["data.max_prompt_length"] == 2048
    # the training budget holds that whole trajectory (verl asserts it per micro-batch)
    budget = args["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"]
    assert budget * args["actor_rollout_ref.actor.ulysses_sequence_parallel_size"] >= 2048 + 27136
    assert "TOOL_CONFIG" in done.inputs
    assert ': "${TOOL_CONFIG:?set TOOL_CONFIG' in script(done, "test", "policy")
    assert_verl_keys(done)
    # below the bound of every turn at its longest, 16 x 4,096 + 15 x 512 = 73,216: the launch
    # says so (verl cuts an episode at the budget) rather than leaving the plan it costed
    [departure] = done.departures
    assert "not the scenario's bound of every turn at its longest" in departure
    assert f"{DEPARTURE_LINE} data.max_response_length" in script(done, "test", "policy")


def test_a_single_turn_verl_launch_says_no_episode_departure() -> None:
    assert export(Path(SMALL), "verl").departures == []


def test_a_single_turn_verl_launch_has_no_agent_keys() -> None:
    args = read_back(export(Path(SMALL), "verl"))
    assert not set(TURN_KEYS) & set(args)
    assert (
        args["data.max_response_length"]
        == yaml.safe_load(Path(SMALL).read_text())["workload"]["max_response_tokens"]
    )


def test_one_turn_with_environment_time_is_a_single_turn_launch() -> None:
    """One turn and a sandbox check: the launch runs one response per prompt, as every
    framework's does; the environment time is costed, not written."""
    done = export(AGENT, "openrlhf", turns=1, max_turns=1)
    assert not any("turn" in a.key for a in done.arguments)


@pytest.mark.parametrize(
    ("framework", "reason"),
    [
        ("slime", r"--custom-generate-function-path, slime/utils/arguments.py L476-L484"),
        ("openrlhf", r"openrlhf-0.11.0 has no key for workload.max_turns = 16"),
        ("nemo-rl", r"has no key for workload.max_turns = 16"),
    ],
)
def test_a_launch_that_cannot_bound_the_turns_is_refused_naming_the_key(
    framework: str, reason: str
) -> None:
    with pytest.raises(NotExpressible, match=reason):
        export(AGENT, framework)


def test_a_rebuilt_history_is_refused_with_verls_reason() -> None:
    with pytest.raises(NotExpressible, match=r"workload.context_appended = false.*tool_agent_loop"):
        export(AGENT, "verl", context="rebuilt")


def test_review_reads_the_turns_and_the_budget_back(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(script(export(AGENT, "verl"), "test", "policy"))
    got = review(path, "verl", policy="qwen3-32b", hardware=Hardware("h100-sxm-80gb"))
    workload = got["scenario"]["workload"]
    # the launch bounds the turns and the tokens after the prompt: every turn at the bound,
    # the budget shared out over them (27,136 / 16)
    assert workload["agent"] == {"turns": 16, "max_turns": 16}
    assert workload["max_response_tokens"] == workload["response_tokens"] == 1696
    assumed = {a["field"] for a in got["assumed"]}
    assert {"workload.agent.turns", "workload.agent.observation_tokens"} <= assumed


def test_skyrl_writes_the_turns_and_the_input_cap_of_the_longest_episode() -> None:
    from test_export_skyrl import arguments, passes_skyrls_checks

    done = export(AGENT, "skyrl")
    args = arguments(done)
    assert args["generator.max_turns"] == 16
    # the cap on a turn's input: the 2,048-token prompt, then 15 turns of the mean 1,024 tokens
    # each followed by 512 of tool output; the last turn may then take its longest, 4,096
    assert args["generator.max_input_length"] == 2048 + 15 * (1024 + 512) == 25088
    assert args["generator.sampling_params.max_generate_length"] == 4096
    assert args["trainer.max_prompt_length"] == 2048
    passes_skyrls_checks(args, done.launch.command.split()[-1])
    [departure] = done.departures
    assert "generator.max_input_length is the plan's longest episode" in departure


def test_a_single_turn_skyrl_launch_leaves_the_input_cap_at_the_prompts() -> None:
    from test_export_skyrl import arguments

    args = arguments(export(Path(SMALL), "skyrl"))
    assert "generator.max_turns" not in args and "generator.max_input_length" not in args


def test_review_reads_skyrls_turns_and_input_cap_back(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(script(export(AGENT, "skyrl"), "test", "policy"))
    got = review(path, "skyrl", policy="qwen3-32b", hardware=Hardware("h100-sxm-80gb"))
    workload = got["scenario"]["workload"]
    assert workload["agent"] == {"turns": 16, "max_turns": 16}
    # what may follow the prompt: the input cap less the prompt cap, plus one turn at its
    # cap, (25,088 - 2,048 + 4,096) = 27,136 tokens, shared over the 16 turns: verl's reading
    assert workload["max_response_tokens"] == workload["response_tokens"] == 27136 // 16 == 1696
    assert not [u for u in got["unmapped"] if u["key"].startswith("generator.max_")]


@pytest.mark.parametrize("framework", ["verl", "skyrl"])
@pytest.mark.parametrize("example", [AGENT, Path(SMALL)], ids=lambda p: p.stem)
def test_the_episode_round_trips(example: Path, framework: str) -> None:
    status, why = round_trip(Case(f"{example.stem}-{framework}", framework, example=example))
    assert status == "same", why


def test_slimes_parser_has_the_flags_the_refusal_names_and_none_for_turns() -> None:
    """The refusal's reason, checked against slime's options at 624b824: the generate function
    and the context bound are flags; no flag bounds an episode's turns."""
    rows = REPO / "tests" / "fixtures" / "frameworks" / "slime-624b824-arguments-options.tsv"
    options = {
        line.split("\t")[1]
        for line in rows.read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert {"--custom-generate-function-path", "--rollout-max-context-len"} <= options
    assert {o for o in options if "-turn" in o} == {"--log-multi-turn"}


def test_the_mapping_pages_say_what_the_framework_has_no_key_for() -> None:
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots
    from rlmguide.kb.schema.records import KINDS

    from rlmguide.sitegen.mapping_pages import mapping_pages
    from rlmguide.sitegen.pages import build_index

    pages = mapping_pages(build_index(load_catalog(record_roots(), tuple(KINDS))))
    (slime,) = [v for k, v in pages.items() if "slime-" in k]
    assert "## No key in the framework" in slime
    assert "`workload.max_turns`: slime has no argument for an episode's turns" in slime
    (nemo,) = [v for k, v in pages.items() if "nemo-rl-" in k]
    assert "No key in the framework" not in nemo
