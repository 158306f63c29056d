"""Hybrid sharding in a launch: FSDP shard groups smaller than the trainer's data-parallel
ranks (shard within a group, replicate across groups), read into plan.train.shard_group.

verl, SkyRL and ROLL build the trainer's device mesh from the world size and one `fsdp_size`
key: one `fsdp` axis over every rank, or a (world / fsdp_size, fsdp_size) `ddp` x `fsdp` mesh
whose inner axis shards the weights, gradients and Adam states and whose outer axis holds
replicas. Costed as full sharding, such a launch would be credited world / group times too
little state per GPU; review costs the group and names the key and the line that builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ShardKeys:
    """Where a mapping's framework reads the shard group of its trained models."""

    keys: tuple[str, ...]
    """The actor's and the critic's fsdp_size keys."""
    whole_at_most: int
    """A value at or below this shards over the whole world (as does one at or above it)."""
    where: str
    """The lines that build the mesh from the value, at the mapping's commit."""


VERL = "https://github.com/volcengine/verl/blob/"
# Checked 2026-12-07 at each mapping's pinned commit: verl and SkyRL build a 1-D mesh where
# fsdp_size < 0 or >= world (so -1, their default, is the whole world), else ddp x fsdp;
# ROLL does so where fsdp_size <= 1 (its default is 1) and asserts fsdp_size >= the Ulysses
# size (fsdp2_strategy.py L832-L833).
SHARD_KEYS: dict[str, ShardKeys] = {
    "verl-0.7.0-125-gb178a3cd5": ShardKeys(
        # the actor's worker (with its reference) reads actor.fsdp_config (fsdp_workers.py
        # L166), the critic its own (L1205-L1206)
        (
            "actor_rollout_ref.actor.fsdp_config.fsdp_size",
            "critic.model.fsdp_config.fsdp_size",
        ),
        -1,
        VERL + "b178a3cd56f58b2d502255daba591e92833930a7/verl/workers/fsdp_workers.py#L98-L105",
    ),
    "verl-0.8.0": ShardKeys(
        # the FSDP engine's _init_device_mesh (transformer_impl.py L211-L217)
        ("actor_rollout_ref.actor.fsdp_config.fsdp_size", "critic.fsdp.fsdp_size"),
        -1,
        VERL + "7aed6b230776f963fa09509c10d9c3a767d1102c/verl/workers/engine/fsdp/utils.py#L40-L58",
    ),
    "skyrl-0.4.0-516-ga9564572e": ShardKeys(
        # FSDPStrategy's mesh (fsdp_strategy.py L114), passed to fully_shard (L218)
        ("trainer.policy.fsdp_config.fsdp_size", "trainer.critic.fsdp_config.fsdp_size"),
        -1,
        "https://github.com/NovaSky-AI/SkyRL/blob/a9564572eb8e91076be43c1bd5e4615e3de17265/"
        "skyrl/backends/skyrl_train/distributed/fsdp_utils.py#L254-L261",
    ),
    "roll-0.3.0-9-g8eb27cc2": ShardKeys(
        (
            "actor_train.strategy_args.strategy_config.fsdp_size",
            "critic.strategy_args.strategy_config.fsdp_size",
        ),
        1,
        "https://github.com/alibaba/ROLL/blob/8eb27cc2dc34c4d1310b169d9b86d339004d811a/"
        "roll/distributed/strategy/fsdp2_strategy.py#L103-L119",
    ),
}


def hybrid_sharding(
    mapping: str, config: dict[str, Any], train: dict[str, Any]
) -> dict[str, Any] | None:
    """The first trained model's shard group smaller than the trainer's data-parallel ranks
    that `config` (the launch's keys) sets, against the plan's `train` pool; None where
    every group is the whole world (or the mapping's framework has no such key)."""
    known = SHARD_KEYS.get(mapping)
    if known is None or int(train.get("zero") or 0) < 1:
        return None
    # FSDP has no tensor or pipeline degree: its world is the data-parallel x Ulysses ranks
    world = int(train["gpus"]) // (int(train.get("tp") or 1) * int(train.get("pp") or 1))
    for key in known.keys:
        value = config.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if value < 1 or value <= known.whole_at_most or value >= world:
            continue  # the whole world (verl and SkyRL fail at 0: world // 0)
        zero = int(train["zero"])
        states = ("Adam states", "gradients", "weights")[: min(zero, 3)]
        text = (
            f"{key}={value} shards over groups of {value} of the trainer's {world} ranks "
            f"({world // value} replicas; {known.where}): costed so, its "
            f"{', '.join(states)} per GPU are {world}/{value} = {world / value:g}x those of "
            f"sharding over all {world}"
        )
        return {
            "key": key,
            "value": value,
            "world": world,
            "replicas": world // value,
            "source": known.where,
            "text": text,
        }
    return None
