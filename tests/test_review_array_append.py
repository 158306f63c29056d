"""Review reads bash's `NAME+=(...)` as bash does: it appends to the array.

verl 0.8's example launches build their overrides as arrays and add to them in branches
(examples/grpo_trainer/run_qwen3_235b_a22b_megatron.sh at 7aed6b2: `EXTRA=(model_engine=megatron)`
then `EXTRA+=(actor_rollout_ref.rollout.data_parallel_size=...)`). Read as a replacement, the
append dropped `model_engine=megatron`: the launch lost its Megatron entry point, was read with
verl 0.7's mapping, and a 0.7-only start-up check fired on it.
"""

from __future__ import annotations

from pathlib import Path

from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from launch_support import bash_words, review_json

from rlmguide.review.shell import command_arguments

FIXTURES = REPO / "tests" / "fixtures" / "review"

# statements on A a launch script writes: array assignments and appends (one line or several),
# a string assignment before them, and nothing (A unset)
STATEMENTS = st.sampled_from(
    [
        "A=(a b)",
        "A+=(c)",
        "A+=(\n  d\n  'e f'\n)",
        'A+=("${B[@]}")',
        "A=()",
        "A+=()",
    ]
)
START = st.sampled_from(["", 'A=""', "A=s", "unset A"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=START, statements=st.lists(STATEMENTS, max_size=5))
def test_array_appends_as_bash(tmp_path: Path, start: str, statements: list[str]) -> None:
    script = tmp_path / "run.sh"
    lines = ["B=(x 'y z')", start, *statements, 'python3 -m m "${A[@]}"']
    script.write_text("\n".join(lines) + "\n")
    words, _ = command_arguments(script.read_text(), "m")
    assert words == bash_words(script, tmp_path)


def test_hand_checked_appends() -> None:
    text = "A=(model_engine=megatron)\nif [ -n 8 ]; then\n  A+=(\n    dp=8\n  )\nfi\n"
    words, _ = command_arguments(text + 'python3 -m m "${A[@]}"\n', "m")
    assert words == ["model_engine=megatron", "dp=8"]
    words, _ = command_arguments('A=s\nA+=(t)\npython3 -m m "${A[@]}"\n', "m")
    assert words == ["s", "t"]


def test_verl_08_array_launch_keeps_its_megatron_entry_point() -> None:
    """verl 0.8's Qwen3-235B example (rollout DP 8, expert TP 1 as a user sets them) is read
    with verl 0.8's mapping and Megatron entry point, without verl 0.7's reference check."""
    script = FIXTURES / "user" / "verl08-qwen3-235b-megatron-extra-append.sh"
    got = review_json(script, "--accelerator", "h100-sxm-80gb")
    assert got["mapping"] == "verl-0.8.0"
    assert got["training_backend"] == "megatron-lm"
    assert got["startup"] == []
    plan = got["scenario"]["plan"]
    assert (plan["rollout"]["tp"], plan["rollout"]["ep"], plan["rollout"]["attention_dp"]) == (
        64,
        64,
        8,
    )
    assert (plan["train"]["tp"], plan["train"]["pp"], plan["train"]["ep"]) == (4, 8, 4)
    assert plan["train"]["etp"] == 1
