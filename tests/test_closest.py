"""The "did you mean" every unknown name gets: short names for long ids, spelling slips, and
nothing for names far from every known one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rlmguide.kb.closest import closest

ACCELERATORS = ["a100-sxm-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "gh200"]


def test_a_short_name_finds_the_ids_it_begins() -> None:
    # difflib alone: 'h100' vs 'h100-sxm-80gb' has ratio 2*4/17 = 0.47, below every cutoff.
    assert closest("h100", ACCELERATORS)[:2] == ["h100-sxm-80gb", "h100-pcie-80gb"]
    assert closest("h100", ACCELERATORS, n=1) == ["h100-sxm-80gb"]


def test_a_whole_middle_part_counts_but_not_a_fragment() -> None:
    assert closest("sxm", ACCELERATORS) == ["a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb"]
    assert closest("xm", ACCELERATORS) == []


def test_a_spelling_slip_still_finds_its_neighbour() -> None:
    assert closest("veryl", ["verl", "slime", "nemo-rl"]) == ["verl"]
    assert closest("grpoo", ["grpo", "ppo", "dapo"], cutoff=0.5)[0] == "grpo"


def test_far_names_get_nothing() -> None:
    assert closest("tpu-v5p", ACCELERATORS) == []
    assert closest("", ACCELERATORS) == []


@given(st.text(max_size=12), st.lists(st.text(max_size=12), max_size=20), st.integers(1, 5))
def test_suggestions_are_known_distinct_and_bounded(name: str, known: list[str], n: int) -> None:
    got = closest(name, known, n=n)
    assert set(got) <= set(known)
    assert len(got) == len(set(got)) <= n
