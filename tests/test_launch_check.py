"""The launch check: every export, read back as its framework's parser reads it, passes every
start-up check and constraint record of the framework, sets the engine memory fraction its plan
needs and keeps its training micro-batch within the tokens the plan's activations were costed
at. Over every bundled example, every deployment's scenario and a sample of atlas setups
(rules.atlas's grid with three response lengths), each exported to every mapped framework.

`RLMGUIDE_LAUNCH_CHECK_ALL=1` runs every atlas setup instead of the sample (a few minutes).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import pytest
from conftest import REPO
from launch_support import catalogs
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules.atlas import grid
from rlmguide.rules.scenario import parse_scenario, read_mapping, resolve

from rlmguide.export import Exported, NotExpressible, build
from rlmguide.review.check import launch_problems

FRAMEWORKS = ("verl", "openrlhf", "nemo-rl", "slime", "skyrl", "areal")
RESPONSES = (4096, 16384, 32768)


def _atlas() -> list[tuple[str, dict[str, Any]]]:
    catalog, _ = catalogs()
    setups = []
    for setup in grid(catalog.records):
        for longest in RESPONSES:
            data = setup.scenario()
            data["workload"]["max_response_tokens"] = longest
            data["workload"]["response_tokens"] = min(4096, longest)
            name = f"{setup.model}-{setup.accelerator}-{setup.gpus}-{setup.algorithm}-{longest}"
            setups.append((name, data))
    if os.environ.get("RLMGUIDE_LAUNCH_CHECK_ALL"):
        return setups
    return setups[::5]  # every fifth: each model, accelerator, size and length appears


def _examples() -> list[tuple[str, dict[str, Any]]]:
    """The bundled examples export takes (a mixed-accelerator cluster is planned only)."""
    found = [(p.stem, read_mapping(p)) for p in sorted((REPO / "examples").glob("*.yaml"))]
    return [(name, data) for name, data in found if "parts" not in data["cluster"]]


def _deployments() -> list[tuple[str, Any]]:
    deployments = load_catalog(record_roots(), ("deployment",)).of("deployment")
    return [(d, r.scenario) for d, r in sorted(deployments.items())]


SCENARIOS = [*_examples(), *_deployments(), *_atlas()]


def check(done: Exported) -> list[str]:
    return launch_problems(done, catalogs()[0])


@pytest.mark.parametrize(("name", "data"), SCENARIOS, ids=[n for n, _ in SCENARIOS])
def test_every_export_starts_and_fits(name: str, data: Any) -> None:
    catalog, mappings = catalogs()
    scenario = data if not isinstance(data, dict) else parse_scenario(data, name)
    resolved = resolve(scenario, catalog.records)
    for framework in FRAMEWORKS:
        try:
            done = build(resolved, catalog, mappings, framework)
        except NotExpressible:
            continue  # refused with the reason: no launch is written
        assert check(done) == [], f"{framework}: {check(done)}"


def test_the_sample_covers_over_a_hundred_setups() -> None:
    atlas = _atlas()
    assert len(atlas) * len(FRAMEWORKS) >= 100
    assert len({n.split("-h100")[0].split("-mi300x")[0] for n, _ in atlas}) >= 4


def test_the_check_catches_a_launch_that_would_not_start() -> None:
    """The check is not vacuous: the same export with the engine's default fraction written
    back, and with a micro-batch above the costed one, fails it."""
    catalog, mappings = catalogs()
    data = read_mapping(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
    done = build(resolve(parse_scenario(data, "x"), catalog.records), catalog, mappings, "verl")
    assert check(done) == []
    fraction = "actor_rollout_ref.rollout.gpu_memory_utilization"
    budget = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"
    bent = {fraction: 0.5, budget: 4 * next(a.value for a in done.arguments if a.key == budget)}
    arguments = [replace(a, value=bent.get(a.key, a.value)) for a in done.arguments]
    broken = replace(done, arguments=arguments)
    failed = check(broken)
    assert any("engine memory fraction" in f for f in failed)
    assert any("micro-batch" in f for f in failed)
