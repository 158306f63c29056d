"""Read a scenario file and resolve its ids against the knowledge base.

Everything a user can get wrong is reported as an `InputError` naming the field, never as a
traceback: unknown ids (with the closest names), impossible numbers, a fixed plan that
contradicts the cluster or the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError
from rlmguide.cost.assessment import ONE_PASS, Scoring
from rlmguide.cost.batch import response_lengths
from rlmguide.cost.episode import Episode
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.plans import (
    EXPERT_GRID_CHECK,
    MODEL_GRID_CHECK,
    ONE_POOL,
    expert_ranks,
    frozen_models,
)
from rlmguide.kb.closest import closest
from rlmguide.kb.files import read_text_file
from rlmguide.kb.load import describe, format_location, parse_yaml, yaml_problem
from rlmguide.kb.schema import (
    AcceleratorFigures,
    Algorithm,
    Architecture,
    Cluster,
    InlineAccelerator,
    InlineModel,
    Model,
    Offload,
    Plan,
    Record,
    Reference,
    Reward,
    Scenario,
    Workload,
    length_prior,
)
from rlmguide.kb.schema.bounds import boolean_numbers, out_of_bounds

RACK_SCALE = 8
"""Scale-up domains larger than an 8-GPU board span several nodes (NVL72 racks of trays)."""


class InputError(ValueError):
    """The scenario is wrong; the message names the field and why."""


@dataclass(frozen=True)
class Resolved:
    """A scenario with every id replaced by its record and every default filled in."""

    scenario: Scenario
    accelerator_id: str
    accelerator: AcceleratorFigures
    policy_id: str
    policy: Architecture
    critic: Architecture | None
    reward: Architecture | None
    algorithm: Algorithm
    samples_per_prompt: int
    max_response_tokens: int
    notes: tuple[str, ...] = ()
    max_staleness: int = 0
    """The off-policy lag a ranked plan may have: the workload's, else the algorithm's, else
    what a plan that fixes a lagging execution states, else 0 (on-policy)."""
    searched_staleness: int = 0
    """The lag the search costs: at least 1 for a method that samples, so that the plans
    beyond `max_staleness` are shown as what-ifs with their gain."""
    scoring: Scoring = ONE_PASS
    """How the reward model scores (its kind, calls and tokens); unused with a verifier."""
    reference: Architecture | None = None
    """The reference model when it is not the policy's architecture."""
    reference_fp8: bool = False
    policy_remote_code: bool = False
    """The policy's checkpoint needs trust_remote_code (its record's `remote_code`; false for
    an inline model or a record that does not say)."""
    policy_model_type: str = ""
    """The policy's config.json model_type (its record's `model_type`; empty for an inline
    model or a record that has not read it)."""

    @property
    def gpus(self) -> int:
        return self.scenario.cluster.gpus

    @property
    def agentic(self) -> bool:
        """Episodes of several turns or with environment time (workload.agent)."""
        return not Episode.of(self.scenario.workload).single_turn

    @property
    def domain_gpus(self) -> int:
        """The scale-up domain: as given; else the accelerator's own when that is rack-scale
        (NVL72: 72 GPUs over trays of 4) or smaller than the node; else the node."""
        cluster = self.scenario.cluster
        if cluster.scale_up_domain_gpus:
            return cluster.scale_up_domain_gpus
        own, node = self.accelerator.scale_up_domain_gpus, cluster.gpus_per_node
        if own and own < node:
            return own
        if own and own > RACK_SCALE and own % node == 0:
            return min(own, cluster.gpus)
        return node

    def cost_options(self) -> dict[str, Any]:
        """The keywords of `cost.evaluate` beyond the specs: the cluster's and the
        assessment's (reward scoring, reference model, old log-probs)."""
        cluster = self.scenario.cluster
        return {
            "episode": Episode.of(self.scenario.workload, self.scenario.plan.rollout),
            "scoring": self.scoring,
            "reference": self.reference,
            "reference_fp8": self.reference_fp8,
            "old_log_probs": self.scenario.workload.recompute_old_logprobs,
            "gpus_per_node": cluster.gpus_per_node,
            "scale_out_gbps_per_gpu": cluster.scale_out_gbps_per_gpu,
            "domain_gpus": self.domain_gpus,
            "host_link_gbytes_per_s": cluster.host_link_gbytes_per_s,
            "host_memory_gib_per_node": cluster.host_memory_gib_per_node,
        }


def read_mapping(path: Path) -> dict[str, Any]:
    """The YAML mapping in a scenario file, or an `InputError` saying why there is none."""
    try:
        text = read_text_file(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:  # not a regular file, too large, not UTF-8
        raise InputError(f"{path}: {exc}") from None
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        where, reason = yaml_problem(exc)
        where = f" {where}" if where else ""
        raise InputError(f"{path}:{where} malformed YAML: {reason}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a scenario is a mapping with cluster, models and workload")
    return data


def parse_assignment(dotted: str, value: str) -> tuple[list[str], Any]:
    """`--set PATH=VALUE`: the path's parts and the value read as YAML (`4`, `[1, 2]`, `fp8`)."""
    parts = dotted.split(".")
    if not all(parts):
        raise InputError(f"--set {dotted}: a path is field names joined by dots: plan.train.tp")
    try:
        return parts, parse_yaml(value, yaml.SafeLoader)
    except yaml.YAMLError as exc:
        reason = yaml_problem(exc)[1]
        raise InputError(f"--set {dotted}: malformed value {value!r}: {reason}") from None


def read_scenario(path: Path) -> Scenario:
    return parse_scenario(read_mapping(path), str(path))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation can hold (through unions, lists, dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _field_hint(loc: tuple[int | str, ...]) -> str:
    """For a field the schema does not know: the closest names it allows there, else the
    names it allows ("; did you mean nodes?"), following `loc` through the nested models."""
    models: list[type[BaseModel]] = [Scenario]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        inner = [x for m in models if part in m.model_fields
                 for x in _models_in(m.model_fields[part].annotation)]  # fmt: skip
        named = [m for m in models if m.__name__ == part]  # a union's branch, by its class
        models = inner or named or models
    names = sorted({name for m in models for name in m.model_fields})
    close = closest(str(loc[-1]), names)
    if close:
        return f"; did you mean {', '.join(close)}?"
    return f"; fields there: {', '.join(names)}" if names else ""


def parse_scenario(data: Any, origin: str = "scenario") -> Scenario:
    if not isinstance(data, dict):
        raise InputError(f"{origin}: a scenario is a mapping with cluster, models and workload")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        hint = _field_hint(first["loc"]) if first["type"] == "extra_forbidden" else ""
        raise InputError(
            f"{origin}: {format_location(first['loc'])}: {describe(first)}{hint}{tail}"
        ) from None
    if problem := boolean_numbers(scenario, data) or out_of_bounds(scenario):
        raise InputError(f"{origin}: {problem}")
    return scenario


def _lookup(records: Mapping[str, Record], value: str, field: str, kind: str) -> Record:
    if value in records:
        return records[value]
    close = closest(value, records, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; see `rlmguide list {kind}s`"
    raise InputError(f"{field}: unknown {kind} {value!r}{hint}")


def _architecture(
    value: str | InlineModel, models: Mapping[str, Record], field: str
) -> Architecture:
    if isinstance(value, InlineModel):
        architecture: Architecture = value
    else:
        record: Model = _lookup(models, value, field, "model")  # type: ignore[assignment]
        if record.architecture is None:
            # Open weights whose configuration was not read say so: "unpublished" is wrong.
            unread = "no architecture read at a pinned version"
            what = unread if record.architecture_absent else "no published architecture"
            raise InputError(f"{field}: {value} has {what}, so it cannot be costed")
        architecture = record.architecture
    if gap := architecture.costing_gap:
        shown = value if isinstance(value, str) else "the inline model"
        raise InputError(f"{field}: {shown} {gap}")
    return architecture


def assumed_host_memory_note(
    cluster: Cluster, accelerator: AcceleratorFigures, accelerator_id: str
) -> str | None:
    """What to say where neither the cluster nor the accelerator record gives host memory: the
    cost core then checks offloaded state against an assumed figure
    (Overheads.unrecorded_host_memory_gib_per_gpu). None where a figure is given."""
    if accelerator.host_memory_gib_per_gpu is not None:
        return None
    if cluster.host_memory_gib_per_node is not None:
        return None
    per_gpu = DEFAULT_OVERHEADS.unrecorded_host_memory_gib_per_gpu
    return (
        f"host memory: the {accelerator_id} record gives no reference system's figure, so "
        "state parked or streamed on the host is checked against an assumed "
        f"{per_gpu * cluster.gpus_per_node:,.0f} GiB a node ({per_gpu:.1f} GiB a GPU: 2 TB "
        "per 8 GPUs, as the DGX systems the records cite carry), not a recorded one; set "
        "cluster.host_memory_gib_per_node to your nodes'"
    )


def resolve(scenario: Scenario, catalog: Mapping[str, Mapping[str, Record]]) -> Resolved:
    """Replace ids by records and check what no single field can check alone."""
    cluster, models, workload = scenario.cluster, scenario.models, scenario.workload
    if cluster.parts is not None or cluster.accelerator is None:
        raise InputError(
            "cluster.parts: a mixed-accelerator cluster is planned by `rlmguide recommend` "
            "only; to estimate, export or review a plan, give the one part it runs on "
            "(cluster.accelerator, nodes, gpus_per_node)"
        )
    if isinstance(cluster.accelerator, InlineAccelerator):
        accelerator_id, accelerator = "inline", cluster.accelerator
    else:
        accelerator_id = cluster.accelerator
        accelerator = _lookup(
            catalog["accelerator"], accelerator_id, "cluster.accelerator", "accelerator"
        )  # type: ignore[assignment]
    policy = _architecture(models.policy, catalog["model"], "models.policy")
    policy_id = models.policy if isinstance(models.policy, str) else "inline"
    remote_code = isinstance(models.policy, str) and bool(
        getattr(catalog["model"][models.policy], "remote_code", False)
    )
    algorithm: Algorithm = _lookup(
        catalog["algorithm"], workload.algorithm, "workload.algorithm", "algorithm"
    )  # type: ignore[assignment]
    if workload.no_reference and algorithm.needs_reference:
        # the launch's KL switches are off: the framework loads no reference to cost
        algorithm = algorithm.model_copy(
            update={"needs_reference": False, "kl_placement": None, "kl_estimator": None}
        )
    if workload.reference_kl is not None and workload.no_reference:
        raise InputError(
            "workload.reference_kl and workload.no_reference contradict: a KL to the reference "
            "loads one; give one of them"
        )
    if workload.reference_kl is not None and not algorithm.needs_reference:
        # a KL the launch keeps beside an algorithm without one: the reference is costed
        algorithm = algorithm.model_copy(
            update={"needs_reference": True, "kl_placement": workload.reference_kl}
        )
    critic = None
    if not algorithm.online:
        _check_offline(scenario, algorithm)
    if algorithm.needs_critic:
        critic = (
            policy
            if models.critic is None
            else _architecture(models.critic, catalog["model"], "models.critic")
        )
    elif models.critic is not None:
        raise InputError(
            f"models.critic: {algorithm.name} trains no critic; remove models.critic "
            "or choose an algorithm with a value model (ppo, vapo)"
        )
    reward, scoring = _reward(models.reward, catalog["model"])
    if models.reward == "none" and algorithm.reward != "none":
        raise InputError(
            f"models.reward: {algorithm.name} scores its samples; give verifier or a reward "
            "model (none is for offline preference methods such as dpo)"
        )
    # Offline, a reward model (AlphaDPO's, RPO's) labelled the dataset before training.
    if reward is None and algorithm.reward == "model" and algorithm.online:
        raise InputError(
            f"models.reward: {algorithm.name} scores responses with a reward model; "
            "give its id (or a kind with a model) instead of 'verifier'"
        )
    reference, reference_fp8 = _reference(models.reference, catalog["model"])
    if models.reference is not None and not algorithm.needs_reference:
        raise InputError(f"models.reference: {algorithm.name} needs no reference model; remove it")
    if models.reference is not None and scenario.plan.train.lora_rank:
        raise InputError(
            "models.reference: with LoRA the reference is the frozen base inside the actor; "
            "remove models.reference or plan.train.lora_rank"
        )
    # Offline preference methods train on pairs unless their record says otherwise (KTO: 1).
    typical = algorithm.typical_samples_per_prompt or (1 if algorithm.online else 2)
    samples = workload.samples_per_prompt or typical
    if not algorithm.online and samples != typical:
        shape = "a chosen and a rejected response" if typical == 2 else "one labelled response"
        raise InputError(
            f"workload.samples_per_prompt: {algorithm.name} trains on {shape} per prompt from "
            f"its dataset, so it is {typical} (or left out)"
        )
    if algorithm.grouped and samples < 2:
        raise InputError(
            f"workload.samples_per_prompt: {algorithm.name} compares a group of "
            "responses per prompt, so it needs at least 2"
        )
    _check_search(workload, algorithm)
    longest = workload.max_response_tokens or workload.response_tokens
    # The context holds what is generated: a reasoning budget cuts the longest response.
    mean, generated = response_lengths(workload)
    # The context is sized at the caps: the longest prompt with the longest response.
    prompt = workload.longest_prompt
    context = prompt + round(generated)
    what, field = "longest response", "workload.max_response_tokens"
    if workload.reasoning_budget is not None:
        what, field = "reasoning budget", "workload.reasoning_budget"
    if workload.agent is not None:
        # An episode's context holds every turn and observation of its longest episode.
        episode = Episode.of(workload)
        context = prompt + round(episode.longest_trajectory_response(mean, generated))
        what = "longest episode (turns and observations)"
        scoring = _per_turn(scoring, workload.agent.reward, episode)
    notes: list[str] = []
    if workload.response_tokens_from == "prior":
        notes.append(length_prior.disclosure(longest))
    notes += prompt_disclosure(workload)
    configured = models.context_tokens
    # An LLM judge reads the rubric too and writes its verdict after the response.
    judged = context + scoring.rubric_tokens + scoring.verdict_tokens
    limit = (models.context_tokens or reward.max_context_tokens) if reward else judged
    if judged > context and judged > limit:
        raise InputError(
            f"models.reward: the judge reads prompt + longest response + rubric and writes "
            f"its verdict, {judged} tokens, beyond its context of {limit} tokens"
        )
    roles = (("policy", policy), ("critic", critic), ("reward", reward), ("reference", reference))
    for role, arch in roles:
        if arch is None or context <= arch.max_context_tokens:
            continue
        if configured is None:
            raise InputError(
                f"{field}: longest prompt ({prompt}) + {what} "
                f"= {context} tokens exceeds the {role} model's context of "
                f"{arch.max_context_tokens} tokens; if the run extends it (RoPE scaling or an "
                "overridden max_position_embeddings, as some recipes do), set "
                "models.context_tokens"
            )
        notes.append(
            f"the {role} model's record gives a context of {arch.max_context_tokens} tokens; "
            f"the run configures {configured} (models.context_tokens), so sequences of "
            f"{context} tokens are costed as given: quality beyond the trained context is the "
            "run's own risk"
        )
    if configured is not None and context > configured:
        raise InputError(
            f"{field}: prompt + {what} = {context} tokens "
            f"exceeds models.context_tokens ({configured})"
        )
    fp8 = [
        field
        for field, on in (
            ("plan.rollout.precision", scenario.plan.rollout.precision == "fp8"),
            ("plan.train.precision", scenario.plan.train.precision == "fp8"),
            ("models.reference.precision", reference_fp8),
        )
        if on
    ]
    if fp8 and not accelerator.fp8_dense_tflops:
        raise InputError(
            f"{fp8[0]}: fp8 precision needs fp8 matmuls, and {accelerator_id} has no fp8 "
            "figure; use bf16"
        )
    if host_note := assumed_host_memory_note(cluster, accelerator, accelerator_id):
        notes.append(host_note)
    if scenario.plan.train.lora_rank and policy.moe:
        notes.append(
            "LoRA adapters are costed on the attention and dense MLP layers; routed experts "
            "stay frozen"
        )
    train = scenario.plan.train
    if train.expert_layout == "isolated" and policy.moe is None:
        # Without this the search rejects every candidate and says only "no feasible plan".
        raise InputError(
            f"plan.train.expert_layout: isolated splits a mixture-of-experts policy's experts "
            f"over ep ranks, and the policy {policy_id} is dense (it has no experts); remove "
            "it or use folded"
        )
    for name, group in (
        ("shard_group", train.shard_group),
        ("frozen_shard_group", train.frozen_shard_group),
    ):
        if not group:
            continue
        # a launch's setting: the search never varies it, so the layout it divides is given
        if train.gpus is None or train.tp is None or train.pp is None:
            raise InputError(
                f"plan.train.{name}: set plan.train.gpus, tp and pp with it: the group "
                "must divide the data-parallel x context ranks, gpus / (tp x pp)"
            )
        ranks, rest = divmod(train.gpus, train.tp * train.pp)
        if rest or ranks % group:
            raise InputError(
                f"plan.train.{name}: {group} does not divide the {ranks} "
                f"data-parallel x context ranks (gpus {train.gpus} / (tp {train.tp} x pp "
                f"{train.pp}))"
            )
    chunks = train.virtual_stages or 1
    stages = train.pp or 2  # unset, the search still needs a pipeline of two stages at least
    if chunks > 1 and stages * chunks > policy.layers + 2:
        given = "plan.train.pp" if train.pp else "at least pp"
        raise InputError(
            f"plan.train.virtual_stages: {given} {stages} x {chunks} = {stages * chunks} chunks, "
            f"more than the policy's {policy.layers} layers plus the embedding and the output: "
            "each chunk of an interleaved pipeline holds one of them at least"
        )
    if train.first_stage_layers or train.last_stage_layers:
        ends = (train.first_stage_layers or 1) + (train.last_stage_layers or 1)
        both = bool(train.first_stage_layers and train.last_stage_layers)
        if (
            not train.pp
            or ends + train.pp - 2 > policy.layers
            or (both and train.pp == 2 and ends != policy.layers)
        ):
            raise InputError(
                "plan.train.first_stage_layers, last_stage_layers: the stage counts are for a "
                f"given plan.train.pp, and must leave every other stage one of the policy's "
                f"{policy.layers} layers (two stages: hold them all)"
            )
    pools = scenario.plan.pools
    unused = {
        "critic": (critic is None, f"{algorithm.name} trains no critic"),
        "reward": (reward is None, "responses are scored by a verifier on CPUs"),
        "reference": (
            not algorithm.needs_reference or bool(scenario.plan.train.lora_rank),
            f"{algorithm.name} needs no reference model"
            if not algorithm.needs_reference
            else "with LoRA the reference is the frozen base inside the actor",
        ),
    }
    for model, (idle, why) in unused.items():
        if getattr(pools, model) and idle:
            raise InputError(f"plan.pools.{model}: {why}, so a pool for it would sit idle")
    _check_configuration(scenario.plan, critic is not None, algorithm.name)
    # With LoRA the reference is the frozen base inside the actor: no model of its own.
    own_reference = algorithm.needs_reference and not scenario.plan.train.lora_rank
    _check_assessment(scenario.plan, frozen_models(policy, reference, reward, own_reference))
    tolerance = workload.max_staleness
    if not algorithm.online:
        tolerance = 0  # nothing is sampled, so no sample can lag the trainer
    if tolerance is None:
        tolerance = algorithm.max_staleness
    fixed = scenario.plan
    # Asynchronous at staleness 0 streams one batch on-policy: it lags nothing.
    lags = fixed.execution not in (None, "sync") and fixed.max_staleness != 0
    if tolerance is None and (fixed.max_staleness or lags):
        tolerance = fixed.max_staleness or 1  # the plan states what the run accepts
    if tolerance is None:
        tolerance = 0
        notes.append(
            f"{algorithm.name}'s record states no off-policy tolerance, so the ranked plans are "
            "on-policy (synchronous); plans that lag the policy (one-step-off, asynchronous, "
            "partial rollouts) are shown as what-ifs with their gain; set "
            "workload.max_staleness: k to rank plans that lag up to k policy versions"
        )
    if fixed.max_staleness and fixed.max_staleness > tolerance:
        raise InputError(
            f"plan.max_staleness: {fixed.max_staleness} exceeds the {tolerance} the workload "
            "tolerates (workload.max_staleness)"
        )
    if tolerance == 0 and lags:
        raise InputError(
            f"plan.execution: {fixed.execution} trains on samples of an older policy, and the "
            "workload is strictly on-policy (workload.max_staleness: 0)"
        )
    if not algorithm.online:
        # The trainer's GPUs run everything, one iteration after the other.
        forced = scenario.plan.model_copy(update={"placement": "colocated", "execution": "sync"})
        scenario = scenario.model_copy(update={"plan": forced})
    _check_fixed_plan(scenario)
    return Resolved(
        scenario,
        accelerator_id,
        accelerator,
        policy_id,
        policy,
        critic,
        reward,
        algorithm,
        samples,
        longest,
        tuple(notes),
        tolerance,
        max(tolerance, 1) if algorithm.online else 0,
        scoring,
        reference,
        reference_fp8,
        remote_code,
        (isinstance(models.policy, str) and catalog["model"][models.policy].model_type) or "",
    )


def prompt_disclosure(workload: Workload) -> list[str]:
    """What an output says when the workload gives only one of the prompt's two lengths, as
    length_prior.disclosure does for responses."""
    if workload.prompt_tokens_from == "cap":
        return [
            f"workload.prompt_tokens is not given: the mean prompt is taken at the cap "
            f"(max_prompt_tokens, {workload.prompt_tokens:,} tokens), since no published "
            "measurement of prompt lengths against their cap is in the knowledge base to give "
            "a prior; step time is that of every prompt at the cap, an upper bound. State the "
            "run's mean to replace it"
        ]
    if workload.max_prompt_tokens is None:
        return [
            f"workload.max_prompt_tokens is not given: the longest prompt is taken as the mean "
            f"({workload.prompt_tokens:,} tokens), so memory and context lengths are sized at "
            "it and an export writes it as the framework's prompt cap, which truncates (verl) "
            "or drops (AReaL, SkyRL) every longer prompt. State the run's prompt cap "
            "to size for its longest prompt"
        ]
    return []


def _check_search(workload: Workload, algorithm: Algorithm) -> None:
    """A search from the responses' states needs responses, one turn each, and a branching;
    an algorithm that values its states by search (VinePPO) needs the search's depth."""
    search = workload.search
    if search is None:
        if algorithm.value_rollouts_per_state is not None:
            raise InputError(
                f"workload.search: {algorithm.name} values each state of a response by "
                f"{algorithm.value_rollouts_per_state} completions decoded from it; give "
                "workload.search.depth, the states per response (its reasoning steps)"
            )
        return
    if not algorithm.online:
        raise InputError(
            f"workload.search: {algorithm.name} is offline and generates nothing to search "
            "from; remove workload.search"
        )
    if workload.agent is not None:
        raise InputError(
            "workload.search: a search from the states of a multi-turn episode is not "
            "modelled (its states wait on the environment); remove workload.search or "
            "workload.agent"
        )
    if search.branching is None and algorithm.value_rollouts_per_state is None:
        raise InputError(
            f"workload.search.branching: {algorithm.name} has no default number of "
            "completions per state; give it"
        )


def _check_offline(scenario: Scenario, algorithm: Algorithm) -> None:
    """An offline preference method (DPO and its family) trains on a fixed dataset and
    generates nothing: no rollout to lay out, no pools to split, nothing to overlap and
    nobody scoring responses. What a scenario fixes to the contrary is named."""
    plan, models = scenario.plan, scenario.models
    why = f"{algorithm.name} is offline: it trains on a fixed dataset and generates nothing"
    if "reward" in models.model_fields_set and models.reward != "none":
        raise InputError(
            f"models.reward: {why}, and its labels come with the data; remove models.reward "
            "or set it to none"
        )
    if plan.placement not in (None, "colocated"):
        raise InputError(
            f"plan.placement: {why}, so there is no rollout pool to place apart; use colocated "
            "(the trainer's GPUs) or leave it out"
        )
    if plan.execution not in (None, "sync") or plan.max_staleness:
        field = "plan.execution" if plan.execution not in (None, "sync") else "plan.max_staleness"
        raise InputError(f"{field}: {why}, so there is no generation to overlap with training")
    given = sorted(plan.rollout.model_fields_set)
    if given:
        raise InputError(
            f"plan.rollout.{given[0]}: {why}, so there is no rollout engine to lay out; remove "
            "plan.rollout"
        )
    if plan.train.offload is not None and plan.train.offload.phase:
        raise InputError(
            f"plan.train.offload.phase: {why}, so there is no rollout phase to park the "
            "trainer's state for"
        )
    if scenario.workload.max_staleness:
        raise InputError(f"workload.max_staleness: {why}, so no sample lags the trainer; remove it")
    if scenario.workload.reasoning_budget is not None:
        raise InputError(
            f"workload.reasoning_budget: {why}, so no response is cut; give the dataset's "
            "lengths as response_tokens and max_response_tokens and remove the budget"
        )


def _reward(
    value: str | InlineModel | Reward, models: Mapping[str, Record]
) -> tuple[Architecture | None, Scoring]:
    """The reward model's architecture (None for a verifier, or for nobody scoring in
    offline preference methods) and how it scores."""
    if value in ("verifier", "none"):
        return None, ONE_PASS
    if not isinstance(value, Reward):
        return _architecture(value, models, "models.reward"), ONE_PASS
    if value.model is None:  # a verifier given by kind
        return None, ONE_PASS
    arch = _architecture(value.model, models, "models.reward.model")
    if value.kind == "llm-judge":
        return arch, Scoring(
            "llm-judge",
            calls_per_response=value.calls_per_response,
            rubric_tokens=value.rubric_tokens,
            verdict_tokens=value.verdict_tokens or 0,
        )
    if value.kind == "process-reward-model":
        return arch, Scoring(
            "process-reward-model",
            steps_per_response=value.steps_per_response or 1,
            per_prefix=value.scoring != "one-pass",
            chained=value.scoring == "sequential",
        )
    return arch, ONE_PASS


def _per_turn(scoring: Scoring, reward: str, episode: Episode) -> Scoring:
    """A reward after every turn: a reward model scores each turn's prefix (the passes of a
    process reward model scoring per prefix), an LLM judge writes a verdict per turn."""
    if reward != "turn":
        return scoring
    turns = math.ceil(episode.turns)
    if scoring.kind == "llm-judge":
        return replace(scoring, calls_per_response=scoring.calls_per_response * turns)
    if scoring.kind == "reward-model":
        return Scoring("process-reward-model", steps_per_response=turns, per_prefix=True)
    return scoring


def _reference(
    value: str | InlineModel | Reference | None, models: Mapping[str, Record]
) -> tuple[Architecture | None, bool]:
    """The reference model's own architecture (None: the policy's) and whether it is fp8."""
    if value is None:
        return None, False
    if not isinstance(value, Reference):
        return _architecture(value, models, "models.reference"), False
    arch = (
        None
        if value.model is None
        else _architecture(value.model, models, "models.reference.model")
    )
    return arch, value.precision == "fp8"


def _check_fixed_layouts(scenario: Scenario) -> None:
    """Fixed degrees that cannot factorise their pool, named before any search runs."""
    plan = scenario.plan
    gpus = scenario.cluster.gpus - plan.pools.total
    train = plan.train
    if train.etp and train.tp and train.tp % train.etp:
        raise InputError(
            f"plan.train.etp: {train.etp} must divide plan.train.tp ({train.tp}); the experts' "
            "tensor group is carved out of the dense layers' one"
        )
    for name, pool, degrees in (
        ("rollout", plan.rollout, ("tp", "pp")),
        ("train", train, ("tp", "pp", "cp")),
    ):
        one_pool = plan.placement in ONE_POOL
        size = pool.gpus or (gpus if one_pool else None)
        values = [getattr(pool, d) for d in degrees]
        if size is None or any(v is None for v in values):
            continue
        product = math.prod(values)
        if size % product:
            shown = " x ".join(degrees)
            megatron = (
                f"; Megatron refuses such a world at start-up ({MODEL_GRID_CHECK})"
                if name == "train"
                else ""
            )
            raise InputError(
                f"plan.{name}: {shown} = {product} does not divide the pool's {size} GPUs"
                + megatron
            )
        if name == "train" and train.ep:
            tp, _, cp = values
            # Unset, etp is searched, and etp 1 gives the experts the most ranks to span.
            host = expert_ranks(size // product, cp, tp, train.etp or 1)
            if host % train.ep:
                raise InputError(
                    f"plan.train.ep: {train.ep} does not divide dp x cp x tp / etp = {host}; "
                    "etp: 1 folds the experts over the tensor ranks too. Megatron refuses "
                    f"such a world at start-up ({EXPERT_GRID_CHECK})"
                )


def _check_assessment(plan: Plan, frozen: list[tuple[str, Architecture]]) -> None:
    """plan.assessment lays out the frozen models: each must split over its tp and pp, and
    tp x pp must divide the GPUs it runs on where the plan fixes them (its own pool, else
    the training pool)."""
    layout = plan.assessment
    if layout is None:
        return
    if not frozen:
        raise InputError(
            "plan.assessment: lays out the frozen models (reference, reward model), and this "
            "run has neither; remove it"
        )
    tp, pp = layout.tp or 1, layout.pp or 1
    shared = plan.train.gpus or (plan.rollout.gpus if plan.placement in ONE_POOL else None)
    for role, arch in frozen:
        if arch.heads % tp:
            raise InputError(
                f"plan.assessment.tp: {tp} does not divide the {role} model's "
                f"{arch.heads} attention heads"
            )
        if pp > arch.layers:
            raise InputError(
                f"plan.assessment.pp: {pp} pipeline stages exceed the {role} model's "
                f"{arch.layers} layers"
            )
        own = getattr(plan.pools, role)
        gpus = own or shared
        if gpus and gpus % (tp * pp):
            where = f"plan.pools.{role}" if own else "the training pool"
            raise InputError(
                f"plan.assessment: tp x pp = {tp * pp} does not divide the {gpus} GPUs the "
                f"{role} model runs on ({where})"
            )


def _check_configuration(plan: Plan, has_critic: bool, algorithm: str) -> None:
    """Table 9's choices (survey §4.1-§4.3) that the plan's models cannot take."""
    if plan.critic == "shared" and not has_critic:
        raise InputError(
            f"plan.critic: shared puts the critic's value head on the policy, but {algorithm} "
            "trains no critic"
        )
    if plan.critic == "shared" and plan.pools.critic:
        raise InputError("plan.pools.critic: a shared critic is the policy's value head and has "
                         "no pool of its own")  # fmt: skip
    if plan.fusion in ("intra-stage", "both") and (
        not has_critic or plan.critic == "shared" or plan.pools.critic
    ):
        raise InputError(
            f"plan.fusion: {plan.fusion} pipelines the actor's and a separate critic's updates on "
            "the same GPUs; this plan has none (critic-free algorithm, shared value head or "
            "a critic pool of its own)"
        )
    if plan.fusion_chunk and plan.fusion in ("none", "intra-stage"):
        raise InputError(
            f"plan.fusion_chunk: the chunk is inter-stage fusion's granularity, but plan.fusion "
            f"is {plan.fusion}: set fusion inter-stage or both, or drop the chunk"
        )
    if plan.placement == "partially-colocated" and not (plan.pools.reference or plan.pools.reward):
        raise InputError(
            "plan.placement: partially-colocated puts the reference and/or reward model on a "
            "small group of their own: give plan.pools.reference or plan.pools.reward"
        )


def _check_fixed_plan(scenario: Scenario) -> None:
    """What no rule can judge: fixed numbers that contradict the cluster or each other."""
    plan = scenario.plan
    # Models on their own pools take their GPUs first; rollout and training share the rest.
    gpus = scenario.cluster.gpus - plan.pools.total
    if gpus < 1:
        raise InputError(
            f"plan.pools: the critic, reference and reward pools take {plan.pools.total} of "
            f"the cluster's {scenario.cluster.gpus} GPUs, leaving none for rollout and training"
        )
    for pool_name, pool in (("rollout", plan.rollout), ("train", plan.train)):
        pool_gpus = pool.gpus or gpus
        if pool.gpus is not None and pool.gpus > gpus:
            raise InputError(
                f"plan.{pool_name}.gpus: {pool.gpus} exceeds the {gpus} GPUs "
                + ("left beside the models' own pools" if plan.pools.total else "of the cluster")
            )
        for degree in ("tp", "pp", "cp", "ep", "etp"):
            value = getattr(pool, degree, None)
            if value is not None and value > pool_gpus:
                raise InputError(
                    f"plan.{pool_name}.{degree}: {value} exceeds the pool's {pool_gpus} GPUs"
                )

    _check_fixed_layouts(scenario)
    rollout, train = plan.rollout.gpus, plan.train.gpus
    if plan.placement == "disaggregated" and rollout and train and rollout + train > gpus:
        raise InputError(
            f"plan: disaggregated pools need rollout.gpus + train.gpus "
            f"({rollout} + {train}) <= the {gpus} GPUs "
            + ("left beside the models' own pools" if plan.pools.total else "of the cluster")
        )
    attention_dp, rollout_tp = plan.rollout.attention_dp, plan.rollout.tp
    if attention_dp and rollout_tp and rollout_tp % attention_dp:
        raise InputError(
            f"plan.rollout.attention_dp: {attention_dp} does not divide plan.rollout.tp "
            f"({rollout_tp}); each attention group takes tp / attention_dp of the engine's GPUs"
        )
    cp = plan.rollout.cp
    if cp and rollout_tp and (rollout_tp // (attention_dp or 1)) % cp:
        raise InputError(
            f"plan.rollout.cp: {cp} does not divide plan.rollout.tp / attention_dp "
            f"({rollout_tp // (attention_dp or 1)}); decode context parallelism splits the KV "
            f"cache over ranks of the engine's tensor group"
        )
    offload = plan.train.offload
    if offload and offload.params and plan.train.zero is not None and plan.train.zero < 3:
        raise InputError(
            f"plan.train.offload.params: streaming parameters from the host needs them "
            f"sharded (zero 3), but plan.train.zero is {plan.train.zero}"
        )
    if plan.max_staleness is not None and plan.execution in ("sync",):
        raise InputError(
            "plan.max_staleness: synchronous execution has no staleness; use "
            "execution: async or one-step-off"
        )
    if plan.max_staleness == 0 and plan.execution != "async":
        raise InputError(
            "plan.max_staleness: 0 is the on-policy stream, which only asynchronous execution "
            "runs (execution: async); one-step-off and partial rollouts lag at least 1"
        )


def fill_plan_defaults(resolved: Resolved) -> tuple[Resolved, list[str]]:
    """Degrees left out of a fixed plan are 1; staleness 1; prefix caching on for groups; no
    offload. Returns the resolved scenario and the fields it chose, each as `path=value`."""
    s = resolved.scenario
    plan = s.plan
    gpus = s.cluster.gpus - plan.pools.total
    chosen: list[str] = []

    def pick(pool: str, given: Any, name: str, value: Any, shown: str | None = None) -> Any:
        if given is not None:
            return given
        chosen.append(f"plan.{pool}.{name}={value if shown is None else shown}")
        return value

    r, t = plan.rollout, plan.train
    group = resolved.samples_per_prompt > 1
    if plan.placement in ONE_POOL:
        # One pool given: the other shares exactly those GPUs.
        gpus = r.gpus or t.gpus or gpus
    if not resolved.algorithm.online:
        # Nothing is generated: the plan table's rollout columns hold a layout that never
        # runs (cost.offline idles it); it is neither a choice nor shown.
        r = r.model_copy(update={"gpus": gpus, "tp": 1, "pp": 1, "ep": 1, "prefix_caching": False})
    rollout = r.model_copy(
        update={
            "gpus": pick("rollout", r.gpus, "gpus", gpus),
            "pp": pick("rollout", r.pp, "pp", 1),
            "ep": pick("rollout", r.ep, "ep", 1),
            "prefix_caching": pick("rollout", r.prefix_caching, "prefix_caching", group),
        }
    )
    train = t.model_copy(
        update={
            "gpus": pick("train", t.gpus, "gpus", gpus),
            "pp": pick("train", t.pp, "pp", 1),
            "cp": pick("train", t.cp, "cp", 1),
            "ep": pick("train", t.ep, "ep", 1),
            "etp": pick("train", t.etp, "etp", t.tp),
            "offload": pick("train", t.offload, "offload", Offload(), "none"),
        }
    )
    staleness = plan.max_staleness
    if staleness is None and plan.execution != "sync":
        staleness = 1
        chosen.append("plan.max_staleness=1")
    fixed = plan.model_copy(update={"rollout": rollout, "train": train, "max_staleness": staleness})
    return replace(resolved, scenario=s.model_copy(update={"plan": fixed})), chosen
