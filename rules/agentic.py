"""What an agentic workload changes in a recommendation, in words: the longest episode's chain
of turns and environment steps, the time the rollout GPUs wait, and what overlapping steps
gains over the best synchronous plan."""

from __future__ import annotations

import numpy as np
from rlmguide.cost.evaluate import CostTable
from rlmguide.cost.plans import SYNC


def agentic_notes(costs: CostTable, order: np.ndarray, best: int) -> list[str]:
    """One note on the best plan's agentic rollout (none for single-turn rollouts)."""
    if not costs.agentic_parts:
        return []
    parts = costs.row(best)["agentic"]
    rollout = float(costs.stages["rollout"].seconds[best])
    chain, wait = parts["episode_chain_seconds"], parts["gpu_wait_seconds"]
    note = (
        f"agentic episodes: the longest episode's chain of turns (decode and environment "
        f"steps) takes {chain:.0f} s of the rollout's {rollout:.0f} s, and the rollout GPUs "
        f"wait {wait:.0f} s of it ({parts['decode_batch']:.0f} of "
        f"{parts['episodes_in_flight_per_engine']:.0f} episodes in flight per engine decode "
        "at once); a synchronous step waits for that chain, overlapping steps hides it"
    )
    synchronous = order[costs.plans.execution[order] == SYNC]
    step = float(costs.step_seconds[best])
    if synchronous.size and costs.plans.execution[best] != SYNC:
        slower = float(costs.step_seconds[synchronous[0]]) / step
        note += f": the best synchronous plan is {slower:.2f}x this plan's step"
    return [note]
