"""Assessment's forward passes in the survey's units (arXiv:2608.27046, §2.2, Table 2, B.4.1):
which models run, on how many tokens, and what each costs in work, depth and memory.

Table 4 writes Assessment as one teacher-forced pass per model over S+T tokens. A plan can ask
for more, and the survey names each case: old log-probs recomputed by the actor (B.4.1: one
more BK(S+T) C_f(π_θ) and D_f(π_θ)); a process reward model scoring every step prefix (Table 2:
high overhead); an LLM judge that reads a rubric and writes a verdict (d-RLAIF, §2.2: its
Assessment is a generation, prefill and decode, Table 3's C_gen and D_gen); a shared
actor-critic whose value head rides on the actor's recomputed pass (B.4.3). Units as in
`cost.survey_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from rlmguide.cost.survey_formula import states
from rlmguide.cost.survey_model import (
    Role,
    SurveyShape,
    forward_depth,
    forward_flops,
    generation_depth,
    generation_flops,
    inference_buffer_per_token,
    kv_cache,
    log2,
    parameters,
)

ScorerKind = Literal["reward-model", "process-reward-model", "llm-judge"]
PassName = Literal["reference", "actor", "critic", "reward"]


@dataclass(frozen=True, slots=True)
class Scorer:
    """How R_φ assesses one response (the calibrated `cost.assessment.Scoring`, in the
    survey's terms)."""

    kind: ScorerKind = "reward-model"
    calls: int = 1
    """LLM judge: verdicts per response, each read from its own prefill."""
    rubric_tokens: int = 0
    """LLM judge: tokens of rubric and instructions read beside prompt and response."""
    verdict_tokens: int = 0
    """LLM judge: tokens written per verdict (0 or 1: the score is read from the prefill)."""
    steps: int = 1
    """Process reward model: reasoning steps per response."""
    per_prefix: bool = False
    """Process reward model: one pass per step prefix, not one pass per response."""
    chained: bool = False
    """Process reward model per prefix: each step verified after the previous verdict."""


ONE_PASS = Scorer()


@dataclass(frozen=True, slots=True)
class Pass:
    """One model's part of Assessment, per response: a forward over each context in
    `contexts` (one for most models; a process reward model's prefixes; a judge's calls), a
    judge's verdict decode after each, or only a value head on another model's pass."""

    name: PassName
    shape: SurveyShape
    role: Role
    contexts: tuple[float, ...]
    verdict: float = 0.0
    """Tokens an LLM judge generates after each context (0: a teacher-forced pass)."""
    head_only: bool = False
    """The shared actor-critic's value head on the actor's recomputed pass (B.4.3): 2d per
    token and the head's reduction, no weights of its own."""
    chained: bool = False
    """The contexts run one after another (a sequential verification), not side by side."""
    scored: float = 1.0
    """Sequences scored per response: the response and a search's completions from its
    states, each as long as a response."""

    def work(self, sequences: float) -> float:
        """FLOPs over `sequences` responses."""
        s = self.shape
        sequences = sequences * self.scored
        if self.head_only:
            per_token = forward_flops(s, self.contexts[0], "shared") - forward_flops(
                s, self.contexts[0], "policy"
            )
            return sequences * self.contexts[0] * float(per_token)
        if self.verdict:
            return sequences * sum(
                float(generation_flops(s, c, self.verdict)) for c in self.contexts
            )
        return sequences * sum(c * float(forward_flops(s, c, self.role)) for c in self.contexts)

    def depth(self, tp: float = 1.0) -> float:
        """The pass's critical path; several contexts of one response run side by side."""
        s = self.shape
        if self.head_only:
            return float(log2(s.hidden) - log2(tp))
        longest = max(self.contexts)
        if self.verdict:
            return float(generation_depth(s, longest, self.verdict, tp))
        if self.chained:
            return sum(float(forward_depth(s, c, tp)) for c in self.contexts)
        return float(forward_depth(s, longest, tp))

    @property
    def weights(self) -> float:
        return 0.0 if self.head_only else parameters(self.shape, self.role)

    def buffer(self, sequences: float) -> float:
        """Live elements beside the weights: M_Inf a token for a teacher-forced pass, the KV
        cache of every verdict being written for a judge's decode."""
        if self.head_only:
            return 0.0
        sequences = sequences * self.scored
        if self.verdict:
            return sequences * sum(
                float(kv_cache(self.shape, c, self.verdict)) for c in self.contexts
            )
        per_token = inference_buffer_per_token(self.shape)
        if self.chained:  # one prefix's pass at a time
            return sequences * max(self.contexts) * per_token
        return sequences * sum(self.contexts) * per_token


@states(
    "Table 4",
    "Assessment by a process reward model scored prefix by prefix",
    "W_A(R_φ), D_A(R_φ)",
    "BK Σ_{k=1}^{n} m_k C_f(R_φ; m_k), m_k = S + kT/n; max_k D_f(R_φ; m_k)",
    "§2.2, Table 2, B.4.1",
    "n steps per response; the prefixes are independent passes, so they run side by side.",
)
def prefixes(prompt: float, response: float, steps: int) -> tuple[float, ...]:
    """The contexts a process reward model reads when it scores each of `steps` prefixes."""
    k = np.arange(1, steps + 1, dtype=float)
    return tuple(float(x) for x in prompt + k * response / steps)


@states(
    "Table 4",
    "Assessment by an LLM judge (d-RLAIF): one generation per verdict",
    "W_A(R_φ), D_A(R_φ)",
    "BK c C_gen(R_φ; S+T+r, v); D_gen(R_φ; S+T+r, v)",
    "§2.2, Table 3, B.1.3",
    "c calls per response, r rubric tokens, v verdict tokens: the judge prefills prompt, "
    "response and rubric (which yields the first token), then decodes the rest of its "
    "verdict; a verdict read from the prefill alone is v = 1.",
)
def reward_pass(
    shape: SurveyShape, scorer: Scorer, prompt: float, response: float, scored: float = 1.0
) -> Pass:
    """R_φ's part of Assessment as the scorer asks for it, over `scored` sequences per
    response (a search's completions beside the response)."""
    context = prompt + response
    if scorer.kind == "llm-judge":
        read = (context + scorer.rubric_tokens,) * scorer.calls
        verdict = float(max(scorer.verdict_tokens, 1))
        return Pass("reward", shape, "policy", read, verdict=verdict, scored=scored)
    if scorer.kind == "process-reward-model" and scorer.per_prefix:
        steps = prefixes(prompt, response, scorer.steps)
        return Pass("reward", shape, "reward", steps, chained=scorer.chained, scored=scored)
    return Pass("reward", shape, "reward", (context,), scored=scored)
