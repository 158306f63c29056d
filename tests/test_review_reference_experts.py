"""The reference's own expert layout in a Megatron launch (rlmguide.review.sharding.
frozen_expert_layout): ROLL's reference is a megatron_infer cluster that builds Megatron's
parallel state from its own strategy_config (megatron_strategy.py L106-L113 at 8eb27cc2), so
its expert degrees may differ from the actor's, which the mapping reads for both.

The launch is ROLL's export of test_export_roll's MOE_TP (Qwen3-30B-A3B on 8 A100s, the
actor and the reference at TP 8, EP 8, expert TP 1), its reference keys changed by hand.
Qwen3-30B-A3B's routed experts: 48 layers x 128 experts x 3 x 2,048 x 768 = 28,991,029,248
parameters; at EP 8 x expert TP 1 a GPU holds 3,623,878,656 of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from test_export_roll import MOE_TP

from rlmguide.cli import cli
from rlmguide.review import Hardware, review

EXPERTS = 28_991_029_248
SPLIT = "      expert_model_parallel_size: 8\n      expert_tensor_parallel_size: 1\n"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> str:
    scenario = tmp_path_factory.mktemp("moe") / "s.yaml"
    scenario.write_text(yaml.safe_dump(MOE_TP))
    out = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "roll"])
    assert out.exit_code == 0, out.output
    assert out.output.count(SPLIT) == 2  # the actor's, then the reference's
    return out.output


def _reviewed(exported: str, tmp_path: Path, reference_split: str) -> dict[str, Any]:
    at = exported.rindex(SPLIT)
    launch = tmp_path / "run.yaml"
    launch.write_text(exported[:at] + reference_split + exported[at + len(SPLIT) :])
    return review(launch, "roll", hardware=Hardware("a100-sxm-80gb"))


def test_the_reference_laid_out_as_the_actor_says_nothing(exported: str, tmp_path: Path) -> None:
    got = _reviewed(exported, tmp_path, SPLIT)
    assert got["reference_experts"] is None
    assert "assessment" not in got["scenario"]["plan"]


def test_a_reference_left_at_ep_1_is_costed_in_its_own_layout(
    exported: str, tmp_path: Path
) -> None:
    # EP left out is Megatron's 1, expert TP its tensor degree 8: the experts over the 8
    # tensor ranks, which plan.assessment (tp 8, pp 1) states
    got = _reviewed(exported, tmp_path, "")
    ref = got["reference_experts"]
    assert ref["layout"] == {"tp": 8, "pp": 1, "cp": 1, "ep": 1, "etp": 8}
    assert (ref["costed"], ref["stops"]) == (True, False)
    assert got["scenario"]["plan"]["assessment"] == {"tp": 8, "pp": 1}
    assert got["estimate"]["feasible"] is not None


def test_a_reference_with_whole_experts_on_each_gpu_gets_no_memory_verdict(
    exported: str, tmp_path: Path
) -> None:
    # EP 1 with expert TP 1 keeps every expert whole on each of the 8 GPUs: 28,991,029,248
    # expert parameters a GPU, 8x the actor's split, which no plan.assessment states
    split = "      expert_model_parallel_size: 1\n      expert_tensor_parallel_size: 1\n"
    got = _reviewed(exported, tmp_path, split)
    ref = got["reference_experts"]
    assert ref["expert_params_per_gpu"] == EXPERTS
    assert ref["costed_expert_params_per_gpu"] == EXPERTS / 8
    assert (ref["costed"], ref["stops"]) == (False, False)
    assert (
        "28.991e9 expert parameters a GPU, where the plan costs it at the actor's EP 8, "
        in (ref["text"])
    )
    assert "expert TP 1, PP 1, 3.624e9" in ref["text"]
    assert got["estimate"]["feasible"] is None


def test_a_reference_grid_megatron_refuses_is_flagged(exported: str, tmp_path: Path) -> None:
    # expert TP 4 x EP 4 x PP 1 = 16 ranks on the reference's 8 GPUs: Megatron stops
    split = "      expert_model_parallel_size: 4\n      expert_tensor_parallel_size: 4\n"
    got = _reviewed(exported, tmp_path, split)
    ref = got["reference_experts"]
    assert ref["stops"] is True and ref["costed"] is False
    assert "Megatron stops at start-up" in ref["text"]
    assert "ETP x EP x PP 16" in ref["text"]
    assert "parallel_state.py" in ref["text"]
    assert got["estimate"]["feasible"] is None
