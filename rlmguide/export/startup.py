"""A launch's own values and the start-up checks that read them.

A plan fixes degrees, pools and batches; a launch also writes values the plan implies but
does not name: layers per pipeline stage where the degree does not divide the layers, the
run's length, whether training packs sequences. They are `launch.*` facts: export computes
them from the plan (`computed`) or takes them from what it writes (a mapping's `reads`), and
review reads them back from a launch. Constraint records with `checks: launch` are the
frameworks' start-up asserts over them (Megatron's pipeline split, NeMo-RL's packing under
context parallelism): export refuses a launch that would trip one, naming the record, and
review reports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.schema import Constraint
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.rules.engine import compile_kind
from rlmguide.rules.expr import Fact
from rlmguide.rules.facts import FACTS
from rlmguide.rules.frameworks import CompiledConstraint

LAUNCH_FACTS = {
    f.name: f
    for f in (
        Fact(
            "launch.pp_first_layers",
            "number",
            "decoder layers of the first pipeline stage where the pipeline degree does not "
            "divide the layers (Megatron's num_layers_in_first_pipeline_stage); 0: even stages",
        ),
        Fact(
            "launch.pp_last_layers",
            "number",
            "decoder layers of the last pipeline stage where the degree does not divide the "
            "layers (num_layers_in_last_pipeline_stage); 0: even stages",
        ),
        Fact(
            "launch.run_steps",
            "number",
            "RL steps the launch runs: the scenario's run length; 0 where it gives none",
        ),
        Fact(
            "launch.dataset_epochs",
            "number",
            "passes over the prompt dataset the launch bounds the run by; 0: not set",
        ),
        Fact(
            "launch.sequence_packing",
            "bool",
            "training packs several sequences into one micro-batch by tokens",
        ),
        Fact(
            "launch.value_sequence_packing",
            "bool",
            "the value model (PPO's critic) packs its sequences by tokens, where the framework "
            "batches it apart from the policy (NeMo-RL's value.sequence_packing)",
        ),
        Fact(
            "launch.engine_memory_fraction",
            "number",
            "the rollout engine's memory setting in its own unit: vLLM's gpu_memory_utilization "
            "(its share of the GPU's HBM: weights, workspace and KV cache), SGLang's "
            "mem_fraction_static (weights and KV cache over the memory free when it starts)",
        ),
        Fact(
            "launch.reward_engine_memory_fraction",
            "number",
            "the memory setting, in the rollout engine's unit, of a reward model served by an "
            "engine of its own on the trainer's GPUs (verl 0.8's reward.reward_model.rollout): "
            "the rollout engine's, or more where the reward model's weights need it",
        ),
        Fact(
            "launch.engine_max_seqs",
            "number",
            "sequences one rollout engine runs at once (vLLM's max_num_seqs, SGLang's "
            "max_running_requests)",
        ),
        Fact(
            "launch.engine_context_tokens",
            "number",
            "the rollout engine's context length (SGLang's context_length, vLLM's "
            "max_model_len): the longest request, prompt and response, it serves whole",
        ),
        Fact(
            "launch.engine_batched_tokens",
            "number",
            "tokens one engine step schedules at most (vLLM's max_num_batched_tokens, SGLang's "
            "chunked_prefill_size): what its activation workspace is profiled at",
        ),
        Fact(
            "launch.resident_gib",
            "number",
            "GiB per GPU of trainer state resident beside the rollout engine (colocated, not "
            "offloaded): memory the engine finds taken when it starts",
        ),
        Fact(
            "launch.micro_batch_tokens",
            "number",
            "tokens of one training micro-batch over its context-parallel group, in the "
            "framework's dynamic batching (a GPU holds this / cp)",
        ),
        Fact(
            "launch.critic_micro_batch_tokens",
            "number",
            "tokens of one micro-batch of the critic over its context-parallel group, where the "
            "framework budgets it apart from the actor's (verl's "
            "critic.ppo_max_token_len_per_gpu): a plan trains its critic on the trainer's GPUs "
            "at the actor's micro-batch",
        ),
        Fact(
            "launch.sequence_length_multiple",
            "number",
            "the multiple every training sequence is padded to (NeMo-RL's "
            "make_sequence_length_divisible_by): what context parallelism's load-balanced "
            "halves and Megatron's sequence parallelism split evenly",
        ),
        Fact(
            "launch.fp32_gradients",
            "bool",
            "gradient buffers in fp32 beside bf16 weights (Megatron's main grads)",
        ),
        Fact(
            "launch.bf16_gradients",
            "bool",
            "gradients reduced and accumulated in bf16 (Megatron-LM's --grad-reduce-in-bf16)",
        ),
        Fact(
            "launch.micro_batch_sequences",
            "number",
            "sequences of one training micro-batch where the framework counts them",
        ),
        Fact(
            "launch.forward_micro_batch_sequences",
            "number",
            "sequences of one micro-batch of the forward-only passes (old log-probs, reference) "
            "where the framework sizes it apart from training's (ROLL's infer_batch_size): "
            "export writes the plan's micro-batch",
        ),
        Fact(
            "launch.token_batching",
            "bool",
            "training micro-batches are cut by a token budget, not counted in sequences "
            "(verl's use_dynamic_bsz, SkyRL's positive max_tokens_per_microbatch)",
        ),
        Fact(
            "launch.rank_samples",
            "number",
            "samples one data-parallel rank of the trainer trains per step: the step's samples "
            "over the pool's GPUs / (TP x PP x CP) (ROLL counts its mini-batches per rank)",
        ),
        Fact(
            "launch.rank_micro_batch",
            "number",
            "sequences of one training micro-batch that a data-parallel rank's mini-batch "
            "divides into: the most, up to the plan's micro-batch (ROLL's "
            "per_device_train_batch_size, whose accumulation steps must be whole)",
        ),
        Fact(
            "launch.rank_micro_batches",
            "number",
            "micro-batches one data-parallel rank of the trainer trains per step: "
            "launch.rank_samples over launch.rank_micro_batch",
        ),
        Fact(
            "launch.cp_tp",
            "number",
            "GPUs of one sequence's context- and tensor-parallel group (cp x tp): OpenRLHF's "
            "token budget is per GPU of it",
        ),
        Fact(
            "launch.oversampling",
            "number",
            "prompts generated per prompt trained (the scenario's run.oversampling; 1: none)",
        ),
        Fact(
            "launch.gen_batch_prompts",
            "number",
            "prompts one generation batch samples where dynamic sampling refills the step",
        ),
        Fact(
            "launch.overlong_buffer_tokens",
            "number",
            "DAPO's soft overlong punishment: the last tokens before the response limit",
        ),
        Fact(
            "launch.dynamic_sampling",
            "bool",
            "groups whose rewards are all equal are dropped and the step refilled (DAPO)",
        ),
        Fact("launch.kl_coef", "number", "the KL coefficient a launch writes with a reference"),
        Fact(
            "launch.generation_groups",
            "number",
            "prompt groups an asynchronous launch generates at once (SkyRL's "
            "num_parallel_generation_workers): the engines' concurrent sequences over the "
            "samples per prompt, at least one mini-batch's prompts and at most the "
            "mini-batches the staleness bound lets run ahead",
        ),
        Fact(
            "launch.normalized_advantages",
            "bool",
            "advantages are normalised over the batch (slime's --normalize-advantages)",
        ),
        Fact(
            "launch.ref_micro_batch",
            "number",
            "sequences per GPU of one reference log-prob micro-batch (verl's "
            "ref.log_prob_micro_batch_size_per_gpu); 0: not set",
        ),
        Fact(
            "launch.log_prob_micro_batch",
            "number",
            "sequences per GPU of one old-log-prob micro-batch (verl's "
            "rollout.log_prob_micro_batch_size_per_gpu); 0: not set",
        ),
        Fact(
            "launch.micro_batch_forms",
            "number",
            "the most forms a launch gives one micro-batch in where the framework keeps an older "
            "global key beside the per-GPU one (verl's ppo_micro_batch_size and "
            "ppo_micro_batch_size_per_gpu), counted without dynamic batching, where it checks them",
        ),
        Fact(
            "launch.undivided_global_micro_batch",
            "bool",
            "a micro-batch the launch gives only in its older global form where no worker of "
            "the framework divides that form into the per-GPU key (verl 0.8's engine workers), "
            "without dynamic batching",
        ),
        Fact(
            "launch.vllm_moe_backend",
            "text",
            "the kernel vLLM runs a MoE's unquantized experts in (its moe_backend: auto, triton, "
            "flashinfer_trtllm, flashinfer_cutlass, aiter); auto lets vLLM pick by the GPU",
        ),
        Fact(
            "launch.sglang_moe_runner_backend",
            "text",
            "the kernel SGLang runs a MoE's experts in (its moe_runner_backend: auto, triton, "
            "flashinfer_trtllm, ...); auto lets SGLang pick by the GPU and the architecture",
        ),
        Fact("launch.actor_strategy", "text", "the actor's training strategy key (verl)"),
        Fact("launch.critic_strategy", "text", "the critic's training strategy key (verl)"),
        Fact("launch.bf16", "bool", "training runs in bf16 (OpenRLHF's --bf16 before 0.10)"),
        Fact(
            "launch.offload_enabled",
            "bool",
            "the run loads the memory saver its offloads go through (AReaL's enable_offload: "
            "torch_memory_saver preloaded into every worker)",
        ),
        Fact(
            "launch.weight_update_mode",
            "text",
            "how trained weights reach the rollout engines (AReaL's actor.weight_update_mode: "
            "xccl over NCCL, disk through a saved checkpoint)",
        ),
        Fact(
            "launch.context_positions",
            "number",
            "positions the run gives the policy beyond its record's context "
            "(models.context_tokens), written into the model's config for engine and trainer "
            "alike; 0: within the record",
        ),
        Fact(
            "launch.rollout_sleep",
            "bool",
            "the rollout engines sleep between rollouts, freeing their GPU memory for training "
            "(OpenRLHF's --vllm.enable_sleep)",
        ),
        Fact(
            "launch.update_minibatches",
            "number",
            "mini-batches one trainer update takes from the rollout queue where updates and "
            "weight pushes are counted apart (verl's fully asynchronous require_batches): the "
            "step's mini-batches over it are the updates between two pushes",
        ),
        Fact(
            "launch.rollout_moe_tp",
            "number",
            "tensor ranks a rollout engine splits each MoE expert over (verl's "
            "rollout.moe_tensor_parallel_size, TensorRT-LLM's); 0: not set",
        ),
        Fact(
            "launch.etp",
            "number",
            "the trainer's expert tensor-parallel degree as the launch gives it (verl's "
            "actor.megatron.expert_tensor_parallel_size); 0: unset, which Megatron takes as tp",
        ),
        Fact(
            "launch.forward_packed_tokens",
            "number",
            "the smallest token budget a forward-only pass is packed to, where the framework "
            "packs that pass by tokens (ROLL's max_packed_sequence_length_forward under "
            "load_balance packing); 0: none packed so",
        ),
        Fact(
            "launch.rollout_micro_batch",
            "number",
            "samples per rollout micro-batch (OpenRLHF's micro_rollout_batch_size): the step's "
            "samples over it are the sample batches shared out to the actor's ranks",
        ),
    )
}
"""The facts a launch adds to the plan's."""

ABSENT = {
    "launch.pp_first_layers": 0,
    "launch.pp_last_layers": 0,
    "launch.run_steps": 0,
    "launch.dataset_epochs": 0,
    "launch.sequence_packing": False,
    "launch.value_sequence_packing": False,
    "launch.normalized_advantages": False,
    "launch.dynamic_sampling": False,
    "launch.ref_micro_batch": 0,
    "launch.log_prob_micro_batch": 0,
    "launch.rollout_sleep": False,
    "launch.rollout_moe_tp": 0,
    "launch.forward_packed_tokens": 0,
    "launch.etp": 0,
    # vLLM's KernelConfig.moe_backend default (vllm/config/kernel.py L136 at 0.20.2, L181 at
    # 0.25.1): the kernel is chosen by the GPU
    "launch.vllm_moe_backend": "auto",
    # SGLang's ServerArgs.moe_runner_backend default (python/sglang/srt/server_args.py L1790-L1797
    # at 0.5.15.post1, L522 at 0.5.10.post1)
    "launch.sglang_moe_runner_backend": "auto",
}
"""What a launch that writes no key for a launch fact runs with (a mapping's `reads` and
`config_defaults` give the framework's own default where it differs)."""


KL_COEF = 0.001
"""The KL coefficient every export writes where the algorithm keeps a reference: verl's
kl_loss_coef and kl_ctrl.kl_coef default (verl/trainer/config/_generated_ppo_trainer.yaml at
b178a3cd), so a run is the same whichever framework launches it (slime's --kl-loss-coef
defaults to 0, which would load the reference for nothing)."""

SGLANG_CONTEXT_MARGIN = 2
"""Tokens SGLang's context length must exceed the longest request by: its scheduler serves at
most context_len - 1 tokens a request (tp_worker.py L301-L304 at 0.5.10.post1, the version
AReaL fee938ea pins) and caps max_new_tokens one below that (scheduler.py L1612-L1620), and its
tokenizer rejects input + max_new_tokens >= context_len (tokenizer_manager.py L810-L835).
vLLM takes a request of exactly max_model_len."""

ENGINE_BATCHED_TOKENS = 8192
"""Tokens per engine step the plan's rollout workspace was costed at (cost.overheads
rollout_workspace_bytes: vLLM profiles its activations at max_num_batched_tokens, 8192 in verl's
rollout config); exports write it where the engine's own default is larger (vLLM's LLM class
takes 16384 on GPUs of 70 GiB and more, vllm/engine/arg_utils.py at 0.12.0)."""

OVERLONG_SHARE = 0.2
"""DAPO's soft overlong punishment covers the last fifth of the response limit: a 4,096-token
buffer under a 20,480-token maximum (arXiv-2503.14476, its verl recipe scripts)."""


def pipeline_split(layers: int, pp: int) -> tuple[int, int]:
    """(first, last) stage layers for `pp` stages over `layers` where pp does not divide
    them, with every middle stage at the same count and no stage above ceil(layers / pp),
    the stage the cost model costs; (0, 0) where the stages are even. The first stage takes
    the larger half of what the middle stages leave: the last also holds the output layer
    and the loss. None where no such split exists (more stages than the layers can fill)."""
    if pp <= 1 or layers % pp == 0:
        return 0, 0
    fullest = math.ceil(layers / pp)
    for middle in range(fullest, 0, -1):
        rest = layers - (pp - 2) * middle
        if 2 <= rest <= 2 * fullest:
            return math.ceil(rest / 2), rest // 2
    raise ValueError(f"{layers} layers cannot fill {pp} pipeline stages")


def derived(plan: Mapping[str, Any]) -> dict[str, Any]:
    """Launch facts that follow from the plan's memory alone (export and review alike)."""
    return {"launch.resident_gib": _beside_engine(plan)[0]}


def engine_fraction(
    plan: Mapping[str, Any], hbm_gib: float, engine: str, starts_first: bool = False
) -> float | None:
    """The plan's rollout budget (`rollout.memory_fraction`, a share of HBM: the engine's
    weights, workspace and KV cache) in the engine's own unit, to three decimals and never
    below what the plan's weights, workspace and KV cache take. vLLM (v1 gpu_worker, 0.12.0)
    requests that share of the GPU's total memory for itself; SGLang (ModelRunner, 0.5.6 and
    0.5.15) keeps (1 - mem_fraction_static) of the memory free at its start for activations
    and graphs and fills the rest with weights and KV, so its fraction is weights and KV over
    that free memory: HBM less the resident trainer where the trainer is loaded first, the
    whole HBM where the framework starts its engines first (`starts_first`, the mapping's
    engine_starts_first) and loads the trainer beside them later. None offline (no rollout)."""
    rollout = plan.get("rollout") or {}
    fraction = rollout.get("memory_fraction")
    if not fraction:
        return None
    terms = (plan.get("memory_breakdown_gib") or {}).get("rollout") or {}
    _, workspace = _beside_engine(plan)
    needed = float(terms.get("weights", 0.0)) + float(terms.get("kv_cache", 0.0))
    if engine == "sglang":
        free = _free_at_start(plan, hbm_gib, starts_first)
        share, floor = (fraction * hbm_gib - workspace) / free, needed / free
    else:
        share, floor = fraction, (needed + workspace) / hbm_gib
    return max(math.floor(share * 1000), math.ceil(floor * 1000)) / 1000


def reward_engine_fraction(
    plan: Mapping[str, Any],
    facts: Mapping[str, Any],
    fraction: float,
    hbm_gib: float,
    engine: str,
    starts_first: bool = False,
) -> float:
    """The memory setting of a reward model served by an engine of its own on the trainer's
    GPUs, in the engine's unit. verl 0.8 starts that engine after the trainer is loaded and
    puts it to sleep at once (ray_trainer.py L895-L909, reward_model.py L44-L45), and wakes it
    only to score, after the rollout engine sleeps (ray_trainer.py L1470-L1471 and L1518-L1521,
    reward_loop.py L323-L348): it takes the rollout engine's place beside the same resident
    trainer state, which the plan's rollout memory holds. So it gets the rollout engine's
    share, raised where the reward model's weights at the training layout's tensor degree
    (the TP the mapping writes for it) and the workspace need more; a share too large for
    the GPU beside the trainer is a start-up failure the launch checks report."""
    _, workspace = _beside_engine(plan)
    weights = float(facts.get("model.reward_weights_gib", 0.0)) / int(facts.get("plan.train.tp", 1))
    if engine == "sglang":
        floor = weights / _free_at_start(plan, hbm_gib, starts_first)
    else:
        floor = (weights + workspace) / hbm_gib
    return max(fraction, math.ceil(floor * 1000) / 1000)


def gpu_share(
    fraction: float,
    plan: Mapping[str, Any],
    hbm_gib: float,
    engine: str,
    starts_first: bool = False,
) -> float:
    """A launch's engine memory setting as the plan's share of the GPU, the inverse of
    engine_fraction: SGLang's fraction of the memory free at its start plus the workspace it
    keeps outside; vLLM's as it is."""
    if engine != "sglang":
        return fraction
    _, workspace = _beside_engine(plan)
    free = _free_at_start(plan, hbm_gib, starts_first)
    return min((fraction * free + workspace) / hbm_gib, 1.0)


def _free_at_start(plan: Mapping[str, Any], hbm_gib: float, starts_first: bool) -> float:
    """GiB an engine finds free when it starts: the whole GPU where it starts before the
    trainer is loaded, else what the trainer's resident state leaves."""
    return hbm_gib if starts_first else hbm_gib - _beside_engine(plan)[0]


def _beside_engine(plan: Mapping[str, Any]) -> tuple[float, float]:
    """GiB per rollout GPU of the trainer's resident state and of the engine's workspace."""
    terms = (plan.get("memory_breakdown_gib") or {}).get("rollout") or {}
    return float(terms.get("trainer_state", 0.0)), float(terms.get("workspace", 0.0))


def data_parallel(facts: Mapping[str, Any]) -> int | None:
    """The trainer's data-parallel ranks: its GPUs over TP x PP x CP (None where the pool's
    GPUs are not known)."""
    gpus = facts.get("plan.train.gpus")
    if not gpus:
        return None
    group = 1
    for d in ("tp", "pp", "cp"):
        group *= int(facts.get(f"plan.train.{d}") or 1)
    return max(1, int(gpus) // group)


def largest_divisor(count: float, most: int) -> int:
    """The largest whole number up to `most` that divides `count` (1 where `count` is not
    whole: the mini-batch's own check then names it)."""
    if count != int(count):
        return 1
    return next(d for d in range(max(1, most), 0, -1) if int(count) % d == 0)


def generation_groups(plan: Mapping[str, Any], facts: Mapping[str, Any]) -> int | None:
    """Prompt groups an asynchronous plan generates at once: its engines' concurrent
    sequences (rollout replicas x rollout_concurrency) over the samples per prompt, kept
    between one mini-batch's prompts and the (staleness + 1) mini-batches generation may
    run ahead of training (fewer leaves a training step waiting, more can never be
    admitted). None for a plan that does not generate ahead."""
    staleness = plan.get("max_staleness")
    concurrency = plan.get("rollout_concurrency")
    if plan.get("execution") != "async" or staleness is None or not concurrency:
        return None
    mini = int(facts["workload.prompts_per_step"]) // int(
        facts.get("workload.minibatches_per_step") or 1
    )
    engines = int(facts.get("plan.rollout.dp") or 1)
    wanted = math.ceil(engines * int(concurrency) / int(facts["workload.samples_per_prompt"]))
    return min(max(wanted, mini), mini * (int(staleness) + 1))


def micro_batch(plan: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The training micro-batch the plan's activations were costed at, in the units the
    frameworks count: tokens over the CP group, a whole multiple of cp x tp so that every
    framework's per-GPU budget is whole (never below one longest sequence, which verl
    asserts), and sequences where a framework counts those. The critic trains on the same
    GPUs at the same micro-batch (cost.evaluate: the critic beside the actor in one pool)."""
    train = plan.get("train") or {}
    tokens = train.get("micro_batch_tokens")
    if not tokens:
        return {}
    group = int(facts.get("plan.train.cp", 1)) * int(facts.get("plan.train.tp", 1))
    longest = int(facts["workload.sequence_tokens"])
    whole = int(tokens) // group * group
    if whole < longest:
        whole = -(-longest // group) * group
    sequences = max(1, int(tokens) // longest)
    return {
        "launch.micro_batch_tokens": whole,
        "launch.critic_micro_batch_tokens": whole,
        "launch.micro_batch_sequences": sequences,
        "launch.forward_micro_batch_sequences": sequences,
        "launch.cp_tp": group,
    }


def extended_context(configured: int | None, record: int) -> int:
    """The context the launch must give the model where the scenario configures more than the
    model's record (its max_position_embeddings): the engines refuse a max_model_len above the
    config's (vLLM's "greater than the derived max_model_len"), so the override travels in the
    launch; 0 where the record suffices."""
    return configured if configured is not None and configured > record else 0


def sequence_multiple(facts: Mapping[str, Any]) -> int:
    """The sequence-length multiple the plan's training layout splits evenly: tp x 2cp where
    context parallelism cuts each sequence into 2cp load-balanced chunks, tp alone otherwise.
    NeMo-RL's Megatron packing asserts a multiple of 2cp (cp > 1) times tp (with sequence
    parallelism) (nemo_rl/models/megatron/data.py L1285-L1296 at 7ea279ab), and its own
    recipes write this product (examples/configs/recipes/llm/grpo-dapomath17k-dsv3-megatron.yaml
    L18-L19, dapo-qwen2.5-7b.v2.yaml L52-L53 for DTensor)."""
    tp, cp = int(facts.get("plan.train.tp", 1)), int(facts.get("plan.train.cp", 1))
    return tp * (2 * cp if cp > 1 else 1)


def computed(
    plan: Mapping[str, Any],
    facts: Mapping[str, Any],
    engine: str | None = None,
    starts_first: bool = False,
) -> dict[str, Any]:
    """The launch facts export derives from the plan it writes (`starts_first`: the
    mapping's engine_starts_first)."""
    pp = int(facts.get("plan.train.pp", 1))
    train = plan.get("train") or {}
    given = train.get("first_stage_layers") or 0, train.get("last_stage_layers") or 0
    try:
        # the split the plan was costed at, else the one export chooses for uneven stages
        first, last = given if any(given) else pipeline_split(int(facts["model.layers"]), pp)
    except ValueError:
        first, last = -1, -1  # no split: the pipeline check names the record
    oversampling = float(facts.get("launch.oversampling", 1.0))
    out = {
        "launch.pp_first_layers": first,
        "launch.pp_last_layers": last,
        "launch.run_steps": int(plan.get("run_steps") or 0),
        "launch.gen_batch_prompts": math.ceil(
            oversampling * int(facts["workload.prompts_per_step"])
        ),
        "launch.overlong_buffer_tokens": int(
            facts["workload.max_response_tokens"] * OVERLONG_SHARE
        ),
        "launch.kl_coef": KL_COEF,
        # the asynchronous pipeline the plan is costed as updates on every mini-batch as
        # soon as its samples are in (cost.compose)
        "launch.update_minibatches": 1,
        "launch.sequence_length_multiple": sequence_multiple(facts),
        "launch.fp32_gradients": bool(train.get("fp32_gradients")),
        "launch.bf16_gradients": not train.get("fp32_gradients"),
        **derived(plan),
        **micro_batch(plan, facts),
    }
    if groups := generation_groups(plan, facts):
        out["launch.generation_groups"] = groups
    if ranks := data_parallel(facts):
        out["launch.rank_samples"] = int(facts["workload.responses_per_step"]) / ranks
        if sequences := out.get("launch.micro_batch_sequences"):
            samples = out["launch.rank_samples"]
            mini = samples / int(facts.get("workload.minibatches_per_step") or 1)
            micro = largest_divisor(mini, int(sequences))
            out["launch.rank_micro_batch"] = micro
            out["launch.rank_micro_batches"] = samples / micro
    hbm = float(facts["cluster.memory_gib"])
    fraction = engine_fraction(plan, hbm, engine or "", starts_first)
    if fraction is not None:
        out["launch.engine_memory_fraction"] = fraction
        if facts.get("workload.reward_model"):
            out["launch.reward_engine_memory_fraction"] = reward_engine_fraction(
                plan, facts, fraction, hbm, engine or "", starts_first
            )
        # the engine's cap is what it decodes at once as costed: the batch's, or where the
        # engine streams ahead of the trainer the stream's (cost.evaluate.engine_concurrency)
        out["launch.engine_max_seqs"] = max(1, int(plan.get("engine_concurrency") or 1))
        out["launch.engine_batched_tokens"] = ENGINE_BATCHED_TOKENS
        out["launch.engine_context_tokens"] = int(facts["workload.sequence_tokens"]) + (
            SGLANG_CONTEXT_MARGIN if engine == "sglang" else 0
        )
    return out


def read(mapping: MappingRecord, config: Mapping[str, Any]) -> dict[str, Any]:
    """The launch facts a launch's keys set directly (a mapping's `reads`): the key's value,
    else the framework's default for it."""
    out = {}
    for fact, key in mapping.reads.items():
        value = config.get(key.lstrip("+"), mapping.config_defaults.get(key))
        if value is not None:
            out[fact] = _truth(value) if LAUNCH_FACTS[fact].type == "bool" else value
    return out


def by_tokens(mapping: MappingRecord, config: Mapping[str, Any]) -> bool:
    """Whether a launch with `config` cuts its training micro-batches by tokens: one of the
    mapping's token_batching switches is on (switch_on)."""
    return any(switch_on(mapping, config, switch) for switch in mapping.token_batching)


def switch_on(mapping: MappingRecord, config: Mapping[str, Any], switch: str) -> bool:
    """Whether every condition of a token_batching switch holds on `config` (the launch's
    value, else the framework's default): `KEY` a switch that is on, `KEY>0` a positive
    budget, `KEY=VALUE` a setting of that value (ROLL packs by tokens only with its
    load_balance algorithm)."""
    for condition in switch.split(" and "):
        key, positive, _ = condition.strip().partition(">0")
        key, equals, wanted = key.partition("=")
        value = config.get(key, mapping.config_defaults.get(key))
        if value is None:
            return False
        if positive:
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                return False
        elif equals:
            if str(value) != wanted:
                return False
        elif not _truth(value):
            return False
    return True


def typed(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The launch facts among `facts` whose values have their fact's type (a launch may give
    an interpolation or a string where a number is declared: it is not judged, nor is an
    interpolation where text is declared)."""
    out = {}
    for name, value in facts.items():
        fact = LAUNCH_FACTS.get(name)
        if fact is None or value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        text = isinstance(value, str) and "${" not in value
        if (
            (fact.type == "number" and number)
            or (fact.type == "bool" and isinstance(value, bool))
            or (fact.type == "text" and text)
        ):
            out[name] = value
    return out


def _truth(value: Any) -> bool:
    """A key's value as a switch: true, or a non-empty setting (a filter's import path)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "none", "null", "0")
    return bool(value)


def compile_checks(catalog: Catalog) -> tuple[list[CompiledConstraint], list[Problem]]:
    """The start-up check records (`checks: launch`), over plan and launch facts."""
    return compile_kind(
        catalog, "constraint", CompiledConstraint, {**FACTS, **LAUNCH_FACTS}, checks="launch"
    )


def binding(
    checks: Iterable[CompiledConstraint],
    mapping: MappingRecord,
    backend: str | None,
    engine: str | None,
) -> list[CompiledConstraint]:
    """The checks that bind a run of the mapping's framework, at its version, on (backend,
    engine)."""
    return [
        c
        for c in checks
        if c.record.framework in (None, mapping.framework)
        and c.record.component in (None, backend, engine)
        and (c.record.framework is not None or c.record.component is not None)
        and c.record.in_scope(mapping.id)
    ]


def tripped(checks: Iterable[CompiledConstraint], facts: Mapping[str, Any]) -> list[Constraint]:
    """The checks a launch with `facts` fails; a check naming a fact the launch lacks is
    not judged (review may not have read it)."""
    out = []
    for c in checks:
        if not c.names <= facts.keys():
            continue
        if not bool(c.holds(facts, 1)[0]):
            out.append(c.record)
    return out


def refusal(record: Constraint) -> str:
    """One line naming a start-up check and where its code is."""
    where = f"{record.file} {record.lines}" if record.lines else record.file
    return f"{record.title} (constraint {record.id}: {where} at {record.commit[:12]})"
