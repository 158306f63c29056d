"""The survey's Table 11 column set as a preset view of the framework matrix: the mapping,
`compare --preset table11` and the matrix page's block."""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import REPO
from rlmguide.kb.survey_columns import TABLE11, best_feature

from rlmguide.cli import cli

LABELS = ["DP", "Z1", "Z2", "Z3", "TP", "CP", "EP", "PP",
          "AC Share", "Disagg.", "Stage Fusion", "Hybrid", "Async"]  # fmt: skip


def test_the_thirteen_columns_in_the_survey_order_map_to_technique_records() -> None:
    assert [c.label for c in TABLE11] == LABELS
    assert {c.group for c in TABLE11[:8]} == {"intra-model parallelism"}
    assert {c.group for c in TABLE11[8:]} == {"inter-model parallelism"}
    for column in TABLE11:
        for feature in column.features:
            assert (REPO / "kb" / "records" / "techniques" / f"{feature}.yaml").exists(), feature


def test_best_feature_takes_the_best_support_then_the_column_order() -> None:
    z3 = next(c for c in TABLE11 if c.label == "Z3")  # zero-3, then fsdp
    assert best_feature(z3, {}) is None
    assert best_feature(z3, {"fsdp": "yes", "zero-3": "partial"}) == "fsdp"
    assert best_feature(z3, {"fsdp": "yes", "zero-3": "yes"}) == "zero-3"
    assert best_feature(z3, {"fsdp": "no", "zero-2": "yes"}) == "fsdp"


def test_compare_preset_table11() -> None:
    result = CliRunner().invoke(
        cli, ["compare", "verl", "openrlhf", "--preset", "table11", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["preset"] == "table11" and data["frameworks"] == ["verl", "openrlhf"]
    assert [c["column"] for c in data["columns"]] == LABELS
    for column in data["columns"]:
        for cell in column["cells"].values():
            if cell is not None:
                assert cell["feature"] in column["features"] and cell["source"]
    # verl claims its asynchronous and disaggregated modes (each cell is a cited claim).
    by = {c["column"]: c["cells"]["verl"] for c in data["columns"]}
    assert by["DP"]["support"] == "yes"
    table = CliRunner().invoke(cli, ["compare", "verl", "--preset", "table11"])
    assert table.exit_code == 0 and "Stage Fusion" in table.output
    bad = CliRunner().invoke(cli, ["compare", "verl", "--preset", "table12"])
    assert bad.exit_code == 2 and "table12" in bad.output
