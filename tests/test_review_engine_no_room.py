"""A launch sized for one accelerator reviewed on a smaller one: where SGLang's static memory
fraction (a share of the memory free when the engine starts) finds nothing free beside the
trainer's resident state, review says the engine cannot start in one line (exit 1), never
an internal error (audit11: a verl 0.8 export for 8 B200s, moved to SGLang by hand and
reviewed on H100s, ended in a traceback over plan.rollout.memory_fraction)."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import REPO

from rlmguide.cli import cli

LAUNCH = REPO / "tests" / "fixtures" / "review" / "audit11" / "verl-sglang-no-runner-b200.sh"


def review(accelerator: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["review", str(LAUNCH), "--accelerator", accelerator])
    return done.exit_code, done.output


def test_an_engine_left_no_memory_is_named_in_one_line() -> None:
    code, out = review("h100-sxm-80gb")
    assert code == 1, out
    assert "internal error" not in out and "Traceback" not in out
    (line,) = [x for x in out.splitlines() if x.strip()]
    assert "SGLang's static memory fraction" in line
    assert "(79.6 GiB a GPU)" in line  # the H100's HBM as the records give it
    assert "leaves it none: the engine cannot start" in line


def test_the_accelerator_it_was_sized_for_is_reviewed() -> None:
    code, out = review("b200-sxm-180gb")
    assert code == 0, out
    assert "cannot start" not in out
