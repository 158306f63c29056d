"""An agentic block left at its defaults (one turn, no observation, no environment time) costs
every bundled example and every published deployment exactly as a scenario without it: the
same step time and the same memory for every candidate plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Scenario
from rlmguide.rules.recommend import Recommender
from rlmguide.rules.scenario import fill_plan_defaults, read_scenario, resolve

CATALOG = load_catalog(DEFAULT_ROOTS).records
EXAMPLES = sorted(
    path
    for path in (REPO / "examples").glob("*.yaml")
    if read_scenario(path).workload.agent is None
)
"""The single-turn examples (an agentic one has its own block, not a defaulted one)."""
DEPLOYMENTS = sorted(CATALOG["deployment"])


def _one_cluster(scenario: Scenario) -> list[Scenario]:
    """A mixed cluster as each of its parts alone (the single-accelerator searches it runs)."""
    cluster = scenario.cluster
    if cluster.parts is None:
        return [scenario]
    out = []
    for part in cluster.parts:
        fields = part.model_dump(exclude={"name"}, exclude_none=True)
        out.append(scenario.model_copy(update={"cluster": type(cluster)(**fields)}))
    return out


def _defaulted(scenario: Scenario) -> Scenario:
    data: dict[str, Any] = scenario.model_dump(exclude_unset=True)
    data["workload"]["agent"] = {}
    return Scenario.model_validate(data)


def _costs(scenario: Scenario, complete: bool) -> Any:
    resolved = resolve(scenario, CATALOG)
    if complete:
        resolved, _ = fill_plan_defaults(resolved)
    costs, _ = Recommender(resolved, [], [], enforce_memory=False).run()
    return costs


def _same(scenario: Scenario, complete: bool) -> None:
    plain, agent = _costs(scenario, complete), _costs(_defaulted(scenario), complete)
    assert len(plain) == len(agent) > 0
    for name in ("step_seconds", "memory_rollout_gib", "memory_train_gib", "overflow_gib"):
        np.testing.assert_array_equal(getattr(agent, name), getattr(plain, name), err_msg=name)
    assert not agent.agentic_parts


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: Path(p).stem)
def test_examples_cost_the_same_with_a_defaulted_agent(path: Path) -> None:
    for scenario in _one_cluster(read_scenario(path)):
        _same(scenario, complete=False)


@pytest.mark.parametrize("record_id", DEPLOYMENTS)
def test_deployments_cost_the_same_with_a_defaulted_agent(record_id: str) -> None:
    _same(CATALOG["deployment"][record_id].scenario, complete=True)  # type: ignore[attr-defined]
