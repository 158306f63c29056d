"""An agentic episode's shape: model turns, observations, environment time, as scalars.

The workload is the same for every plan of a table, so these are plain floats. A single-turn
rollout is the episode of one turn, no observation and no environment time: `Episode()`.
`response_tokens` and `max_response_tokens` of the workload are one model turn's tokens; an
episode of N turns trains on its whole trajectory, N turns and the N - 1 observations between
them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rlmguide.kb.schema import RolloutPlan, Workload


@dataclass(frozen=True, slots=True)
class Episode:
    turns: float = 1.0
    """Mean model turns per episode."""
    max_turns: float = 1.0
    """Turns of the longest episode."""
    observation_tokens: float = 0.0
    """Mean tokens one environment step appends (after every turn but the last)."""
    environment_seconds: float = 0.0
    """Mean seconds of one environment step; one step follows every model turn."""
    environment_max_seconds: float = 0.0
    """The slowest step, on the longest episode's chain."""
    setup_seconds: float = 0.0
    """Once per episode, before its first turn (sandbox start-up)."""
    environment_slots: float = math.inf
    """Environment steps running at once over the cluster."""
    appended: bool = True
    """Each turn extends the previous tokens (its KV can be kept); else the history is
    re-rendered and prefilled whole every turn."""
    lockstep: bool = False
    """Every turn waits for the whole batch's decode and environment steps."""
    episodes_per_engine: float = math.inf
    """A cap on the episodes one engine keeps in flight."""
    reward_per_turn: bool = False

    @classmethod
    def of(cls, workload: Workload, rollout: RolloutPlan | None = None) -> Episode:
        agent = workload.agent
        knobs = {}
        if rollout is not None:
            knobs = {
                "lockstep": rollout.stepping == "lockstep",
                "episodes_per_engine": float(rollout.episodes_per_engine or math.inf),
            }
        if agent is None:
            return cls(**knobs)
        env = agent.environment
        mean = env.mean_seconds if env else 0.0
        slowest = env.max_seconds if env and env.max_seconds is not None else mean
        return cls(
            turns=agent.turns,
            max_turns=float(agent.max_turns or math.ceil(agent.turns)),
            observation_tokens=float(agent.observation_tokens),
            environment_seconds=mean,
            environment_max_seconds=slowest,
            setup_seconds=agent.setup_seconds,
            environment_slots=float(agent.environment_slots or math.inf),
            appended=agent.context == "appended",
            reward_per_turn=agent.reward == "turn",
            **knobs,
        )

    @property
    def single_turn(self) -> bool:
        """One prompt, one response, nothing in between: the rollout of cost.rollout."""
        return (
            self.max_turns == 1.0
            and self.environment_max_seconds == 0.0
            and self.setup_seconds == 0.0
            and math.isinf(self.episodes_per_engine)
        )

    def trajectory_response(self, turn_tokens: float) -> float:
        """Mean tokens after the prompt: every turn and the observations between them."""
        return self.turns * turn_tokens + (self.turns - 1.0) * self.observation_tokens

    def longest_trajectory_response(self, turn_tokens: float, longest_turn: float) -> float:
        """The longest episode after its prompt: max_turns turns, one of them the longest."""
        return (self.max_turns - 1.0) * (turn_tokens + self.observation_tokens) + longest_turn
