"""A launch whose FSDP shard group is smaller than its trainer's ranks (hybrid sharding) is
named by review and costed so (rlmguide.review.sharding, plan.train.shard_group).

The launch is verl's one-step-off dapo_7b_math_fsdp2_4_12.sh at b178a3c (tests/fixtures/review),
resized by hand to 8 training GPUs (2 nodes x 4) without Ulysses, at its own fsdp_size=2:
create_device_mesh (verl/workers/fsdp_workers.py L98-L105) builds a (4, 2) ddp x fsdp mesh, so
each GPU holds 1/2 of the weights, gradients and Adam states, not the 1/8 of full sharding.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review import Hardware, review
from rlmguide.review.sharding import frozen_sharding, hybrid_sharding

FIXTURE = Path(__file__).parent / "fixtures" / "review" / "verl-dapo_7b_math_fsdp2_4_12.sh"
POLICY = "qwen2.5-math-7b"


def _launch(tmp_path: Path, fsdp_size: str) -> Path:
    text = FIXTURE.read_text()
    for was, now in (
        ("n_gpus_rollout=2\n", "n_gpus_rollout=4\n"),
        ("sp_size=4\n", "sp_size=1\n"),
        ("fsdp_size=2\n", f"fsdp_size={fsdp_size}\n"),
    ):
        assert was in text
        text = text.replace(was, now)
    script = tmp_path / "run.sh"
    script.write_text(text)
    return script


def test_a_verl_launch_sharding_in_pairs_on_8_gpus_is_named_and_costed(tmp_path: Path) -> None:
    got = review(_launch(tmp_path, "2"), policy=POLICY, hardware=Hardware("h20-96gb"))
    train = got["scenario"]["plan"]["train"]
    assert (train["gpus"], train.get("cp", 1), train["zero"]) == (8, 1, 3)
    assert train["shard_group"] == got["estimate"]["train"]["shard_group"] == 2
    sharding = got["sharding"]
    assert sharding["key"] == "actor_rollout_ref.actor.fsdp_config.fsdp_size"
    assert (sharding["value"], sharding["world"], sharding["replicas"]) == (2, 8, 4)
    assert sharding["source"].endswith(
        "b178a3cd56f58b2d502255daba591e92833930a7/verl/workers/fsdp_workers.py#L98-L105"
    )
    # ZeRO-3: all three states, 8 / 2 = 4 times those of full sharding
    assert "Adam states, gradients, weights per GPU are 8/2 = 4x" in sharding["text"]
    # the same launch at a group of all 8 ranks holds less on each training GPU
    whole = review(_launch(tmp_path, "-1"), policy=POLICY, hardware=Hardware("h20-96gb"))
    assert "shard_group" not in whole["scenario"]["plan"]["train"]
    memory = got["estimate"]["memory_gib_per_gpu"]["train"]
    assert memory > whole["estimate"]["memory_gib_per_gpu"]["train"] + 10


def test_the_table_names_the_group(tmp_path: Path) -> None:
    args = ["review", str(_launch(tmp_path, "2")), "--policy", POLICY]
    out = CliRunner().invoke(cli, [*args, "--accelerator", "h20-96gb", "--format", "markdown"])
    assert out.exit_code == 0, out.output
    assert "Hybrid sharding (plan.train.shard_group)" in out.output
    assert "ZeRO-3 in groups of 2" in out.output


@pytest.mark.parametrize("fsdp_size", ["-1", "8", "16"])
def test_a_group_of_the_whole_world_is_costed_as_it_is(tmp_path: Path, fsdp_size: str) -> None:
    got = review(_launch(tmp_path, fsdp_size), policy=POLICY, hardware=Hardware("h20-96gb"))
    assert got["sharding"] is None


def test_roll_shards_over_the_world_at_one_and_zero_2_keeps_whole_weights() -> None:
    # ROLL's create_device_mesh_with_ep: fsdp_size <= 1 is the whole world (L109)
    key = "actor_train.strategy_args.strategy_config.fsdp_size"
    train = {"gpus": 16, "tp": 1, "pp": 1, "zero": 2}
    assert hybrid_sharding("roll-0.3.0-9-g8eb27cc2", {key: 1}, train) is None
    got = hybrid_sharding("roll-0.3.0-9-g8eb27cc2", {key: 4}, train)
    assert got is not None and (got["world"], got["replicas"]) == (16, 4)
    # ZeRO-2 (reshard_after_forward false) holds whole weights anyway: two states, 4x
    assert "its Adam states, gradients per GPU are 16/4 = 4x" in got["text"]
    # the critic's key of verl 0.8 is read as well; a framework without the key says nothing
    assert hybrid_sharding("verl-0.8.0", {"critic.fsdp.fsdp_size": 2}, train) is not None
    assert hybrid_sharding("openrlhf-0.11.0", {key: 4}, train) is None


SCENARIO = """
cluster: {accelerator: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}
models: {policy: qwen2.5-1.5b, reward: verifier}
workload: {algorithm: grpo, prompts_per_step: 64, samples_per_prompt: 8, prompt_tokens: 512,
  response_tokens: 2048, max_response_tokens: 4096, minibatches_per_step: 4}
plan:
  placement: colocated
  execution: sync
  rollout: {gpus: 8, tp: 1}
  train: {gpus: 8, tp: 1, pp: 1, cp: 1, zero: 3, recompute: full, shard_group: 2}
"""


@pytest.mark.parametrize(
    ("framework", "key"),
    [
        ("verl", "actor_rollout_ref.actor.fsdp_config.fsdp_size=2"),
        ("skyrl", "trainer.policy.fsdp_config.fsdp_size=2"),
    ],
)
def test_an_exported_group_is_read_back(tmp_path: Path, framework: str, key: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = CliRunner().invoke(cli, ["export", str(scenario), "--framework", framework])
    assert out.exit_code == 0, out.output
    assert key in out.output
    launch = tmp_path / "run.sh"
    launch.write_text(out.output)
    got = review(launch)
    assert got["scenario"]["plan"]["train"]["shard_group"] == 2
    assert got["estimate"]["train"]["shard_group"] == 2


def test_a_mapping_without_the_key_refuses_the_group(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "roll"])
    assert out.exit_code != 0
    assert "no key for plan.train.shard_group = 2" in out.output


NO_GPU_COUNT = Path(__file__).parent / "fixtures" / "review" / "user" / "verl-grpo-no-gpu-count.sh"


@pytest.mark.parametrize("fsdp_size", [None, 4])
def test_a_launch_that_leaves_the_gpu_count_to_the_framework_is_read_on_the_clusters(
    tmp_path: Path, fsdp_size: int | None
) -> None:
    """A colocated verl launch with no trainer.n_gpus_per_node or nnodes (verl's rollout
    correction examples at 1dda039b) trains on verl's default single node of 8: the shard
    group check reads that pool, where it once read a GPU count the launch never gave
    (KeyError: 'gpus', an internal error)."""
    text = NO_GPU_COUNT.read_text()
    if fsdp_size is None:
        text = "\n".join(line for line in text.splitlines() if "fsdp_size" not in line)
    script = tmp_path / "run.sh"
    script.write_text(text + "\n")
    got = review(script, hardware=Hardware("h100-sxm-80gb"))
    train = got["scenario"]["plan"]["train"]
    assert got["scenario"]["cluster"]["nodes"] * got["scenario"]["cluster"]["gpus_per_node"] == 8
    if fsdp_size is None:
        assert got["sharding"] is None
    else:
        assert (train["gpus"], train["shard_group"]) == (8, 4)
        assert "fsdp_size=4" in got["sharding"]["text"]


QWEN25_15B_PARAMS = 1_543_714_304
"""Qwen2.5-1.5B from its record: a tied 151,936 x 1,536 embedding (233,373,696), 28 layers of
46,797,824 (q 1,536 x 1,536 and k, v 1,536 x 256 with biases, o 1,536 x 1,536, a SwiGLU MLP
3 x 1,536 x 8,960, two norms) and the final norm (1,536)."""


def test_skyrls_reference_shards_over_its_own_group(tmp_path: Path) -> None:
    """SkyRL's reference builds its FSDP mesh from trainer.ref.fsdp_config (fsdp_worker.py
    L416-L424 at a956457), -1 by default: every one of the 8 ranks, whatever the policy's
    fsdp_size. Export writes the plan's group for it too; a launch that leaves it out holds
    the bf16 reference in 1/8 shards, not the policy's 1/2: 2 x 1,543,714,304 x (1/2 - 1/8)
    = 1,157,785,728 bytes less a GPU, which SkyRL parks on the host (its mapping's implied
    offload_frozen), so the host's share falls by that."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = CliRunner().invoke(cli, ["export", str(scenario), "--framework", "skyrl"])
    assert out.exit_code == 0, out.output
    assert "trainer.ref.fsdp_config.fsdp_size=2" in out.output
    exported = tmp_path / "run.sh"
    exported.write_text(out.output)
    own = tmp_path / "own.sh"
    own.write_text(
        "".join(
            line
            for line in out.output.splitlines(keepends=True)
            if "trainer.ref.fsdp_config.fsdp_size" not in line
        )
    )
    paired, whole = review(exported), review(own)
    assert paired["frozen_sharding"] is None
    assert "frozen_shard_group" not in paired["scenario"]["plan"]["train"]
    frozen = whole["frozen_sharding"]
    assert (frozen["key"], frozen["value"], frozen["group"]) == (
        "trainer.ref.fsdp_config.fsdp_size",
        -1,
        8,
    )
    assert whole["estimate"]["train"]["frozen_shard_group"] == 8
    assert whole["estimate"]["train"]["shard_group"] == 2  # the policy's groups stay
    less = paired["estimate"]["offload_gib"] - whole["estimate"]["offload_gib"]
    assert less == pytest.approx(2 * QWEN25_15B_PARAMS * (1 / 2 - 1 / 8) / 2**30, rel=1e-9)


def test_rolls_reference_at_its_default_shards_over_every_rank() -> None:
    # ROLL's reference strategy reads its own fsdp_size (fsdp2_strategy.py L832), 1 by
    # default: the whole world (L109), beside an actor in groups of 4 of 16
    key = "actor_train.strategy_args.strategy_config.fsdp_size"
    train = {"gpus": 16, "tp": 1, "pp": 1, "zero": 3, "shard_group": 4}
    got = frozen_sharding("roll-0.3.0-9-g8eb27cc2", {key: 4}, train)
    assert got is not None and (got["group"], got["world"]) == (16, 16)
    ref = "reference.strategy_args.strategy_config.fsdp_size"
    assert frozen_sharding("roll-0.3.0-9-g8eb27cc2", {key: 4, ref: 4}, train) is None
    # verl 0.7's reference worker shares the actor's mesh: no group of its own
    assert frozen_sharding("verl-0.7.0-125-gb178a3cd5", {}, train) is None
    # ZeRO-2 keeps the frozen weights whole: nothing to group
    assert frozen_sharding("roll-0.3.0-9-g8eb27cc2", {}, {**train, "zero": 2}) is None
