"""verl 0.8's Qwen3-30B-A3B Megatron example as shipped (examples/grpo_trainer/
run_qwen3_30b_a3b_megatron.sh at 7aed6b2) stops at start-up for three reasons; review named
one (the rollout's EP 2 is not TP 4 x DP 1). The other two: +rollout.moe_tensor_parallel_size=2
is refused for any engine but trtllm (verl/workers/config/rollout.py L305-L306 at 7aed6b2), and
the actor's expert tensor degree is unset, which Megatron takes as TP 4, so etp x ep x pp =
4 x 2 x 2 = 16 does not divide the 8 GPUs (megatron/core/parallel_state.py L786-L795 at
core_v0.16.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO
from test_startup import _check

from rlmguide.cli import cli

SHIPPED = REPO / "tests" / "fixtures" / "review" / "verl-7aed6b2-run_qwen3_30b_a3b_megatron.sh"
MOE_TP = "verl-rollout-moe-tensor-parallel-trtllm-only-v0.8"
ETP = "verl-megatron-unset-expert-tensor-parallel-is-tp-v0.8"
EP = "verl-rollout-expert-parallel-spans-engine-v0.8"
ETP_KEY = "    actor_rollout_ref.actor.megatron.expert_model_parallel_size=${actor_ep}\n"


def _stops(tmp_path: Path, *edits: tuple[str, str]) -> str:
    text = SHIPPED.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    launch = tmp_path / SHIPPED.name
    launch.write_text(text)
    done = CliRunner().invoke(cli, ["review", str(launch), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code in (0, 1), done.output
    return done.output


def test_review_names_all_three_stops_of_the_shipped_example(tmp_path: Path) -> None:
    out = _stops(tmp_path)
    for record in (MOE_TP, ETP, EP):
        assert record in out
    assert "rollout.py L305-L306 at 7aed6b230776" in out
    assert "parallel_state.py L786-L795 at 55ac7082517c" in out


@pytest.mark.parametrize(
    ("edit", "gone", "kept"),
    [
        (("gen_moe_tp=${GEN_MOE_TP:-2}", "gen_moe_tp=${GEN_MOE_TP:-1}"), MOE_TP, ETP),
        # etp 1: 1 x 2 x 2 = 4 divides 8
        (
            (
                ETP_KEY,
                ETP_KEY + "    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1\n",
            ),
            ETP,
            MOE_TP,
        ),
    ],
)
def test_each_fix_clears_its_own_stop(
    tmp_path: Path, edit: tuple[str, str], gone: str, kept: str
) -> None:
    out = _stops(tmp_path, edit)
    assert gone not in out
    assert kept in out


def test_unset_expert_tensor_degree_by_hand() -> None:
    check = _check(ETP)
    for gpus, tp, ep, pp, etp, holds in (
        (8, 4, 2, 2, 0, False),  # 4 x 2 x 2 = 16 over 8
        (16, 4, 2, 2, 0, True),  # 16 over 16
        (8, 4, 2, 2, 1, True),  # given: the plan's etp, checked by rules.scenario
        (8, 4, 1, 2, 0, True),  # no expert parallelism
        (24, 4, 4, 1, 0, False),  # 16 over 24
    ):
        facts = {"plan.train.gpus": gpus, "plan.train.tp": tp, "plan.train.ep": ep,
                 "plan.train.pp": pp, "launch.etp": etp}  # fmt: skip
        assert bool(check.holds(facts, 1)[0]) is holds, (gpus, tp, ep, pp, etp)
