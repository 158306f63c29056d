"""A framework launch read back into plan facts by running its mapping record backwards.

Each mapping entry says `key = transform(fact[, argument])`; reading inverts the transform:
identity and flags directly, lookups through the table (several facts giving one value leave a
choice that other keys settle), `nodes` x `gpus_per_node` back into a pool, and `divide`
solved for whichever side is unknown once the other is known (prompts per mini-batch back into
mini-batches per step, engines x TP back into rollout GPUs). Keys no entry reads are kept and
reported, never dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlmguide.export import startup
from rlmguide.export.mapping import NEUTRAL, CompiledEntry, compile_mapping, lookup_key
from rlmguide.export.pools import PoolSpelling, read_allocation, read_devices
from rlmguide.kb.schema import Launch, MappingEntry
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.review.budget import Budget


@dataclass(frozen=True)
class Use:
    """One config key and the plan fact it gave."""

    key: str
    value: Any
    fact: str
    fact_value: Any
    default: bool = False
    """The launch leaves the key out: the value is the framework's default at the commit."""


@dataclass
class Reading:
    mapping: MappingRecord
    launch: Launch
    backend: str | None
    engine: str | None
    facts: dict[str, Any]
    uses: list[Use]
    unmapped: dict[str, Any]
    """Keys of the launch that no entry of the mapping reads."""
    ambiguous: dict[str, list[str]] = field(default_factory=dict)
    """Facts a lookup left open between several values (the first is taken)."""
    context_tokens: int | None = None
    """An overridden max_position_embeddings: the run extends the model's context."""
    unknown_variables: list[str] = field(default_factory=list)
    """Shell variables the launch used that only a command substitution sets (read as empty)."""
    unsourced: list[str] = field(default_factory=list)
    """Files the script sources or runs that could not be read (their settings are missing)."""
    config_missing: str | None = None
    """The config --config-path/--config-name names, where it is not beside the launch: where
    it was looked for and the keys it may set (read at their defaults)."""
    config: dict[str, Any] = field(default_factory=dict)
    """Every key of the launch as the framework's parser holds it."""
    files: list[tuple[Path, str]] = field(default_factory=list)
    """The files the launch read, with their text (to say where a value was read)."""
    budget: Budget = field(default_factory=Budget)
    """The reading's limits, for files read after the launch (a model's config.json)."""
    mapping_from: str = "the framework's only mapping"
    """Why `mapping` reads the launch: the export header names it, or the keys chose it."""
    appended: set[str] = field(default_factory=set)
    """Keys the launch adds to a Hydra config with `+` (the config need not hold them)."""
    stated_lengths: dict[str, int] | None = None
    """The reasoning budget and the lengths it cuts, from an export's header line
    (rlmguide.export.render.budget_line): a launch has no key for them."""
    stated_scenario: dict[str, int | str] | None = None
    """The scenario an export's header names (rlmguide.export.render.scenario_line)."""
    own_pools: set[str] = field(default_factory=set)
    """Pool facts a switch of their own turned on: the model runs on GPUs apart from the
    trainer's even in a colocated launch (verl's reward.reward_model.enable_resource_pool)."""


def _unreadable(value: Any) -> str | None:
    """Why a value of a key the mapping reads is no number a launch can hold, or None:
    infinities and NaN (`1e400`, `.inf`) and integers past 64 bits (`10**400`)."""
    if isinstance(value, list):
        return next((p for v in value if (p := _unreadable(v)) is not None), None)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        digits = round(value.bit_length() * math.log10(2))
        return f"a {digits}-digit integer is past the 64 bits a launch's numbers have"
    return None


TEXT_FACTS = frozenset(
    {"workload.algorithm", "workload.reward_model", "workload.kl_placement",
     "workload.kl_estimator", "plan.placement", "plan.execution", "plan.train.recompute",
     "run.rollout_engine"}
)  # fmt: skip
"""The plan and workload facts a launch gives as words; the others are numbers or switches
(`input.*` are paths; `launch.*` are read as written and typed by export.startup)."""


def _mistyped(fact: str, got: Any) -> str | None:
    """Why a fact read from a launch cannot be what the plan needs (a word or a list where a
    number goes: `key=''`, `--flag 8 16`), or None."""
    if fact.startswith(("input.", "launch.")) or fact in TEXT_FACTS or got is None:
        return None
    if fact == "plan.max_staleness" and isinstance(got, float) and not got.is_integer():
        # verl's staleness_threshold 0.1 lets a tenth of a step run ahead: rounding it up
        # would cost a whole step of overlap the launch never allows
        return (
            f"{got} lets generation run a fraction of a step ahead; a plan's max_staleness "
            "counts whole steps (0, 1, 2, ...), so this bound has no plan to cost"
        )
    if isinstance(got, bool | int | float):
        return None
    return f"{str(got)[:40]!r} is not a number (the framework's parser would refuse it)"


def _typed(fact: str, key: str) -> Any:
    """A lookup table's key (always text) as the fact's value."""
    if key in ("true", "false"):
        return key == "true"
    try:
        return int(key)
    except ValueError:
        return key


def truth(value: Any) -> bool:
    """A launch value as a switch: a boolean, or the word true."""
    if isinstance(value, str):
        return value.lower() == "true"
    return bool(value)


def _same(a: Any, b: Any) -> bool:
    return lookup_key(a) == lookup_key(b) or (
        isinstance(a, str) and isinstance(b, str) and a.lower() == b.lower()
    )


def _looked_up(e: MappingEntry, value: Any) -> list[str]:
    """The fact values a lookup entry's table (or its also_reads) spells as `value`."""
    options = [k for k, v in (e.table or {}).items() if _same(v, value) or v == value]
    return options + [k for v, k in e.also_reads.items() if _same(v, value)]


def _applies(
    entry: CompiledEntry, facts: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> bool:
    """Whether the entry's condition holds on the facts read so far; a condition on a fact
    not read yet is taken to hold (the key is there, so the launch meant it). A switch whose
    condition names its own fact is the switch of that fact where the rest of the condition
    holds: SkyRL's colocate_all is phase offload only on a colocated launch. A lookup whose
    condition names its own fact holds where the condition does for the value its key reads
    in `config` (verl's kl_penalty gives the KL estimator only where the KL is in the reward,
    whichever estimator it names), or, where the key reads as no one value, for some value the
    lookup can give: a KL side read from a switch left off needs the reference the rest of the
    condition asks for."""
    e = entry.entry
    if not e.when.strip() or e.when.strip() == "true":
        return True
    trials = [facts]
    if e.fact not in facts and e.fact in entry.when.names:
        if e.transform == "flag":
            trials = [{**facts, e.fact: True}]
        elif e.transform == "lookup":
            read = _looked_up(e, config.get(e.key.lstrip("+"))) if config is not None else []
            options = read if len(read) == 1 else list(e.table or ())
            if options:
                trials = [{**facts, e.fact: _typed(e.fact, k)} for k in options]
    for trial in trials:
        try:
            if bool(entry.when.evaluate(trial)):
                return True
        except (KeyError, TypeError):
            return True
    return False


def fixed_present(fixed: str, options: Mapping[str, Any]) -> bool:
    """Whether the launch's options hold one of an entry point's fixed options (a switch on,
    or the value given, a `.yaml` suffix aside)."""
    key, sep, value = fixed.lstrip("-+").partition("=")
    got = options.get(key)
    if got is None:
        return False
    if not sep:
        return truth(got)
    return _same(got, value) or _same(str(got).removesuffix(".yaml"), value.removesuffix(".yaml"))


def entry_module(command: str) -> str:
    """The Python module an entry point's command starts (`python3 -m X`, or a script path)."""
    return command.split()[-1].removesuffix(".py").replace("/", ".")


def _asserted_stop(
    mapping: MappingRecord,
    module: str,
    options: Mapping[str, Any],
    backend: str | None,
    agrees: Callable[[Launch], bool],
) -> None:
    """Raise the start-up assert a launch of `module` meets where the entry point's code
    asserts fixed options the launch lacks (verl's fully asynchronous rollouter: hybrid_engine
    off, train_batch_size 0), rather than calling the command unknown."""
    for launch in mapping.launches:
        if (
            launch.asserted
            and entry_module(launch.command) == module
            and launch.component in (None, backend)
            and agrees(launch)
        ):
            lacking = [
                f
                for f in launch.fixed
                if not f.startswith("--config") and not fixed_present(f, options)
            ]
            if lacking:
                raise LookupError(
                    f"{mapping.id}: `{module}` would stop at start-up: its code asserts "
                    f"{', '.join(lacking)} ({launch.asserted}), which this launch does not set"
                )


def choose_launch(
    mapping: MappingRecord,
    module: str,
    options: Mapping[str, Any],
    backend: str | None,
    read: Mapping[str, Any] | None = None,
) -> Launch:
    """The mapping's entry point this launch is: the same command, every fixed option present,
    the execution and placement the keys gave (`read`), an overlapped one its own switches
    select before any other, then the most specific (most fixed options matched, then the one
    whose base config (AReaL's `--config`) the launch names, then one whose execution the
    present keys' conditions name, an overlapped execution before sync)."""
    read = read or {}

    def agrees(launch: Launch) -> bool:
        given = {"plan.execution": launch.execution, "plan.placement": launch.placement}
        return all(
            read.get(f, v) == v and v not in read.get(f"not {f}", ()) for f, v in given.items()
        )

    named = " ".join(e.when for e in mapping.entries if e.key.lstrip("+") in options)
    fitting = [
        launch
        for launch in mapping.launches
        if entry_module(launch.command) == module
        and launch.component in (None, backend)
        and all(fixed_present(f, options) for f in launch.fixed if not f.startswith("--config"))
        and agrees(launch)
    ]
    if not fitting:
        _asserted_stop(mapping, module, options, backend, agrees)
        raise LookupError(f"{mapping.id} has no entry point `{module}` for this launch")

    def selects_overlap(launch: Launch) -> bool:
        # an overlapped launch whose own switches the launch gives runs that way whatever else
        # it gives: OpenRLHF's --train.async_enable beside --train.colocate_all and
        # --vllm.enable_sleep (the sync launch's) is async, and stops at start-up
        # (train_ppo_ray.py L670-L671, constraint openrlhf-async-refuses-vllm-sleep)
        switches = [f for f in launch.fixed if not f.startswith("--config")]
        return launch.execution != "sync" and bool(switches)

    return max(
        fitting,
        key=lambda la: (
            selects_overlap(la),
            len(la.fixed),
            any(fixed_present(f, options) for f in la.fixed if f.startswith("--config=")),
            f"'{la.execution}'" in named,
            la.execution != "sync",
        ),
    )


@dataclass
class _Read:
    facts: dict[str, Any]
    config: Mapping[str, Any]
    uses: list[Use] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)
    pools: dict[str, dict[str, int]] = field(default_factory=dict)
    pending: list[MappingEntry] = field(default_factory=list)
    devices: dict[str, set[int]] = field(default_factory=dict)
    """Pool fact -> the device ids its first device list names (ROLL's device_mapping)."""
    switched: set[str] = field(default_factory=set)
    """Pool facts a switch of their own turned on (verl's enable_resource_pool)."""

    def allocation(self, e: MappingEntry, key: str, value: Any) -> None:
        """An allocation string: every degree of its pool at once (an engine's are its GPUs,
        TP and PP; the data-parallel count is what the GPUs leave)."""
        try:
            _, degrees = read_allocation(value)
        except PoolSpelling as exc:
            raise LookupError(f"{key}: {exc}") from None
        pool = str(e.argument)
        kept = ["gpus", "tp", "pp"] + ([] if pool == "rollout" else ["cp", "ep", "etp"])
        for degree in kept:
            self.facts.setdefault(f"plan.{pool}.{degree}", degrees[degree])
        self.uses.append(Use(e.key, value, f"plan.{pool}", str(value)))
        self.used.add(key)

    def entry(self, e: MappingEntry, either: bool = False) -> None:
        """Invert one entry whose key the launch gives; `either`: an entry that always applies,
        whose switch on a workload fact turns it on whatever another such key said."""
        key = e.key.lstrip("+")
        value = self.config[key]
        if problem := _unreadable(value):
            raise LookupError(f"{key}: {problem}")
        got: Any = None
        match e.transform:
            case "identity":
                got = value
            case "flag":
                got = truth(value)
                if e.fact == "plan.train.offload_optimizer":
                    got = 1.0 if got else 0.0
                elif e.fact.startswith("plan.pools."):
                    if got:
                        # the pool's size comes from its nodes x GPUs keys; the switch says
                        # the model is apart from the trainer's GPUs whatever the placement
                        self.switched.add(e.fact)
                        self.uses.append(Use(e.key, value, e.fact, None))
                        self.used.add(key)
                        return
                    got = 0
            case "equals":
                if not truth(value):
                    self.facts.setdefault(f"not {e.fact}", set()).add(e.argument)
                    self.uses.append(Use(e.key, value, e.fact, f"not {e.argument}"))
                    self.used.add(key)
                    return
                got = e.argument
            case "lookup":
                options = _looked_up(e, value)
                if not options:
                    return
                if len(options) > 1:
                    # keep the value that names itself (grpo -> grpo) first
                    options.sort(key=lambda k: (not _same(k, value), k))
                    self.ambiguous.setdefault(e.fact, options)
                    self.uses.append(Use(e.key, value, e.fact, None))
                    self.used.add(key)
                    return
                got = _typed(e.fact, options[0])
            case "list":
                if e.argument is not None and isinstance(value, list) and len(value) == 2:
                    # a pair of facts, as export writes it (OpenRLHF's eps_clip_low_high)
                    self.facts.setdefault(str(e.argument), value[1])
                    got = value[0]
                else:
                    # one file per list, as export writes it; more files are one input still
                    got = value[0] if isinstance(value, list) and len(value) == 1 else value
            case "allocation":
                self.allocation(e, key, value)
                return
            case "devices":
                try:
                    ids = read_devices(value)
                except PoolSpelling as exc:
                    raise LookupError(f"{key}: {exc}") from None
                self.devices.setdefault(e.fact, set(ids))
                got = len(ids)
            case "constant":
                # a value the plan forces; the start-up checks read it (`reads`)
                self.uses.append(Use(e.key, value, e.fact, None))
                self.used.add(key)
                return
            case "nodes" | "gpus_per_node":
                if not isinstance(value, int) or isinstance(value, bool):
                    raise LookupError(f"{key}: {str(value)[:60]!r} is not a count of {e.transform}")
                known = self.pools.setdefault(e.fact, {}).get(e.transform, value)
                if known != value and e.when.strip():
                    # a model that would share the pool (OpenRLHF's reference on the actor's
                    # GPUs) but is sized otherwise has a pool of its own: its other entry reads it
                    return
                self.pools[e.fact][e.transform] = value
                self.uses.append(Use(e.key, value, e.fact, None))
                self.used.add(key)
                return
            case _:
                self.pending.append(e)
                return
        if problem := _mistyped(e.fact, got):
            raise LookupError(f"{key}: {problem}")
        if e.fact.startswith("input.") or (
            either and got is True and e.fact.startswith("workload.")
        ):
            # a model any of the keys that always apply loads is loaded (ROLL's reference: a KL
            # loss, or a KL coefficient above 0)
            self.facts[e.fact] = got
        else:
            self.facts.setdefault(e.fact, got)
        self.uses.append(Use(e.key, value, e.fact, got))
        self.used.add(key)


def read_launch(
    mapping: MappingRecord,
    module: str,
    config: Mapping[str, Any],
    backend: str | None,
    engine: str | None,
) -> Reading:
    """The facts the launch gives: unconditional entries first (they may settle the execution
    and placement, as NeMo-RL's keys do), then the entry point, then the entries whose
    conditions hold on what was read."""
    given = config
    mine = [c for c in compile_mapping(mapping) if c.entry.component in (None, backend, engine)]
    keys = {c.entry.key.lstrip("+") for c in mine}
    defaulted = {k: v for k, v in mapping.config_defaults.items() if k in keys and k not in config}
    config = {**config, **defaulted}
    compiled = [c for c in mine if c.entry.key.lstrip("+") in config]
    state = _Read({"run.training_backend": backend, "run.rollout_engine": engine}, config)
    if not any(c.entry.fact == "workload.max_turns" for c in compiled):
        # no key of the agent loop: one turn per prompt, which the entries conditioned on
        # the turns need to know before they are read
        state.facts["workload.max_turns"] = 1
    # staleness is read first: it tells one-step-off from async where a flag says only "async"
    first = [
        c
        for c in compiled
        if not c.entry.when.strip()
        or c.entry.when.strip() == "true"
        or c.entry.fact == "plan.max_staleness"
    ]
    for c in first:
        state.entry(c.entry, either=True)
    # a key that tells overlapped modes apart once the launch overlaps (NeMo-RL's in-flight
    # weight updates: async, not one-step-off) settles the execution before the entry point
    early = [
        c
        for c in compiled
        if c not in first and c.entry.fact == "plan.execution" and _applies(c, state.facts)
    ]
    for c in early:
        state.entry(c.entry)
    _settle({f: v for f, v in state.ambiguous.items() if f.startswith("plan.")}, state.facts)
    pools = [state.devices.get(f"plan.{p}.gpus") for p in ("train", "rollout")]
    if all(pools) and "plan.placement" not in state.facts:
        # roles listing the same devices take turns on them (ROLL's device_mapping)
        shared = bool(pools[0] & pools[1])  # type: ignore[operator]
        state.facts["plan.placement"] = "colocated" if shared else "disaggregated"
    if state.facts.get("plan.max_staleness") == 0 and "plan.execution" not in state.facts:
        # no sample may lag the policy (AReaL's max_head_offpolicyness 0): synchronous
        state.facts["plan.execution"] = "sync"
    try:
        launch = choose_launch(mapping, module, config, backend, state.facts)
    except LookupError:
        launch = choose_launch(mapping, module, config, backend)
    facts = state.facts
    facts["plan.execution"], facts["plan.placement"] = launch.execution, launch.placement
    for c in compiled:
        if c not in first and c not in early and _applies(c, facts, config):
            # a switch conditioned on its own fact is one more key that can turn it on (SkyRL's
            # KL in the reward loads the reference where the KL loss is off)
            state.entry(
                c.entry, either=c.entry.transform == "flag" and c.entry.fact in c.when.names
            )
    fixed = {f.lstrip("-+").partition("=")[0] for f in (*mapping.fixed, *launch.fixed)}
    for k in config:
        if k in fixed:
            state.uses.append(Use(k, config[k], "launch (fixed by the entry point)", config[k]))
            state.used.add(k)
    for fact, shape in state.pools.items():
        if {"nodes", "gpus_per_node"} <= shape.keys():
            facts.setdefault(fact, shape["nodes"] * shape["gpus_per_node"])
    uses = [
        Use(
            u.key,
            u.value,
            u.fact,
            facts.get(u.fact) if u.fact_value is None else u.fact_value,
            u.key.lstrip("+") in defaulted,
        )
        for u in state.uses
    ]
    _rule_out(state.ambiguous, mine, config, facts)
    _settle(state.ambiguous, facts)
    if "workload.prompts_per_step" in facts:
        # the derived fact OpenRLHF and NeMo-RL count optimizer batches in
        samples = facts.get("workload.samples_per_prompt", 1)
        facts["workload.responses_per_step"] = facts["workload.prompts_per_step"] * samples
    used = state.used
    # the group a per-GPU token budget is per GPU of (OpenRLHF's cp x tp)
    facts["launch.cp_tp"] = int(facts.get("plan.train.cp") or 1) * int(
        facts.get("plan.train.tp") or 1
    )
    if (ranks := startup.data_parallel(facts)) and "workload.responses_per_step" in facts:
        # what one data-parallel rank trains per step (ROLL's mini-batches count per rank)
        facts["launch.rank_samples"] = facts["workload.responses_per_step"] / ranks
        if micro := facts.get("launch.rank_micro_batch"):
            # ROLL's accumulation steps count micro-batches of per_device_train_batch_size
            facts["launch.rank_micro_batches"] = facts["launch.rank_samples"] / micro
    _solve(state.pending, config, facts, uses, used)
    context = None
    for key, value in config.items():
        # a model-config override, not a mapping entry: it sets the scenario's context
        if key.endswith("max_position_embeddings") and isinstance(value, int):
            context = value
            uses.append(Use(key, value, "models.context_tokens", value))
            used.add(key)
    unmapped = {k: v for k, v in given.items() if k not in used}
    facts = {k: v for k, v in facts.items() if not k.startswith("not ")}
    facts |= startup.read(mapping, config)
    return Reading(
        mapping,
        launch,
        backend,
        engine,
        facts,
        uses,
        unmapped,
        state.ambiguous,
        context,
        own_pools=state.switched,
    )


def _rule_out(
    ambiguous: dict[str, list[str]],
    entries: list[CompiledEntry],
    config: Mapping[str, Any],
    facts: Mapping[str, Any],
) -> None:
    """Drop the values of an open lookup whose own switches the launch has off: DAPO where
    OpenRLHF's `group_norm` could be GRPO or DAPO but dynamic filtering, which DAPO sets, is
    off (given so, or the framework's default). Only switches count: a tuned number (a
    clip-higher of 0.3) does not rule a value out."""
    for fact, options in ambiguous.items():
        kept = []
        for option in options:
            trial = {**facts, fact: _typed(fact, option)}
            off = any(
                c.entry.transform == "constant"
                and c.entry.fact == fact
                and c.entry.argument is True
                and c.entry.key.lstrip("+") in config
                and not truth(config[c.entry.key.lstrip("+")])
                and _holds(c, trial)
                for c in entries
            )
            if not off:
                kept.append(option)
        if kept:
            options[:] = kept


def _holds(entry: CompiledEntry, facts: Mapping[str, Any]) -> bool:
    """Whether the entry's condition holds on `facts` (one it cannot decide does not)."""
    try:
        return bool(entry.when.evaluate(facts))
    except (KeyError, TypeError):
        return False


def _settle(ambiguous: dict[str, list[str]], facts: dict[str, Any]) -> None:
    """A lookup that left a choice takes the value another key fixed, else its first; an
    overlapped execution one step stale is one-step-off."""
    for fact, options in ambiguous.items():
        if fact in facts:
            continue
        if {"async", "one-step-off"} <= set(options) and facts.get("plan.max_staleness") == 1:
            facts[fact] = "one-step-off"
        else:
            facts[fact] = _typed(fact, options[0])


def _solve(
    pending: list[MappingEntry],
    config: Mapping[str, Any],
    facts: dict[str, Any],
    uses: list[Use],
    used: set[str],
) -> None:
    """`key = fact / argument` (or x, +) solved for the side not yet known, until nothing
    more follows; then an argument the launch leaves unset takes its neutral value (verl's
    rollout tensor_model_parallel_size over an attention-group count no key states is 1)."""
    progress, neutral = True, False
    while pending and (progress or not neutral):
        neutral = neutral or not progress
        progress = False
        for e in list(pending):
            key = e.key.lstrip("+")
            value, other = config[key], str(e.argument)
            if not isinstance(value, int | float) or isinstance(value, bool):
                pending.remove(e)
                continue
            try:
                if e.fact in facts and other not in facts:
                    target, got = other, _inverse(e.transform, value, fact=facts[e.fact])
                elif other in facts and e.fact not in facts:
                    target, got = e.fact, _inverse(e.transform, value, argument=facts[other])
                elif e.fact in facts:
                    target, got = e.fact, facts[e.fact]
                elif neutral and other in NEUTRAL:
                    target, got = e.fact, _inverse(e.transform, value, argument=NEUTRAL[other])
                else:
                    continue
            except ZeroDivisionError:
                raise LookupError(f"{key}: {value} cannot divide the batch it counts") from None
            if isinstance(got, float) and got.is_integer():
                got = int(got)
            facts.setdefault(target, got)
            uses.append(Use(e.key, value, target, facts[target]))
            used.add(key)
            pending.remove(e)
            progress = True


def _inverse(transform: str, value: float, fact: Any = None, argument: Any = None) -> Any:
    """From `value = fact (/, *, +) argument`, the side not given."""
    if fact is not None:
        return {"divide": fact / value, "multiply": value / fact, "add": value - fact}[transform]
    return {"divide": argument * value, "multiply": value / argument, "add": value - argument}[
        transform
    ]
