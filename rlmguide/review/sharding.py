"""Hybrid sharding in a launch: FSDP shard groups smaller than the trainer's data-parallel
ranks (shard within a group, replicate across groups), read into plan.train.shard_group.

verl, SkyRL and ROLL build the trainer's device mesh from the world size and one `fsdp_size`
key: one `fsdp` axis over every rank, or a (world / fsdp_size, fsdp_size) `ddp` x `fsdp` mesh
whose inner axis shards the weights, gradients and Adam states and whose outer axis holds
replicas. Costed as full sharding, such a launch would be credited world / group times too
little state per GPU; review costs the group and names the key and the line that builds it.

ROLL's FSDP2 also lays a mixture's experts out on a mesh of their own: split over ep ranks
(plan.train.ep, which the mapping reads), sharded over efsdp and replicated across the rest.
The plan shards each split over the other world / ep ranks, so a launch whose efsdp x ep is
below the world (replicated experts) is one the plan cannot state: review names it and gives
no memory verdict rather than one that credits each GPU too few experts.
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
    frozen: str | None = None
    """The key the reference's FSDP mesh is built from where it has one of its own (read as
    `keys` are, the framework's default sharding over every rank); None: it shares the
    actor's group."""


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
        # the reference's FSDPStrategy takes ref.fsdp_config (fsdp_worker.py L416-L424), whose
        # fsdp_size defaults to -1, every rank (config.py L233)
        frozen="trainer.ref.fsdp_config.fsdp_size",
    ),
    "roll-0.3.0-9-g8eb27cc2": ShardKeys(
        (
            "actor_train.strategy_args.strategy_config.fsdp_size",
            "critic.strategy_args.strategy_config.fsdp_size",
        ),
        1,
        "https://github.com/alibaba/ROLL/blob/8eb27cc2dc34c4d1310b169d9b86d339004d811a/"
        "roll/distributed/strategy/fsdp2_strategy.py#L103-L119",
        # the reference's fsdp2_infer strategy reads its own worker config's fsdp_size (L832)
        frozen="reference.strategy_args.strategy_config.fsdp_size",
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


def frozen_sharding(
    mapping: str, config: dict[str, Any], train: dict[str, Any]
) -> dict[str, Any] | None:
    """The group the launch's frozen models (the reference) shard over where their framework
    builds their FSDP mesh from a key of their own and it differs from the trained models'
    group (plan.train.shard_group, else every rank): SkyRL's reference left at its default
    shards over every rank beside an actor in groups, so costing it in the actor's groups
    would overstate it world / group times. None where they share the trained models' group,
    or the launch is no ZeRO-3 (frozen weights are sharded only there)."""
    known = SHARD_KEYS.get(mapping)
    if known is None or known.frozen is None or int(train.get("zero") or 0) < 3:
        return None
    world = int(train["gpus"]) // (int(train.get("tp") or 1) * int(train.get("pp") or 1))
    value = config.get(known.frozen, known.whole_at_most)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if value == 1 and known.whole_at_most < 1:
        return None  # replicas of the whole model: the frozen models' own layout (assessment)
    whole = value < 1 or value <= known.whole_at_most or value >= world
    group = world if whole else value
    trained = int(train.get("shard_group") or world)
    if group == trained or world % group:
        return None
    given = known.frozen in config
    text = (
        f"{known.frozen}={value}{'' if given else ' (the default)'} shards the reference over "
        f"{'every one' if whole else 'groups'} of {group} of the {world} ranks ({known.where}), "
        f"not the trained models' groups of {trained}: its weights per GPU are costed at "
        f"1/{group}, not 1/{trained}"
    )
    return {"key": known.frozen, "value": value, "group": group, "world": world, "text": text}


@dataclass(frozen=True)
class ExpertKeys:
    """Where a mapping's framework reads how its FSDP trainer lays out a mixture's experts:
    split over `ep` ranks, sharded over `efsdp` ranks, replicated over the rest."""

    models: tuple[str, ...]
    """The config prefixes of the models whose strategy reads the two keys."""
    ep: str
    efsdp: str
    """The keys under each prefix, with the framework's defaults (1 each)."""
    where: str
    """The lines that build the experts' mesh, check it and shard over it."""


ROLL = "https://github.com/alibaba/ROLL/blob/8eb27cc2dc34c4d1310b169d9b86d339004d811a/"
# Checked 2026-12-07 at 8eb27cc2: FSDP2StrategyBase (the train and the infer strategies alike)
# reads ep_size and efsdp_size, default 1 (L836-L838), accepts any efsdp x ep dividing the
# world (L845-L847) and builds an (eddp, efsdp, ep) mesh (L133-L143) whose experts are split
# over ep and fully_shard-ed over (eddp, efsdp) (L1056-L1060): sharded over efsdp, replicated
# over eddp = world / (efsdp x ep).
EXPERT_KEYS: dict[str, ExpertKeys] = {
    "roll-0.3.0-9-g8eb27cc2": ExpertKeys(
        # the actor and the reference, whose fsdp2_infer strategy builds the same meshes from
        # its own keys; the mapping reads the reference's device_mapping as the actor's pool,
        # so the train pool's world is its world too (ROLL's critic is not mapped)
        ("actor_train", "reference"),
        "strategy_args.strategy_config.ep_size",
        "strategy_args.strategy_config.efsdp_size",
        ROLL + "roll/distributed/strategy/fsdp2_strategy.py#L103-L143 (mesh), #L836-L857 "
        "(keys, check), #L1056-L1060 (experts' FSDP mesh)",
    ),
}


def _whole(value: Any, default: int) -> int | None:
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def expert_replication(
    mapping: str, config: dict[str, Any], train: dict[str, Any], expert_params: float
) -> dict[str, Any] | None:
    """The first trained model whose experts the launch shards over fewer ranks than the trainer's
    world (ep x efsdp below it: the rest hold copies), which the plan cannot express (it
    shards each of a FSDP plan's ep splits over the other world / ep ranks, so it would credit
    each GPU world / (ep x efsdp) times too little expert state); None where there is none."""
    known = EXPERT_KEYS.get(mapping)
    if known is None or expert_params <= 0:
        return None
    world = int(train["gpus"]) // (int(train.get("tp") or 1) * int(train.get("pp") or 1))
    for model in known.models:
        ep = _whole(config.get(f"{model}.{known.ep}"), 1)
        efsdp = _whole(config.get(f"{model}.{known.efsdp}"), 1)
        if ep is None or efsdp is None or ep <= 1 or efsdp < 1:
            continue  # no expert mesh (ep 1), or a value the framework's check stops
        group = ep * efsdp
        if group >= world or world % group:
            continue  # sharded over every rank as costed, or refused at start-up (L845-L847)
        replicas = world // group
        ep_key, efsdp_key = f"{model}.{known.ep}", f"{model}.{known.efsdp}"
        text = (
            f"memory not costed: {ep_key}={ep} with {efsdp_key}={efsdp} splits the experts "
            f"over {ep} ranks, shards each split over {efsdp} and replicates it "
            f"{world}/({ep}x{efsdp}) = {replicas}x across the {world} ranks ({known.where}); "
            f"the plan shards each split over the other {world}/{ep} ranks: "
            f"{expert_params / group / 1e9:.3f}e9 "
            f"expert parameters a GPU, not {expert_params / world / 1e9:.3f}e9, so no memory "
            "verdict is given"
        )
        return {
            "model": model,
            "ep_size": ep,
            "efsdp_size": efsdp,
            "world": world,
            "replicas": replicas,
            "expert_params_per_gpu": expert_params / group,
            "costed_expert_params_per_gpu": expert_params / world,
            "source": known.where,
            "text": text,
        }
    return None


@dataclass(frozen=True)
class FrozenMegatronKeys:
    """Where a mapping's framework reads the reference's own Megatron layout: a worker of its
    own that initialises Megatron's parallel state from its own keys, so its tensor, pipeline
    and expert degrees may differ from the actor's (the mapping reads them as the actor's)."""

    prefix: str
    """The reference's strategy keys, each a Megatron degree name after it."""
    where: str
    """The lines that build the reference's parallel state from its keys."""


MEGATRON_GRID = (
    "megatron/core/parallel_state.py L738-L741 (tp x pp x cp) and L792-L795 (etp x ep x pp) "
    "at core_v0.16.1"
)
"""Where Megatron stops a world the reference's degrees do not divide (cost.plans)."""

FROZEN_MEGATRON: dict[str, FrozenMegatronKeys] = {
    # Checked 2026-12-07: the reference's megatron_infer cluster builds mcore_adapter's
    # TrainingArguments from its own strategy_config (megatron_strategy.py L106-L113) and
    # initialises the parallel state from them (mcore_adapter initialize.py L58-L70), each
    # degree None (Megatron's 1; expert TP then the tensor degree) where left out
    "roll-0.3.0-9-g8eb27cc2": FrozenMegatronKeys(
        "reference.strategy_args.strategy_config.",
        ROLL + "roll/distributed/strategy/megatron_strategy.py#L106-L113",
    ),
    # the reference worker's MegatronStrategy takes ref.megatron_config (megatron_worker.py
    # L1612-L1633, megatron_strategy.py L205-L213), TP, PP, CP and EP 1 by default
    # (config.py L449-L457), expert TP None (L459: Megatron's, the tensor degree)
    "skyrl-0.4.0-516-ga9564572e": FrozenMegatronKeys(
        "trainer.ref.megatron_config.",
        "https://github.com/NovaSky-AI/SkyRL/blob/a9564572eb8e91076be43c1bd5e4615e3de17265/"
        "skyrl/backends/skyrl_train/workers/megatron/megatron_worker.py#L1612-L1633",
    ),
}


def _degree(config: dict[str, Any], key: str) -> int | None:
    value = config.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def frozen_expert_layout(
    mapping: str,
    config: dict[str, Any],
    train: dict[str, Any],
    expert_params: float,
    assessment: dict[str, int] | None = None,
) -> dict[str, Any] | None:
    """The reference's own Megatron layout where its expert split differs from the one the
    plan costs it at: the actor's (`train`, read from the actor's keys, which the mapping
    reads for both), or the experts over the tensor ranks of the frozen models' own layout
    (`assessment`, plan.assessment, which has no expert degree). `assessment` in the result
    is the plan.assessment that costs it where the plan can state it (experts over the tensor
    ranks only: EP 1, expert TP = TP), `costed` False where it cannot (the memory verdict is
    then withheld), `stops` where Megatron refuses the reference's world. None where the plan
    costs the reference's experts as the launch lays them out."""
    known = FROZEN_MEGATRON.get(mapping)
    if known is None or expert_params <= 0 or int(train.get("zero") or 0) >= 3:
        return None
    names = ("tensor", "pipeline", "context", "expert", "expert_tensor")
    given = {n: _degree(config, f"{known.prefix}{n}_model_parallel_size") for n in names[:4]}
    given["expert_tensor"] = _degree(config, f"{known.prefix}expert_tensor_parallel_size")
    if not any(given.values()):
        return None  # no key of the reference's own: not a Megatron reference
    tp, pp, cp, ep = (given[n] or 1 for n in names[:4])
    etp = given["expert_tensor"] or tp
    if assessment:
        at = (1, assessment["tp"], assessment["pp"])
        costed_as = f"plan.assessment's EP 1, expert TP {assessment['tp']}, PP {assessment['pp']}"
    else:
        actor_tp = int(train.get("tp") or 1)
        at = (
            int(train.get("ep") or 1),
            int(train.get("etp") or actor_tp),
            int(train.get("pp") or 1),
        )
        costed_as = f"the actor's EP {at[0]}, expert TP {at[1]}, PP {at[2]}"
    if (ep, etp, pp) == at:
        return None
    world = int(train["gpus"])
    stops = world % (tp * pp * cp) > 0 or world % (etp * ep * pp) > 0
    # a GPU's share of the routed experts: its expert split of its pipeline stage's layers
    launch, costed = expert_params / (ep * etp * pp), expert_params / (at[0] * at[1] * at[2])
    own = {"tp": tp, "pp": pp} if ep == 1 and etp == tp and cp == 1 else None
    text = (
        f"the reference's own keys ({known.prefix}*, {known.where}) lay it out at TP {tp}, "
        f"PP {pp}, CP {cp}, EP {ep}, expert TP {etp}: {launch / 1e9:.3f}e9 expert parameters "
        f"a GPU, where the plan costs it at {costed_as}, {costed / 1e9:.3f}e9"
    )
    if stops:
        text += (
            f"; Megatron stops at start-up: the reference's {world} GPUs are not a multiple of "
            f"TP x PP x CP {tp * pp * cp} and ETP x EP x PP {etp * ep * pp} ({MEGATRON_GRID})"
        )
    elif own:
        text += f"; costed as its own layout, plan.assessment tp {tp} pp {pp}"
    else:
        text += "; the plan cannot lay the reference's experts out so: no memory verdict"
    return {
        "layout": {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "etp": etp},
        "assessment": None if stops else own,
        "costed": bool(own) and not stops,
        "stops": stops,
        "expert_params_per_gpu": launch,
        "costed_expert_params_per_gpu": costed,
        "source": known.where,
        "text": text,
    }
