"""Supported ranges of the numbers a user puts in a scenario.

The models accept any positive number; a scenario is user input, so its numbers are also held
to ranges that keep one command's work and memory bounded and every estimate finite (a GPU
count of 2**53 once took 23 GiB before it was killed; 5e-324 as an efficiency gave NaN step
times with exit 0). Records are not held to these: they are reviewed data.

`rules.scenario.parse_scenario` applies them, `annotate` writes them into the scenario's JSON
schema (`rlmguide schema scenario`), and the README lists them.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

MAX_GPUS = 65_536
"""The largest cluster the plan search enumerates. Since the search costs each distinct layout
once and steps its splits by several nodes beyond 64 nodes, 32,768 GPUs take about 4 s for
DeepSeek-V3 on a 2-core machine (bench/bench_recommend.py); 100,000 nodes once ran for minutes
past 12 GB, so clusters beyond this bound are refused."""

ANY_NUMBER = (1e-6, 1e9)
"""Every number anywhere in a scenario: finite, at most 1e9, and a non-zero one at least 1e-6
(denormal figures divide into infinities)."""

TOKENS = (1, 4_194_304)
DAY_SECONDS = 86_400.0
"""An environment step or a sandbox start-up longer than a day is a mistake in units."""

BOUNDS: dict[str, tuple[float, float]] = {
    "cluster.nodes": (1, 8_192),
    "cluster.gpus_per_node": (1, 128),
    "cluster.scale_up_domain_gpus": (1, MAX_GPUS),
    "cluster.accelerator.scale_up_domain_gpus": (1, MAX_GPUS),
    "cluster.parts*.nodes": (1, 8_192),
    "cluster.parts*.gpus_per_node": (1, 128),
    "cluster.parts*.scale_up_domain_gpus": (1, MAX_GPUS),
    "models.context_tokens": (1, 2 * TOKENS[1]),
    "models.*.max_context_tokens": (1, 2 * TOKENS[1]),
    "models.*.layers": (1, 1_024),
    "models.*.hidden": (1, 131_072),
    "models.*.heads": (1, 4_096),
    "models.*.kv_heads": (1, 4_096),
    "models.*.head_dim": (1, 4_096),
    "models.*.ffn": (1, 1_048_576),
    "models.*.vocab": (1, 4_194_304),
    "models.*.moe.experts": (1, 65_536),
    "models.*.moe.expert_ffn": (1, 1_048_576),
    "models.reward.calls_per_response": (1, 64),
    "models.reward.verdict_tokens": TOKENS,
    "models.reward.rubric_tokens": (0, TOKENS[1]),
    "models.reward.steps_per_response": (1, 65_536),
    "workload.prompts_per_step": (1, 1_048_576),
    "workload.samples_per_prompt": (1, 1_024),
    "workload.prompt_tokens": TOKENS,
    "workload.max_prompt_tokens": TOKENS,
    "workload.response_tokens": TOKENS,
    "workload.max_response_tokens": TOKENS,
    "workload.reasoning_budget": TOKENS,
    "workload.minibatches_per_step": (1, 65_536),
    "workload.epochs": (1, 1_000),
    "workload.steps": (1, 10_000_000),
    "workload.trained_samples": (1, 1e13),
    "workload.trained_tokens": (1, 1e16),
    "workload.search.depth": (1, 1_024),
    "workload.search.branching": (1, 1_024),
    "workload.agent.turns": (1, 10_000),
    "workload.agent.max_turns": (1, 10_000),
    "workload.agent.observation_tokens": (0, TOKENS[1]),
    "workload.agent.environment.mean_seconds": (0, DAY_SECONDS),
    "workload.agent.environment.max_seconds": (0, DAY_SECONDS),
    "workload.agent.setup_seconds": (0, DAY_SECONDS),
    "workload.agent.environment_slots": (1, 10_000_000),
    "plan.rollout.episodes_per_engine": (1, 1_048_576),
    "run.response_growth": (1e-2, 100),
    "run.oversampling": (1, 100),
    "run.pue": (1, 5),
    "plan.*.gpus": (1, MAX_GPUS),
    "plan.pools.*": (1, MAX_GPUS),
    "plan.assessment.*": (1, 1_024),
    "plan.train.lora_rank": (1, 65_536),
    "plan.train.virtual_stages": (1, 1_024),
    "plan.train.shard_group": (1, MAX_GPUS),
    "plan.train.frozen_shard_group": (1, MAX_GPUS),
    "plan.train.first_stage_layers": (1, 1_024),
    "plan.train.last_stage_layers": (1, 1_024),
    "efficiency.*": (1e-3, 1),
}
"""Tighter ranges for the numbers that drive the work (dotted paths, `*` for one level)."""

WHY = {
    "cluster.nodes": f"the plan search is bounded to {MAX_GPUS:,} GPUs",
    "cluster.gpus_per_node": "the largest nodes (trays of an NVLink rack) hold far fewer",
}


def _numbers(value: Any, path: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, BaseModel):  # authored fields only: derived ones (params) may be large
        value = {name: getattr(value, name) for name in type(value).model_fields}
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _numbers(child, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for i, child in enumerate(value):
            yield from _numbers(child, f"{path}[{i}]")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value


def _shown(number: float) -> str:
    if isinstance(number, int) and abs(number) >= 10**18:
        # past a float's range (10**400) and past what str() converts (4,300 digits)
        return f"a {round(number.bit_length() * math.log10(2))}-digit number"
    return f"{number:,}" if isinstance(number, int) else f"{number:g}"


def _given(data: Any, path: str) -> Any:
    """The value at `path` (`cluster.parts[1].nodes`) of the mapping a scenario was read from."""
    for part in re.split(r"\.|(?=\[)", path):
        if part.startswith("[") and isinstance(data, list):
            index = int(part[1:-1])
            data = data[index] if index < len(data) else None
        elif isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


def boolean_numbers(scenario: BaseModel, data: Any) -> str | None:
    """The first number of a validated scenario that was written as a boolean: pydantic's lax
    mode reads `nodes: true` as 1, but a boolean is never a count or a size."""
    for path, _ in _numbers(scenario, ""):
        given = _given(data, path)
        if isinstance(given, bool):
            return f"{path}: {str(given).lower()} is a boolean, not a number"
    return None


def out_of_bounds(scenario: BaseModel) -> str | None:
    """The first number of a validated scenario outside its range, as `path: why`, or None."""
    for path, value in _numbers(scenario, ""):
        low, high = next((r for p, r in BOUNDS.items() if fnmatch.fnmatchcase(path, p)), (0, 0))
        if isinstance(value, float) and not math.isfinite(value):
            return f"{path}: {value} is not a finite number"
        if (low, high) == (0, 0):
            low, high = ANY_NUMBER
            if value == 0:
                continue
        if not low <= abs(value) <= high:
            why = f" ({WHY[path]})" if path in WHY else ""
            return (
                f"{path}: {_shown(value)} is outside the supported range {_shown(low)} to "
                f"{_shown(high)}{why}"
            )
    cluster = scenario.cluster  # type: ignore[attr-defined]
    if cluster.parts is not None and cluster.gpus > MAX_GPUS:
        return (
            f"cluster.parts: {cluster.gpus:,} GPUs in all exceed the {MAX_GPUS:,} GPUs the plan "
            "search is bounded to"
        )
    nodes, per_node = cluster.nodes, cluster.gpus_per_node
    if nodes * per_node > MAX_GPUS:
        return (
            f"cluster: {nodes:,} nodes x {per_node} GPUs = {nodes * per_node:,} GPUs exceeds the "
            f"{MAX_GPUS:,} GPUs the plan search is bounded to; lay out one replica of the run "
            "on a part of the cluster"
        )
    return None


def annotate(schema: dict[str, Any]) -> dict[str, Any]:
    """The scenario's JSON schema with these ranges as `minimum`/`maximum` of its numbers."""
    defs = schema.get("$defs", {})

    def walk(node: dict[str, Any], path: str, depth: int) -> None:
        if depth > 12:  # the scenario nests 4 levels; a cycle of $refs must not loop
            return
        if "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        # Tagged unions (a reward or reference by id, inline or spec) are oneOf.
        for branch in [*node.get("anyOf", []), *node.get("oneOf", [])]:
            walk(branch, path, depth + 1)
        for name, child in node.get("properties", {}).items():
            walk(child, f"{path}.{name}" if path else name, depth + 1)
        if isinstance(node.get("items"), dict):  # the parts of a mixed cluster
            walk(node["items"], f"{path}[]", depth + 1)
        if node.get("type") in ("integer", "number"):
            low, high = next(
                (r for p, r in BOUNDS.items() if fnmatch.fnmatchcase(path, p)), ANY_NUMBER
            )
            node["maximum"] = min(node.get("maximum", high), high)
            if (low, high) != ANY_NUMBER:
                node["minimum"] = max(node.get("minimum", low), low)

    walk(schema, "", 0)
    schema["description"] = (
        f"{schema.get('description', '')} Every number is finite, at most {ANY_NUMBER[1]:g} "
        f"and, when not zero, at least {ANY_NUMBER[0]:g}; nodes x gpus_per_node is at most "
        f"{MAX_GPUS:,}."
    ).strip()
    return schema
