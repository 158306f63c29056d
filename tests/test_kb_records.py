"""The shipped knowledge base: valid, complete enough for the seed, and every fact cited."""

from __future__ import annotations

import functools

import pytest
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.validate import validate


@functools.cache
def shipped() -> Catalog:
    return load_catalog([*DEFAULT_ROOTS, RULES_ROOT])


def test_shipped_records_validate() -> None:
    errors = [str(p) for p in validate(shipped()) if p.severity == "error"]
    assert errors == []


@pytest.mark.parametrize(
    ("kind", "ids"),
    [
        (
            "framework",
            {"verl", "openrlhf", "trl", "deepspeed-chat", "nemo-rl", "areal", "slime", "roll"},
        ),
        ("algorithm", {"ppo", "grpo", "dapo", "rloo", "reinforce-plus-plus", "gspo"}),
        (
            "technique",
            {
                "data-parallelism",
                "tensor-parallelism",
                "pipeline-parallelism",
                "sequence-parallelism",
                "context-parallelism",
                "expert-parallelism",
                "colocated-placement",
                "disaggregated-placement",
                "stage-fusion",
                "hybrid-engine-resharding",
                "asynchronous-execution",
                "partial-rollout",
            },
        ),
    ],
)
def test_seed_records_exist(kind: str, ids: set[str]) -> None:
    assert ids <= set(shipped().of(kind))


@pytest.mark.parametrize(("kind", "minimum"), [("accelerator", 8), ("model", 12), ("framework", 8)])
def test_catalog_sizes(kind: str, minimum: int) -> None:
    assert len(shipped().of(kind)) >= minimum


SEED = ("verl", "openrlhf", "trl", "deepspeed-chat", "nemo-rl", "areal", "slime", "roll")


def test_every_seed_framework_has_ten_dimensions_cited() -> None:
    for fw in (shipped().of("framework")[i] for i in SEED):
        assert len(fw.claims) >= 10, fw.id  # type: ignore[attr-defined]
        assert all(c.source and c.checked for c in fw.claims)  # type: ignore[attr-defined]
