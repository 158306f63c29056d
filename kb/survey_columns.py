"""The survey's Table 11 column set as a preset view of the framework matrix.

Table 11 of arXiv:2608.27046 (§6.2) compares frameworks under the systems taxonomy in 13
columns: intra-model DP, Z1, Z2, Z3 (FSDP2 counted as Z3), TP, CP, EP, PP and inter-model AC
Share, Disagg., Stage Fusion, Hybrid and Async. Its cells are an image, so they cannot be read;
the preset maps each column to the features of the knowledge base that mean it, and a cell is
the best cited claim among them. The matrix page and `rlmguide compare --preset table11` show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rlmguide.kb.schema.common import SUPPORT_ORDER


@dataclass(frozen=True)
class SurveyColumn:
    label: str
    group: str
    features: tuple[str, ...]
    """Feature ids that mean the column, in the order a tie is broken."""
    meaning: str
    """The column as the table's caption defines it."""


INTRA, INTER = "intra-model parallelism", "inter-model parallelism"
TABLE11 = (
    SurveyColumn("DP", INTRA, ("data-parallelism",), "data parallel"),
    SurveyColumn("Z1", INTRA, ("zero-1",), "ZeRO/FSDP-like sharding of the optimizer"),
    SurveyColumn("Z2", INTRA, ("zero-2",), "sharding of optimizer and gradients"),
    SurveyColumn(
        "Z3", INTRA, ("zero-3", "fsdp"),
        "sharding of parameters, gradients and optimizer; FSDP2 counts",
    ),
    SurveyColumn("TP", INTRA, ("tensor-parallelism",), "tensor parallel"),
    SurveyColumn(
        "CP", INTRA, ("context-parallelism", "ring-attention", "ulysses-sequence-parallelism"),
        "context or long-sequence parallelism",
    ),
    SurveyColumn("EP", INTRA, ("expert-parallelism",), "expert parallelism"),
    SurveyColumn("PP", INTRA, ("pipeline-parallelism",), "pipeline parallel"),
    SurveyColumn(
        "AC Share", INTER, ("shared-actor-critic",), "shared actor/critic parameters or value head"
    ),
    SurveyColumn(
        "Disagg.", INTER, ("disaggregated-placement", "reward-service-disaggregation"),
        "separate services or device groups for rollout, reward or training",
    ),
    SurveyColumn(
        "Stage Fusion", INTER, ("stage-fusion", "inter-stage-fusion", "intra-stage-fusion"),
        "explicit overlap or fusion across normally sequential stages or subtasks",
    ),
    SurveyColumn(
        "Hybrid", INTER, ("hybrid-engine-resharding",),
        "stage-specific backends or layouts, or runtime resharding/refit",
    ),
    SurveyColumn(
        "Async", INTER, ("asynchronous-execution", "one-step-off-policy"),
        "asynchronous or bounded-stale execution",
    ),
)  # fmt: skip
PRESETS = {"table11": TABLE11}


def best_feature(column: SurveyColumn, supports: Mapping[str, str]) -> str | None:
    """The column's feature whose claimed support (`supports`: feature -> level, for one
    framework) is best; None when the framework claims none of them."""
    found = [f for f in column.features if f in supports]
    if not found:
        return None
    return min(found, key=lambda f: (SUPPORT_ORDER[supports[f]], column.features.index(f)))
