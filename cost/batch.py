"""What one RL step processes: sequences generated and trained, their lengths, the algorithm's
models. Scalars: the workload is the same for every plan of a table."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rlmguide.cost.episode import Episode
from rlmguide.cost.lengths import budgeted
from rlmguide.kb.schema import Algorithm, Workload


@dataclass(frozen=True, slots=True)
class Needs:
    """The models and passes an algorithm needs, as the cost core sees them."""

    needs_critic: bool = False
    needs_reference: bool = True
    extra_generations_per_prompt: int = 0
    """Responses generated but not trained on, such as ReMax's greedy baseline."""
    samples_per_prompt: int | None = None
    """The algorithm's typical group size, used when the workload leaves it out."""
    offline: bool = False
    """Offline preference optimisation (DPO and its family): the responses come with the
    dataset, so nothing is generated (cost.offline)."""
    objectives: int = 1
    """Objectives scored and valued apart: each has its own scoring model (where rewards
    come from a model) and its own value model (where the algorithm trains one). Safe-RLHF
    has two, reward and cost."""
    value_rollouts_per_state: int | None = None
    """Completions the algorithm decodes from each state to value it (VinePPO): the default
    branching of the workload's search."""

    @classmethod
    def of(cls, algorithm: Algorithm) -> Needs:
        return cls(
            needs_critic=algorithm.needs_critic,
            needs_reference=algorithm.needs_reference,
            extra_generations_per_prompt=algorithm.extra_generations_per_prompt,
            samples_per_prompt=algorithm.typical_samples_per_prompt,
            offline=not algorithm.online,
            objectives=algorithm.objectives,
            value_rollouts_per_state=algorithm.value_rollouts_per_state,
        )


def response_lengths(workload: Workload) -> tuple[float, float]:
    """Mean and longest tokens of one response (one model turn of an episode) as generated:
    the workload's lengths, cut at its reasoning budget. Without a maximum every response has
    the mean length (no spread is invented)."""
    longest = workload.max_response_tokens or workload.response_tokens
    return budgeted(workload.response_tokens, longest, workload.reasoning_budget)


@dataclass(frozen=True, slots=True)
class Batch:
    prompts: int
    group: int
    """Trained responses per prompt (the group size)."""
    generated_per_prompt: int
    """Responses generated per prompt: the group plus extra generations (none offline)."""
    prompt_tokens: float
    """Mean prompt length."""
    response_tokens: float
    """Mean response length (as generated: cut at the reasoning budget)."""
    longest_response: float
    """max_response_tokens, or the reasoning budget below it: the rollout's depth. When the
    workload gives no maximum, every response is taken to have the mean length (no spread is
    invented)."""
    minibatches: int
    epochs: int
    prompt_tail: float = 0.0
    """Tokens the longest prompt has beyond the mean (workload.max_prompt_tokens less
    prompt_tokens): an offset, so that tokens added to every prompt (a judge's rubric, a
    searched state's prefix) lengthen the longest one too."""
    sized_at_cap: bool = False
    """The mean is the length prior's, not the run's (workload.response_tokens_from): memory
    is then sized as if every response ran to the longest, since a launch must fit a step
    whose responses all run long, while time follows the prior's spread of lengths."""

    @classmethod
    def of(cls, workload: Workload, needs: Needs) -> Batch:
        default = 2 if needs.offline else 1  # offline preference methods train on pairs
        group = workload.samples_per_prompt or needs.samples_per_prompt or default
        mean, longest = response_lengths(workload)
        if workload.agent is not None:
            # An agentic episode trains on its whole trajectory: turns and observations.
            episode = Episode.of(workload)
            mean, longest = (
                episode.trajectory_response(mean),
                episode.longest_trajectory_response(mean, longest),
            )
        return cls(
            prompts=workload.prompts_per_step,
            group=group,
            generated_per_prompt=0 if needs.offline else group + needs.extra_generations_per_prompt,
            prompt_tokens=float(workload.prompt_tokens),
            prompt_tail=float(workload.longest_prompt - workload.prompt_tokens),
            response_tokens=mean,
            longest_response=float(longest),
            minibatches=workload.minibatches_per_step,
            epochs=workload.epochs,
            sized_at_cap=workload.response_tokens_from == "prior",
        )

    @property
    def generated_sequences(self) -> int:
        return self.prompts * self.generated_per_prompt

    @property
    def trained_sequences(self) -> int:
        return self.prompts * self.group

    @property
    def sequence_tokens(self) -> float:
        """Mean tokens of one trained sequence (prompt + response)."""
        return self.prompt_tokens + self.response_tokens

    @property
    def longest_prompt(self) -> float:
        return self.prompt_tokens + self.prompt_tail

    @property
    def longest_sequence_tokens(self) -> float:
        """The longest prompt with the longest response: what one sequence may hold, at the
        launch's caps."""
        return self.longest_prompt + self.longest_response

    def for_memory(self) -> Batch:
        """The batch a step's memory is sized at: this one, or where the mean is only the
        prior's (sized_at_cap) the same with every sequence at the caps, prompt and response."""
        if not self.sized_at_cap:
            return self
        return replace(
            self,
            prompt_tokens=self.longest_prompt,
            prompt_tail=0.0,
            response_tokens=self.longest_response,
        )

    @property
    def trained_tokens(self) -> float:
        """(prompt + response) tokens trained per step: the numerator of tokens_per_second."""
        return self.trained_sequences * self.sequence_tokens

    @property
    def optimizer_steps(self) -> int:
        return self.minibatches * self.epochs
