"""Search-based assessment: completions decoded from each response's intermediate states.

VinePPO values every state of a response by Monte Carlo: from the prompt and from the prompt
with each reasoning step but the last, K completions are decoded by the policy and scored, and
the state's value is their mean reward (McGill-NLP/VinePPO, K = 9). A tree search over steps
(MCTS, survey Table 2: a process reward that is "sequential if verification is sequential")
does the same work one level after another, each level chosen from the scores of the last.

Both are generation, by the rollout engine after the responses it continues: a state k of
depth S continues a prefix of k/S of the response (k = 0..S-1) for the remaining (S-k)/S, so
every completion ends as long as a response. All at once, the S x K completions of a response
are one batch at the mean prefix and the mean remainder, (S-1)/2S and (S+1)/2S of the
response, with the longest response's remainder as the longest; one level after another, each
level is its own batch at its own lengths, and the search lasts the sum of the levels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.rollout import Stream, rollout_stage
from rlmguide.cost.stage import StageCost, chain
from rlmguide.kb.schema import Workload


@dataclass(frozen=True, slots=True)
class StepSearch:
    depth: int
    """States searched from per response."""
    branching: int
    """Completions decoded from each state."""
    sequential: bool = False
    """The states one after another (a tree search) instead of all at once (VinePPO)."""

    @classmethod
    def of(cls, workload: Workload, needs: Needs) -> StepSearch | None:
        """The workload's search, its branching defaulted from the algorithm; None where the
        workload searches nothing (the scenario layer refuses a search without a branching)."""
        given = workload.search
        if given is None:
            return None
        branching = given.branching or needs.value_rollouts_per_state
        if branching is None:
            raise ValueError("workload.search.branching is unset and the algorithm has none")
        return cls(given.depth, branching, given.sequential)

    @property
    def completions_per_response(self) -> int:
        return self.depth * self.branching

    def spans(self, response: float) -> list[tuple[int, float, float]]:
        """Per level: states per response, and the prefix each continues and the remainder
        it decodes, as shares of a response of `response` tokens (the mean or the longest)."""
        depth = self.depth
        if not self.sequential:
            prefix = response * (depth - 1) / (2.0 * depth)
            return [(depth, prefix, response - prefix)]
        return [(1, response * k / depth, response * (depth - k) / depth) for k in range(depth)]

    def levels(self, batch: Batch) -> list[Batch]:
        """The batches the engine decodes: one per state level when sequential, else one.
        All at once, the longest completion is the longest response's (from the prompt)."""
        responses = batch.generated_sequences
        means = self.spans(batch.response_tokens)
        longest = (
            [rest for _, _, rest in self.spans(batch.longest_response)]
            if self.sequential
            else [batch.longest_response]
        )
        # each state is a "prompt" whose K completions share its prefix (a group)
        return [
            replace(
                batch,
                prompts=responses * states,
                group=self.branching,
                generated_per_prompt=self.branching,
                prompt_tokens=batch.prompt_tokens + prefix,
                response_tokens=remainder,
                longest_response=max(last, remainder),
            )
            for (states, prefix, remainder), last in zip(means, longest, strict=True)
        ]


def search_stage(
    fig: ModelFigures,
    layout: RolloutLayout,
    batch: Batch,
    search: StepSearch,
    capacity: FloatArray,
    caps: FloatArray,
    prefix_caching: BoolArray,
    hw: Hardware,
    fabric: Fabric,
    eff: EfficiencyFactors,
    overheads: Overheads,
    admitted: FloatArray,
    responses: Stream,
) -> tuple[StageCost, Stream]:
    """The search's decoding on the rollout layout, its levels one after another, and the
    `responses` stream with the search after them: its production adds to the responses' and
    its latency follows theirs, at the responses' steady batch. The KV capacity is the
    responses' (no completion is longer than a response); with prefix caching a state's
    completions share its prefill, not the states of one response theirs."""
    stages: list[StageCost] = []
    produce, latency = responses.produce_seconds, responses.sequence_seconds
    for level in search.levels(batch):
        cap = np.minimum(caps, level.longest_response)
        stage, extras = rollout_stage(
            fig, layout, level, capacity, cap, prefix_caching, hw, fabric, eff, overheads,
            admitted,
        )  # fmt: skip
        stages.append(stage)
        produce = produce + extras.stream.produce_seconds
        latency = latency + extras.stream.sequence_seconds
    return chain(stages), Stream(responses.concurrency, produce, latency)
