"""`rlmguide review CONFIG`: a launch script read as its framework would, turned into a
scenario and plan, costed as `estimate` costs a fixed plan, and set beside the best plan the
same framework can run, with the changes between them ranked by predicted gain."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlmguide.cost.plans import PLACEMENTS
from rlmguide.export.mapping import compile_mapping, lookup_key
from rlmguide.export.pools import PoolSpelling, read_allocation
from rlmguide.export.render import BUDGET_FIELDS, BUDGET_LINE, MAPPING_LINE
from rlmguide.kb.load import Catalog
from rlmguide.kb.model_names import match_model
from rlmguide.kb.schema import (
    Constraint,
    MappingEntry,
    Model,
    OtherTraining,
    Scenario,
    length_prior,
)
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.review.architecture import (
    ArchitectureMissing,
    Read,
    from_hf_config,
    from_megatron,
    validated,
)
from rlmguide.review.budget import Budget, Exhausted
from rlmguide.review.config import argparse_config, hydra_config
from rlmguide.review.family import family_name, tell
from rlmguide.review.header import (
    cluster_holding,
    edited,
    flag_over,
    mean_under,
    stated_scenario,
    taken,
)
from rlmguide.review.hydra_named import NamedConfig, named_config
from rlmguide.review.recipe import RecipeError, recipe_config
from rlmguide.review.shell import Shell, ShellError, command_arguments
from rlmguide.review.understand import (
    Reading,
    Use,
    entry_module,
    fixed_present,
    read_launch,
    truth,
)


class ReviewError(ValueError):
    """A file review cannot read, or facts it needs that neither the file nor a flag gives
    (bad input, exit 2)."""


@dataclass(frozen=True)
class Hardware:
    accelerator: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    prompt_tokens: int | None = None
    """The mean prompt length, in place of the launch's prompt cap (or of a typical one where
    the launch bounds only prompt and response together)."""


def parse_launch(
    text: str,
    mappings: dict[str, MappingRecord],
    framework: str | None,
    path: Path | None = None,
    budget: Budget | None = None,
) -> tuple[str, dict[str, Any], list[MappingRecord], Shell]:
    """The entry-point module, the arguments as the framework's parser holds them, the
    mappings of the framework whose entry point the script runs, and the shell as the launch
    left it (the variables only a command substitution sets, read as empty; the files it
    read and those it could not)."""
    candidates = sorted(
        (m for m in mappings.values() if framework in (None, m.framework)),
        key=lambda m: m.committed,
        reverse=True,
    )
    modules = sorted({entry_module(la.command) for m in candidates for la in m.launches})
    for module in modules:
        try:
            words, shell = command_arguments(text, module, path=path, budget=budget)
        except ShellError as exc:
            if str(exc).startswith("no `"):
                continue
            raise ReviewError(f"cannot read the script: {exc}") from None
        own = [
            m for m in candidates if any(entry_module(la.command) == module for la in m.launches)
        ]
        try:
            config = hydra_config(words) if own[0].syntax == "hydra" else argparse_config(words)
        except ValueError as exc:
            raise ReviewError(f"cannot read the arguments of {module}: {exc}") from None
        # Hydra's `+key=` / `++key=` add a key the config lacks: no start-up stop for it
        shell.appended = {w.partition("=")[0].lstrip("+") for w in words if w.startswith("+")}
        return module, config, own, shell
    refuse_other_entry_point(text, candidates, path, budget)
    known = ", ".join(modules)
    raise ReviewError(f"no launch of a mapped framework in the file (looked for: {known})")


def refuse_other_entry_point(
    text: str, mappings: list[MappingRecord], path: Path | None, budget: Budget | None
) -> None:
    """Refuse by what it is a script that runs an entry point of a pipeline review refuses
    (Mapping.other_trainings: ROLL's start_sft_pipeline.py, NeMo-RL's run_dpo.py), rather
    than call its command unknown."""
    for mapping in mappings:
        for other in mapping.other_trainings:
            for command in other.commands:
                try:
                    command_arguments(text, entry_module(command), path=path, budget=budget)
                except ShellError:
                    continue  # not this entry point's command (or not one the shell reads)
                raise ReviewError(other_training(other, path, f"it runs {command}"))


def other_training(other: OtherTraining, path: Path | None, evidence: str) -> str:
    """The refusal of a launch of `other`, naming what marks it (`evidence`)."""
    name = f"{path.name}: " if path else ""
    return f"{name}this is {other.what} ({other.pipeline}; {evidence}); {other.why}"


def _keys(mapping: MappingRecord) -> set[str]:
    launches = [f for la in mapping.launches for f in la.fixed]
    fixed = (f.lstrip("-+").partition("=")[0] for f in (*mapping.fixed, *launches))
    return {e.key.lstrip("+") for e in mapping.entries} | set(fixed)


def _fixed_values(mapping: MappingRecord) -> set[tuple[str, str]]:
    """The settings the mapping's launches fix, as (key, value) pairs."""
    launches = [f for la in mapping.launches for f in la.fixed]
    pairs = (f.lstrip("-+").partition("=") for f in (*mapping.fixed, *launches))
    return {(k, v.lower()) for k, _, v in pairs}


def pick_version(
    own: list[MappingRecord], config: dict[str, Any], module: str | None = None
) -> MappingRecord:
    """The mapping with an entry point of `module` whose fixed options the file all gives
    (verl 0.8's `model_engine=megatron`, a config group 0.7 does not have: the launch starts
    on 0.8 only, however many of its keys 0.7's rows also read), then whose keys the file
    uses most (OpenRLHF's dotted `--ds.zero_stage` or flat `--zero_stage`), then whose fixed
    settings it has with their values (verl 0.7's `--config-name=ppo_megatron_trainer.yaml`);
    the newest on a tie."""

    def selects(m: MappingRecord) -> bool:
        return any(
            la.fixed
            and entry_module(la.command) == module
            and all(fixed_present(f, config) for f in la.fixed)
            for la in m.launches
        )

    def score(m: MappingRecord) -> tuple[bool, int, int]:
        fixed = sum(str(config.get(k, "")).lower() == v for k, v in _fixed_values(m))
        return selects(m), len(_keys(m) & config.keys()), fixed

    return max(own, key=score)


NAMED = re.compile("^" + re.escape(MAPPING_LINE) + r" ([a-z0-9][a-z0-9.+-]*):", re.MULTILINE)
"""The header line an export writes naming its mapping."""


def named_mapping(text: str, own: list[MappingRecord]) -> MappingRecord | None:
    """The mapping an export's header names, where it is one of the framework's (`own`)."""
    found = NAMED.search(text)
    return next((m for m in own if found and m.id == found.group(1)), None)


def _declared_nodes(reading: Reading) -> int:
    """The most nodes a pool of the launch names (keys of the `nodes` transform), 0 if none."""
    keys = {e.key.lstrip("+") for e in reading.mapping.entries if e.transform == "nodes"}
    return max((int(u.value) for u in reading.uses if u.key.lstrip("+") in keys), default=0)


def _read_with_a_version(
    own: list[MappingRecord],
    module: str,
    config: dict[str, Any],
    roles: dict[str, str],
    named: MappingRecord | None = None,
) -> Reading:
    """The launch read with the mapping its header names, else `pick_version`'s, else with
    the framework's other versions in turn where that one has no entry point for it (a verl
    0.7 launch whose keys 0.8 also has); the first mapping's error where none reads it."""
    first = named or pick_version(own, config, module)
    tried = [first, *sorted((m for m in own if m is not first), key=lambda m: m.committed,
                            reverse=True)]  # fmt: skip
    problem: LookupError | None = None
    for mapping in tried:
        backend, engine = pick_components(mapping, config, roles, module)
        try:
            return read_launch(mapping, module, config, backend, engine)
        except LookupError as exc:
            problem = problem or exc
            if "no entry point" not in str(exc):
                break
    raise ReviewError(str(problem)) from None


def pick_components(
    mapping: MappingRecord, config: dict[str, Any], roles: dict[str, str], module: str
) -> tuple[str | None, str | None]:
    """The training backend the launch's entry point `module` runs: one whose entry point the
    launch selects with its fixed options (verl's `model_engine=megatron`), else one it runs
    without them (verl's main_ppo composes FSDP actors unless told otherwise), the one whose
    keys it uses most among those; and the rollout engine it names (else the mapping's first
    of each)."""
    backends = [c for c in mapping.components if roles.get(c) == "training-backend"]
    engines = [c for c in mapping.components if roles.get(c) == "rollout-engine"]
    launches = [la for la in mapping.launches if entry_module(la.command) == module]

    def given(component: str, selecting: bool) -> bool:
        """An entry point of `module` on the component whose fixed options the launch all
        gives (`selecting`: and has some)."""
        return any(
            la.component in (None, component)
            and (la.fixed or not selecting)
            and all(fixed_present(f, config) for f in la.fixed)
            for la in launches
        )

    def keys(component: str) -> int:
        # a key whose value no entry of the component can give rules the component out
        # (NeMo-RL's merged config names both backends; only one is enabled); a launch value
        # both backends declare (verl's reference log-prob micro-batch, written for Megatron
        # only) names neither
        return sum(
            -1000
            if not _plausible(e, config[e.key.lstrip("+")])
            else not e.fact.startswith("launch.")
            for e in mapping.entries
            if e.component == component and e.key.lstrip("+") in config
        )

    def score(component: str) -> int:
        return keys(component) + 100 * given(component, selecting=True)

    # with no key of any backend, the one the entry point runs unless told otherwise (by a
    # config name or a switch the launch lacks)
    runnable = backends
    if not any(keys(b) > 0 for b in backends):
        runnable = [b for b in backends if given(b, selecting=False)] or backends
    backend = max(runnable, key=score) if runnable else None
    named_engine = next(
        (
            config.get(e.key.lstrip("+"))
            for e in mapping.entries
            if e.fact == "run.rollout_engine" and e.key.lstrip("+") in config
        ),
        None,
    )
    if named_engine in engines:
        engine = named_engine
    else:  # an engine named inside a key's value (AReaL's rollout.backend), else the first
        engine = max(engines, key=score) if engines else None
    return backend, engine


def _plausible(entry: MappingEntry, value: Any) -> bool:
    """Whether some fact value gives `value` through the entry (a lookup's table has it, an
    allocation string has one of its names)."""
    if entry.transform == "allocation":
        try:
            return read_allocation(value)[0] in (entry.table or {}).values()
        except PoolSpelling:
            return False
    if entry.transform != "lookup":
        return True
    table = [*(entry.table or {}).values(), *entry.also_reads]
    return any(v == value or lookup_key(v) == lookup_key(value) for v in table)


def typical_workload(
    name: str, framework: str, deployments: Mapping[str, Any]
) -> tuple[Any, str, list[str]] | None:
    """A workload number a launch leaves unsaid, as the framework's published deployments
    (else all of them) have it: their median, why, and the records it rests on."""
    field = name.removeprefix("workload.")
    for own in (True, False):
        found = sorted(
            (getattr(d.scenario.workload, field), d.id)
            for d in deployments.values()
            if (d.framework == framework or not own)
            and getattr(d.scenario.workload, field, None) is not None
        )
        if found:
            value = found[(len(found) - 1) // 2][0]  # the lower median: a value some record has
            whose = f"{framework}'s" if own else "the KB's"
            why = f"not in the launch: the median of {whose} {len(found)} deployment records"
            return value, why, [i for _, i in found]
    return None


def launch_architecture(reading: Reading, path: Any, record: str | None = None) -> Read:
    """The policy's architecture from the launch, for a model no record matches (or whose
    record, said in `record`, cannot be costed): the config.json in the local model folder it
    names, else its Megatron flags; else a one-line error naming what is missing."""
    why = []
    if path:
        folder = Path(str(path))
        config = folder if folder.name == "config.json" else folder / "config.json"
        if config.is_file():
            try:
                return from_hf_config(config, reading.budget)
            except ArchitectureMissing as exc:
                raise ReviewError(str(exc)) from None
        why.append(f"no {config} on this machine")
    try:
        read = from_megatron(reading.config, reading.files)
    except ArchitectureMissing as exc:
        why.append(str(exc))
    else:
        if read is not None:
            return read
        why.append("no Megatron architecture flags (--num-layers, --hidden-size, ...)")
    shown = (
        f"the model path {path!r} matches model record {record}"
        if record
        else f"the model path {path!r} matches no model record"
        if path
        else "the launch names no model path (or one only the environment sets)"
    )
    raise ReviewError(
        f"{shown}, and the launch does not give the architecture ({'; '.join(why)}); "
        "give --policy ID (see `rlmguide list models`)"
    )


def _inline_policy(
    built: Read, path: Any, longest: int, assumed: list[dict[str, Any]]
) -> dict[str, Any]:
    """The policy as an inline model from what the launch gives, said where it was read."""
    name = Path(str(path)).name if path else "policy read from the launch"
    spec = dict(built.spec)
    if "max_context_tokens" not in spec:
        spec["max_context_tokens"] = longest
        assumed.append(
            {
                "field": "models.policy.max_context_tokens",
                "value": longest,
                "why": "the architecture does not bound the context: the launch's prompt and "
                "longest response",
                "source": None,
            }
        )
    try:
        model = validated(Read(spec, built.origin, built.defaulted), name)
    except ArchitectureMissing as exc:
        raise ReviewError(str(exc)) from None
    defaults = f"; Megatron's defaults for {', '.join(built.defaulted)}" if built.defaulted else ""
    assumed.append(
        {
            "field": "models.policy",
            "value": name,
            "why": f"no costable model record for {str(path)!r}: architecture read from "
            f"{built.origin}{defaults}",
            "source": built.origin,
        }
    )
    return model


def scenario_of(
    reading: Reading,
    catalog: Catalog,
    hardware: Hardware,
    policy: str | None,
    deployments: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The scenario (with its plan) the reading describes, and what review assumed or took
    from flags because the file does not say it (each with its source: a record id, a list
    of them, or None for a rule of reading)."""
    deployments = deployments or {}
    f = reading.facts
    assumed: list[dict[str, Any]] = []
    header = reading.stated_scenario or {}

    def from_header(name: str) -> Any:
        """The header's value of a field the launch does not give, said so (None without)."""
        value = header.get(name)
        if value is not None:
            assumed.append(taken(name, value))
        return value

    models = catalog.of("model")
    path = f.get("input.model_path")
    matched = match_model(str(path), models) if path else None
    named = header.get("models.policy")
    named = named if named in models else None  # a record this catalog does not hold: unsaid
    model: Any = policy or matched or named
    if policy is not None:
        assumed += flag_over("models.policy", policy, header)
    elif matched is not None:
        assumed += edited("models.policy", matched, header)
    elif named is not None:
        assumed.append(taken("models.policy", named))
    record = models.get(model) if model is not None and policy is None else None
    if isinstance(record, Model) and not record.costable:
        # a record that names the model but holds no shapes it can cost (Qwen3.5-9B): the
        # launch's own architecture, else that record is named as the reason
        gap = record.costing_gap or "has no architecture read at a pinned version"
        model, built = None, launch_architecture(reading, path, f"{model}, which {gap}")
    else:
        built = None if model is not None else launch_architecture(reading, path)
    if model is not None and model not in models:
        raise ReviewError(f"--policy: unknown model {model!r}; see `rlmguide list models`")
    reward: Any = "verifier"
    if reward_path := f.get("input.reward_model_path"):
        matched = match_model(str(reward_path), models)
        record = models.get(matched) if matched else None
        if isinstance(record, Model) and record.costable:
            reward = matched
        else:
            reward = model or "policy"  # the policy's shape (one read from the launch below)
            if not isinstance(record, Model):
                why = "it matches no model record"
            elif record.architecture is None:
                why = f"{matched} has no architecture read at a pinned version"
            else:
                why = f"{matched} {record.costing_gap}"
            assumed.append(
                {
                    "field": "models.reward",
                    "value": model or "the policy's architecture",
                    "why": f"the reward model {reward_path} is costed with the policy's shape: "
                    f"{why}",
                    "source": matched,
                }
            )
    accelerator = hardware.accelerator or header.get("cluster.accelerator")
    assumed += flag_over("cluster.accelerator", hardware.accelerator, header)
    if hardware.accelerator is None and accelerator is not None:
        assumed.append(taken("cluster.accelerator", accelerator))
    if accelerator is None:
        raise ReviewError(
            "the file does not say which accelerator it runs on; give --accelerator ID "
            "(see `rlmguide list accelerators`)"
        )
    framework = reading.mapping
    for u in reading.uses:
        # a workload number the launch leaves to the framework: its default, said so
        if u.default and u.fact.startswith("workload.") and u.fact_value is not None:
            assumed.append(
                {
                    "field": u.fact,
                    "value": u.fact_value,
                    "why": f"{framework.framework}'s default for {u.key} ({u.value}) at "
                    f"{framework.commit[:9]}",
                    "source": framework.id,
                }
            )
    prompts = f.get("workload.prompts_per_step")
    samples = f.get("workload.samples_per_prompt") or from_header("workload.samples_per_prompt")
    samples = samples or 1
    agent, max_response = _episodes(f, assumed)
    max_response = max_response or f.get("workload.max_response_tokens")
    # the launch's prompt cap is the longest prompt; the mean is the flag's, else the cap's
    prompt_cap = f.get("workload.max_prompt_tokens")
    sequence = f.get("workload.sequence_tokens")
    if prompt_cap is None and max_response and sequence and sequence > max_response:
        prompt_cap = sequence - max_response
        assumed.append(
            {
                "field": "workload.max_prompt_tokens",
                "value": prompt_cap,
                "why": f"the sequence bound ({sequence}) less the longest response",
                "source": None,
            }
        )
    if prompt_cap is None:
        prompt_cap = from_header("workload.max_prompt_tokens")
    # the cap an export writes: the longest prompt, else the mean (render.prompt_cap_line)
    written = "workload.max_prompt_tokens" in header and "workload.max_prompt_tokens"
    prompt_tokens = hardware.prompt_tokens or mean_under(
        "workload.prompt_tokens",
        prompt_cap,
        {} if hardware.prompt_tokens else header,
        written or "workload.prompt_tokens",
        assumed,
    )
    assumed += flag_over("workload.prompt_tokens", hardware.prompt_tokens, header)
    stated_prompt = prompt_tokens is not None or prompt_cap is not None
    at_cap = prompt_tokens is None and prompt_cap is not None
    prompt_tokens = prompt_tokens or prompt_cap
    if at_cap:
        assumed.append(
            {
                "field": "workload.prompt_tokens",
                "value": prompt_cap,
                "why": "a launch gives only the prompt cap (workload.max_prompt_tokens) and no "
                "measurement of prompt lengths against their cap gives a prior: the mean is "
                "taken at the cap, an upper bound on the step time (--prompt-tokens sets it)",
                "source": None,
            }
        )

    def typical(name: str) -> Any:
        found = typical_workload(name, framework.framework, deployments)
        if found is None:
            raise ReviewError(
                f"the launch does not give {name} and no deployment record states one to assume"
            )
        value, why, ids = found
        assumed.append({"field": name, "value": value, "why": why, "source": ids})
        return value

    if prompts is None:
        prompts = from_header("workload.prompts_per_step") or typical("workload.prompts_per_step")
    if prompt_tokens is None:
        prompt_tokens = typical("workload.prompt_tokens")
    longest_prompt = max(prompt_cap or 0, prompt_tokens)
    if max_response is None and sequence and sequence > longest_prompt:
        max_response = sequence - longest_prompt
        assumed.append(
            {
                "field": "workload.max_response_tokens",
                "value": max_response,
                "why": f"the sequence bound ({sequence}) less the prompt",
                "source": None,
            }
        )
    elif max_response is None:
        max_response = from_header("workload.max_response_tokens") or typical(
            "workload.max_response_tokens"
        )
    if sequence and max_response and longest_prompt + max_response > sequence:
        max_response = sequence - longest_prompt  # the engine stops at the sequence bound
        if not stated_prompt:
            # NeMo-RL's max_new_tokens is the whole sequence bound: what a response may take
            # is what the assumed prompt leaves
            assumed.append(
                {
                    "field": "workload.max_response_tokens",
                    "value": max_response,
                    "why": f"the sequence bound ({sequence}) less the prompt assumed",
                    "source": None,
                }
            )
    minibatches = (
        f.get("workload.minibatches_per_step") or from_header("workload.minibatches_per_step") or 1
    )
    epochs = f.get("workload.epochs") or from_header("workload.epochs") or 1
    if len(options := reading.ambiguous.get("workload.algorithm", [])) > 1:
        stated = header.get("workload.algorithm")
        assumed.append(_variant(reading, options, catalog.of("algorithm"), stated))
    if "workload.algorithm" not in f and (algorithm := from_header("workload.algorithm")):
        f["workload.algorithm"] = algorithm
    if "workload.algorithm" not in f:
        # NeMo-RL's run_grpo.py runs GRPO; verl's adv_estimator and OpenRLHF's advantage
        # estimator default to GAE
        grpo = "grpo" in reading.launch.command
        f["workload.algorithm"] = "grpo" if grpo else "ppo"
        why = "the entry point runs GRPO" if grpo else "the framework's default (GAE)"
        assumed.append(
            {
                "field": "workload.algorithm",
                "value": f["workload.algorithm"],
                "why": why,
                "source": framework.id,
            }
        )
    reference_kl = None
    if samples == 1 and (runs := framework.single_sample.get(f["workload.algorithm"])):
        # no start-up check refuses a group of one: the estimator runs it as REINFORCE, and a
        # KL switch the launch keeps on still loads the reference
        assumed.append(
            {
                "field": "workload.algorithm",
                "value": "reinforce",
                "why": f"{f['workload.algorithm']} with one sample per prompt: {runs}",
                "source": framework.id,
            }
        )
        f["workload.algorithm"] = "reinforce"
        reference_kl = next(
            (
                u.fact_value
                for u in reading.uses
                if u.fact == "workload.kl_placement" and u.fact_value in ("reward", "loss")
            ),
            None,
        )
    mean, budget, prior = max_response, None, False
    lengths = None if agent else _budgeted_lengths(reading.stated_lengths, max_response, assumed)
    if lengths is not None:
        mean, max_response, budget = lengths
    elif agent:
        # the length prior's runs are single-turn: a turn's mean is taken at its cap
        assumed.append(
            {
                "field": "workload.response_tokens",
                "value": max_response,
                "why": "a launch gives only the longest turn; its mean is taken as that",
                "source": None,
            }
        )
    elif stated := mean_under(
        "workload.response_tokens", max_response, header, "workload.max_response_tokens", assumed
    ):
        mean = stated
    else:
        # the length prior's mean (kb.schema.length_prior), as a scenario without one takes
        mean, prior = length_prior.prior_mean_tokens(max_response), True
        assumed.append(
            {
                "field": "workload.response_tokens",
                "value": mean,
                "why": f"a launch gives only the longest response; the mean is the length "
                f"prior's, {length_prior.MEAN_SHARE:.2f} of the cap (the median over "
                f"{len(length_prior.MEASUREMENTS)} published runs)",
                "source": sorted({m.source for m in length_prior.MEASUREMENTS}),
            }
        )
    train_gpus = f.get("plan.train.gpus")
    colocated = f["plan.placement"] == "colocated"
    engines = f.get("plan.rollout.dp")
    if "plan.rollout.gpus" not in f and engines and f.get("plan.rollout.tp"):
        # a launch that counts engines, not GPUs (SkyRL's num_engines of TP x PP GPUs each)
        f["plan.rollout.gpus"] = engines * f["plan.rollout.tp"] * (f.get("plan.rollout.pp") or 1)
    rollout_gpus = train_gpus if colocated else f.get("plan.rollout.gpus")
    if colocated and train_gpus and 0 < (f.get("plan.rollout.gpus") or train_gpus) < train_gpus:
        # the engines on part of the trainer's GPUs (ROLL's actor_infer on the first 200 of 256)
        rollout_gpus = f["plan.rollout.gpus"]
    pools = {m: f.get(f"plan.pools.{m}") or None for m in ("critic", "reference", "reward")}
    if colocated:
        # every model shares the one pool (OpenRLHF's colocate_all) but one the launch switched
        # apart (verl's reward pool: main_ppo.py L166-L173 at 7aed6b2)
        pools = {m: v for m, v in pools.items() if f"plan.pools.{m}" in reading.own_pools}
    elif pools.get("reference") == train_gpus:
        pools["reference"] = None  # the mapping spells a shared reference as the actor's pool
    total = (train_gpus or 0) + (0 if colocated else rollout_gpus or 0)
    total += sum(v for v in pools.values() if v)
    # pools may take part of a node (verl's 6 + 2 split): a node is 8 GPUs unless one pool
    # declares more per node
    per_node = (
        hardware.gpus_per_node
        or f.get("cluster.gpus_per_node")
        or max([8, *(int(u.value) for u in reading.uses if u.key.endswith("gpus_per_node"))])
    )
    assumed += flag_over("cluster.gpus_per_node", hardware.gpus_per_node, header)
    assumed += flag_over("cluster.nodes", hardware.nodes, header)
    cluster = cluster_holding(header, total)
    unsaid = (hardware.nodes, hardware.gpus_per_node, f.get("cluster.nodes"),
              f.get("cluster.gpus_per_node")) == (None,) * 4  # fmt: skip
    fixed = hardware.gpus_per_node is not None
    if unsaid and cluster is not None:
        # the scenario's own cluster, which holds the launch's pools
        f["cluster.nodes"], per_node = cluster
        fixed = True
        assumed += [taken("cluster.nodes", cluster[0]), taken("cluster.gpus_per_node", per_node)]
    if not fixed and train_gpus is not None and 0 < total < per_node:
        # the launch runs on part of one node (slime's fully-async demo: 1 + 3 of 4 GPUs): the
        # cluster reviewed is the GPUs it uses, not idle ones the plan would have to fill
        assumed.append(
            {
                "field": "cluster.gpus_per_node",
                "value": total,
                "why": f"the launch's pools take {total} GPUs, less than a node of {per_node}",
                "source": None,
            }
        )
        per_node = total
    declared = _declared_nodes(reading)
    spread = "the pools' GPUs over whole nodes"
    if not fixed and declared > max(1, math.ceil(total / per_node)):
        # the pools name more nodes than nodes of `per_node` would need (verl's trainer.nnodes=4
        # with n_gpus_per_node=4 on GB200 trays): the file's nodes hold the file's per-node count
        per_node = max(int(u.value) for u in reading.uses if u.key.endswith("gpus_per_node"))
        spread = f"the nodes the launch's pools name, {per_node} GPUs each"
    nodes = (
        hardware.nodes or f.get("cluster.nodes") or max(1, declared, math.ceil(total / per_node))
    )
    if train_gpus is None and rollout_gpus is not None:
        # NeMo-RL declares the cluster and the generation's share; training has the rest
        train_gpus = nodes * per_node - rollout_gpus - sum(v for v in pools.values() if v)
    if hardware.nodes is None and "cluster.nodes" not in f:
        assumed.append(
            {
                "field": "cluster.nodes",
                "value": nodes,
                "why": spread,
                "source": None,
            }
        )
    # nothing frozen to park where the launch loads no reference and no reward model
    frozen = f.get("workload.needs_reference") is not False or f.get("workload.reward_model")
    overlapped = f.get("plan.execution") not in (None, "sync")
    for name, value in reading.mapping.implied_facts().items():
        if name == "plan.train.offload_frozen" and not frozen:
            continue
        if name == "plan.max_staleness" and not overlapped:
            continue
        f.setdefault(name, value)  # what the framework does by itself (NeMo-RL parks the reference)
    offload = {
        "phase": f.get("plan.train.offload_phase", False),
        "optimizer": float(f.get("plan.train.offload_optimizer", 0.0)),
        "params": f.get("plan.train.offload_params", False),
        "frozen": f.get("plan.train.offload_frozen", False),
    }
    degrees = ("tp", "pp", "cp", "ep", "etp", "zero", "virtual_stages")
    train = {
        "gpus": train_gpus,
        **{d: f.get(f"plan.train.{d}") for d in degrees},
        "recompute": f.get("plan.train.recompute"),
        "offload": offload,
    }
    if (f.get("plan.train.tp") or 1) > 1 and f.get("plan.train.sequence_parallel") is False:
        # the norms stay whole on every tensor rank: costed as the launch runs
        train["sequence_parallel"] = False
    if lora := f.get("plan.train.lora_rank"):
        # adapters on a frozen base (verl's lora_rank, OpenRLHF's --ds.lora.rank): their
        # gradients and Adam states only, the base the reference
        train["lora_rank"] = int(lora)
    rollout = {
        "gpus": rollout_gpus,
        **{d: f.get(f"plan.rollout.{d}") for d in ("tp", "pp", "ep", "attention_dp", "cp")},
    }
    if f.get("plan.rollout.eager") is True:
        rollout["cuda_graphs"] = False  # the engine decodes eagerly: estimated so
    # the longest sequence: one response, or an episode's turns (its trajectory)
    longest = longest_prompt + max_response * (agent["max_turns"] if agent else 1)
    rollout.update(engine_settings(reading))
    train.update(training_settings(reading, longest))
    plan: dict[str, Any] = {
        "placement": f["plan.placement"],
        "execution": f["plan.execution"],
        "rollout": {k: v for k, v in rollout.items() if v is not None},
        "train": {k: v for k, v in train.items() if v is not None},
        "pools": {k: v for k, v in pools.items() if v},
    }
    if (queued := queued_lag(reading, rollout, prompts)) is not None:
        lag, why = queued
        if lag > STALENESS_CAP:
            why += f"; costed at {STALENESS_CAP}, the most a plan may lag"
            lag = STALENESS_CAP
        f["plan.max_staleness"] = lag
        assumed.append(
            {"field": "plan.max_staleness", "value": lag, "why": why, "source": framework.id}
        )
    if f["plan.execution"] in ("async", "partial-rollout") and f.get("plan.max_staleness"):
        plan["max_staleness"] = f["plan.max_staleness"]
    if assessment := frozen_layout(f):
        plan["assessment"] = assessment
    context = reading.context_tokens
    if built is not None:
        model = _inline_policy(built, path, longest, assumed)
        if reward == "policy":
            reward = model
    limit = (
        model["max_context_tokens"] if built else getattr(models[model], "max_context_tokens", None)
    )
    if context is None and limit is not None and longest > limit:
        context = longest
        assumed.append(
            {
                "field": "models.context_tokens",
                "value": context,
                "source": model if built is None else built.origin,
                "why": f"prompt + longest response exceed the model's {limit}; the run "
                "must extend the context (RoPE scaling in the model's config)",
            }
        )
    scenario = {
        "cluster": {"accelerator": accelerator, "nodes": nodes, "gpus_per_node": per_node},
        "models": {"policy": model, "reward": reward}
        | ({"context_tokens": context} if context else {}),
        "workload": {
            "algorithm": f["workload.algorithm"],
            "prompts_per_step": prompts,
            "samples_per_prompt": samples,
            "prompt_tokens": prompt_tokens,
            **({"max_prompt_tokens": prompt_cap} if prompt_cap else {}),
            "response_tokens": mean,
            "max_response_tokens": max_response,
            "minibatches_per_step": minibatches,
            "epochs": epochs,
        }
        | ({"response_tokens_from": "prior"} if prior else {})
        | ({"prompt_tokens_from": "cap"} if at_cap else {})
        | ({"reasoning_budget": budget} if budget else {})
        | ({"agent": agent} if agent else {})
        | ({"no_reference": True} if reference_switched_off(reading) else {})
        | ({"reference_kl": reference_kl} if reference_kl else {}),
        "plan": plan,
    }
    counts = ("prompts_per_step", "samples_per_prompt", "minibatches_per_step", "epochs")
    for name in ("algorithm", *counts):
        assumed += edited(f"workload.{name}", scenario["workload"][name], header)
    return scenario, assumed


STALENESS_CAP = 16
"""The most policy versions a scenario's plan may lag (kb.schema.scenario.Plan.max_staleness)."""


def queued_lag(
    reading: Reading, rollout: Mapping[str, Any], prompts: int
) -> tuple[int, str] | None:
    """The policy versions a trained group lags where the launch's entry point keeps a pool of
    groups whatever the plan's lag (Launch.lag_pool: slime's fully-async worker), and why:
    the pool, its key's groups per engine times the engines, over a step's prompts, rounded
    up, as the queue fills once generation outpaces training. None for other launches, or
    where the engines are unknown."""
    key = reading.launch.lag_pool
    gpus, tp, pp = rollout.get("gpus"), rollout.get("tp") or 1, rollout.get("pp") or 1
    if key is None or not gpus:
        return None
    given = key in reading.config
    per_engine = reading.config.get(key, reading.mapping.config_defaults.get(key))
    if isinstance(per_engine, bool) or not isinstance(per_engine, int) or per_engine < 1:
        return None
    engines = max(1, gpus // (tp * pp))
    pool = per_engine * engines
    lag = max(1, -(-pool // prompts))
    said = "" if given else f" (the framework's default, {reading.mapping.commit[:9]})"
    why = (
        f"{reading.launch.file} keeps {key} {per_engine}{said} x {engines} engines = {pool} "
        f"groups generating and queued, and a step drains {prompts} of them, oldest first: "
        f"a trained group is about {lag} policy versions old (the mapping's departure note)"
    )
    return lag, why


def reference_switched_off(reading: Reading) -> bool:
    """Whether the launch itself turns off every switch its mapping reads the reference
    from (verl's use_kl_in_reward and use_kl_loss both False): the framework then builds
    none. A switch left out, or one read at its default, keeps the algorithm's record."""
    switches = {
        e.key.lstrip("+") for e in reading.mapping.entries if e.fact == "workload.needs_reference"
    }
    said = {
        u.key: u.fact_value
        for u in reading.uses
        if u.fact == "workload.needs_reference" and not u.default
    }
    return bool(switches) and switches <= said.keys() and not any(said.values())


def _budgeted_lengths(
    stated: Mapping[str, int] | None, cap: int, assumed: list[dict[str, Any]]
) -> tuple[int, int, int] | None:
    """(mean, longest, budget) of the responses where an export's header states a reasoning
    budget that is the launch's response cap (`cap`): the cap is the budget, and the lengths
    the model writes without it are the header's. A header the keys contradict (an edited
    cap) or that no budget could satisfy is set aside, said so; None then and without one."""
    if stated is None:
        return None
    budget, mean, longest = (stated[n] for n in ("reasoning_budget", "response_tokens",
                                                 "max_response_tokens"))  # fmt: skip
    if budget != cap or not (0 < mean <= longest and 0 < budget <= longest):
        assumed.append(
            {
                "field": "workload.reasoning_budget",
                "value": None,
                "why": f"the header's reasoning budget ({budget}, responses of {mean} tokens "
                f"on average and {longest} at most) does not fit the launch's response cap "
                f"({cap}): set aside, the cap read as the longest response",
                "source": None,
            }
        )
        return None
    assumed.append(
        {
            "field": "workload.reasoning_budget",
            "value": budget,
            "why": f"the export's header: the response cap ({cap}) is a reasoning budget; "
            f"without it the responses run to {longest} tokens, {mean} on average "
            "(workload.response_tokens and max_response_tokens)",
            "source": None,
        }
    )
    return mean, longest, budget


def _episodes(
    f: Mapping[str, Any], assumed: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, int | None]:
    """An agent loop's episodes, where the launch bounds the turns (verl's
    max_assistant_turns, SkyRL's max_turns): the workload's agent block and the longest turn,
    else (None, None). A launch bounds the turns and the tokens after the prompt (turns and
    observations together), so the episode is read as every turn at the bound and the budget
    shared out evenly over the turns, with no observation tokens: the same longest trajectory."""
    turns = int(f.get("workload.max_turns") or 1)
    budget = f.get("workload.episode_response_tokens")
    source = "the episode's response budget"
    cap, prompt, turn_cap = (
        f.get(k)
        for k in (
            "workload.episode_input_tokens",
            "workload.max_prompt_tokens",
            "workload.max_response_tokens",
        )
    )
    if not budget and cap and prompt and turn_cap:
        # the input cap bounds what precedes the last turn (SkyRL's max_input_length)
        budget = int(cap) - int(prompt) + int(turn_cap)
        source = (
            f"the input cap ({cap}) less the prompt cap ({prompt}), plus a turn's cap ({turn_cap})"
        )
    if turns <= 1 or not budget:
        return None, None
    turn = int(budget) // turns
    assumed += [
        {
            "field": "workload.agent.turns",
            "value": turns,
            "why": "a launch gives only the most turns an episode takes; its mean is taken as that",
            "source": None,
        },
        {
            "field": "workload.max_response_tokens",
            "value": turn,
            "why": f"{source}: {budget} tokens of model turns and tool output together, "
            f"shared over its {turns} turns (the same longest episode)",
            "source": None,
        },
        {
            "field": "workload.agent.observation_tokens",
            "value": 0,
            "why": "the launch's budget counts tool output with the turns (the turns take "
            "all of it here); environment time is not in a launch",
            "source": None,
        },
    ]
    return {"turns": turns, "max_turns": turns}, turn


def read_file(
    path: Path, mappings: dict[str, MappingRecord], roles: dict[str, str], framework: str | None
) -> Reading:
    budget = Budget()
    try:
        text = budget.read(path)
    except OSError as exc:
        raise ReviewError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:  # not a regular text file, too large
        raise ReviewError(f"cannot read {exc}") from None
    recipe_keys: set[str] | None = None
    primary: NamedConfig | None = None
    shell = Shell()
    try:
        if _is_yaml(path, text):
            module, config, own, recipe_keys = parse_recipe(path, mappings, framework, budget)
            if _is_scenario(config):
                raise ReviewError(
                    f"{path} is an rlmguide scenario, not a framework's launch: "
                    f"`rlmguide recommend {path}` plans it, `rlmguide export {path} "
                    "--framework ID` writes its launch"
                )
        else:
            module, config, own, shell = parse_launch(text, mappings, framework, path, budget)
            named = config.get("config")
            if isinstance(named, str) and named.endswith((".yaml", ".yml")):
                # the base config the entry point composes (AReaL's --config), where it is
                # beside the script as in the framework's checkout: its keys under the overrides,
                # and the ones it writes itself the user's words as much as the overrides are
                found = path.parent / named
                if found.is_file():
                    base, written = recipe_config(found, budget)
                    recipe_keys, config = written | set(config), {**base, **config}
            elif own[0].syntax == "hydra":
                primary = named_config(config, module, path, budget)
                if primary is not None and primary.missing is None:
                    # the whole file is the user's (its defaults on the search path are not read)
                    recipe_keys = set(primary.keys) | set(config)
                    config = {**primary.keys, **config}
    except RecipeError as exc:
        raise ReviewError(f"cannot read the base config: {exc}") from None
    except Exhausted as exc:
        raise ReviewError(f"{path}: {exc} (the limit of a review)") from None
    named = named_mapping(text, own)
    reading = _read_with_a_version(own, module, config, roles, named)
    # a command line's keys too may start a pipeline no launch maps (verl's distillation)
    refuse_other_pipeline(reading.mapping, config, path)
    if named is not None:
        reading.mapping_from = "named by the file's header"
    elif len(own) > 1:
        # keys the versions share cannot tell them apart: the newest is taken on a tie
        reading.mapping_from = (
            f"no header names a mapping: picked by the keys the file uses, of "
            f"{', '.join(m.id for m in own)}"
        )
    if recipe_keys is not None:
        # the defaults chain's other keys are the framework's defaults, not the recipe's words
        reading.unmapped = {k: v for k, v in reading.unmapped.items() if k in recipe_keys}
    reading.unknown_variables = sorted(shell.used_unknown)
    reading.appended = shell.appended
    reading.unsourced = shell.unsourced
    reading.config = config
    if primary is not None and primary.missing is not None:
        reading.config_missing = _config_missing(primary.missing, reading)
    global_micro_batches(reading)
    reading.files = shell.files
    reading.budget = budget
    reading.stated_lengths = stated_lengths(text)
    reading.stated_scenario = stated_scenario(text)
    return reading


def _config_missing(where: str, reading: Reading) -> str:
    """One line: the named config was not found, and the keys the mapping reads that the
    command line leaves unset (the config may set them; they are read at their defaults)."""
    keys = sorted(
        {
            e.key.lstrip("+")
            for e in reading.mapping.entries
            if e.component in (None, reading.backend, reading.engine)
        }
        - reading.config.keys()
    )
    return f"{where}: keys it may set are read at their defaults ({', '.join(keys)})"


YAML_KEY = re.compile(r"[A-Za-z_][\w.\-]*:(?:\s|$)")


def _is_yaml(path: Path, text: str) -> bool:
    """A YAML document rather than a shell launch, by what the file holds where its name and
    content disagree (`export --out run.sh` of ROLL's YAML config, or a script saved as .yaml):
    a shebang makes a script, and a first line (neither blank nor a comment) that opens a
    mapping (`key:`) a YAML document, which no shell launch starts with; the name decides the
    rest."""
    if text.startswith("#!"):
        return False
    first = next(
        (line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")),
        "",
    )
    return bool(YAML_KEY.match(first)) or path.suffix in (".yaml", ".yml")


def _is_scenario(config: Mapping[str, Any]) -> bool:
    """A YAML file whose keys all lie under the scenario's sections, with a model and a
    workload: no framework's config is laid out so."""
    sections = {key.partition(".")[0] for key in config}
    return {"models", "workload"} <= sections <= set(Scenario.model_fields)


STATED = re.compile(
    "^" + re.escape(BUDGET_LINE) + r"((?: workload\.[a-z_]+=[0-9]{1,9})+)[ \t]*$", re.MULTILINE
)
"""The header line an export writes for a reasoning budget, with numbers a token count can
hold (a longer one is no line export wrote)."""


def stated_lengths(text: str) -> dict[str, int] | None:
    """The reasoning budget and the lengths it cuts, as an export's header line states them
    (None without the line, or with a field missing or repeated)."""
    found = STATED.search(text)
    if found is None:
        return None
    pairs = [item.partition("=") for item in found.group(1).split()]
    stated = {key.removeprefix("workload."): int(value) for key, _, value in pairs}
    if len(pairs) != len(BUDGET_FIELDS) or set(stated) != set(BUDGET_FIELDS):
        return None
    return stated


def parse_recipe(
    path: Path,
    mappings: dict[str, MappingRecord],
    framework: str | None,
    budget: Budget | None = None,
) -> tuple[str, dict[str, Any], list[MappingRecord], set[str]]:
    """A YAML recipe of a framework launched with `--config=FILE` (NeMo-RL) or composed whole
    from one (ROLL): the framework whose keys the file uses most."""
    own = sorted(
        (
            m
            for m in mappings.values()
            if framework in (None, m.framework)
            and (
                m.syntax == "yaml"
                or any(
                    f.startswith("--config=") for la in m.launches for f in (*m.fixed, *la.fixed)
                )
            )
        ),
        key=lambda m: m.committed,
        reverse=True,
    )
    if not own:
        raise ReviewError(f"no mapped framework {framework or ''} reads a YAML recipe")
    try:
        config, recipe_keys = recipe_config(path, budget)
    except RecipeError as exc:
        raise ReviewError(f"cannot read the recipe: {exc}") from None
    # a recipe marked as another pipeline's of a framework is that framework's, whichever
    # mapped framework's keys it shares more of (ROLL's distillation recipe, AReaL's key names)
    marked = [m for m in own if any(_sets(config, k) for o in m.other_trainings for k in o.keys)]
    chosen = pick_version(marked or own, config)
    refuse_other_pipeline(chosen, config, path)
    own = [m for m in own if m.framework == chosen.framework]
    return entry_module(chosen.launches[0].command), config, own, recipe_keys


def refuse_other_pipeline(mapping: MappingRecord, config: dict[str, Any], path: Path) -> None:
    """Refuse by name a launch of a pipeline the mapping's launches do not read (its
    `other_pipelines`, and by what it is its `other_trainings`): a key of one of them is set,
    or a key under it, other than to a switch's off."""
    for other in mapping.other_trainings:
        if key := next((k for k in other.keys if _sets(config, k)), None):
            raise ReviewError(other_training(other, path, f"it sets {key}"))
    for key, pipeline in mapping.other_pipelines.items():
        if _sets(config, key):
            raise ReviewError(f"{path.name} sets {key}: a recipe of {pipeline}")


def _sets(config: dict[str, Any], key: str) -> bool:
    return any(
        (k == key and not _switched_off(v)) or k.startswith(f"{key}.") for k, v in config.items()
    )


def _switched_off(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.lower() == "false")


def frozen_layout(facts: Mapping[str, Any]) -> dict[str, int] | None:
    """The frozen models' own layout (plan.assessment) a launch gives, or None where it lays
    them out as the trainer: a reference whose own keys (SkyRL's and ROLL's) repeat the
    trainer's tensor and pipeline degrees over weights the trainer keeps whole (ZeRO below 3)
    is the training layout. Its context and expert keys are read as the trainer's, so one
    that keeps the trainer's degrees but drops its context or expert split reads as the
    training layout too (cost.layouts.TrainLayout.relaid would tell them apart)."""
    tp = int(facts.get("plan.assessment.tp") or 0)
    if tp <= 0:
        return None
    own = {"tp": tp, "pp": int(facts.get("plan.assessment.pp") or 1)}
    trainer = {d: int(facts.get(f"plan.train.{d}") or 1) for d in ("tp", "pp")}
    if own == trainer and int(facts.get("plan.train.zero") or 0) < 3:
        return None
    return own


def engine_settings(reading: Reading) -> dict[str, Any]:
    """The rollout engine's memory settings the launch states or leaves at the framework's
    default, as plan fields the estimate costs: the engine's cap on sequences, and its share of
    GPU memory where it is vLLM's (a share of the whole GPU; SGLang's static fraction is of the
    memory free at its start, converted once the trainer's resident state is estimated)."""
    from rlmguide.export.startup import typed

    launch = typed(reading.facts)
    out: dict[str, Any] = {}
    seqs = launch.get("launch.engine_max_seqs")
    if seqs is not None and seqs >= 1:
        out["max_seqs"] = int(seqs)
    share = launch.get("launch.engine_memory_fraction")
    if reading.engine != "sglang" and share is not None and 0 < share <= 1:
        out["memory_fraction"] = float(share)
    return out


def token_batching(reading: Reading) -> bool:
    """Whether the launch batches its training micro-batches by tokens (startup.by_tokens)."""
    from rlmguide.export.startup import by_tokens

    return by_tokens(reading.mapping, reading.config)


def switched_budget(reading: Reading) -> None:
    """The token budgets of the token_batching switch that is on, where the mapping names
    their keys (Mapping.token_budgets): the first the launch gives is its
    launch.micro_batch_tokens over any entry's (NeMo-RL's packing budget, which a launch
    batching dynamically does not use); each given is read."""
    from rlmguide.export.startup import switch_on

    mapping = reading.mapping
    for switch, keys in mapping.token_budgets.items():
        if not switch_on(mapping, reading.config, switch):
            continue
        given = [key for key in keys if key in reading.config]
        for key in given:
            value = reading.config[key]
            reading.unmapped.pop(key, None)
            reading.uses.append(Use(key, value, "launch.micro_batch_tokens", value))
        if given:
            reading.facts["launch.micro_batch_tokens"] = reading.config[given[0]]


def micro_batch_read(reading: Reading, longest: int) -> int | None:
    """The training micro-batch in tokens (over the CP group) that the launch runs, set as its
    launch.micro_batch_tokens: its token budget where it batches by tokens, else the sequences
    its sequence_batching key counts (the launch's, else the framework's default) at the
    longest sequence its length caps allow, the most a micro-batch can hold. None where
    neither is known (the search's budget stands)."""
    from rlmguide.export.startup import typed

    if token_batching(reading):
        switched_budget(reading)
        tokens = typed(reading.facts).get("launch.micro_batch_tokens")
        return int(tokens) if tokens is not None and tokens >= 1 else None
    reading.facts.pop("launch.micro_batch_tokens", None)  # a budget the framework does not use
    mapping = reading.mapping
    for key, default in mapping.sequence_batching.items():
        given = key in reading.config
        value = reading.config.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            continue
        reading.unmapped.pop(key, None)
        if not any(u.key.lstrip("+") == key or u.fact == key for u in reading.uses):
            reading.uses.append(Use(key, value, "launch.micro_batch_sequences", value, not given))
        reading.facts["launch.micro_batch_sequences"] = value
        reading.facts["launch.micro_batch_tokens"] = value * longest
        return value * longest
    return None


def global_micro_batches(reading: Reading) -> None:
    """The launch's older global micro-batch keys (Mapping.global_batching). Without token
    batching, where the framework checks them: the most forms it gives one micro-batch in
    (launch.micro_batch_forms), and whether it gives one only globally to workers that do not
    divide it (launch.undivided_global_micro_batch). Where the workers set a per-GPU key the
    launch leaves unset from its global form (Mapping.divides_global), that key as they set
    it: the global value floor-divided by the trainer's data-parallel ranks, read and checked
    as the per-GPU key is. Elsewhere, or where the pool's GPUs are unknown, the global key
    stays unmapped."""
    from rlmguide.export.startup import data_parallel, read

    mapping = reading.mapping
    config = reading.config
    pairs = mapping.global_batching.items()
    # a key set to null is unset, as verl's checks read it
    given = {k for pair in pairs for k in pair if config.get(k) is not None}
    if pairs and not token_batching(reading):
        reading.facts["launch.micro_batch_forms"] = max(len(given & set(p)) for p in pairs)
        alone = any(old in given and new not in given for old, new in pairs)
        reading.facts["launch.undivided_global_micro_batch"] = alone and not mapping.divides_global
    ranks = data_parallel(reading.facts)
    if not mapping.divides_global or ranks is None:
        return
    derived = {}
    for old, new in pairs:
        value = config.get(old)
        if new in given or isinstance(value, bool) or not isinstance(value, int):
            continue
        derived[new] = value // ranks
        reading.unmapped.pop(old, None)
        reading.uses.append(Use(old, value, new, derived[new]))
    reading.config = {**config, **derived}
    reading.facts |= read(mapping, reading.config)


def forward_batch_read(reading: Reading, longest: int) -> int | None:
    """The tokens of the largest forward-only micro-batch the launch runs where it sizes
    those apart from training's, since the assessment's peak is its largest pass: each key
    read for launch.forward_micro_batch_sequences (ROLL's actor_train and reference
    infer_batch_size, each the launch's or the framework's default) at that many sequences of
    `longest`, or at the token budget that replaces the count where the framework packs that
    pass by tokens (Mapping.forward_token_budgets: ROLL's load_balance packing cuts it at
    max_packed_sequence_length_forward, whatever infer_batch_size says). None where the
    mapping has no such key."""
    from rlmguide.export.startup import switch_on

    mapping = reading.mapping
    sizes = []
    for u in list(reading.uses):
        count = u.fact_value
        if (
            u.fact != "launch.forward_micro_batch_sequences"
            or not isinstance(count, int)
            or isinstance(count, bool)
            or count < 1
        ):
            continue
        budget = mapping.forward_token_budgets.get(u.key.lstrip("+"))
        tokens = reading.config.get(budget.key) if budget is not None else None
        if (
            budget is not None
            and switch_on(mapping, reading.config, budget.switch)
            and isinstance(tokens, int)
            and not isinstance(tokens, bool)
            and tokens >= 1
        ):
            reading.unmapped.pop(budget.key, None)
            reading.uses.append(
                Use(budget.key, tokens, "plan.train.forward_micro_batch_tokens", tokens)
            )
            sizes.append(tokens)
            # the packer asserts each budget holds a whole padded sequence (ROLL's
            # sequence_packing.py L171-L174): the smallest is what a start-up check judges
            packed = reading.facts.get("launch.forward_packed_tokens") or tokens
            reading.facts["launch.forward_packed_tokens"] = min(packed, tokens)
        else:
            sizes.append(count * longest)
    return max(sizes, default=None)


def training_settings(reading: Reading, longest: int) -> dict[str, Any]:
    """The training memory settings of the launch as the plan fields the estimate costs: its
    gradient buffers (fp32 as the launch says, else as the framework keeps them by default),
    the micro-batch it runs (micro_batch_read: by tokens or by sequences at `longest`), the
    forward-only passes' micro-batch where the launch sizes it apart (forward_batch_read, in
    sequences at `longest`, each padded to it as ROLL pads its responses, or the token budget
    of a pass packed by tokens), and the first and
    last pipeline stages' layers where the launch gives Megatron either (one alone: the other
    stages share the rest, get_num_layers_to_build at 103851dc, transformer_block.py
    L102-L143, so slime's Qwen3.5-27B split of 64 layers with a last stage of 30 puts 34 on
    the first)."""
    from rlmguide.export.startup import typed

    mapping = reading.mapping
    launch = typed(reading.facts)
    fp32 = launch.get("launch.fp32_gradients", mapping.fp32_gradients)
    out: dict[str, Any] = {"fp32_gradients": bool(fp32) and not launch.get("launch.bf16_gradients")}
    if (tokens := micro_batch_read(reading, longest)) is not None:
        out["micro_batch_tokens"] = tokens
    if (tokens := forward_batch_read(reading, longest)) is not None:
        out["forward_micro_batch_tokens"] = tokens
    # without a pipeline a stage count splits nothing (SkyRL's moonlight example gives one
    # with pp 1)
    pipelined = int(reading.facts.get("plan.train.pp") or 1) > 1
    for end in ("first", "last"):
        layers = launch.get(f"launch.pp_{end}_layers")
        if pipelined and layers is not None and layers >= 1:
            # a stage count the launch gives Megatron: costed as it splits the layers
            out[f"{end}_stage_layers"] = int(layers)
    return out


ACCOUNT_FOR = (
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
)
"""Megatron's switches that count the embedding and the loss as a layer each when it splits
the decoder layers over pipeline stages (TransformerConfig at 55ac7082, L1434-L1480)."""


def account_for_split(config: Mapping[str, Any], layers: int, pp: int) -> tuple[int, int] | None:
    """The first and last stages' decoder layers a launch's account_for switches give the
    policy (its keys, not the critic's or the reference's): (layers + e + l) / pp a stage,
    e fewer on the first, l fewer on the last. None without the switches, or where pp does not
    divide layers + e + l (Megatron refuses that split at start-up)."""

    def named(key: str) -> str:
        return key.lstrip("+-").replace("-", "_").rsplit(".", 1)[-1]

    def on(name: str) -> int:
        return int(
            any(
                truth(v)
                for k, v in config.items()
                if named(k) == name and "critic" not in k and ".ref." not in k
            )
        )

    embedding, loss = (on(name) for name in ACCOUNT_FOR)
    if pp < 2 or not (embedding or loss) or (layers + embedding + loss) % pp:
        return None
    stage = (layers + embedding + loss) // pp
    return stage - embedding, stage - loss


LAUNCH_SETTINGS = {
    "rollout": ("memory_fraction", "max_seqs"),
    "train": ("micro_batch_tokens", "forward_micro_batch_tokens"),
}
"""Plan fields a launch's memory keys set (engine_settings, training_settings)."""


def without_launch_settings(data: dict[str, Any]) -> dict[str, Any]:
    """The scenario with the plan's memory left to the search (what the plan needs of them)."""
    plan = data["plan"]
    pools = {
        pool: {k: v for k, v in plan.get(pool, {}).items() if k not in names}
        for pool, names in LAUNCH_SETTINGS.items()
    }
    return {**data, "plan": {**plan, **pools}}


def sglang_share(reading: Reading, estimate: Mapping[str, Any], hbm_gib: float) -> float | None:
    """SGLang's mem_fraction_static in the plan's unit (a share of the whole GPU), with the
    estimate's resident state and workspace (export.startup.gpu_share). None where the
    launch is not SGLang's or states no fraction."""
    from rlmguide.export.startup import gpu_share, typed

    share = typed(reading.facts).get("launch.engine_memory_fraction")
    if reading.engine != "sglang" or share is None or not 0 < share <= 1:
        return None
    starts_first = reading.mapping.engine_starts_first
    return gpu_share(float(share), estimate, hbm_gib, "sglang", starts_first)


KEY_LISTS = Path(__file__).resolve().parent / "keys"
"""The keys each mapping's framework accepts at its commit (bench/framework_keys.py writes
them): `<mapping id>.txt`, one a line, with the entry point they configure in a header."""
ENTRY_POINT = "# entry point: "


def framework_keys(mapping: MappingRecord) -> tuple[str, set[str]] | None:
    """The entry point and the keys its parser accepts at the mapping's commit, where a key
    list is on record for the mapping; None otherwise."""
    path = KEY_LISTS / f"{mapping.id}.txt"
    if not path.is_file():
        return None
    lines = path.read_text().splitlines()
    module = next((x.removeprefix(ENTRY_POINT) for x in lines if x.startswith(ENTRY_POINT)), "")
    return module, {x for x in lines if x and not x.startswith("#")}


def unknown_keys(reading: Reading) -> list[dict[str, Any]]:
    """The launch's keys its framework's parser refuses at the mapping's commit, as start-up
    stops: Hydra (verl) stops at an override of a key its struct config lacks unless the key
    is added with `+`; argparse (OpenRLHF) exits on an option that is neither declared nor a
    unique prefix of one (abbreviations are on by default). Only the keys no entry reads are
    checked; each names the closest known key."""
    import difflib

    mapping = reading.mapping
    listed = framework_keys(mapping)
    if listed is None or listed[0] != entry_module(reading.launch.command):
        return []
    keys = listed[1] | _keys(mapping) | set(mapping.config_defaults)
    inner = {k.rsplit(".", i)[0] for k in keys for i in range(1, k.count(".") + 1)}
    found = []
    for key in sorted(reading.unmapped):
        if mapping.syntax == "hydra":
            if (
                key in keys
                or key in inner
                or key in reading.appended
                or key.startswith("hydra.")
                or ("." not in key and "-" in key)  # a Hydra option (--config-name)
            ):
                continue
        elif key in keys or sum(k.startswith(key) for k in keys) == 1:
            continue
        close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.6)
        hint = f"; the closest key is {close[0]}" if close else ""
        found.append(
            {
                "constraint": "unknown-key",
                "title": f"start-up error: {key} is not a key of {mapping.framework} at "
                f"{mapping.commit[:9]}{hint}",
                "file": f"rlmguide/review/keys/{mapping.id}.txt",
                "lines": None,
                "commit": mapping.commit,
                "url": None,
            }
        )
    return found


def startup_checks(
    reading: Reading, catalog: Catalog, plan_facts: dict[str, Any]
) -> list[dict[str, Any]]:
    """The start-up checks and constraint records of the framework the launch would trip:
    its plan's facts (as estimated) with the launch's own values (`launch.*`) as read."""
    return [
        {
            "constraint": r.id,
            "title": r.title,
            "file": r.file,
            "lines": r.lines,
            "commit": r.commit,
            "url": r.url,
        }
        for r in startup_stops(reading, catalog, plan_facts)
    ]


def startup_stops(
    reading: Reading, catalog: Catalog, plan_facts: Mapping[str, Any]
) -> list[Constraint]:
    """The records of `startup_checks`, for a caller that names them in one line."""
    from rlmguide.export.startup import ABSENT, binding, compile_checks, tripped, typed
    from rlmguide.rules.frameworks import compile_constraints

    checks = compile_checks(catalog)[0] + compile_constraints(catalog)[0]
    own = typed(reading.facts) | {"launch.token_batching": token_batching(reading)}
    # the placement the launch's keys say, where its entry point runs another (slime's
    # train_async.py with --colocate): the framework checks the key, not the plan read
    # (a switch read as "not colocated" names no one placement: the plan's stays)
    said = {
        u.fact: u.fact_value
        for u in reading.uses
        if u.fact == "plan.placement" and u.fact_value in PLACEMENTS
    }
    plan = {k: v for k, v in {**plan_facts, **said}.items() if v is not None}
    loop = reading.mapping.implied_facts().get("plan.max_staleness")
    if reading.launch.lag_pool is not None and loop is not None:
        # the queue's lag (queued_lag) is no setting the framework checks: its loop's own lag
        # is (slime's weight update after every step, constraint slime-async-lags-one-step)
        plan["plan.max_staleness"] = loop
    facts = {**ABSENT, **plan, **own}
    mine = binding(checks, reading.mapping, reading.backend, reading.engine)
    return tripped(mine, facts)


def memory_keys(
    reading: Reading, estimate: dict[str, Any], plan_facts: dict[str, Any]
) -> list[dict[str, Any]]:
    """The launch's memory settings beside what the plan, with its memory sized by the
    search (`estimate`), needs of them: the engine's memory fraction (in the engine's unit),
    the sequences it runs at once and the training micro-batch in tokens (the critic's too,
    where the launch budgets it apart). The review's own
    estimate costs the launch's values; a launch below these has a smaller KV cache or fewer
    concurrent sequences (slower), one above the micro-batch may run out of memory."""
    from rlmguide.export.startup import computed, typed

    launch = typed(reading.facts)
    if not plan_facts:
        return []
    plan = computed(estimate, plan_facts, reading.engine, reading.mapping.engine_starts_first)
    rows = []
    for fact, what, risk in (
        ("launch.engine_memory_fraction", "engine memory fraction", "low"),
        ("launch.engine_max_seqs", "concurrent sequences per engine", "low"),
        ("launch.micro_batch_tokens", "training micro-batch tokens (over CP)", "high"),
        # the critic trains beside the actor at the plan's micro-batch: a budget of its own
        # above that (verl's critic.ppo_max_token_len_per_gpu) holds more activations
        ("launch.critic_micro_batch_tokens", "critic micro-batch tokens (over CP)", "high"),
    ):
        if fact not in launch or fact not in plan:
            continue
        got, needed = launch[fact], plan[fact]
        if risk == "low" and got < needed:
            verdict = "below the plan's: a smaller KV cache or batch than estimated (slower)"
        elif risk == "high" and got > needed:
            verdict = "above what the activations were costed at: may run out of memory"
        elif fact == "launch.engine_memory_fraction" and got > needed:
            # more KV cache where the GPU has room; beside a resident trainer, an overflow
            verdict = "above the plan's: the engine takes more of the GPU (the estimate costs it)"
        else:
            verdict = "as the plan needs"
        rows.append({"setting": what, "launch": got, "plan": needed, "verdict": verdict})
    # a model the launch puts on GPUs by a key no entry reads (ROLL's device_mapping of an LLM
    # judge) is not in the plan: never costed silently
    for key, value in sorted(reading.unmapped.items()):
        if key.endswith(UNREAD_PLACEMENT) and value not in (None, "", [], "[]"):
            rows.append(
                {
                    "setting": f"GPUs of a model the plan does not hold ({key})",
                    "launch": value,
                    "plan": None,
                    "verdict": "not costed: the estimate leaves that model's weights, memory "
                    "and time out",
                }
            )
    return rows


def kept_engine(
    reading: Reading, reviewed: Mapping[str, Any], plan_facts: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The memory a colocated launch's rollout engines keep while the trainer trains, where
    its entry point leaves their sleep off (Launch.engine_kept: OpenRLHF's colocate_all
    without vLLM's enable_sleep), beside what training's peak in the launch's estimate leaves
    of the GPU. The estimate frees the engine's memory for training as a sleeping engine
    does, so this row is where the launch's own memory shows: the engine's share of the GPU
    as the launch sets it (vLLM holds it from start-up), else as the estimate sized it."""
    if not reading.launch.engine_kept or not plan_facts:
        return []
    hbm = float(plan_facts["cluster.memory_gib"])
    fraction = (reviewed.get("rollout") or {}).get("memory_fraction")
    terms = reviewed["memory_breakdown_gib"]["rollout"]
    engine = (
        float(fraction) * hbm
        if fraction
        else sum(terms.get(t, 0.0) for t in ("weights", "kv_cache", "workspace"))
    )
    training = float(reviewed["memory_gib_per_gpu"]["train"])
    left = hbm - training
    if engine > left:
        verdict = (
            f"more than the {left:.1f} GiB training's {training:.1f} GiB peak leaves of the "
            f"GPU's {hbm:.1f} GiB: out of memory when training starts (the estimate frees the "
            "engine's memory, as the engine's sleep would)"
        )
    else:
        verdict = (
            f"fits in the {left:.1f} GiB training's {training:.1f} GiB peak leaves of the "
            f"GPU's {hbm:.1f} GiB, with {left - engine:.1f} GiB to spare"
        )
    return [
        {
            "setting": "GiB the rollout engine keeps on each GPU while training (no engine sleep)",
            "launch": round(engine, 1),
            "plan": round(left, 1),
            "verdict": verdict,
        }
    ]


UNREAD_PLACEMENT = ("device_mapping",)
"""Endings of config keys that put a model on GPUs (ROLL names every worker's GPUs so)."""


def _variant(
    reading: Reading, candidates: list[str], algorithms: Mapping[str, Any], stated: Any = None
) -> dict[str, Any]:
    """The algorithm among those one estimator key spells that the launch's own keys single
    out (rlmguide.review.family), set on the reading, and why; where they cannot, the one an
    export's header states (`stated`) if a candidate, else the first, said to be a guess."""
    told = tell(reading, candidates, algorithms)
    f = reading.facts
    why = ""
    if told.dropped:
        why = (
            "its loss is not "
            + "; nor ".join(
                f"{c}'s (" + ", ".join(f"{k}={v}" for k, v in keys.items()) + ")"
                for c, keys in told.dropped.items()
            )
            + "; "
        )
    others = ", ".join(c for c in told.candidates if c != told.algorithm)
    if told.algorithm is not None:
        f["workload.algorithm"] = told.algorithm
        if told.agreeing:
            keys = ", ".join(f"{k}={v}" for k, v in told.agreeing.items())
            why += f"the launch's keys for it ({keys}) tell it from {others or 'the rest'}"
        else:
            why += f"the launch sets no key of {others or 'another variant'}"
        if told.differing:
            unlike = ", ".join(f"{k} (export writes {v})" for k, v in told.differing.items())
            why += f"; it sets otherwise {unlike}"
    else:
        if stated in told.candidates:
            f["workload.algorithm"] = stated  # the export's own, whose keys were edited since
        elif f["workload.algorithm"] not in told.candidates and told.candidates:
            f["workload.algorithm"] = told.candidates[0]  # a guess whose loss the launch runs
        scores = ", ".join(f"{c} {n:+d}" for c, n in told.scores.items())
        why += (
            f"{family_name(told.candidates, algorithms)}, cannot tell: no candidate's own keys "
            f"outweigh the others' (keys set as export writes them less keys set otherwise: "
            f"{scores}); estimated as {f['workload.algorithm']}"
        )
    return {
        "field": "workload.algorithm",
        "value": f["workload.algorithm"],
        "why": why,
        "source": reading.mapping.id,
    }


def algorithm_keys(reading: Reading, plan_facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The keys an export writes for the reviewed algorithm that the launch sets otherwise, or
    leaves at a framework default that differs (NeMo-RL's GRPO keeps a leave-one-out baseline
    unless told not to): the run departs from the algorithm record its estimate is named
    after. The cost is the same; the advantages or the loss are not."""
    algorithm = plan_facts.get("workload.algorithm")
    rows = []
    for c in compile_mapping(reading.mapping):
        e = c.entry
        table = e.table or {}
        if e.fact != "workload.algorithm" or e.transform != "lookup" or algorithm not in table:
            continue
        try:
            if not c.applies(plan_facts, reading.backend, reading.engine):
                continue
        except (KeyError, TypeError):  # a condition over a fact the estimate does not hold
            continue
        key = e.key.lstrip("+")
        default = key not in reading.config
        got = reading.config.get(key, reading.mapping.config_defaults.get(key))
        if got is None:
            continue  # neither set nor a default on record: nothing to compare
        alike = {lookup_key(v) for v, k in e.also_reads.items() if k == algorithm}
        if lookup_key(got) in {lookup_key(table[algorithm]), *alike}:
            continue
        rows.append(
            {
                "key": key,
                "launch": got,
                "default": default,
                "algorithm": algorithm,
                "export": table[algorithm],
                "file": e.file,
                "commit": reading.mapping.commit,
            }
        )
    return rows


def algorithm_settings(reading: Reading, plan_facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The launch's algorithm settings beside the algorithm's record: the side of its KL to
    the reference, the KL's estimator and the clip range, where the record states them or the
    launch's keys say them (a launch that leaves them to the framework's default says nothing),
    then the mapping's departures from the record that hold (Mapping.departures)."""
    from rlmguide.export.mapping import departures

    rows = []
    for fact, what, unstated in (
        ("workload.kl_placement", "KL penalty to the reference", ("unstated", "none")),
        ("workload.kl_estimator", "estimator of that KL", ("unstated", "none")),
        ("workload.clip_low", "ratio clip below 1", (0,)),
        ("workload.clip_high", "ratio clip above 1", (0,)),
    ):
        record, launch = plan_facts.get(fact), reading.facts.get(fact)
        if launch is None and record in (None, *unstated):
            continue
        if launch is None:
            verdict = "not said by the launch: the framework's default"
        elif record in unstated or record is None:
            # the record's "unstated" or 0 is no value: show none, not a 0 to compare with
            record, verdict = None, "the record states none"
        elif lookup_key(launch) == lookup_key(record):
            verdict = "as the record"
        else:
            verdict = "differs from the record: a different algorithm runs"
        rows.append({"setting": what, "launch": launch, "record": record, "verdict": verdict})
    # judged on what the launch sets too: AReaL's KL departure holds only where its kl_ctl
    # (read from the launch or its base config) is above 0
    said = {k: v for k, v in reading.facts.items() if k.startswith("launch.")}
    header = reading.stated_scenario or {}
    stated = header.get("plan.max_staleness", header.get("workload.max_staleness"))
    rollout = {d: plan_facts.get(f"plan.rollout.{d}") for d in ("gpus", "tp", "pp")}
    prompts = plan_facts.get("workload.prompts_per_step")
    if prompts and (queued := queued_lag(reading, rollout, int(prompts))) is not None:
        rows.append(_lag_row(queued[0], None if stated is None else int(stated)))
    # against the lag the scenario asked for, as export judged the launch it wrote (the
    # reviewed plan's lag is the launch's own, read from its queue)
    asked = {} if stated is None else {"plan.max_staleness": stated}
    for note in departures(reading.mapping, {**plan_facts, **said, **asked}):
        rows.append({"setting": "departure", "launch": None, "record": None, "verdict": note})
    return rows


def _lag_row(lag: int, stated: int | None) -> dict[str, Any]:
    """The lag a launch's own queue sets (queued_lag) beside the one its export's header
    states (plan.max_staleness, else workload.max_staleness)."""
    if stated is None:
        verdict = "no scenario states a lag (an export's header does): the launch's is costed"
        if lag > STALENESS_CAP:
            verdict += f", at {STALENESS_CAP}, the most a plan may lag"
    elif lag > stated:
        verdict = (
            f"lags more than the scenario's {stated}: the launch's queue of groups, not the "
            "plan, sets the lag"
        )
    else:
        verdict = f"within the scenario's {stated}"
    return {
        "setting": "policy versions a trained group lags",
        "launch": lag,
        "record": stated,
        "verdict": verdict,
    }


def understood(reading: Reading) -> dict[str, Any]:
    """What the file said, in plan terms, and what it said that review does not map."""
    return {
        "framework": reading.mapping.framework,
        "mapping": reading.mapping.id,
        "mapping_from": reading.mapping_from,
        "entry_point": reading.launch.command,
        "training_backend": reading.backend,
        "rollout_engine": reading.engine,
        "understood": [
            {
                "key": u.key,
                "value": u.value,
                "field": u.fact,
                "field_value": u.fact_value,
                "default": u.default,
            }
            for u in reading.uses
        ],
        "ambiguous": reading.ambiguous,
        "unknown_variables": reading.unknown_variables,
        "unsourced": reading.unsourced,
        "config_missing": reading.config_missing,
        "unmapped": [{"key": k, "value": v} for k, v in sorted(reading.unmapped.items())],
    }
