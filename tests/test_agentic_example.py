"""The bundled coding-agent example: its recommendation moves toward asynchrony, as the
published agentic systems report, where a single-turn rollout of the same tokens does not, and
the reason is printed; rollout GPUs beyond what the environment pool feeds buy nothing."""

from __future__ import annotations

import json
from typing import Any

from conftest import REPO, run_cli
from rlmguide.kb.schema import Scenario
from rlmguide.rules.scenario import read_scenario

EXAMPLE = REPO / "examples" / "grpo-qwen3-32b-coding-agent-64xh100.yaml"


def _recommend(path: Any, *sets: str) -> dict[str, Any]:
    args = [arg for s in sets for arg in ("--set", s)]
    result = run_cli("recommend", str(path), "--format", "json", "--top", "1", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _single_turn_twin(tmp_path: Any) -> Any:
    """The same prompts, cluster and trained tokens as one response per prompt: the turns and
    observations of the episode, without environment time."""
    scenario = read_scenario(EXAMPLE)
    w = scenario.workload
    agent = w.agent
    assert agent is not None and agent.max_turns is not None
    step = w.response_tokens + agent.observation_tokens
    mean = agent.turns * w.response_tokens + (agent.turns - 1) * agent.observation_tokens
    longest = (agent.max_turns - 1) * step + (w.max_response_tokens or w.response_tokens)
    data = scenario.model_dump(exclude_unset=True)
    del data["workload"]["agent"]
    data["workload"].update(response_tokens=int(mean), max_response_tokens=int(longest))
    path = tmp_path / "twin.yaml"
    path.write_text(json.dumps(Scenario.model_validate(data).model_dump(exclude_unset=True)))
    return path


def _gain(path: Any) -> float:
    """Step time of the best synchronous plan over the best plan."""
    best = _recommend(path)["plans"][0]["step_seconds"]
    sync = _recommend(path, "plan.execution=sync")["plans"][0]["step_seconds"]
    return sync / best


def test_asynchrony_gains_more_for_the_agent_than_for_its_single_turn_twin(tmp_path) -> None:  # type: ignore[no-untyped-def]
    agent = _recommend(EXAMPLE)
    twin_path = _single_turn_twin(tmp_path)
    twin = _recommend(twin_path)
    top, twin_top = agent["plans"][0], twin["plans"][0]
    assert top["execution"] != "sync" and top["agentic"]["kv_kept"]
    assert (top["placement"], top["execution"]) != (twin_top["placement"], twin_top["execution"])
    assert _gain(EXAMPLE) > _gain(twin_path) > 1.0
    reason = [n for n in agent["notes"] if n.startswith("agentic episodes")]
    assert reason and "best synchronous plan is" in reason[0]
    assert "asynchrony-for-agentic-episodes" in {r["id"] for r in top["rules"]}


def test_rollout_gpus_beyond_the_environment_pool_buy_nothing() -> None:
    # 16 sandboxes for 512 episodes of 20 s of setup and 8 x 10 s of steps: the pool needs
    # 512 x 100 / 16 = 3200 s per step, so a disaggregated rollout of 16 GPUs is as fast as one
    # of 48 (the 32 more rollout GPUs are taken from training), and the advice to size the pool
    # fires.
    agent = read_scenario(EXAMPLE).workload.agent
    assert agent is not None and agent.environment is not None
    per_episode = agent.setup_seconds + agent.turns * agent.environment.mean_seconds
    assert per_episode == 100
    pool = ("plan.placement=disaggregated", "workload.agent.environment_slots=16")
    small, large = (
        _recommend(EXAMPLE, *pool, f"plan.rollout.gpus={gpus}")["plans"][0] for gpus in (16, 48)
    )
    rollouts = [next(s for s in p["stages"] if s["name"] == "rollout") for p in (small, large)]
    assert all(r["bound"] == "environment" for r in rollouts)
    assert all(r["lower_seconds"] >= 512 * per_episode / 16 * (1 - 1e-9) for r in rollouts)
    assert small["step_seconds"] <= large["step_seconds"] * 1.01
    assert "size-the-environment-pool" in {r["id"] for r in small["rules"]}


def test_the_report_shows_the_agentic_terms_and_the_reason() -> None:
    result = run_cli("recommend", str(EXAMPLE), "--format", "markdown", "--top", "1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "agentic episodes of plan 1 (per rollout engine)" in out
    assert "| KV kept across turns | True |" in out
    assert "agentic episodes: the longest episode's chain of turns" in out


def test_export_refuses_agentic_episodes_it_cannot_launch() -> None:
    # slime's launch cannot bound the turns (its generate function's own): one line, exit 1
    result = run_cli("export", str(EXAMPLE), "--framework", "slime")
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    # every ranked plan is refused; the reason most of them meet comes first
    assert line.startswith("Error: cannot export to slime: slime cannot run this scenario: ")
    first_reason = line.split("ranked plans can be used: ", 1)[1]
    assert first_reason.startswith("slime-0.3.1-38-g624b824 has no key for workload.max_turns = 16")
    assert "Traceback" not in result.stderr


def test_export_writes_the_agent_loop_for_verl() -> None:
    result = run_cli("export", str(EXAMPLE), "--framework", "verl")
    assert result.returncode == 0, result.stderr
    assert "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=16 " in result.stdout
