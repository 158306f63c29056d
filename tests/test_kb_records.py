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


TRAINING_DEGREES = {
    "tensor-parallelism": "tp",
    "pipeline-parallelism": "pp",
    "context-parallelism": "cp",
}


def test_results_fix_the_training_degrees_their_framework_lacks() -> None:
    """Calibration searches whatever a result leaves open, on physics alone: a degree the
    framework that ran it has no code for (its claim says 'no') must be fixed at 1 in the
    result's scenario, or the prediction may cost a layout that run could not have used
    (DeepSpeed-Chat's OPT-175B row was once predicted at a TP2 x PP16 training layout)."""
    lacking = {
        framework.id: {
            TRAINING_DEGREES[claim.feature]
            for claim in framework.claims  # type: ignore[attr-defined]
            if claim.feature in TRAINING_DEGREES and claim.support == "no"
        }
        for framework in shipped().of("framework").values()
    }
    open_degrees = [
        (result.id, degree)
        for result in shipped().of("result").values()
        if result.scenario is not None and result.framework  # type: ignore[attr-defined]
        for degree in lacking.get(result.framework, set())  # type: ignore[attr-defined]
        if getattr(result.scenario.plan.train, degree) != 1  # type: ignore[attr-defined]
    ]
    assert open_degrees == []
    assert lacking["deepspeed-chat"] == {"tp", "pp", "cp"}
