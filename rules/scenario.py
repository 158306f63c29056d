"""Read a scenario file and resolve its ids against the knowledge base.

Everything a user can get wrong is reported as an `InputError` naming the field, never as a
traceback: unknown ids (with the closest names), impossible numbers, a fixed plan that
contradicts the cluster or the model.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from cost.plans import expert_ranks
from kb.files import read_text_file
from kb.load import describe, format_location, parse_yaml, yaml_problem
from kb.schema import (
    AcceleratorFigures,
    Algorithm,
    Architecture,
    InlineAccelerator,
    InlineModel,
    Record,
    Scenario,
)
from kb.schema.bounds import out_of_bounds


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

    @property
    def gpus(self) -> int:
        return self.scenario.cluster.gpus


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
        return parts, yaml.safe_load(value)
    except yaml.YAMLError as exc:
        reason = yaml_problem(exc)[1]
        raise InputError(f"--set {dotted}: malformed value {value!r}: {reason}") from None


def read_scenario(path: Path) -> Scenario:
    return parse_scenario(read_mapping(path), str(path))


def parse_scenario(data: Any, origin: str = "scenario") -> Scenario:
    if not isinstance(data, dict):
        raise InputError(f"{origin}: a scenario is a mapping with cluster, models and workload")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise InputError(
            f"{origin}: {format_location(first['loc'])}: {describe(first)}{tail}"
        ) from None
    if problem := out_of_bounds(scenario):
        raise InputError(f"{origin}: {problem}")
    return scenario


def _lookup(records: Mapping[str, Record], value: str, field: str, kind: str) -> Record:
    if value in records:
        return records[value]
    close = difflib.get_close_matches(value, list(records), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; see `rlmguide list {kind}s`"
    raise InputError(f"{field}: unknown {kind} {value!r}{hint}")


def _architecture(
    value: str | InlineModel, models: Mapping[str, Record], field: str
) -> Architecture:
    if isinstance(value, InlineModel):
        return value
    return _lookup(models, value, field, "model")  # type: ignore[return-value]


def resolve(scenario: Scenario, catalog: Mapping[str, Mapping[str, Record]]) -> Resolved:
    """Replace ids by records and check what no single field can check alone."""
    cluster, models, workload = scenario.cluster, scenario.models, scenario.workload
    if isinstance(cluster.accelerator, InlineAccelerator):
        accelerator_id, accelerator = "inline", cluster.accelerator
    else:
        accelerator_id = cluster.accelerator
        accelerator = _lookup(
            catalog["accelerator"], accelerator_id, "cluster.accelerator", "accelerator"
        )  # type: ignore[assignment]
    policy = _architecture(models.policy, catalog["model"], "models.policy")
    policy_id = models.policy if isinstance(models.policy, str) else "inline"
    algorithm: Algorithm = _lookup(
        catalog["algorithm"], workload.algorithm, "workload.algorithm", "algorithm"
    )  # type: ignore[assignment]
    critic = None
    if not algorithm.online:
        raise InputError(
            f"workload.algorithm: {algorithm.name} is offline (it trains on a fixed dataset and "
            "generates nothing), so there is no rollout to lay out; choose an online algorithm "
            "such as online-dpo or grpo"
        )
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
    reward = None
    if models.reward != "verifier":
        reward = _architecture(models.reward, catalog["model"], "models.reward")
    elif algorithm.reward == "model":
        raise InputError(
            f"models.reward: {algorithm.name} scores responses with a reward model; "
            "give its id instead of 'verifier'"
        )
    samples = workload.samples_per_prompt or algorithm.typical_samples_per_prompt or 1
    if algorithm.grouped and samples < 2:
        raise InputError(
            f"workload.samples_per_prompt: {algorithm.name} compares a group of "
            "responses per prompt, so it needs at least 2"
        )
    longest = workload.max_response_tokens or workload.response_tokens
    context = workload.prompt_tokens + longest
    for role, arch in (("policy", policy), ("critic", critic), ("reward", reward)):
        if arch is not None and context > arch.max_context_tokens:
            raise InputError(
                f"workload.max_response_tokens: prompt ({workload.prompt_tokens}) + longest "
                f"response ({longest}) = {context} tokens exceeds the {role} model's context of "
                f"{arch.max_context_tokens} tokens"
            )
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
    )


def _check_fixed_layouts(scenario: Scenario) -> None:
    """Fixed degrees that cannot factorise their pool, named before any search runs."""
    plan, gpus = scenario.plan, scenario.cluster.gpus
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
        size = pool.gpus or (gpus if plan.placement == "colocated" else None)
        values = [getattr(pool, d) for d in degrees]
        if size is None or any(v is None for v in values):
            continue
        product = math.prod(values)
        if size % product:
            shown = " x ".join(degrees)
            raise InputError(
                f"plan.{name}: {shown} = {product} does not divide the pool's {size} GPUs"
            )
        if name == "train" and train.ep:
            tp, _, cp = values
            # Unset, etp is searched, and etp 1 gives the experts the most ranks to span.
            host = expert_ranks(size // product, cp, tp, train.etp or 1)
            if host % train.ep:
                raise InputError(
                    f"plan.train.ep: {train.ep} does not divide dp x cp x tp / etp = {host}; "
                    "etp: 1 folds the experts over the tensor ranks too"
                )


def _check_fixed_plan(scenario: Scenario) -> None:
    """What no rule can judge: fixed numbers that contradict the cluster or each other."""
    gpus = scenario.cluster.gpus
    plan = scenario.plan
    for pool_name, pool in (("rollout", plan.rollout), ("train", plan.train)):
        pool_gpus = pool.gpus or gpus
        if pool.gpus is not None and pool.gpus > gpus:
            raise InputError(
                f"plan.{pool_name}.gpus: {pool.gpus} exceeds the cluster's {gpus} GPUs"
            )
        for degree in ("tp", "pp", "cp", "ep", "etp"):
            value = getattr(pool, degree, None)
            if value is not None and value > pool_gpus:
                raise InputError(
                    f"plan.{pool_name}.{degree}: {value} exceeds the pool's {pool_gpus} GPUs"
                )

    _check_fixed_layouts(scenario)
    rollout, train = plan.rollout.gpus, plan.train.gpus
    if plan.placement == "colocated" and rollout and train and rollout != train:
        raise InputError(
            f"plan: colocated pools share GPUs, but rollout.gpus ({rollout}) "
            f"differs from train.gpus ({train})"
        )
    if plan.placement == "disaggregated" and rollout and train and rollout + train > gpus:
        raise InputError(
            f"plan: disaggregated pools need rollout.gpus + train.gpus "
            f"({rollout} + {train}) <= the cluster's {gpus} GPUs"
        )
    if plan.max_staleness is not None and plan.execution in ("sync",):
        raise InputError(
            "plan.max_staleness: synchronous execution has no staleness; use "
            "execution: async or one-step-off"
        )
