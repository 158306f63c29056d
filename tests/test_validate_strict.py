"""`validate` and the loader refuse what a careless or hostile record folder holds, in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import REPO
from rlmguide.kb.db import InvalidRecords, ensure_database
from rlmguide.kb.load import load_catalog
from rlmguide.kb.validate import validate
from rlmguide.rules.expr import Condition, ConditionError
from rlmguide.rules.facts import FACTS

from rlmguide.cli import cli


def errors(root: Path) -> list[str]:
    return [str(p) for p in validate(load_catalog([(root, None)])) if p.severity == "error"]


def run_validate() -> click.testing.Result:
    return CliRunner().invoke(cli, ["validate"], catch_exceptions=False)


def test_reproducer_same_id_in_two_kinds_is_an_error(fixture_kb: Path) -> None:
    """A technique and an algorithm both `grpo` doubled the framework matrix's rows."""
    text = (fixture_kb / "techniques" / "tensor-parallelism.yaml").read_text()
    (fixture_kb / "techniques" / "grpo.yaml").write_text(
        text.replace("id: tensor-parallelism", "id: grpo")
    )
    found = errors(fixture_kb)
    assert any("id 'grpo' is already a" in e and "unique across kinds" in e for e in found), found
    with pytest.raises(InvalidRecords):
        ensure_database([(fixture_kb, None)])


def test_reproducer_duplicate_claims_key_is_an_error_naming_the_line(fixture_kb: Path) -> None:
    """A second `claims:` silently dropped the first list (48 slime claims)."""
    path = fixture_kb / "frameworks" / "fw-one.yaml"
    text = path.read_text()
    first = text.splitlines().index("claims:") + 1
    path.write_text(text + "claims: []\n")
    found = errors(fixture_kb)
    assert len(found) == 1, found
    assert found[0].startswith("frameworks/fw-one.yaml: line ")
    assert f"duplicate key 'claims' (first on line {first})" in found[0]


def test_duplicate_key_in_a_nested_mapping_and_in_a_scenario(
    fixture_kb: Path, tmp_path: Path
) -> None:
    path = fixture_kb / "frameworks" / "fw-one.yaml"
    path.write_text(path.read_text().replace("support: yes", "support: yes\n    support: no", 1))
    assert any("duplicate key 'support'" in e for e in errors(fixture_kb))
    scenario = tmp_path / "twice.yaml"
    example = (REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml").read_text()
    scenario.write_text(example + "cluster: {accelerator: h100-sxm-80gb, nodes: 2}\n")
    result = CliRunner().invoke(cli, ["recommend", str(scenario)])
    assert result.exit_code == 2
    assert "duplicate key 'cluster'" in result.output and "line" in result.output


@pytest.mark.parametrize("make", ["directory", "fifo", "symlink loop", "dangling symlink"])
def test_reproducer_non_regular_record_files_are_one_line_errors(
    fixture_kb: Path, make: str
) -> None:
    path = fixture_kb / "sources" / "odd.yaml"
    if make == "directory":
        path.mkdir()
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "symlink loop":
        os.symlink(path, path)
    else:
        os.symlink(fixture_kb / "nowhere.yaml", path)
    found = errors(fixture_kb)
    assert len(found) == 1, found
    assert found[0].startswith("sources/odd.yaml: ")
    assert "not a regular file" in found[0] or "cannot read" in found[0]


def test_fifo_record_does_not_hang_validate_as_a_process(fixture_kb: Path) -> None:
    os.mkfifo(fixture_kb / "sources" / "pipe.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "rlmguide", "validate"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "RLMGUIDE_RECORDS_DIR": str(fixture_kb)},
    )
    assert done.returncode == 1
    assert "error: sources/pipe.yaml: cannot read: not a regular file" in done.stdout
    assert "Traceback" not in done.stderr + done.stdout


def test_oversized_and_non_utf8_records_are_errors(fixture_kb: Path) -> None:
    (fixture_kb / "sources" / "big.yaml").write_bytes(b"#" * (5 * 1024 * 1024))
    (fixture_kb / "sources" / "latin.yaml").write_bytes(b"id: latin\ntitle: caf\xe9\n")
    found = errors(fixture_kb)
    assert any(e.startswith("sources/big.yaml: ") and "at most" in e for e in found), found
    assert "sources/latin.yaml: line 2: not UTF-8 text (byte 0xe9)" in found


@pytest.mark.parametrize(
    "text",
    [
        "not " * 150 + "true",
        "-" * 3000 + "1 > 0",
        "(" * 1000 + "true" + ")" * 1000,
        "1" + " + 1" * 5000 + " > 0",
    ],
)
def test_reproducer_deeply_nested_rule_condition_is_a_condition_error(text: str) -> None:
    with pytest.raises(ConditionError):
        Condition(text, FACTS)


def test_deep_rule_condition_through_validate(use_fixture_kb: Path) -> None:
    rules = use_fixture_kb / "rules"
    rules.mkdir()
    rule = (REPO / "rules" / "records" / "asynchrony-for-long-tails.yaml").read_text()
    deep = "condition: " + "not " * 2000 + "true"
    (rules / "asynchrony-for-long-tails.yaml").write_text(
        rule.replace("condition: plan.execution != 'sync'", deep)
    )
    result = run_validate()
    assert result.exit_code == 1
    assert "rules/asynchrony-for-long-tails.yaml: condition:" in result.output
    assert "Traceback" not in result.output
