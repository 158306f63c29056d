"""ROLL's FSDP2 experts split over ep_size ranks and sharded over efsdp_size (default 1),
replicated over the world's rest (fsdp2_strategy.py L103-L143, L836-L857, L1056-L1060 at
8eb27cc2). The mapping reads ep_size into plan.train.ep, whose plan shards each split over the
other world / ep ranks; at efsdp x ep = world that is ROLL's layout and review costs it, below
the world (replicated experts, the actor's or the reference's) it gives no memory verdict and
says why.

The launch is ROLL's examples/qwen3-30BA3B-rlvr_fsdp2/rlvr_config_ep.yaml (tests/fixtures/
review/roll-8eb27cc-ep): ep 8, efsdp 4, 32 GPUs. Its efsdp 1 variant is made by hand here.

Qwen3-30B-A3B's routed experts, counted from its config (48 layers, 128 experts, 3 matrices of
hidden 2048 x expert FFN 768): 48 x 128 x 3 x 2048 x 768 = 28,991,029,248 parameters; a GPU
holds 28,991,029,248 / (8 x 1) = 3,623,878,656 of them at ep 8, efsdp 1, where sharding over
all 32 ranks leaves 28,991,029,248 / 32 = 905,969,664 (4x fewer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review import Hardware, review
from rlmguide.review.sharding import expert_replication

FIXTURE = (
    Path(__file__).parent
    / "fixtures"
    / "review"
    / "roll-8eb27cc-ep"
    / "qwen3-30ba3b-rlvr_config_ep.yaml"
)
ROLL = "roll-0.3.0-9-g8eb27cc2"
KEY = "actor_train.strategy_args.strategy_config."
H100 = "h100-sxm-80gb"


def _efsdp(tmp_path: Path, value: int) -> Path:
    text = FIXTURE.read_text()
    assert text.count("efsdp_size: 4\n") == 2  # the actor's and the reference's
    launch = tmp_path / "rlvr_config_ep.yaml"
    launch.write_text(text.replace("efsdp_size: 4\n", f"efsdp_size: {value}\n"))
    return launch


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return review(_efsdp(tmp_path_factory.mktemp("ep"), 1), hardware=Hardware(H100))


def test_experts_replicated_beyond_ep_x_efsdp_get_no_memory_verdict(
    replicated: dict[str, Any],
) -> None:
    experts = replicated["expert_sharding"]
    assert experts is not None
    assert (experts["model"], experts["ep_size"], experts["efsdp_size"]) == ("actor_train", 8, 1)
    assert (experts["world"], experts["replicas"]) == (32, 4)
    assert experts["expert_params_per_gpu"] == 3_623_878_656
    assert experts["costed_expert_params_per_gpu"] == 905_969_664
    assert replicated["estimate"]["feasible"] is None  # the JSON gives no verdict either
    text = experts["text"]
    assert text.startswith("memory not costed: ")
    assert f"{KEY}ep_size=8 with {KEY}efsdp_size=1" in text
    assert "shards each split over 1 and replicates it 32/(8x1) = 4x" in text
    assert "3.624e9 expert parameters a GPU, not 0.906e9" in text
    assert "8eb27cc2dc34c4d1310b169d9b86d339004d811a" in experts["source"]
    for lines in ("#L103-L143", "#L836-L857", "#L1056-L1060"):
        assert lines in experts["source"]


def test_the_table_says_not_costed_never_fits(tmp_path: Path) -> None:
    args = ["review", str(_efsdp(tmp_path, 1)), "--accelerator", H100, "--format", "markdown"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert "Expert sharding (not in the plan)" in out.output
    (reviewed,) = [line for line in out.output.splitlines() if line.startswith("| reviewed ")]
    assert "| not costed |" in reviewed
    assert "| yes |" not in reviewed


def test_efsdp_x_ep_equal_to_the_world_is_costed() -> None:
    # ROLL's own example: 4 x 8 = 32, the experts sharded over every rank as the plan says
    got = review(FIXTURE, hardware=Hardware(H100))
    assert got["expert_sharding"] is None
    assert got["estimate"]["feasible"] is True


@pytest.mark.parametrize(
    ("config", "replicas"),
    [
        ({f"{KEY}ep_size": 8}, 4),  # efsdp_size left at its default, 1
        ({f"{KEY}ep_size": 4, f"{KEY}efsdp_size": 2}, 4),
        ({f"{KEY}ep_size": 8, f"{KEY}efsdp_size": 4}, None),  # the whole world
        ({f"{KEY}ep_size": 1, f"{KEY}efsdp_size": 1}, None),  # no expert mesh (L839)
        ({f"{KEY}ep_size": 5}, None),  # 32 % 5: ROLL's check stops it (L845-L847)
    ],
)
def test_replicas_are_the_world_over_ep_x_efsdp(
    config: dict[str, int], replicas: int | None
) -> None:
    got = expert_replication(ROLL, config, {"gpus": 32, "tp": 1, "pp": 1}, 28_991_029_248.0)
    assert (None if got is None else got["replicas"]) == replicas


def _without_ep(tmp_path: Path) -> Path:
    # ep_size 1: no expert mesh, efsdp_size unread (fsdp2_strategy.py L839, L128)
    launch = tmp_path / "rlvr_config_no_ep.yaml"
    launch.write_text(FIXTURE.read_text().replace("ep_size: 8\n", "ep_size: 1\n"))
    return launch


def test_ep_size_is_read_and_each_rank_gathers_its_split_only(tmp_path: Path) -> None:
    """ROLL's example costed with its experts split over 8 ranks. ZeRO-3 holds two layers
    gathered at once (cost.memory.ZERO3_LIVE_LAYERS), less the rank's own shard. Qwen3-30B-A3B
    has 28,991,029,248 / 48 = 603,979,776 expert parameters a layer. Read without its ep (as
    before the mapping read ep_size) a rank gathers all of a layer's experts but its 1/32:
    2 layers x 2 bytes x 603,979,776 x 31/32 = 2,340,421,632 bytes; split over 8, a rank gathers
    its 75,497,472 but the 1/4 efsdp shard it holds: 2 x 2 x 75,497,472 x 3/4 = 226,492,416.
    The phase that binds here is the forward passes' (no whole gradient beside the gather),
    so the gather term and the train pool's peak fall by 2,113,929,216 bytes = 1.96875 GiB."""
    split = review(FIXTURE, hardware=Hardware(H100))["estimate"]
    assert (split["train"]["ep"], split["train"]["zero"]) == (8, 3)
    whole = review(_without_ep(tmp_path), hardware=Hardware(H100))["estimate"]
    assert whole["train"]["ep"] == 1
    gib = 2**30
    gathered = [e["memory_breakdown_gib"]["training"]["zero3_gather"] for e in (whole, split)]
    assert gathered[0] - gathered[1] == pytest.approx(2_113_929_216 / gib, abs=1e-9)
    peaks = [e["memory_gib_per_gpu"]["train"] for e in (whole, split)]
    assert peaks[0] - peaks[1] == pytest.approx(2_113_929_216 / gib, abs=1e-9)


def test_a_reference_with_replicated_experts_gets_no_memory_verdict(tmp_path: Path) -> None:
    # the actor's efsdp 4 x ep 8 = 32 is costed; the reference's efsdp 1 holds 4 copies
    text = FIXTURE.read_text()
    at = text.rindex("efsdp_size: 4\n")
    launch = tmp_path / "rlvr_config_ep.yaml"
    launch.write_text(text[:at] + "efsdp_size: 1\n" + text[at + len("efsdp_size: 4\n") :])
    got = review(launch, hardware=Hardware(H100))
    experts = got["expert_sharding"]
    assert experts is not None
    assert (experts["model"], experts["ep_size"], experts["efsdp_size"]) == ("reference", 8, 1)
    assert experts["replicas"] == 4
    assert "reference.strategy_args.strategy_config.ep_size=8" in experts["text"]
    assert got["estimate"]["feasible"] is None
