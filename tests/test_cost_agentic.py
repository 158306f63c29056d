"""Agentic episodes: per-turn prefill with and without kept KV, the decode batch under
environment time, the environment pool's bound, the episode's chain, and the reduction to the
single-turn rollout."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import evaluate
from rlmguide.cost.agentic import Turns, agentic_rollout_stage, decode_batch
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.episode import Episode
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.memory import rollout_memory
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.rollout import DecodeModel, rollout_stage
from rlmguide.cost.stage import BOUNDS, STAGES
from rlmguide.kb.schema import Agent, EnvironmentTime
from test_cost_specs import H100, QWEN25_7B, one_plan, random_plans, workload

EFF = EfficiencyFactors()
HW = Hardware.of(H100, 8, DEFAULT_OVERHEADS)
FABRIC = Fabric.of(HW, EFF, DEFAULT_OVERHEADS)
FIG = ModelFigures.of(QWEN25_7B)
STAGE_FIELDS = (
    "seconds", "work_seconds", "depth_seconds", "work_flop", "hbm_bytes", "link_bytes",
    "compute_seconds", "hbm_seconds", "scale_up_seconds", "scale_out_seconds",
)  # fmt: skip


def agentic(**fields: object) -> Agent:
    return Agent(**fields)  # type: ignore[arg-type]


def both_rollouts(plans, wl, episode):  # type: ignore[no-untyped-def]
    """The single-turn rollout and the agentic one of the same plans, as evaluate feeds them."""
    layout = RolloutLayout.of(plans)
    batch = Batch.of(wl, Needs())
    memory = rollout_memory(FIG, layout, batch, HW.memory_bytes * 0.9, DEFAULT_OVERHEADS)
    caps = np.full(len(plans), batch.longest_response)
    args = (memory.capacity, caps, plans.prefix_caching, HW, FABRIC, EFF, DEFAULT_OVERHEADS)
    single, single_extras = rollout_stage(FIG, layout, batch, *args)
    longest = float(wl.max_response_tokens or wl.response_tokens)
    multi, multi_extras, parts = agentic_rollout_stage(
        FIG, layout, batch, episode, float(wl.response_tokens), longest, *args
    )
    return single, single_extras, multi, multi_extras, parts


def test_one_turn_without_environment_is_the_single_turn_rollout() -> None:
    plans = random_plans(7, QWEN25_7B, 60)
    wl = workload(prompts_per_step=64, response_tokens=2048, max_response_tokens=8192)
    single, s_extras, multi, m_extras, _ = both_rollouts(plans, wl, Episode())
    for name in STAGE_FIELDS:
        np.testing.assert_allclose(getattr(multi, name), getattr(single, name), rtol=1e-9)
    np.testing.assert_array_equal(m_extras.concurrency, s_extras.concurrency)
    assert not multi.environment_seconds.any()


def test_turn_offsets_by_hand() -> None:
    # 8 turns every episode (mean = max): a decoded token's turn index j - 1 averages over the
    # episode's tokens to (0 + ... + 7) / 8 = 3.5; r + o = 1000 + 500, so the offset is 5250,
    # and the longest episode's last turn starts 7 x 1500 = 10,500 tokens in.
    t = Turns.of(Episode(turns=8, max_turns=8, observation_tokens=500), 1000.0, 4000.0)
    assert t.offset == pytest.approx(3.5 * 1500)
    assert t.last_offset == pytest.approx(10_500)
    # Environment per episode: setup 20 s + 8 steps of 5 s.
    t = Turns.of(Episode(turns=8, max_turns=8, environment_seconds=5, setup_seconds=20), 1e3, 1e3)
    assert t.environment == pytest.approx(60.0)


def test_prefill_kept_versus_rebuilt_by_hand() -> None:
    # 4 turns of r = 100 with o = 50, prompt S = 1000, one engine of 64 episodes of one group
    # each (no shared prompt): kept contexts prefill S once and 3 observations of 50 tokens;
    # re-rendered ones prefill S + (S + 150) + (S + 300) + (S + 450) = 4900 tokens.
    wl = workload(prompts_per_step=64, samples_per_prompt=1, prompt_tokens=1000,
                  response_tokens=100, max_response_tokens=100)  # fmt: skip
    wl = wl.model_copy(update={"agent": agentic(turns=4, max_turns=4, observation_tokens=50)})
    layout = RolloutLayout.of(one_plan(rollout_gpus=1, train_gpus=1))
    model = DecodeModel(FIG, layout, HW, FABRIC, EFF, DEFAULT_OVERHEADS)
    rate = HW.matmul_rate(layout.fp8) * EFF.prefill_compute
    first = model.prefill_token(1000.0, rate).seconds[0]
    later = model.prefill_token(2.0 * (1000 + 1.5 * 150 + 100), rate).seconds[0]
    for appended, tokens in ((True, 3 * 50), (False, 3 * 1000 + 4 * 225)):
        episode = Episode(turns=4, max_turns=4, observation_tokens=50, appended=appended)
        plans = one_plan(rollout_gpus=1, train_gpus=1, prefix_caching=True)
        *_, parts = both_rollouts(plans, wl, episode)
        expected = 64 * 1000 * first + 64 * tokens * later
        assert parts["prefill_seconds"][0] == pytest.approx(expected, rel=1e-9)
        assert bool(parts["kv_kept"][0]) is appended


def test_decode_batch_is_littles_law() -> None:
    # c episodes in flight, each decoding N r = 8000 steps of tau(b) and waiting h = 60 s:
    # b = c g / (g + h) with g = 8000 tau(b); the iteration's fixed point satisfies it.
    model = DecodeModel(FIG, RolloutLayout.of(one_plan()), HW, FABRIC, EFF, DEFAULT_OVERHEADS)
    c, context = np.array([64.0, 256.0]), np.array([6000.0, 6000.0])
    b = decode_batch(model, c, context, 8000.0, 60.0)
    g = 8000.0 * model.step_seconds(b[:, None], context[:, None])[:, 0]
    np.testing.assert_allclose(b, c * g / (g + 60.0), rtol=1e-3)
    assert (b < c).all()
    assert (decode_batch(model, c, context, 8000.0, 0.0) == c).all()


def multi_turn(**agent: object):  # type: ignore[no-untyped-def]
    base = dict(turns=8, max_turns=16, observation_tokens=512,
                environment=EnvironmentTime(mean_seconds=5, max_seconds=30))  # fmt: skip
    base.update(agent)
    wl = workload(prompts_per_step=32, samples_per_prompt=8, prompt_tokens=2048,
                  response_tokens=1024, max_response_tokens=4096)  # fmt: skip
    return wl.model_copy(update={"agent": agentic(**base)})


def test_the_environment_pool_is_a_bound_of_its_own() -> None:
    # 256 episodes, each 20 s of setup + 8 x 5 s of environment = 60 s, on 4 slots: the pool
    # alone needs 256 x 60 / 4 = 3840 s, more than any GPU work of this rollout.
    wl = multi_turn(setup_seconds=20, environment_slots=4)
    plans = one_plan(placement="disaggregated", rollout_gpus=8, train_gpus=8)
    costs = evaluate(H100, QWEN25_7B, wl, plans)
    rollout = costs.stages["rollout"]
    assert rollout.environment_seconds[0] == pytest.approx(256 * 60 / 4)
    assert rollout.work_seconds[0] == pytest.approx(256 * 60 / 4)
    assert BOUNDS[int(rollout.bound[0])] == "environment"
    assert costs.row(0)["stages"][0]["bound"] == "environment"
    assert rollout.lower_seconds[0] <= rollout.seconds[0] <= rollout.upper_seconds[0]


def test_the_chain_is_turns_times_decode_and_environment() -> None:
    # One episode in flight per engine decodes alone (b = 1) whatever it waits for, so the
    # decode part of the chain is fixed and slower environments lengthen the longest
    # episode's chain by exactly (N_max - 1) x 10 s + (40 - 30) s = 160 s.
    plans = one_plan()
    chains = []
    for mean, slowest in ((5.0, 30.0), (15.0, 40.0)):
        wl = multi_turn(environment=EnvironmentTime(mean_seconds=mean, max_seconds=slowest))
        episode = Episode(**{**_fields(Episode.of(wl)), "episodes_per_engine": 1.0})
        parts = evaluate(H100, QWEN25_7B, wl, plans, episode=episode).agentic_parts
        assert parts["decode_batch"][0] == 1.0
        chains.append(parts["episode_chain_seconds"][0])
    assert chains[1] - chains[0] == pytest.approx(15 * 10 + 10)


def test_lockstep_waits_for_every_turn() -> None:
    plans = random_plans(3, QWEN25_7B, 30)
    wl = multi_turn()
    free = evaluate(H100, QWEN25_7B, wl, plans, episode=Episode.of(wl))
    episode = Episode(**{**_fields(Episode.of(wl)), "lockstep": True})
    locked = evaluate(H100, QWEN25_7B, wl, plans, episode=episode)
    assert (locked.stages["rollout"].seconds >= free.stages["rollout"].seconds - 1e-9).all()


def _fields(episode: Episode) -> dict[str, object]:
    return {name: getattr(episode, name) for name in Episode.__slots__}  # type: ignore[attr-defined]


def test_kept_contexts_bound_the_episodes_in_flight() -> None:
    # Long kept contexts fill the KV cache: fewer episodes fit in flight than a re-rendered
    # history needs room for, which holds only the decoding ones.
    wl = multi_turn(turns=24, max_turns=32, observation_tokens=2048)
    plans = one_plan(placement="disaggregated", prefix_caching=True)
    kept = evaluate(H100, QWEN25_7B, wl, plans).agentic_parts
    wl_rebuilt = multi_turn(turns=24, max_turns=32, observation_tokens=2048, context="rebuilt")
    rebuilt = evaluate(H100, QWEN25_7B, wl_rebuilt, plans).agentic_parts
    assert kept["episodes_in_flight_per_engine"][0] < rebuilt["episodes_in_flight_per_engine"][0]
    assert kept["kv_held_gib"][0] > 0 and rebuilt["kv_held_gib"][0] == 0


@settings(max_examples=40, deadline=None)
@given(
    turns=st.floats(1, 12),
    extra_turns=st.integers(0, 8),
    observation=st.integers(0, 4096),
    env=st.floats(0, 60),
    slowest=st.floats(0, 120),
    slots=st.one_of(st.none(), st.integers(1, 4096)),
    rebuilt=st.booleans(),
)
def test_brent_bounds_hold_for_agentic_rollouts(
    turns: float, extra_turns: int, observation: int, env: float, slowest: float,
    slots: int | None, rebuilt: bool,
) -> None:  # fmt: skip
    agent = dict(
        turns=turns, max_turns=math.ceil(turns) + extra_turns, observation_tokens=observation,
        environment=EnvironmentTime(mean_seconds=env, max_seconds=max(env, slowest)),
        environment_slots=slots, context="rebuilt" if rebuilt else "appended",
    )  # fmt: skip
    wl = workload(prompts_per_step=16, samples_per_prompt=4, prompt_tokens=512,
                  response_tokens=256, max_response_tokens=1024)  # fmt: skip
    wl = wl.model_copy(update={"agent": agentic(**agent)})
    costs = evaluate(H100, QWEN25_7B, wl, random_plans(11, QWEN25_7B, 12))
    for name in STAGES:
        s = costs.stages[name]
        assert (s.lower_seconds <= s.seconds * (1 + 1e-9) + 1e-12).all()
        assert (s.seconds <= s.upper_seconds * (1 + 1e-9) + 1e-12).all()
    assert np.isfinite(costs.step_seconds).all() and (costs.step_seconds > 0).all()


AGENT_SCENARIO = """
cluster: {accelerator: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}
models: {policy: qwen2.5-7b, reward: verifier}
workload:
  algorithm: grpo
  prompts_per_step: 16
  samples_per_prompt: 4
  prompt_tokens: 1024
  response_tokens: 512
  max_response_tokens: 2048
  agent: {turns: 4, observation_tokens: 256, environment: {mean_seconds: 2}}
"""


@pytest.mark.parametrize(
    ("assignment", "field", "reason"),
    [
        ("workload.agent.environment.mean_seconds=-1", "environment.mean_seconds", "or equal to 0"),
        ("workload.agent.environment.mean_seconds=.inf", "environment.mean_seconds", "finite"),
        ("workload.agent.environment.max_seconds=.nan", "environment.max_seconds", "finite"),
        ("workload.agent.setup_seconds=-5", "setup_seconds", "or equal to 0"),
        ("workload.agent.turns=0", "turns", "or equal to 1"),
        ("workload.agent.environment_slots=0", "environment_slots", "greater than 0"),
        ("workload.agent.max_turns=2", "", "max_turns (2) is below the mean turns"),
    ],
)
def test_bad_agentic_input_is_one_line_naming_the_field(
    tmp_path, assignment: str, field: str, reason: str
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT_SCENARIO)
    result = run_cli("recommend", str(path), "--set", assignment)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"workload.agent{field and '.' + field}" in lines[0]
    assert reason in lines[0]
    assert "Traceback" not in result.stderr


def test_a_reward_per_turn_scores_every_turns_prefix() -> None:
    # A reward model after each of 6 turns reads each turn's prefix: the passes of a process
    # reward model scoring per prefix, 6 steps; a reward per episode is one pass.
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import DEFAULT_ROOTS
    from rlmguide.kb.schema import Scenario
    from rlmguide.rules.scenario import resolve

    catalog = load_catalog(DEFAULT_ROOTS).records
    data = {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1},
        "models": {"policy": "qwen2.5-7b", "reward": "qwen2.5-7b"},
        "workload": {
            "algorithm": "ppo", "prompts_per_step": 8, "prompt_tokens": 512,
            "response_tokens": 256, "agent": {"turns": 5.2, "reward": "turn"},
        },
    }  # fmt: skip
    scoring = resolve(Scenario.model_validate(data), catalog).scoring
    assert (scoring.kind, scoring.steps_per_response, scoring.per_prefix) == (
        "process-reward-model", 6, True,
    )  # fmt: skip
    data["workload"]["agent"] = {"turns": 5.2}  # type: ignore[index]
    assert resolve(Scenario.model_validate(data), catalog).scoring.kind == "reward-model"
