"""ROLL's load_balance packing stops a run whose token budget cannot hold a padded sequence.

LoadBalancePacker asserts max_packed_sequence_length_train (training) or _forward (the log-prob
passes) is at least the batch's width (roll/utils/sequence_packing.py L169-L174 at 8eb27cc2),
and every rollout is padded to sequence_length, prompt_length + response_length by default
(roll/utils/functionals.py L1224-L1226, roll/configs/base_config.py L274-L275). Review read
such a launch and costed its micro-batches at the budget; it now names the stop (constraints
roll-load-balance-train-budget-holds-the-sequence and -forward-).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from rlmguide.review import Hardware, review

RECIPE = REPO / "tests/fixtures/review/roll-8eb27cc-packing/rlvr_config_sequence_packing.yaml"
TRAIN = "roll-load-balance-train-budget-holds-the-sequence"
FORWARD = "roll-load-balance-forward-budget-holds-the-sequence"


def _stops(tmp_path: Path, *edits: tuple[str, str, int]) -> list[str]:
    """The start-up stops of the recipe (prompts 2048 + responses 4096: 6144 tokens wide)
    with (old, new, count) replacements."""
    text = RECIPE.read_text()
    for old, new, count in edits:
        assert text.count(old) >= count
        text = text.replace(old, new, count)
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    got = review(path, hardware=Hardware("h100-sxm-80gb"))
    return [s["constraint"] for s in got["startup"]]


def test_budgets_that_hold_the_sequence_pass(tmp_path: Path) -> None:
    assert _stops(tmp_path) == []


@pytest.mark.parametrize(
    ("key", "stop"),
    [("max_packed_sequence_length_train", TRAIN), ("max_packed_sequence_length_forward", FORWARD)],
)
def test_a_budget_below_the_padded_sequence_stops(tmp_path: Path, key: str, stop: str) -> None:
    # one token short of prompt_length + response_length, on the actor (the first occurrence)
    assert _stops(tmp_path, (f"{key}: 8192", f"{key}: 6143", 1)) == [stop]
    assert _stops(tmp_path, (f"{key}: 8192", f"{key}: 6144", 1)) == []


def test_the_reference_forward_budget_is_judged_too(tmp_path: Path) -> None:
    forward = "max_packed_sequence_length_forward: 8192"
    text = RECIPE.read_text()
    reference = text.index("strategy_name: megatron_infer")
    head, tail = text[:reference], text[reference:]
    path = tmp_path / "recipe.yaml"
    path.write_text(head + tail.replace(forward, "max_packed_sequence_length_forward: 4096", 1))
    got = review(path, hardware=Hardware("h100-sxm-80gb"))
    assert [s["constraint"] for s in got["startup"]] == [FORWARD]


def test_without_load_balance_no_budget_is_read(tmp_path: Path) -> None:
    """The default algorithm, none, cuts micro-batches by sequence count: no budget applies."""
    edits = [
        ("algorithm: load_balance", "algorithm: none", 2),
        ("max_packed_sequence_length_train: 8192", "max_packed_sequence_length_train: 1024", 2),
        ("max_packed_sequence_length_forward: 8192", "max_packed_sequence_length_forward: 1024", 2),
    ]
    assert _stops(tmp_path, *edits) == []
