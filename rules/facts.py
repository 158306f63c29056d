"""The named facts rule conditions may use: scenario facts (one value) and plan facts (arrays).

A fact's name is its public contract: rule records use it, the site documents it, and a rule
that names a fact not declared here is refused when it loads.
"""

from __future__ import annotations

import math
from typing import Any

# The plan table's codes index these names (rules.recommend.plan_facts): one vocabulary.
from rlmguide.cost.batch import Needs, response_lengths
from rlmguide.cost.episode import Episode
from rlmguide.cost.plans import CRITICS, EXECUTIONS, FUSIONS, PLACEMENTS, RECOMPUTE
from rlmguide.cost.step_search import StepSearch
from rlmguide.kb.schema import Algorithm
from rlmguide.rules.expr import Fact
from rlmguide.rules.scenario import Resolved

STAGES = ("rollout", "assessment", "training", "weight_sync")

SCENARIO_FACTS = (
    Fact("cluster.gpus", "number", "GPUs in the cluster"),
    Fact("cluster.nodes", "number", "nodes in the cluster"),
    Fact("cluster.gpus_per_node", "number", "GPUs per node"),
    Fact(
        "cluster.memory_gib",
        "number",
        "memory per GPU in GiB as the driver reports it (the datasheet figure where unrecorded)",
    ),
    Fact(
        "cluster.vendor",
        "text",
        "the accelerator's maker as its record names it (NVIDIA, AMD, ...; empty for an inline "
        "accelerator)",
    ),
    Fact(
        "cluster.compute_capability",
        "number",
        "the accelerator's CUDA compute capability as major.minor (9.0 Hopper, 10.0 B200); 0 "
        "where its record gives none (no CUDA, or an inline accelerator)",
    ),
    Fact("cluster.scale_up_domain", "number", "GPUs joined by the scale-up fabric (NVLink domain)"),
    Fact("cluster.scale_out_gbps_per_gpu", "number", "network bandwidth per GPU in Gbit/s"),
    Fact("model.params_b", "number", "policy parameters, billions"),
    Fact("model.active_params_b", "number", "policy parameters active per token, billions"),
    Fact("model.layers", "number", "policy layers"),
    Fact("model.heads", "number", "policy attention heads"),
    Fact("model.kv_heads", "number", "policy KV heads"),
    Fact("model.is_moe", "bool", "the policy is a mixture of experts"),
    Fact("model.experts", "number", "routed experts per MoE layer (0 for dense)"),
    Fact("model.attention", "text", "attention kind", ("mha", "gqa", "mqa", "mla")),
    Fact("model.kv_kib_per_token", "number", "bf16 KV cache per token, KiB"),
    Fact("model.weights_gib", "number", "bf16 weights of the policy, GiB"),
    Fact("model.state_gib", "number", "weights, gradients and Adam states of the policy, GiB"),
    Fact("model.vocab", "number", "the policy's vocabulary rows (its record's vocab)"),
    Fact(
        "model.reward_vocab",
        "number",
        "the reward model's vocabulary rows (0 for a verifier): a launch that feeds it the "
        "policy's token ids needs the same tokenizer",
    ),
    Fact(
        "model.reward_weights_gib",
        "number",
        "bf16 weights of the reward model scored on GPUs, GiB (0 for a verifier)",
    ),
    Fact("workload.algorithm", "text", "algorithm id"),
    Fact(
        "workload.online",
        "bool",
        "the algorithm samples from the policy (false: offline preference optimisation, "
        "DPO and its family, which generates nothing)",
    ),
    Fact("workload.needs_critic", "bool", "the algorithm trains a value model"),
    Fact("workload.needs_reference", "bool", "the algorithm needs reference log-probs"),
    Fact(
        "workload.kl_placement",
        "text",
        "where the algorithm puts its KL penalty to the reference: the reward, the loss, "
        "unstated by its record, or none (no reference)",
        ("reward", "loss", "unstated", "none"),
    ),
    Fact(
        "workload.kl_estimator",
        "text",
        "the estimator of that KL the algorithm's record fixes (k1, k2, k3), unstated by its "
        "record, or none (no reference)",
        ("k1", "k2", "k3", "unstated", "none"),
    ),
    Fact(
        "workload.clip_low",
        "number",
        "the ratio clip below 1 the algorithm's record sets (0: the framework's default)",
    ),
    Fact(
        "workload.clip_high",
        "number",
        "the ratio clip above 1 the algorithm's record sets (0: the framework's default)",
    ),
    Fact("workload.reward_model", "bool", "responses are scored by a reward model on GPUs"),
    Fact(
        "workload.reward_kind",
        "text",
        "how responses are scored",
        ("verifier", "reward-model", "llm-judge", "process-reward-model", "none"),
    ),
    Fact(
        "workload.recompute_old_logprobs",
        "bool",
        "the trainer recomputes the old log-probs (false: the rollout engine's are used)",
    ),
    Fact(
        "model.remote_code",
        "bool",
        "the policy's checkpoint loads its own Python code (trust_remote_code)",
    ),
    Fact(
        "model.type",
        "text",
        "the policy's config.json model_type ('' where its record has not read it)",
    ),
    Fact("model.reference_own", "bool", "the reference is another model than the policy"),
    Fact("model.reference_fp8", "bool", "the reference runs in fp8"),
    Fact("workload.grouped", "bool", "the algorithm samples a group per prompt"),
    Fact("workload.samples_per_prompt", "number", "responses per prompt (group size)"),
    Fact("workload.prompts_per_step", "number", "prompts per RL step"),
    Fact("workload.responses_per_step", "number", "responses per RL step"),
    Fact("workload.prompt_tokens", "number", "mean prompt length"),
    Fact(
        "workload.max_prompt_tokens",
        "number",
        "longest prompt: the launch's prompt cap (the mean where the workload gives none)",
    ),
    Fact("workload.response_tokens", "number", "mean response length"),
    Fact("workload.max_response_tokens", "number", "longest response"),
    Fact("workload.tail_ratio", "number", "longest over mean response length"),
    Fact(
        "workload.reasoning_budget",
        "number",
        "cap on one response's tokens (0: none); the three facts above are the lengths it leaves",
    ),
    Fact(
        "workload.sequence_tokens",
        "number",
        "prompt plus longest response (an agentic episode's: its turns and observations)",
    ),
    Fact(
        "workload.episode_response_tokens",
        "number",
        "tokens after the prompt of the longest episode: its max_turns turns and the "
        "observations between them (the longest response without workload.agent)",
    ),
    Fact(
        "workload.episode_input_tokens",
        "number",
        "tokens before the longest episode's longest turn, taken as its last: the prompt, the "
        "other turns and the observations (sequence_tokens less max_response_tokens)",
    ),
    Fact("workload.minibatches_per_step", "number", "optimizer steps per RL step"),
    Fact(
        "workload.agentic",
        "bool",
        "episodes of several model turns or with environment time (workload.agent)",
    ),
    Fact("workload.turns", "number", "mean model turns per episode (1 without workload.agent)"),
    Fact("workload.max_turns", "number", "model turns of the longest episode (1 without one)"),
    Fact(
        "workload.environment_seconds",
        "number",
        "environment seconds per episode: setup plus mean turns x mean step (0 without one)",
    ),
    Fact(
        "workload.context_appended",
        "bool",
        "each turn extends the previous tokens, so its KV can be kept across turns",
    ),
    Fact(
        "workload.environment_slots",
        "number",
        "environment steps that can run at once over the cluster (0: no limit given)",
    ),
    Fact(
        "workload.search_completions",
        "number",
        "completions decoded per response from its intermediate states to value them or to "
        "search over steps (workload.search: depth x branching; 0 without one)",
    ),
    Fact(
        "model.assessment_params_b",
        "number",
        "parameters of the frozen assessment models (reference and reward model; 0 for a "
        "verifier and no reference), billions",
    ),
)

PLAN_FACTS = (
    Fact("plan.placement", "text", "where rollout and training run", PLACEMENTS),
    Fact("plan.execution", "text", "how rollout and training overlap", EXECUTIONS),
    Fact("plan.max_staleness", "number", "policy versions a sample may lag (0 when sync)"),
    Fact("plan.prefix_caching", "bool", "the rollout engine shares each prompt's prefill"),
    Fact(
        "plan.critic", "text", "a critic network of its own, or a value head on the policy", CRITICS
    ),
    Fact("plan.fusion", "text", "stage fusion (survey §4.3)", FUSIONS),
    Fact(
        "plan.fusion_chunk",
        "number",
        "samples per hand-off of inter-stage fusion (survey §4.3; 0: one assessment micro-batch "
        "per data-parallel rank, or no inter-stage fusion)",
    ),
    *(
        Fact(f"plan.rollout.{d}", "number", f"rollout {label}")
        for d, label in (
            ("gpus", "GPUs"),
            ("tp", "tensor parallel degree"),
            ("pp", "pipeline parallel degree"),
            ("ep", "expert parallel degree"),
            ("dp", "replicas"),
        )
    ),
    *(
        Fact(f"plan.train.{d}", "number", f"training {label}")
        for d, label in (
            ("gpus", "GPUs"),
            ("tp", "tensor parallel degree"),
            ("pp", "pipeline parallel degree"),
            ("cp", "context parallel degree"),
            ("ep", "expert parallel degree"),
            ("etp", "expert tensor parallel degree"),
            ("dp", "data parallel degree"),
            ("zero", "ZeRO stage"),
        )
    ),
    Fact("plan.train.recompute", "text", "activation recomputation", RECOMPUTE),
    Fact(
        "plan.train.shard_group",
        "number",
        "ranks of one ZeRO/FSDP shard group under hybrid sharding (0: every dp x cp rank)",
    ),
    Fact(
        "plan.train.frozen_shard_group",
        "number",
        "ranks ZeRO-3 shards the frozen models over in a group of their own (0: the trained "
        "models' group)",
    ),
    Fact(
        "plan.train.virtual_stages",
        "number",
        "layer chunks per pipeline rank of Megatron's interleaved schedule (1: plain 1F1B)",
    ),
    Fact(
        "plan.train.first_stage_layers",
        "number",
        "decoder layers of the first pipeline stage the plan costs (0: even stages)",
    ),
    Fact(
        "plan.train.last_stage_layers",
        "number",
        "decoder layers of the last pipeline stage the plan costs (0: even stages)",
    ),
    Fact(
        "plan.train.sequence_parallel",
        "bool",
        "sequence parallelism inside the tensor group (Korthikanti et al.): on wherever "
        "tp > 1, as the cost model's activation memory assumes",
    ),
    Fact("plan.rollout.attention_dp", "number", "DP-attention groups per rollout engine"),
    Fact(
        "plan.rollout.cp",
        "number",
        "decode context parallelism: tensor ranks one sequence's KV cache is split over by tokens",
    ),
    Fact("plan.rollout.fp8", "bool", "the rollout engine runs fp8 weights"),
    Fact("plan.rollout.eager", "bool", "the rollout engine decodes without CUDA graphs"),
    Fact("plan.train.fp8", "bool", "training matmuls run in fp8"),
    Fact("plan.train.lora_rank", "number", "LoRA adapter rank (0: every weight trained)"),
    Fact("plan.train.offload_phase", "bool", "trained state parked on the host between phases"),
    Fact("plan.train.offload_optimizer", "number", "share of Adam on the CPU"),
    Fact("plan.train.offload_params", "bool", "parameters streamed from the host per layer"),
    Fact("plan.train.offload_frozen", "bool", "reference / reward weights parked while training"),
    *(
        Fact(f"plan.pools.{m}", "number", f"GPUs of the {m} model's own pool (0: shared)")
        for m in ("critic", "reference", "reward")
    ),
    *(
        Fact(
            f"plan.assessment.{d}",
            "number",
            f"{label} of the frozen models' own layout (0: the training layout)",
        )
        for d, label in (("tp", "tensor parallel degree"), ("pp", "pipeline parallel degree"))
    ),
    Fact("plan.step_seconds", "number", "estimated seconds per RL step"),
    Fact("plan.memory.rollout_gib", "number", "estimated memory per rollout GPU, GiB"),
    Fact("plan.memory.train_gib", "number", "estimated memory per training GPU, GiB"),
    *(Fact(f"plan.share.{s}", "number", f"fraction of the step spent in {s}") for s in STAGES),
)

FACTS = {fact.name: fact for fact in (*SCENARIO_FACTS, *PLAN_FACTS)}

GENERATION_FACTS = frozenset(
    {
        "plan.placement",
        "plan.execution",
        "plan.max_staleness",
        "plan.prefix_caching",
        "plan.memory.rollout_gib",
        "plan.share.rollout",
        "plan.share.weight_sync",
        "workload.tail_ratio",
        *(name for name in FACTS if name.startswith("plan.rollout.")),
    }
)
"""Facts about generation: the rollout, where it runs beside training and how the two
overlap. A rule naming one says nothing about offline preference optimisation."""

BF16_BYTES = 2
ADAM_MIXED_BYTES_PER_PARAM = 16
"""bf16 weights and gradients plus fp32 master weights and two Adam moments (ZeRO, 1910.02054)."""


def _reward_kind(resolved: Resolved) -> str:
    if resolved.algorithm.reward == "none" or not resolved.algorithm.online:
        return "none"  # offline, nothing scores responses during training
    return "verifier" if resolved.reward is None else resolved.scoring.kind


def scenario_facts(resolved: Resolved) -> dict[str, Any]:
    """The value of every scenario fact for one resolved scenario."""
    s, policy = resolved.scenario, resolved.policy
    acc, w = resolved.accelerator, s.workload
    mean, longest = response_lengths(w)
    scale_out = s.cluster.scale_out_gbps_per_gpu or acc.scale_out_gbits_per_s or 0.0
    return {
        "cluster.gpus": s.cluster.gpus,
        "cluster.nodes": s.cluster.nodes,
        "cluster.gpus_per_node": s.cluster.gpus_per_node,
        "cluster.memory_gib": acc.capacity_gib,
        # an inline accelerator names no maker: a check on it then has nothing to judge
        "cluster.vendor": getattr(acc, "vendor", ""),
        "cluster.compute_capability": getattr(acc, "compute_capability", None) or 0,
        "cluster.scale_up_domain": resolved.domain_gpus,
        "cluster.scale_out_gbps_per_gpu": scale_out,
        "model.params_b": policy.params_total / 1e9,
        "model.active_params_b": policy.params_active / 1e9,
        "model.layers": policy.layers,
        "model.heads": policy.heads,
        "model.kv_heads": policy.kv_heads,
        "model.is_moe": policy.moe is not None,
        "model.experts": policy.moe.experts if policy.moe else 0,
        "model.attention": policy.attention,
        "model.kv_kib_per_token": policy.kv_bytes_per_token / 1024,
        "model.weights_gib": policy.params_total * BF16_BYTES / 2**30,
        "model.state_gib": policy.params_total * ADAM_MIXED_BYTES_PER_PARAM / 2**30,
        "model.vocab": policy.vocab,
        "model.reward_vocab": resolved.reward.vocab if resolved.reward else 0,
        "model.reward_weights_gib": (
            resolved.reward.params_total * BF16_BYTES / 2**30 if resolved.reward else 0.0
        ),
        **algorithm_facts(resolved.algorithm),
        "workload.online": resolved.algorithm.online,
        "workload.needs_critic": resolved.algorithm.needs_critic,
        "workload.reward_model": resolved.reward is not None,
        "workload.reward_kind": _reward_kind(resolved),
        "workload.recompute_old_logprobs": w.recompute_old_logprobs,
        "model.remote_code": resolved.policy_remote_code,
        "model.type": resolved.policy_model_type,
        "model.reference_own": resolved.reference is not None,
        "model.reference_fp8": resolved.reference_fp8,
        "workload.grouped": resolved.algorithm.grouped,
        "workload.samples_per_prompt": resolved.samples_per_prompt,
        "workload.prompts_per_step": w.prompts_per_step,
        "workload.responses_per_step": w.prompts_per_step * resolved.samples_per_prompt,
        "workload.prompt_tokens": w.prompt_tokens,
        "workload.max_prompt_tokens": w.longest_prompt,
        # As generated: a reasoning budget cuts the longest response and the mean with it.
        "workload.response_tokens": round(mean),
        "workload.max_response_tokens": round(longest),
        "workload.tail_ratio": longest / mean,
        "workload.reasoning_budget": w.reasoning_budget or 0,
        "workload.minibatches_per_step": w.minibatches_per_step,
        **_agent_facts(resolved),
        "model.assessment_params_b": _assessment_params(resolved) / 1e9,
        "workload.search_completions": _search_completions(resolved),
    }


ALGORITHM_FACTS = frozenset(
    {"workload.algorithm", "workload.needs_reference", "workload.kl_placement",
     "workload.kl_estimator", "workload.clip_low", "workload.clip_high"}
)  # fmt: skip
"""The facts of algorithm_facts: what an algorithm's record decides for a launch."""


def algorithm_facts(algorithm: Algorithm) -> dict[str, Any]:
    """The facts an algorithm's record decides for a launch: its id, whether it loads a
    reference, the side and estimator of its KL to it and its clip range, spelled as the
    facts spell them (no reference: `none`; a record that does not say: `unstated`; no clip
    range of its own: 0). Review sets them per candidate to tell variants apart."""
    reference = algorithm.needs_reference
    return {
        "workload.algorithm": algorithm.id,
        "workload.needs_reference": reference,
        "workload.kl_placement": (algorithm.kl_placement or "unstated") if reference else "none",
        "workload.kl_estimator": (algorithm.kl_estimator or "unstated") if reference else "none",
        "workload.clip_low": algorithm.clip_low or 0,
        "workload.clip_high": algorithm.clip_high or 0,
    }


def _search_completions(resolved: Resolved) -> int:
    search = StepSearch.of(resolved.scenario.workload, Needs.of(resolved.algorithm))
    return search.completions_per_response if search is not None else 0


def _agent_facts(resolved: Resolved) -> dict[str, Any]:
    workload = resolved.scenario.workload
    episode = Episode.of(workload)
    mean, longest = response_lengths(workload)
    trajectory = int(episode.longest_trajectory_response(mean, longest))
    return {
        "workload.sequence_tokens": workload.longest_prompt + trajectory,
        "workload.episode_input_tokens": workload.longest_prompt + trajectory - round(longest),
        "workload.episode_response_tokens": trajectory,
        "workload.agentic": resolved.agentic,
        "workload.turns": episode.turns,
        "workload.max_turns": int(episode.max_turns),
        "workload.environment_seconds": episode.setup_seconds
        + episode.turns * episode.environment_seconds,
        "workload.context_appended": episode.appended,
        "workload.environment_slots": 0
        if math.isinf(episode.environment_slots)
        else episode.environment_slots,
    }


def _assessment_params(resolved: Resolved) -> float:
    """Parameters of the frozen models the assessment runs: the reference (the policy's
    architecture unless another is given) and the reward model."""
    reference = 0.0
    if resolved.algorithm.needs_reference:
        reference = (resolved.reference or resolved.policy).params_total
    reward = resolved.reward.params_total if resolved.reward is not None else 0.0
    return reference + reward
