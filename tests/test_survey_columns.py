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
    # A documented absence says more than a source that is silent: `no` wins over undocumented.
    assert best_feature(z3, {"zero-3": "undocumented", "fsdp": "no"}) == "fsdp"
    assert best_feature(z3, {"zero-3": "undocumented"}) == "zero-3"


def test_table11_cells_the_sources_leave_open_are_undocumented_claims() -> None:
    # StaleFlow, Pipe-RLHF and RLHFuse could be read only in part (abstracts, RLHFuse's solver):
    # a cell they do not document is Table 11's "?", a cited claim, not an unknown cell.
    result = CliRunner().invoke(
        cli,
        ["compare", "staleflow", "pipe-rlhf", "rlhfuse", "--preset", "table11", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    cells = {c["column"]: c["cells"] for c in json.loads(result.output)["columns"]}
    assert all(cell is not None for column in cells.values() for cell in column.values())
    assert cells["TP"]["staleflow"]["support"] == "undocumented"
    assert cells["TP"]["staleflow"]["source"] == "arxiv-2601.12784"
    # What the abstracts do document stays: Pipe-RLHF pipelines its generation step only
    # (Table 11's rollout-specific partial mark), StaleFlow is disaggregated.
    assert cells["PP"]["pipe-rlhf"]["support"] == "partial"
    assert cells["Disagg."]["staleflow"]["support"] == "yes"
    assert cells["AC Share"]["rlhfuse"]["support"] == "no"


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
