"""A framework mapping record compiled for use: its conditions parsed against the facts, its
transforms applied to one plan's facts.

The transforms are a closed set (kb.schema.records.Transform); each turns the value of one
fact, and at most one other fact named by `argument`, into one config value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rlmguide.export.pools import allocation, devices
from rlmguide.export.startup import LAUNCH_FACTS
from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.kb.schema import MappingEntry
from rlmguide.rules.expr import Condition, ConditionError, Fact
from rlmguide.rules.facts import FACTS

INPUTS = {
    "input.model_path": ("MODEL_PATH", "the Hugging Face id or local path of the policy"),
    "input.train_data": ("TRAIN_DATA", "the training prompts (a dataset id or file)"),
    "input.val_data": ("VAL_DATA", "the validation prompts (a dataset id or file)"),
    "input.reward_function": ("REWARD_FUNCTION", "the Python file of the rule-based reward"),
    "input.reward_model_path": (
        "REWARD_MODEL_PATH",
        "the Hugging Face id or local path of the reward model",
    ),
    "input.fp8_model_path": (
        "FP8_MODEL_PATH",
        "the Hugging Face id or local path of the policy's block-quantised FP8 checkpoint",
    ),
    "input.megatron_checkpoint": (
        "MEGATRON_CHECKPOINT",
        "the policy converted to Megatron's torch_dist checkpoint format",
    ),
    "input.environment": (
        "ENV_CLASS",
        "the environment that scores the responses (SkyRL-Gym's environment.env_class: gsm8k, "
        "aime, ...)",
    ),
    "input.tool_config": (
        "TOOL_CONFIG",
        "the YAML file of the agent's tools (each tool's class and schema) its episodes call",
    ),
}
"""Values only the user can give: each becomes a shell variable the script insists on."""

EXPORT_FACTS = {
    **FACTS,
    "workload.epochs": Fact("workload.epochs", "number", "passes over each step's samples"),
    "run.training_backend": Fact("run.training_backend", "text", "training backend component"),
    "run.rollout_engine": Fact("run.rollout_engine", "text", "rollout engine component"),
    **{name: Fact(name, "text", text) for name, (_, text) in INPUTS.items()},
    **LAUNCH_FACTS,
}
"""The facts a mapping may read: the rules' facts plus what only a launch needs."""


FACT_ARGUMENT = ("divide", "multiply", "add", "nodes", "gpus_per_node", "devices", "list")
"""Transforms whose `argument` names a second fact."""


class MappingError(ValueError):
    """A mapping record that names an unknown fact or an unparsable condition."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path, self.message = path, message


class NotExpressible(Exception):
    """The framework's launch cannot say what the plan asks (exit 1, with the reason)."""


class KeyCannotHold(NotExpressible):
    """A key of the mapping has no value for the plan on the pair tried (verl's FSDP strategy
    for ZeRO-1): another pair of the framework may hold it."""


@dataclass(frozen=True)
class CompiledEntry:
    entry: MappingEntry
    when: Condition

    def applies(self, facts: Mapping[str, Any], backend: str | None, engine: str | None) -> bool:
        if self.entry.component not in (None, backend, engine):
            return False
        return bool(self.when.evaluate(facts))


def compile_mapping(record: MappingRecord) -> list[CompiledEntry]:
    """The entries with their conditions parsed; every fact they name must exist, and every
    default must be of an entry's key."""
    keys = {e.key.lstrip("+") for e in record.entries}
    for key in record.config_defaults:
        if key not in keys:
            raise MappingError(f"config_defaults.{key}", "no entry has this key")
    for i, name in enumerate(record.implied_facts()):
        if name not in EXPORT_FACTS:
            raise MappingError(f"implied[{i}]", f"unknown fact {name!r}")
    for name in record.absent:
        if name not in EXPORT_FACTS:
            raise MappingError(f"absent.{name}", "unknown fact")
    # a per-GPU micro-batch key no entry writes (export batches by tokens) is still one a
    # launch gives and the start-up checks read (verl's rollout.log_prob_micro_batch_size_per_gpu)
    readable = keys | set(record.global_batching.values())
    for fact, key in record.reads.items():
        if fact not in LAUNCH_FACTS:
            raise MappingError(f"reads.{fact}", "not a launch fact")
        # a key written with Hydra's `+` is one the config file lacks: no entry can write it
        if key not in readable and not key.startswith("+"):
            raise MappingError(f"reads.{fact}", f"no entry has the key {key!r}")
    # the recommender judges these over the scenario's and the plans' facts
    for name, condition in (
        ("rollout_log_probs", record.rollout_log_probs),
        ("phase_offload", record.phase_offload),
    ):
        if condition is not None:
            try:
                Condition(condition, FACTS)
            except ConditionError as exc:
                raise MappingError(name, str(exc)) from None
    for i, departure in enumerate(record.departures):
        try:
            Condition(departure.when, EXPORT_FACTS)
        except ConditionError as exc:
            raise MappingError(f"departures[{i}].when", str(exc)) from None
    compiled = []
    for i, entry in enumerate(record.entries):
        named = [("fact", entry.fact)]
        if entry.transform in FACT_ARGUMENT and entry.argument is not None:
            named.append(("argument", str(entry.argument)))
        for field, name in named:
            if name not in EXPORT_FACTS:
                raise MappingError(f"entries[{i}].{field}", f"unknown fact {name!r}")
        try:
            compiled.append(CompiledEntry(entry, Condition(entry.when, EXPORT_FACTS)))
        except ConditionError as exc:
            raise MappingError(f"entries[{i}].when", str(exc)) from None
    return compiled


def departures(record: MappingRecord, facts: Mapping[str, Any]) -> list[str]:
    """The notes of the mapping's departures from the algorithm's record that hold on the
    facts (a condition naming a fact the facts lack does not hold)."""
    notes = []
    for departure in record.departures:
        try:
            holds = Condition(departure.when, EXPORT_FACTS).evaluate(facts)
        except (KeyError, TypeError):
            holds = False
        if holds:
            notes.append(departure.note)
    return notes


def mapping_problems(catalog: Catalog) -> list[Problem]:
    """Every mapping record whose entries name an unknown fact or a bad condition."""
    problems = []
    for record in catalog.of("mapping").values():
        assert isinstance(record, MappingRecord)
        try:
            compile_mapping(record)
        except MappingError as exc:
            problems.append(Problem(catalog.file_of(record), exc.path, exc.message))
    return problems


def lookup_key(value: Any) -> str:
    """How a fact's value is written as a key of a `lookup` table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def pool_shape(gpus: int, other: int | None, per_node: int, nodes: int) -> tuple[int, int]:
    """A pool of `gpus` as (nodes, GPUs per node). Alone it takes whole nodes or part of one;
    beside `other` (the second pool of a disaggregated plan) both spread over the fewest nodes
    that give each the same count on every node, as verl's and OpenRLHF's resource pools are
    declared."""
    if other is None or (gpus % per_node == 0 and other % per_node == 0):
        if gpus % per_node == 0:
            return gpus // per_node, per_node
        if gpus < per_node:
            return 1, gpus
        raise NotExpressible(
            f"a pool of {gpus} GPUs is neither whole nodes of {per_node} nor part of one"
        )
    for n in range(1, nodes + 1):
        if gpus % n == 0 and other % n == 0 and (gpus + other) // n <= per_node:
            return n, gpus // n
    raise NotExpressible(
        f"pools of {gpus} and {other} GPUs cannot share {nodes} nodes of {per_node} with the "
        "same count on every node"
    )


def _whole(value: float, entry: MappingEntry, facts: Mapping[str, Any]) -> int:
    if value != int(value):
        raise KeyCannotHold(
            f"{entry.key}: {entry.fact} ({facts[entry.fact]}) over {entry.argument} "
            f"({facts[str(entry.argument)]}) is not a whole number"
        )
    return int(value)


def apply(entry: MappingEntry, facts: Mapping[str, Any]) -> Any:
    """The config value `entry` gives for one plan's `facts`."""
    value = facts[entry.fact]
    other = facts.get(str(entry.argument)) if entry.argument is not None else None
    match entry.transform:
        case "identity":
            return value
        case "flag":
            return bool(value)
        case "equals":
            return value == entry.argument
        case "lookup":
            table = entry.table or {}
            key = lookup_key(value)
            if key not in table:
                known = ", ".join(table)
                raise KeyCannotHold(
                    f"{entry.key} has no value for {entry.fact} = {key} (it takes {known})"
                )
            return table[key]
        case "nodes" | "gpus_per_node":
            alone = other is None or facts["plan.placement"] == "colocated"
            beside = None if alone else int(other)
            shape = pool_shape(
                int(value), beside, int(facts["cluster.gpus_per_node"]), int(facts["cluster.nodes"])
            )
            return shape[0] if entry.transform == "nodes" else shape[1]
        case "divide":
            return _whole(value / other, entry, facts)
        case "multiply":
            return value * other
        case "add":
            return value + other
        case "constant":
            return entry.argument
        case "list":
            return [value] if other is None else [value, other]
        case "allocation":
            try:
                return allocation(str(entry.argument), entry.table or {}, facts)
            except KeyError as exc:
                raise KeyCannotHold(f"{entry.key} has no name for {exc.args[0]}") from None
        case "devices":
            # a disaggregated pool starts past the pool it does not share (ROLL's actor_infer
            # after actor_train); a colocated one shares the first ids
            apart = other is not None and facts["plan.placement"] != "colocated"
            return devices(int(other) if apart else 0, int(value))
    raise AssertionError(entry.transform)  # the schema admits no other transform


NEUTRAL = {
    "workload.epochs": 1,
    "plan.rollout.pp": 1,
    "plan.rollout.ep": 1,
    "plan.rollout.attention_dp": 1,
    "plan.rollout.cp": 1,
    "plan.rollout.fp8": False,
    "plan.train.tp": 1,
    "plan.train.pp": 1,
    "plan.train.virtual_stages": 1,
    "plan.train.shard_group": 0,
    "plan.train.frozen_shard_group": 0,
    "plan.train.first_stage_layers": 0,
    "plan.train.last_stage_layers": 0,
    "plan.train.cp": 1,
    "plan.train.ep": 1,
    "plan.train.fp8": False,
    "plan.train.lora_rank": 0,
    "plan.train.offload_phase": False,
    "plan.train.offload_optimizer": 0,
    "plan.train.offload_params": False,
    "plan.train.offload_frozen": False,
    # no mapped launch fuses stages: a fused plan needs a key of its own (survey §4.3)
    "plan.fusion": "none",
    "plan.pools.critic": 0,
    "plan.pools.reference": 0,
    "plan.pools.reward": 0,
    # the frozen models in the training layout; a layout of their own needs a key
    "plan.assessment.tp": 0,
    "plan.assessment.pp": 0,
    "workload.reward_model": False,
    "workload.recompute_old_logprobs": True,
    "model.reference_own": False,
    "model.reference_fp8": False,
    # agentic episodes: a launch without the agent loop's keys runs one turn per prompt, each
    # turn's tokens appended to the last
    "workload.max_turns": 1,
    "workload.context_appended": True,
    # a clip range the algorithm's record sets (GSPO's sequence-level 3e-4/4e-4): left to the
    # framework's PPO default of 0.2 it would never clip
    "workload.clip_low": 0,
    "workload.clip_high": 0,
}
"""Plan facts a launch that says nothing about them leaves at these values: any other value
needs a key of its own, or the plan cannot be written."""


STAGE_COUNTS = {
    "launch.pp_first_layers": "plan.train.first_stage_layers",
    "launch.pp_last_layers": "plan.train.last_stage_layers",
}
"""The launch's pipeline stage counts are the plan's split where it gives one (export's
startup.computed): an entry that writes them writes the plan's."""


def spelled(entry: MappingEntry) -> tuple[str, ...]:
    """The facts an entry writes besides its own: an allocation string spells every degree
    of its pool (an engine's are only TP and PP: AReaL's inference dimensions are d, t, p);
    a stage count, the plan's split (STAGE_COUNTS)."""
    if entry.fact in STAGE_COUNTS:
        return (STAGE_COUNTS[entry.fact],)
    if entry.transform != "allocation":
        return ()
    degrees = ("tp", "pp") if entry.argument == "rollout" else ("tp", "pp", "cp", "ep", "etp")
    return tuple(f"plan.{entry.argument}.{d}" for d in degrees)


def unexpressed(
    facts: Mapping[str, Any],
    active: Iterable[CompiledEntry],
    implied: Mapping[str, Any] | None = None,
) -> list[str]:
    """The plan facts away from their neutral value that no active entry accounts for: an
    entry accounts for the facts it writes and those its condition tested on this plan; the
    mapping's `implied` facts (Mapping.implied_facts) the framework realises by itself."""
    implied = implied or {}
    by_entry = {name for c in active for name in (c.entry.fact, *c.when.names, *spelled(c.entry))}
    written = by_entry | set(implied)
    missing = [
        f"{name} = {lookup_key(facts[name])}"
        for name, neutral in NEUTRAL.items()
        if name in facts and facts[name] != neutral and name not in written
    ]
    # A reward model is neutral once workload.reward_model is written; a judge or a process
    # reward model scores differently and needs a key of its own.
    kind = facts.get("workload.reward_kind", "verifier")
    if kind not in ("verifier", "reward-model") and "workload.reward_kind" not in written:
        missing.append(f"workload.reward_kind = {kind}")
    # a KL side the algorithm's record states is written on that side, never the other
    # (verl, SkyRL and slime default to a KL loss; AReaL has only a reward penalty)
    placement = facts.get("workload.kl_placement", "none")
    if placement in ("reward", "loss") and "workload.kl_placement" not in written:
        missing.append(f"workload.kl_placement = {placement}")
    # and with the estimator the record fixes (slime and OpenRLHF default to k1, verl's KL
    # loss to k3): an entry writes it, or the framework holds that one without a key
    # (Mapping.implied: ROLL's KL loss is k3 in code)
    estimator = facts.get("workload.kl_estimator", "none")
    if (
        estimator in ("k1", "k2", "k3")
        and "workload.kl_estimator" not in by_entry
        and implied.get("workload.kl_estimator") != estimator
    ):
        missing.append(f"workload.kl_estimator = {estimator}")
    overlapped = facts["plan.execution"] in ("async", "partial-rollout")
    if overlapped and "plan.max_staleness" not in written:
        missing.append(f"plan.max_staleness = {facts['plan.max_staleness']}")
    return missing
