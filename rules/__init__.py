"""The guideline engine: rule records, their condition language and the evaluator."""

from pathlib import Path

RECORDS_DIR = Path(__file__).parent / "records"

RECOMMEND_KINDS = (
    "accelerator", "model", "algorithm", "framework", "rule", "constraint", "component",
    "mapping",
)  # fmt: skip
"""The record kinds a recommendation reads (resolves, ranks with and cites): loading only these
keeps a search fast, and an edit to another kind (a source, a result) leaves its answer as is.
Mappings say which frameworks export a plan: they come first among the plan's runners."""
