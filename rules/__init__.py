"""The guideline engine: rule records, their condition language and the evaluator."""

from pathlib import Path

RECORDS_DIR = Path(__file__).parent / "records"
