"""Coverage of the knowledge base: which comparison dimension each claim speaks to.

A dimension is a question a reader of the comparison matrix asks of every framework (which
algorithms? which rollout engines? which placements? ...). Claims map to dimensions through
the taxonomy: the nearest ancestor technique that names a dimension decides.
"""

from __future__ import annotations

from collections.abc import Mapping

from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Component, Technique

DIMENSION_OF_TECHNIQUE = {
    "rollout-parallelism": "rollout parallelism",
    "expert-parallelism": "mixture of experts",
    "intra-model-parallelism": "training parallelism",
    "colocated-placement": "placement",
    "disaggregated-placement": "placement",
    "switchable-placement": "placement",
    "stage-fusion": "stage fusion",
    "hybrid-engine-resharding": "resharding",
    "inter-model-parallelism": "placement",
    "staleness-correction": "staleness correction",
    "execution-modes": "execution",
    "multi-turn-rollout": "multi-turn and agents",
    "agentic-tool-use": "multi-turn and agents",
    "rollout-optimisations": "rollout optimisations",
    "lora": "LoRA",
    "training-optimisations": "training optimisations",
    "weight-synchronisation": "weight sync",
    "memory-optimisations": "memory",
}
DIMENSION_OF_ROLE = {
    "training-backend": "training backends",
    "rollout-engine": "rollout engines",
    "orchestration": "orchestration",
    "communication": "communication",
    # A model library answers the same question for a matrix reader: what the models train on.
    "model-library": "training backends",
}
DIMENSIONS = (
    "algorithms",
    *dict.fromkeys(DIMENSION_OF_ROLE.values()),
    *dict.fromkeys(DIMENSION_OF_TECHNIQUE.values()),
)


def dimension_of(feature: str, catalog: Catalog) -> str | None:
    """The comparison dimension a claim on `feature` answers, or None if it is unknown."""
    if feature in catalog.of("algorithm"):
        return "algorithms"
    component = catalog.of("component").get(feature)
    if isinstance(component, Component):
        return DIMENSION_OF_ROLE[component.role]
    techniques: Mapping[str, Technique] = catalog.of("technique")  # type: ignore[assignment]
    seen: set[str] = set()
    current: str | None = feature
    while current is not None and current in techniques and current not in seen:
        if current in DIMENSION_OF_TECHNIQUE:
            return DIMENSION_OF_TECHNIQUE[current]
        seen.add(current)
        current = techniques[current].parent
    return None


def framework_dimensions(catalog: Catalog) -> dict[str, set[str]]:
    """Framework id -> the dimensions its claims (and its licence field) cover."""
    covered: dict[str, set[str]] = {}
    for fw in catalog.of("framework").values():
        dims = {d for c in fw.claims if (d := dimension_of(c.feature, catalog))}  # type: ignore[attr-defined]
        if fw.licence:  # type: ignore[attr-defined]
            dims.add("licence")
        covered[fw.id] = dims
    return covered
