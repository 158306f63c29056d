"""One RL iteration in the survey's model: the stage primitives of §4.6 / B.4.1 (Table 4 per
algorithm) and the work, depth and peak memory of each inter-model configuration of Table 9.

The models present decide the algorithm: PPO has a critic, GRPO none; a verifier reward is no
model (its forward pass is not in the survey's Assessment). Old log-probs are taken from the
sampling logits, as Table 9 assumes. Units as in `cost.survey_model`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rlmguide.cost.step_search import StepSearch
from rlmguide.cost.survey_assessment import ONE_PASS, Pass, Scorer, reward_pass
from rlmguide.cost.survey_formula import states
from rlmguide.cost.survey_model import (
    Role,
    SurveyShape,
    activations_per_token,
    backward_depth,
    backward_flops,
    forward_depth,
    forward_flops,
    generation_depth,
    generation_flops,
    inference_buffer_per_token,
    kv_cache,
    parameters,
    train_depth,
    train_flops,
)


@dataclass(frozen=True, slots=True)
class Iteration:
    """B prompts, K responses each, S prompt and T response tokens (means)."""

    prompts: float
    samples: float
    prompt_tokens: float
    response_tokens: float
    search: StepSearch | None = None
    """Completions decoded from each response's states after it (cost.step_search): more
    generation, and more responses for a reward model to score."""

    @property
    def sequences(self) -> float:
        return self.prompts * self.samples

    @property
    def context(self) -> float:
        return self.prompt_tokens + self.response_tokens


@dataclass(frozen=True, slots=True)
class Models:
    """The policy and the auxiliary models present (None: absent), and how Assessment uses
    them: the reference has the policy's shape unless the plan gives another; the critic
    carries a value head; the reward model a last-token head, or scores as `scorer` says;
    `old_log_probs`: the actor recomputes its log-probs in a teacher-forced pass (B.4.1), where
    Table 9 assumes they come from the sampling logits."""

    policy: SurveyShape
    reference: SurveyShape | None = None
    reward: SurveyShape | None = None
    critic: SurveyShape | None = None
    scorer: Scorer = ONE_PASS
    old_log_probs: bool = False
    objectives: int = 1
    """Objectives scored and valued apart (Safe-RLHF: reward and cost): a reward model and a
    critic of the same shapes for each."""

    def passes(self, it: Iteration, shared: bool = False) -> list[Pass]:
        """Assessment's passes, in the order the calibrated plan runs them. A shared
        actor-critic answers the critic's with its own backbone and value head; where the
        actor's pass runs anyway (old log-probs recomputed), the value head rides on it."""
        m = it.context
        found: list[Pass] = []
        if self.reference is not None:
            found.append(Pass("reference", self.reference, "policy", (m,)))
        if self.old_log_probs:
            found.append(Pass("actor", self.policy, "policy", (m,)))
        if self.critic is not None:
            riding = shared and self.old_log_probs
            shape = self.policy if shared else self.critic
            # a shared backbone serves every objective's value head in one pass
            critics = 1 if shared else self.objectives
            found += [Pass("critic", shape, "critic", (m,), head_only=riding)] * critics
        if self.reward is not None:
            searched = it.search.completions_per_response if it.search else 0
            scored = reward_pass(
                self.reward, self.scorer, it.prompt_tokens, it.response_tokens, 1.0 + searched
            )
            found += [scored] * self.objectives
        return found

    def trained(self, shared: bool = False) -> list[tuple[SurveyShape, Role]]:
        if shared and self.critic is not None:
            return [(self.policy, "shared")]
        critic: list[tuple[SurveyShape, Role]] = [(self.critic, "critic")] if self.critic else []
        return [(self.policy, "policy"), *critic * self.objectives]


@dataclass(frozen=True, slots=True)
class Stages:
    """The stage primitives of B.4.1 (Σ: one device group in sequence, max: one group each)."""

    gen_work: float
    gen_depth: float
    gen_memory: float
    assess_work: float
    assess_depth_sum: float
    assess_depth_max: float
    assess_memory_sum: float
    assess_memory_groups: tuple[float, ...]
    """Each assessment model on its own group: |M| + BK(S+T) M_Inf(M)."""
    assess_weights: tuple[float, ...]
    train_work: float
    train_depth_sum: float
    train_depth_max: float
    train_memory_sum: float
    train_memory_max: float


def _max(values: list[float]) -> float:
    return max(values, default=0.0)


def generation(pi: SurveyShape, it: Iteration, tp: float = 1.0) -> tuple[float, float, float]:
    """Generation's work, depth (at tensor degree `tp`) and live KV elements: the responses,
    then a search's completions from their states, its levels one after another (each
    level's completions side by side)."""
    b, s_, t_ = it.sequences, it.prompt_tokens, it.response_tokens
    work = float(b * generation_flops(pi, s_, t_))
    depth = float(generation_depth(pi, s_, t_, tp))
    live = b * float(kv_cache(pi, s_, t_))
    if it.search is not None:
        k = it.search.branching
        for states, prefix, rest in it.search.spans(t_):
            work += b * states * k * float(generation_flops(pi, s_ + prefix, rest))
            depth += float(generation_depth(pi, s_ + prefix, rest, tp))
            live = max(live, b * states * k * float(kv_cache(pi, s_ + prefix, rest)))
    return work, depth, live


@states(
    "Table 4",
    "Generation stage",
    "W_G, D_G, M_G",
    "BK · C_gen(π_θ); D_gen(π_θ); |π_θ| + BK · M_KV",
    "B.2.1.1, B.4.1",
)
@states(
    "Table 4",
    "Assessment stage",
    "W_A, D_A^Σ, D_A^max, M_A^Σ",
    "BK(S+T)[C_f(π_ref) + C_f(R_φ) + C_f(V_ψ)]; D_f(π_ref) + D_f(R_φ) + D_f(V_ψ) "
    "(one group) or their max (one group each); |π_ref| + |R_φ| + |V_ψ| + "
    "BK(S+T) max M_Inf",
    "B.2.1.2, B.4.1",
    "GRPO drops V_ψ; a verifier reward drops R_φ.",
)
@states(
    "Table 4",
    "Training stage",
    "W_T, D_T^Σ, D_T^max, M_T^Σ, M_T^max",
    "BK(S+T)[C_tr(π_θ) + C_tr(V_ψ)]; D_tr(π_θ) + D_tr(V_ψ) or their max; "
    "4(|π_θ| + |V_ψ|) + BK(S+T)(L_π d_π + L_V d_V), or the max of each model's share",
    "B.2.1.3, B.4.1",
    "GRPO trains π_θ only.",
)
def stages(models: Models, it: Iteration, shared: bool = False) -> Stages:
    """Generation, Assessment and Training of one iteration (`shared`: the critic is a value
    head on the policy, Table 9's AC shared)."""
    b, m = it.sequences, it.context
    pi = models.policy
    assessed = models.passes(it, shared)
    trained = models.trained(shared)
    forward = [p.depth() for p in assessed]
    buffers = [p.buffer(b) for p in assessed]
    weights = tuple(p.weights for p in assessed)
    fits = [4.0 * parameters(s, role) + b * m * activations_per_token(s) for s, role in trained]
    updates = [float(train_depth(s, m, b)) for s, _ in trained]
    gen_work, gen_depth, gen_live = generation(pi, it)
    return Stages(
        gen_work=gen_work,
        gen_depth=gen_depth,
        gen_memory=parameters(pi, "policy") + gen_live,
        assess_work=sum(p.work(b) for p in assessed),
        assess_depth_sum=sum(forward),
        assess_depth_max=_max(forward),
        assess_memory_sum=sum(weights) + _max(buffers),
        assess_memory_groups=tuple(w + f for w, f in zip(weights, buffers, strict=True)),
        assess_weights=weights,
        train_work=b * m * sum(float(train_flops(s, m, r)) for s, r in trained),
        train_depth_sum=sum(updates),
        train_depth_max=_max(updates),
        train_memory_sum=sum(fits),
        train_memory_max=_max(fits),
    )


@states(
    "Table 4",
    "Assessment of DPO (offline)",
    "W_A, D_A, M_A",
    "B_pairs(S+T)[C_f(π_θ) + C_f(π_ref)]; max{D_f(π_θ), D_f(π_ref)} (concurrent) or their "
    "sum; |π_θ| + |π_ref| + B_pairs(S+T) M_Act(π_θ)",
    "B.2.2",
    "Read with B_pairs(S+T) as the tokens of both responses of every pair (a pair is two "
    "sequences). ORPO and SimPO drop π_ref. Nothing is generated.",
)
@states(
    "Table 4",
    "Training of DPO (offline)",
    "W_T, D_T, M_T",
    "B_pairs(S+T) C_b(π_θ); D_b(π_θ); 4|π_θ| + B_pairs(S+T) M_Act(π_θ)",
    "B.2.2",
    "The policy's forward is counted in the Assessment, as Table 4 splits it; the whole "
    "iteration is Θ(B_pairs(S+T)[C_f(π_θ) + C_f(π_ref) + C_b(π_θ)]) work and "
    "Θ(max{D_f(π_θ), D_f(π_ref), D_b(π_θ)}) depth (takeaway 6).",
)
def offline_stages(models: Models, it: Iteration) -> Stages:
    """Assessment and Training of one offline preference-optimisation iteration (DPO and its
    family); `it.sequences` counts both responses of every pair."""
    b, m = it.sequences, it.context
    pi = models.policy
    forwards = [s for s in (pi, models.reference) if s is not None]
    depths = [float(forward_depth(s, m)) for s in forwards]
    weights = tuple(parameters(s, "policy") for s in forwards)
    held = b * m * activations_per_token(pi)
    # The policy's group holds its activations for the backward; the reference's only the
    # inference buffer of its forward.
    buffers = (held, *(b * m * inference_buffer_per_token(s) for s in forwards[1:]))
    update = float(backward_depth(pi, m, b))
    trained = 4.0 * parameters(pi, "policy") + held
    return Stages(
        gen_work=0.0,
        gen_depth=0.0,
        gen_memory=0.0,
        assess_work=b * m * sum(float(forward_flops(s, m, "policy")) for s in forwards),
        assess_depth_sum=sum(depths),
        assess_depth_max=_max(depths),
        assess_memory_sum=sum(weights) + held,
        assess_memory_groups=tuple(w + x for w, x in zip(weights, buffers, strict=True)),
        assess_weights=weights,
        train_work=b * m * float(backward_flops(pi, m, "policy")),
        train_depth_sum=update,
        train_depth_max=update,
        train_memory_sum=trained,
        train_memory_max=trained,
    )


@dataclass(frozen=True, slots=True)
class Configuration:
    """Work, iteration depth and peak memory per device group of one Table 9 configuration."""

    name: str
    work: float
    depth: float
    memory: float


@dataclass(frozen=True, slots=True)
class Layouts:
    """The tensor-parallel degrees Table 9's hybrid and combined rows give Generation and
    Assessment (D_gen^TP, D_f^TP); Training keeps D_tr (its ZeRO-3 layout has no TP)."""

    generation_tp: float = 1.0
    assessment_tp: float = 1.0


def _total_work(st: Stages) -> float:
    return st.gen_work + st.assess_work + st.train_work


@states(
    "Table 9",
    "Baseline: one device group, stages in sequence",
    "D_base",
    "D_G + D_A^Σ + D_T^Σ; work W_G + W_A + W_T; memory max{M_G, M_A^Σ, M_T^Σ}",
    "B.4.2",
)
def baseline(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    st = stages(models, it)
    depth = st.gen_depth + st.assess_depth_sum + st.train_depth_sum
    memory = max(st.gen_memory, st.assess_memory_sum, st.train_memory_sum)
    return Configuration("baseline", _total_work(st), depth, memory)


@states(
    "Table 9",
    "Shared actor-critic (π_SH: one backbone, two heads)",
    "D_ac",
    "D_gen(π_SH) + D_f(π_ref) + D_f(R_φ) + D_f(π_SH) + D_tr(π_SH); work BK C_gen(π_SH) + "
    "BK(S+T)[C_f(π_ref) + C_f(R_φ) + C_f(π_SH) + C_tr(π_SH)]; memory max{|π_SH| + BK M_KV, "
    "|π_ref| + |R_φ| + |π_SH| + BK(S+T) max M_Inf, 4|π_SH| + BK(S+T) L_SH d_SH}",
    "B.4.3",
    "The only configuration that lowers work; none without a critic. π_SH is "
    "the policy's shape with a value head.",
)
def shared_actor_critic(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    if models.critic is None:
        return None
    st = stages(models, it, shared=True)
    depth = st.gen_depth + st.assess_depth_sum + st.train_depth_sum
    memory = max(st.gen_memory, st.assess_memory_sum, st.train_memory_sum)
    return Configuration("shared actor-critic", _total_work(st), depth, memory)


def _disaggregated_memory(st: Stages) -> float:
    return max(st.gen_memory, *st.assess_memory_groups, st.train_memory_max)


@states(
    "Table 9",
    "Disaggregated: one device group per model",
    "D_disagg",
    "D_G + D_A^max + D_T^max; work unchanged; memory max{M_G, |M| + BK(S+T) M_Inf(M) for "
    "each assessment model, 4|M| + BK(S+T) L_M d_M for each trained model}",
    "B.4.4",
)
def disaggregated(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    st = stages(models, it)
    depth = st.gen_depth + st.assess_depth_max + st.train_depth_max
    return Configuration("disaggregated", _total_work(st), depth, _disaggregated_memory(st))


@states(
    "Table 9",
    "Resharding buffer of a hybrid layout",
    "M_reshard",
    "|π_θ|: one copy of the actor's weights in the layout it is resharded into",
    "B.4.5",
    "B.4.5 names the transient buffer and leaves it unsized; one parameter copy is what a "
    "gather into the other layout holds while the source copy lives (in place resharding, "
    "verl's 3D-HybridEngine, holds less).",
)
def reshard_buffer(models: Models) -> float:
    return parameters(models.policy, "policy")


@states(
    "Table 9",
    "Hybrid: stage-specific layouts on one group",
    "D_hyb",
    "D_gen^TP(π_θ) + D_f^TP(π_ref) + D_f^TP(R_φ) + D_f^TP(V_ψ) + D_tr(π_θ) + D_tr(V_ψ); "
    "work as the baseline; memory max{M_G, M_A^Σ, M_T^Σ} + M_reshard",
    "B.4.5",
    "TP for Generation and Assessment, ZeRO-3 for Training.",
)
def hybrid(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    st = stages(models, it)
    gen = generation(models.policy, it, lay.generation_tp)[1]
    assess = sum(p.depth(lay.assessment_tp) for p in models.passes(it))
    depth = gen + assess + st.train_depth_sum
    memory = max(st.gen_memory, st.assess_memory_sum, st.train_memory_sum)
    return Configuration("hybrid", _total_work(st), depth, memory + reshard_buffer(models))


@states(
    "Table 9",
    "Stage fusion: Assessment streams behind Generation, actor and critic updates overlap",
    "D_fusion",
    "max{D_gen(π_θ), D_f(π_ref), D_f(R_φ), D_f(V_ψ)} + max{D_tr(π_θ), D_tr(V_ψ)}; work "
    "unchanged; memory max{M_G/A^fused, M_T^max}, M_G/A^fused = M_G + M_A^Σ",
    "B.4.6",
    "≈ D_G + D_T^max when generation dominates. M_G/A^fused holds the live KV cache, the "
    "assessment models' states and the buffers of the samples streamed into them (B.4.6), all "
    "at once: fusion raises the peak (§4.3).",
)
def stage_fusion(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    st = stages(models, it)
    depth = max(st.gen_depth, st.assess_depth_max) + st.train_depth_max
    memory = max(st.gen_memory + st.assess_memory_sum, st.train_memory_max)
    return Configuration("stage fusion", _total_work(st), depth, memory)


def _shadowed_memory(st: Stages, models: Models, gen_memory: float) -> float:
    """Table 9's async and combined peak: Generation with the actor's shadow copy
    M_sh(π_θ) (one more parameter copy, in elements), the frozen models, each trained model."""
    shadow = parameters(models.policy, "policy")
    return max(gen_memory + shadow, *st.assess_weights, st.train_memory_max)


@states(
    "Table 9",
    "Bounded asynchrony (disaggregated, steady state)",
    "D_async",
    "max{D_G + D_A^max, D_T^max}; work unchanged; memory max{|π_θ| + BK M_KV + M_sh(π_θ), "
    "|π_ref|, |R_φ|, |V_ψ|, M_T^max}",
    "B.4.7",
    "M_sh(π_θ) counted as one parameter copy |π_θ|.",
)
def asynchronous(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    st = stages(models, it)
    depth = max(st.gen_depth + st.assess_depth_max, st.train_depth_max)
    return Configuration(
        "asynchronous", _total_work(st), depth, _shadowed_memory(st, models, st.gen_memory)
    )


@states(
    "Table 9",
    "Combined: sharding, disaggregation, fusion and asynchrony",
    "D_comb",
    "max{max{D_gen^TP(π_θ), D_f(π_ref), D_f(R_φ), D_f(V_ψ)}, D_T^max}; work unchanged; "
    "memory as asynchrony",
    "B.4.8",
    "Table 9's conservative form, which keeps the assessment tail.",
)
def combined(models: Models, it: Iteration, lay: Layouts) -> Configuration | None:
    st = stages(models, it)
    gen = generation(models.policy, it, lay.generation_tp)[1]
    depth = max(max(gen, st.assess_depth_max), st.train_depth_max)
    return Configuration(
        "combined", _total_work(st), depth, _shadowed_memory(st, models, st.gen_memory)
    )


CONFIGURATIONS: tuple[Callable[[Models, Iteration, Layouts], Configuration | None], ...] = (
    baseline,
    shared_actor_critic,
    disaggregated,
    hybrid,
    stage_fusion,
    asynchronous,
    combined,
)
"""Table 9's rows in its order."""


def configurations(models: Models, it: Iteration, lay: Layouts) -> list[Configuration]:
    """Every Table 9 configuration that applies to these models."""
    found = (row(models, it, lay) for row in CONFIGURATIONS)
    return [c for c in found if c is not None]
