"""A table of candidate plans as arrays (one entry per plan), and the checks that make a plan
a valid factorisation of its GPUs and of the model.

The same table holds one plan (`estimate`) or hundreds of thousands (`recommend`'s search).
Invalid plans raise `PlanError` naming the field, the reason and the offending rows; an
enumerator that wants to filter instead asks `plan_problems` for the rows to drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
from rlmguide.cost.arrays import BoolArray, FloatArray, IntArray
from rlmguide.kb.schema import Offload, Plan
from rlmguide.kb.schema.specs import Architecture

PLACEMENTS = ("colocated", "disaggregated", "partially-colocated")
EXECUTIONS = ("sync", "one-step-off", "async", "partial-rollout")
RECOMPUTE = ("none", "selective", "full")
CRITICS = ("separate", "shared")
FUSIONS = ("none", "inter-stage", "intra-stage", "both")

COLOCATED, DISAGGREGATED, PARTIALLY_COLOCATED = 0, 1, 2
FUSION_NONE, FUSION_INTER, FUSION_INTRA, FUSION_BOTH = 0, 1, 2, 3
SYNC, ONE_STEP_OFF, ASYNC, PARTIAL_ROLLOUT = 0, 1, 2, 3
RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL = 0, 1, 2
ZERO_MEANS_OFF = frozenset(
    {
        "train.lora_rank", "pools.critic", "pools.reference", "pools.reward", "rollout.max_seqs",
        "train.micro_batch_tokens", "assessment.tp", "assessment.pp", "fusion_chunk",
        "train.first_stage_layers", "train.last_stage_layers", "train.forward_micro_batch_tokens",
        "train.shard_group", "train.frozen_shard_group",
    }
)  # fmt: skip
FUSION_HANDOFFS = (4, 16, 64, 256)
"""Hand-offs per step the search tries for inter-stage fusion where the scenario leaves
plan.fusion_chunk open (the chunk is the generated samples over these, rounded up): a bounded
sweep from coarse (a quarter of the batch per chunk) to fine, since the cost model's optimum
lies between (the hidden share grows and the hand-off latencies add up as chunks shrink)."""


ONE_POOL = frozenset({"colocated", "partially-colocated"})
"""The placements, by name, whose rollout and training share one pool (`shares_gpus` on the
table's codes)."""


def shares_gpus(placement: IntArray) -> BoolArray:
    """Rollout and training on one pool: colocated, or partially colocated (whose frozen
    models sit apart on their own pools, which `plans.pools` already describes)."""
    return placement != DISAGGREGATED


def model_parallel(tp: Any, pp: Any, ep: Any, zero: Any) -> Any:
    """The training family: model-parallel (tensor or pipeline groups, or experts spread
    outside ZeRO-3: Megatron's way) rather than data-parallel sharded (ZeRO-3/FSDP, whatever
    else it folds in). Arrays or scalars."""
    return (tp * pp > 1) | ((ep > 1) & (zero < 3))


def inter_stage(fusion: IntArray) -> BoolArray:
    return (fusion == FUSION_INTER) | (fusion == FUSION_BOTH)


def intra_stage(fusion: IntArray) -> BoolArray:
    return (fusion == FUSION_INTRA) | (fusion == FUSION_BOTH)


class PlanError(ValueError):
    """A plan that is not a valid layout: which field, why, and which rows of the table."""

    def __init__(self, field: str, reason: str, rows: Sequence[int] = ()) -> None:
        self.field = field
        self.reason = reason
        self.rows = tuple(int(r) for r in rows)
        where = ""
        if self.rows:
            shown = ", ".join(str(r) for r in self.rows[:5])
            where = f" (rows {shown}{', ...' if len(self.rows) > 5 else ''})"
        super().__init__(f"plan.{field}: {reason}{where}")


def _codes(name: str, values: npt.ArrayLike, names: tuple[str, ...]) -> IntArray:
    array = np.asarray(values)
    if array.dtype.kind in "USO":
        # Names are looked up once per distinct value: tables of millions of plans repeat
        # a handful of them.
        distinct, inverse = np.unique(array.ravel(), return_inverse=True)
        lookup = {n: i for i, n in enumerate(names)}
        unknown = [k for k, v in enumerate(distinct) if v not in lookup]
        if unknown:
            bad = np.flatnonzero(np.isin(inverse, unknown))
            raise PlanError(name, f"must be one of {', '.join(names)}", bad)
        codes_of = np.array([lookup[v] for v in distinct], dtype=np.int64)
        return codes_of[inverse].reshape(array.shape)
    codes = array.astype(np.int64)
    bad = np.flatnonzero((codes < 0) | (codes >= len(names)))
    if bad.size:
        raise PlanError(name, f"code outside 0..{len(names) - 1}", bad)
    return codes


@dataclass(frozen=True, slots=True)
class PlanTable:
    """Struct of arrays: entry i of every field describes plan i. Build with `from_arrays`
    or `from_plans`, which check the factorisations; dp follows from gpus and the other
    degrees."""

    placement: IntArray
    execution: IntArray
    staleness: IntArray
    prefix_caching: BoolArray
    rollout_gpus: IntArray
    rollout_tp: IntArray
    rollout_pp: IntArray
    rollout_ep: IntArray
    rollout_dp: IntArray
    train_gpus: IntArray
    train_tp: IntArray
    train_pp: IntArray
    train_cp: IntArray
    train_ep: IntArray
    train_etp: IntArray
    """Tensor parallelism inside each expert; experts fold over tp x cp x dp / etp ranks."""
    train_ep_isolated: BoolArray
    """The survey's isolated EP (plan.train.expert_layout): the ep ranks of a group share
    their tokens and replicate the dense work; False is Megatron's folding."""
    train_dp: IntArray
    train_zero: IntArray
    train_shard_group: IntArray
    """Ranks of one ZeRO/FSDP shard group, replicated across the rest of the dp x cp ranks
    (hybrid sharding: verl's, SkyRL's and ROLL's fsdp_size); 0 = all of them."""
    train_frozen_shard_group: IntArray
    """Ranks ZeRO-3 shards the frozen models over where they have an FSDP group of their own
    (plan.train.frozen_shard_group); 0 = the trained models' group."""
    train_recompute: IntArray
    rollout_attention_dp: IntArray
    """Data-parallel attention groups inside one engine (SGLang DP attention); 1 = none."""
    rollout_cp: IntArray
    """Tensor ranks one sequence's KV cache is split over by tokens (vLLM decode context
    parallelism); 1 = none."""
    rollout_fp8: BoolArray
    rollout_eager: BoolArray
    """Decode without CUDA graphs (vLLM enforce_eager): host launches per layer and step."""
    rollout_memory_fraction: FloatArray
    """Share of a GPU's memory the engine takes for weights, workspace and KV cache, as the
    launch sets it (vLLM gpu_memory_utilization); 0 = the cost model's budget."""
    rollout_max_seqs: IntArray
    """Sequences one engine runs at once, as the launch caps them; 0 = the cost model's cap."""
    rollout_per_tensor: BoolArray
    """New weights reach the engine one tensor per broadcast and load call, not in buckets."""
    train_fp8: BoolArray
    train_lora_rank: IntArray
    """LoRA adapter rank; 0 trains every weight."""
    train_micro_tokens: IntArray
    """Tokens of one training micro-batch over its context-parallel group, as the launch sets
    them; 0 = the largest budget that fits (the search's choice)."""
    train_forward_micro_tokens: IntArray
    """Tokens of one forward-only micro-batch over the context-parallel group, as the launch
    sets them apart from training's; 0 = the training micro-batch's budget."""
    train_fp32_gradients: BoolArray
    train_sequence_parallel: BoolArray
    """Sequence parallelism in the tensor group (only where tp > 1 does it change anything)."""
    train_virtual_stages: IntArray
    """Chunks of layers per pipeline rank under Megatron's interleaved 1F1B schedule; 1 = the
    plain schedule. A searched plan without pipeline stages runs the plain one."""
    train_first_layers: IntArray
    """Decoder layers of the first pipeline stage (with the embedding); 0 = even stages."""
    train_last_layers: IntArray
    """Decoder layers of the last pipeline stage (with the output layer and loss); 0 = even."""
    """Gradient buffers in fp32 beside bf16 weights (Megatron's main grads)."""
    offload_phase: BoolArray
    offload_optimizer: FloatArray
    """Share of the Adam states and step on the CPU."""
    offload_params: BoolArray
    offload_frozen: BoolArray
    critic_gpus: IntArray
    """GPUs of the critic's own pool; 0 = it shares the actor's training pool."""
    reference_gpus: IntArray
    reward_gpus: IntArray
    critic_shared: BoolArray
    """The critic is a value head on the policy (survey §4.1), not a network of its own."""
    fusion: IntArray
    """Index into FUSIONS (survey §4.3)."""
    fusion_chunk: IntArray
    """Samples per hand-off from the rollout to the assessment under inter-stage fusion;
    0 = one assessment micro-batch per data-parallel rank (cost.evaluate.fusion_handoffs)."""
    assess_tp: IntArray
    """Tensor degree of the frozen models' own layout (plan.assessment); 0 = the training
    layout's (and then `assess_pp` is 0 too)."""
    assess_pp: IntArray

    def __len__(self) -> int:
        return int(self.placement.shape[0])

    @classmethod
    def from_arrays(
        cls,
        *,
        placement: npt.ArrayLike,
        execution: npt.ArrayLike,
        rollout_gpus: npt.ArrayLike,
        rollout_tp: npt.ArrayLike,
        train_gpus: npt.ArrayLike,
        train_tp: npt.ArrayLike,
        train_zero: npt.ArrayLike,
        train_recompute: npt.ArrayLike,
        train_shard_group: npt.ArrayLike = 0,
        train_frozen_shard_group: npt.ArrayLike = 0,
        rollout_pp: npt.ArrayLike = 1,
        rollout_ep: npt.ArrayLike = 1,
        train_pp: npt.ArrayLike = 1,
        train_cp: npt.ArrayLike = 1,
        train_ep: npt.ArrayLike = 1,
        train_etp: npt.ArrayLike | None = None,
        train_ep_isolated: npt.ArrayLike = False,
        staleness: npt.ArrayLike = 1,
        prefix_caching: npt.ArrayLike = True,
        rollout_attention_dp: npt.ArrayLike = 1,
        rollout_cp: npt.ArrayLike = 1,
        rollout_fp8: npt.ArrayLike = False,
        rollout_eager: npt.ArrayLike = False,
        rollout_memory_fraction: npt.ArrayLike = 0.0,
        rollout_max_seqs: npt.ArrayLike = 0,
        rollout_per_tensor: npt.ArrayLike = False,
        train_micro_tokens: npt.ArrayLike = 0,
        train_forward_micro_tokens: npt.ArrayLike = 0,
        train_fp32_gradients: npt.ArrayLike = False,
        train_sequence_parallel: npt.ArrayLike = True,
        train_virtual_stages: npt.ArrayLike = 1,
        train_first_layers: npt.ArrayLike = 0,
        train_last_layers: npt.ArrayLike = 0,
        train_fp8: npt.ArrayLike = False,
        train_lora_rank: npt.ArrayLike = 0,
        offload_phase: npt.ArrayLike = False,
        offload_optimizer: npt.ArrayLike = 0.0,
        offload_params: npt.ArrayLike = False,
        offload_frozen: npt.ArrayLike = False,
        critic_gpus: npt.ArrayLike = 0,
        reference_gpus: npt.ArrayLike = 0,
        reward_gpus: npt.ArrayLike = 0,
        critic_shared: npt.ArrayLike = False,
        fusion: npt.ArrayLike = 0,
        fusion_chunk: npt.ArrayLike = 0,
        assess_tp: npt.ArrayLike = 0,
        assess_pp: npt.ArrayLike = 0,
    ) -> PlanTable:
        """Scalars broadcast against the arrays; categorical fields take names or codes.
        Expert tensor parallelism defaults to the dense layers' tp."""
        counts = {
            "placement": placement, "execution": execution, "rollout.gpus": rollout_gpus,
            "rollout.tp": rollout_tp, "rollout.pp": rollout_pp, "rollout.ep": rollout_ep,
            "train.gpus": train_gpus, "train.tp": train_tp, "train.pp": train_pp,
            "train.cp": train_cp, "train.ep": train_ep,
            "train.etp": train_tp if train_etp is None else train_etp, "train.zero": train_zero,
            "train.shard_group": train_shard_group, "train.expert_layout": train_ep_isolated,
            "train.frozen_shard_group": train_frozen_shard_group,
            "train.recompute": train_recompute, "max_staleness": staleness,
            "prefix_caching": prefix_caching, "rollout.attention_dp": rollout_attention_dp,
            "rollout.cp": rollout_cp, "rollout.precision": rollout_fp8,
            "rollout.cuda_graphs": rollout_eager,
            "train.precision": train_fp8, "rollout.memory_fraction": rollout_memory_fraction,
            "rollout.max_seqs": rollout_max_seqs, "train.micro_batch_tokens": train_micro_tokens,
            "train.forward_micro_batch_tokens": train_forward_micro_tokens,
            "rollout.per_tensor_sync": rollout_per_tensor,
            "train.fp32_gradients": train_fp32_gradients,
            "train.sequence_parallel": train_sequence_parallel,
            "train.virtual_stages": train_virtual_stages,
            "train.first_stage_layers": train_first_layers,
            "train.last_stage_layers": train_last_layers,
            "train.lora_rank": train_lora_rank, "train.offload.phase": offload_phase,
            "train.offload.optimizer": offload_optimizer, "train.offload.params": offload_params,
            "train.offload.frozen": offload_frozen, "pools.critic": critic_gpus,
            "pools.reference": reference_gpus, "pools.reward": reward_gpus,
            "critic": critic_shared, "fusion": fusion, "fusion_chunk": fusion_chunk,
            "assessment.tp": assess_tp,
            "assessment.pp": assess_pp,
        }  # fmt: skip
        sizes = {name: np.shape(v)[0] for name, v in counts.items() if np.ndim(v)}
        n = max(sizes.values(), default=1)
        for name, size in sizes.items():
            if size != n:
                raise PlanError(name, f"has {size} entries where other fields have {n}")

        def column(value: npt.ArrayLike) -> npt.NDArray[Any]:
            return np.broadcast_to(np.asarray(value), (n,))

        ints: dict[str, IntArray] = {}
        for name in ("rollout.gpus", "rollout.tp", "rollout.pp", "rollout.ep", "train.gpus",
                     "train.tp", "train.pp", "train.cp", "train.ep", "train.etp",
                     "max_staleness", "rollout.attention_dp", "rollout.cp", "train.lora_rank",
                     "pools.critic",
                     "pools.reference", "pools.reward", "rollout.max_seqs",
                     "train.micro_batch_tokens", "train.virtual_stages", "assessment.tp",
                     "assessment.pp", "fusion_chunk", "train.first_stage_layers",
                     "train.last_stage_layers", "train.forward_micro_batch_tokens",
                     "train.shard_group", "train.frozen_shard_group"):  # fmt: skip
            array = column(counts[name])
            if array.dtype.kind == "f":
                fractional = np.flatnonzero(array != np.floor(array))
                if fractional.size:
                    raise PlanError(name, "must be a whole number", fractional)
            if array.dtype.kind not in "iuf":
                raise PlanError(name, "must be a positive integer")
            array = array.astype(np.int64)
            # Rank 0 and pool size 0 mean "off"; every other count is at least 1.
            off = name in ZERO_MEANS_OFF
            # Staleness 0 is asynchronous execution's on-policy stream (cost.compose).
            bad = np.flatnonzero(array < (0 if off or name == "max_staleness" else 1))
            if bad.size:
                what = "a non-negative integer (0 is off)" if off else "a positive integer"
                if name == "max_staleness":
                    what = "a non-negative integer"
                raise PlanError(name, f"must be {what}", bad)
            ints[name] = np.ascontiguousarray(array)
        share = np.ascontiguousarray(column(offload_optimizer).astype(np.float64))
        bad = np.flatnonzero(~((share >= 0.0) & (share <= 1.0)))
        if bad.size:
            raise PlanError("train.offload.optimizer", "must be a share between 0 and 1", bad)
        fraction = np.ascontiguousarray(column(rollout_memory_fraction).astype(np.float64))
        bad = np.flatnonzero(~((fraction >= 0.0) & (fraction <= 1.0)))
        if bad.size:
            raise PlanError("rollout.memory_fraction", "must be a share between 0 and 1", bad)
        flags = {
            name: np.ascontiguousarray(column(counts[name]).astype(bool))
            for name in ("rollout.precision", "rollout.cuda_graphs", "rollout.per_tensor_sync",
                         "train.precision",
                         "train.offload.phase", "train.fp32_gradients",
                         "train.sequence_parallel", "train.expert_layout",
                         "train.offload.params", "train.offload.frozen", "critic")
        }  # fmt: skip
        zero = np.ascontiguousarray(column(train_zero).astype(np.int64))
        bad = np.flatnonzero((zero < 0) | (zero > 3))
        if bad.size:
            raise PlanError("train.zero", "ZeRO stage must be 0, 1, 2 or 3", bad)
        # Categorical fields are coded before broadcasting, so a scalar name is looked up once.
        place = np.ascontiguousarray(column(_codes("placement", placement, PLACEMENTS)))
        execution_codes = np.ascontiguousarray(column(_codes("execution", execution, EXECUTIONS)))
        fusion_codes = np.ascontiguousarray(column(_codes("fusion", fusion, FUSIONS)))
        recompute = np.ascontiguousarray(
            column(_codes("train.recompute", train_recompute, RECOMPUTE))
        )
        r_gpus, r_tp, r_pp = ints["rollout.gpus"], ints["rollout.tp"], ints["rollout.pp"]
        t_gpus, t_tp, t_pp, t_cp = (
            ints["train.gpus"],
            ints["train.tp"],
            ints["train.pp"],
            ints["train.cp"],
        )
        bad = np.flatnonzero(r_gpus % (r_tp * r_pp))
        if bad.size:
            raise PlanError("rollout.gpus", "dp = gpus / (tp * pp) is not a whole number", bad)
        bad = np.flatnonzero(t_gpus % (t_tp * t_pp * t_cp))
        if bad.size:
            raise PlanError("train.gpus", "dp = gpus / (tp * pp * cp) is not a whole number", bad)
        group, frozen = ints["train.shard_group"], ints["train.frozen_shard_group"]
        ranks = t_gpus // (t_tp * t_pp)
        for name, given in (("train.shard_group", group), ("train.frozen_shard_group", frozen)):
            bad = np.flatnonzero((given > 0) & (ranks % np.maximum(given, 1) > 0))
            if bad.size:
                raise PlanError(name, "must divide the dp x cp ranks", bad)
        bad = np.flatnonzero(t_tp % ints["train.etp"])
        if bad.size:
            raise PlanError("train.etp", "expert tensor parallelism must divide tp", bad)
        a_tp, a_pp = ints["assessment.tp"], ints["assessment.pp"]
        bad = np.flatnonzero((a_tp > 0) != (a_pp > 0))
        if bad.size:
            raise PlanError("assessment", "tp and pp are both set (>= 1) or both 0 (unset)", bad)
        bad = np.flatnonzero(r_tp % ints["rollout.attention_dp"])
        if bad.size:
            raise PlanError(
                "rollout.attention_dp", "attention data-parallel groups must divide tp", bad
            )
        bad = np.flatnonzero((r_tp // ints["rollout.attention_dp"]) % ints["rollout.cp"])
        if bad.size:
            raise PlanError(
                "rollout.cp", "decode context parallelism must divide tp / attention_dp", bad
            )
        return cls(
            placement=place,
            execution=execution_codes,
            staleness=ints["max_staleness"],
            prefix_caching=np.ascontiguousarray(column(prefix_caching).astype(bool)),
            rollout_gpus=r_gpus,
            rollout_tp=r_tp,
            rollout_pp=r_pp,
            rollout_ep=ints["rollout.ep"],
            rollout_dp=r_gpus // (r_tp * r_pp),
            train_gpus=t_gpus,
            train_tp=t_tp,
            train_pp=t_pp,
            train_cp=t_cp,
            train_ep=ints["train.ep"],
            train_etp=ints["train.etp"],
            train_ep_isolated=flags["train.expert_layout"],
            train_dp=t_gpus // (t_tp * t_pp * t_cp),
            train_zero=zero,
            train_shard_group=group,
            train_frozen_shard_group=frozen,
            train_recompute=recompute,
            rollout_attention_dp=ints["rollout.attention_dp"],
            rollout_cp=ints["rollout.cp"],
            rollout_fp8=flags["rollout.precision"],
            rollout_eager=flags["rollout.cuda_graphs"],
            rollout_memory_fraction=fraction,
            rollout_max_seqs=ints["rollout.max_seqs"],
            rollout_per_tensor=flags["rollout.per_tensor_sync"],
            train_micro_tokens=ints["train.micro_batch_tokens"],
            train_forward_micro_tokens=ints["train.forward_micro_batch_tokens"],
            train_fp32_gradients=flags["train.fp32_gradients"],
            train_sequence_parallel=flags["train.sequence_parallel"],
            train_virtual_stages=ints["train.virtual_stages"],
            train_first_layers=ints["train.first_stage_layers"],
            train_last_layers=ints["train.last_stage_layers"],
            train_fp8=flags["train.precision"],
            train_lora_rank=ints["train.lora_rank"],
            offload_phase=flags["train.offload.phase"],
            offload_optimizer=share,
            offload_params=flags["train.offload.params"],
            offload_frozen=flags["train.offload.frozen"],
            critic_gpus=ints["pools.critic"],
            reference_gpus=ints["pools.reference"],
            reward_gpus=ints["pools.reward"],
            critic_shared=flags["critic"],
            fusion=fusion_codes,
            fusion_chunk=ints["fusion_chunk"],
            assess_tp=a_tp,
            assess_pp=a_pp,
        )

    @classmethod
    def from_plans(cls, plans: Sequence[Plan]) -> PlanTable:
        """Complete plans of the scenario schema. Unset pp, cp, ep default to 1, staleness to
        1, prefix caching to on (vLLM and SGLang cache prefixes by default), precision to bf16,
        offload to none, LoRA to off and the models to the actor's pool; a colocated plan may
        give its GPUs once. Placement, execution, GPUs, tp, ZeRO stage and recompute are
        required."""
        if not plans:
            raise PlanError("plan", "the table needs at least one plan")
        columns: dict[str, list[Any]] = {
            f.name: [] for f in fields(cls) if f.name not in ("rollout_dp", "train_dp")
        }
        for i, plan in enumerate(plans):
            r, t = plan.rollout, plan.train
            offload = t.offload or Offload()
            one_pool = plan.placement in ONE_POOL
            gpus_r = r.gpus or (t.gpus if one_pool else None)
            gpus_t = t.gpus or (r.gpus if one_pool else None)
            required = {
                "placement": plan.placement,
                "execution": plan.execution,
                "rollout.gpus": gpus_r,
                "rollout.tp": r.tp,
                "train.gpus": gpus_t,
                "train.tp": t.tp,
                "train.zero": t.zero,
                "train.recompute": t.recompute,
            }
            for name, value in required.items():
                if value is None:
                    raise PlanError(name, "is required to evaluate a plan", [i])
            row = {
                "placement": plan.placement,
                "execution": plan.execution,
                "staleness": 1 if plan.max_staleness is None else plan.max_staleness,
                "prefix_caching": True if r.prefix_caching is None else r.prefix_caching,
                "rollout_gpus": gpus_r,
                "rollout_tp": r.tp,
                "rollout_pp": r.pp or 1,
                "rollout_ep": r.ep or 1,
                "train_gpus": gpus_t,
                "train_tp": t.tp,
                "train_pp": t.pp or 1,
                "train_cp": t.cp or 1,
                "train_ep": t.ep or 1,
                "train_etp": t.etp or t.tp,
                "train_ep_isolated": t.expert_layout == "isolated",
                "train_zero": t.zero,
                "train_shard_group": t.shard_group or 0,
                "train_frozen_shard_group": t.frozen_shard_group or 0,
                "train_recompute": t.recompute,
                "rollout_attention_dp": r.attention_dp or 1,
                "rollout_cp": r.cp or 1,
                "rollout_fp8": r.precision == "fp8",
                "rollout_eager": r.cuda_graphs is False,
                "rollout_memory_fraction": r.memory_fraction or 0.0,
                "rollout_max_seqs": r.max_seqs or 0,
                "rollout_per_tensor": bool(r.per_tensor_sync),
                "train_micro_tokens": t.micro_batch_tokens or 0,
                "train_forward_micro_tokens": t.forward_micro_batch_tokens or 0,
                "train_fp32_gradients": bool(t.fp32_gradients),
                "train_sequence_parallel": t.sequence_parallel is not False,
                "train_virtual_stages": t.virtual_stages or 1,
                "train_first_layers": t.first_stage_layers or 0,
                "train_last_layers": t.last_stage_layers or 0,
                "train_fp8": t.precision == "fp8",
                "train_lora_rank": t.lora_rank or 0,
                "offload_phase": offload.phase,
                "offload_optimizer": offload.optimizer,
                "offload_params": offload.params,
                "offload_frozen": offload.frozen,
                "critic_gpus": plan.pools.critic or 0,
                "reference_gpus": plan.pools.reference or 0,
                "reward_gpus": plan.pools.reward or 0,
                "critic_shared": plan.critic == "shared",
                "fusion": plan.fusion or "none",
                "fusion_chunk": plan.fusion_chunk or 0,
                **assessment_columns(plan),
            }
            for key, value in row.items():
                columns[key].append(value)
        return cls.from_arrays(**columns)

    def concat(self, other: PlanTable) -> PlanTable:
        """This table's rows, then `other`'s."""
        return PlanTable(
            **{
                f.name: np.concatenate([getattr(self, f.name), getattr(other, f.name)])
                for f in fields(self)
            }
        )

    def take(self, rows: npt.ArrayLike) -> PlanTable:
        """The sub-table of the given rows (indices or a boolean mask)."""
        index = np.asarray(rows)
        return PlanTable(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def row(self, i: int) -> dict[str, Any]:
        """Plan i with the key names of the JSON output (`rollout`/`train` with their dp)."""
        return {
            "placement": PLACEMENTS[int(self.placement[i])],
            "execution": EXECUTIONS[int(self.execution[i])],
            "max_staleness": int(self.staleness[i]),
            "prefix_caching": bool(self.prefix_caching[i]),
            "rollout": {
                "gpus": int(self.rollout_gpus[i]),
                "tp": int(self.rollout_tp[i]),
                "pp": int(self.rollout_pp[i]),
                "dp": int(self.rollout_dp[i]),
                "ep": int(self.rollout_ep[i]),
                "attention_dp": int(self.rollout_attention_dp[i]),
                "cp": int(self.rollout_cp[i]),
                "precision": "fp8" if self.rollout_fp8[i] else "bf16",
                "cuda_graphs": not self.rollout_eager[i],
            },
            "train": {
                "gpus": int(self.train_gpus[i]),
                "tp": int(self.train_tp[i]),
                "pp": int(self.train_pp[i]),
                "cp": int(self.train_cp[i]),
                "dp": int(self.train_dp[i]),
                "ep": int(self.train_ep[i]),
                "etp": int(self.train_etp[i]),
                "expert_layout": "isolated" if self.train_ep_isolated[i] else "folded",
                "zero": int(self.train_zero[i]),
                "recompute": RECOMPUTE[int(self.train_recompute[i])],
                "precision": "fp8" if self.train_fp8[i] else "bf16",
                "fp32_gradients": bool(self.train_fp32_gradients[i]),
                "sequence_parallel": bool(self.train_sequence_parallel[i]),
                "virtual_stages": int(self.train_virtual_stages[i]),
                "first_stage_layers": int(self.train_first_layers[i]) or None,
                "last_stage_layers": int(self.train_last_layers[i]) or None,
                "lora_rank": int(self.train_lora_rank[i]) or None,
                # only a plan that shards in groups (or sizes its forward passes apart) shows it
                **(
                    {"shard_group": int(self.train_shard_group[i])}
                    if self.train_shard_group[i]
                    else {}
                ),
                **(
                    {"frozen_shard_group": int(self.train_frozen_shard_group[i])}
                    if self.train_frozen_shard_group[i]
                    else {}
                ),
                **(
                    {"forward_micro_batch_tokens": int(self.train_forward_micro_tokens[i])}
                    if self.train_forward_micro_tokens[i]
                    else {}
                ),
                "offload": {
                    "phase": bool(self.offload_phase[i]),
                    "optimizer": float(self.offload_optimizer[i]),
                    "params": bool(self.offload_params[i]),
                    "frozen": bool(self.offload_frozen[i]),
                },
            },
            "pools": {
                "critic": int(self.critic_gpus[i]) or None,
                "reference": int(self.reference_gpus[i]) or None,
                "reward": int(self.reward_gpus[i]) or None,
            },
            "critic": CRITICS[int(self.critic_shared[i])],
            "fusion": FUSIONS[int(self.fusion[i])],
            # the chunk only where the assessment streams (cost.evaluate fills the default)
            "fusion_chunk": (
                int(self.fusion_chunk[i]) or None
                if self.fusion[i] in (FUSION_INTER, FUSION_BOTH)
                else None
            ),
            # Only a plan that gives the frozen models a layout of their own shows one.
            **({"assessment": self.assessment_row(i)} if self.assess_tp[i] else {}),
        }

    def assessment_row(self, i: int) -> dict[str, int]:
        """The frozen models' layout: tp x pp per replica, dp replicas on the GPUs they run on
        (their own pool if they have one, else the training pool's)."""
        tp, pp = int(self.assess_tp[i]), int(self.assess_pp[i])
        gpus = {
            role: int(g)
            for role, g in (("reference", self.reference_gpus[i]), ("reward", self.reward_gpus[i]))
        }
        train = int(self.train_gpus[i])
        return {
            "tp": tp,
            "pp": pp,
            "dp": train // (tp * pp),
            **{f"{role}_dp": g // (tp * pp) for role, g in gpus.items() if g},
        }


def assessment_columns(plan: Plan) -> dict[str, int]:
    """`plan.assessment` as the table's columns: 0 and 0 when the plan gives none (the
    training layout), else tp and pp, each 1 when left out."""
    given = plan.assessment
    if given is None:
        return {"assess_tp": 0, "assess_pp": 0}
    return {"assess_tp": given.tp or 1, "assess_pp": given.pp or 1}


def used_gpus(table: PlanTable) -> IntArray:
    """GPUs a plan occupies: the shared pool or both pools, plus any model's own pool. Colocated
    pools of different sizes overlap (slime's --colocate, ROLL's device mappings): the smaller
    one's GPUs also serve the larger."""
    colocated = shares_gpus(table.placement)
    pools = np.where(
        colocated,
        np.maximum(table.rollout_gpus, table.train_gpus),
        table.rollout_gpus + table.train_gpus,
    )
    return pools + table.critic_gpus + table.reference_gpus + table.reward_gpus


def expert_ranks(dp: Any, cp: Any, tp: Any, etp: Any) -> Any:
    """Ranks of one pipeline stage that its experts spread over, as ep x expert-dp: the
    tp x cp x dp ranks folded by the experts' own tensor parallelism (etp divides tp).
    Megatron builds this grid and refuses a world it does not divide (EXPERT_GRID_CHECK)."""
    return dp * cp * (tp // etp)


EXPERT_GRID_CHECK = "megatron/core/parallel_state.py L792-L795 at core_v0.16.1"
"""Where Megatron refuses a world that etp x ep x pp does not divide."""

MODEL_GRID_CHECK = "megatron/core/parallel_state.py L738-L741 at core_v0.16.1"
"""Where Megatron refuses a world that tp x pp x cp does not divide."""


def kv_heads_uneven(arch: Architecture, tp: Any) -> Any:
    """Where tp neither splits the KV heads evenly nor replicates them evenly (tp a multiple of
    them). The rollout engines and the trainer refuse such a tp at model build: vLLM v0.20.2
    (verl 0.8.0's image) asserts it in LlamaAttention (vllm/model_executor/models/llama.py
    L144-L154, which Phi-3/4 and most dense models reuse), Megatron-Core core_v0.16.1 raises in
    TransformerConfig.__post_init__ (megatron/core/transformer/transformer_config.py
    L939-L946). Multi-head latent attention compresses K and V into one latent, so it has no
    KV heads to split."""
    if arch.mla:
        return np.zeros(np.shape(tp), dtype=bool)
    return np.where(tp <= arch.kv_heads, arch.kv_heads % tp, tp % arch.kv_heads) != 0


def tp_lays_out_heads(arch: Architecture, tp: Any) -> Any:
    """Where tp lays out the attention: the heads divide by it (vLLM llama.py L144; Megatron-Core
    transformer_config.py L924-L928) and the KV heads split or replicate evenly."""
    return (arch.heads % tp == 0) & ~kv_heads_uneven(arch, tp)


def head_tps(arch: Architecture) -> list[int]:
    """Every tensor-parallel degree that lays out `arch`'s attention (each divides the heads)."""
    tps = np.arange(1, arch.heads + 1)
    return [int(t) for t in tps[tp_lays_out_heads(arch, tps)]]


def _model_problems(
    arch: Architecture,
    role: str,
    prefix: str,
    tp: IntArray,
    pp: IntArray,
    ep: IntArray,
    ep_pool: IntArray,
    ep_pool_name: str,
) -> list[PlanError]:
    found: list[PlanError] = []

    def check(bad: BoolArray, field: str, reason: str) -> None:
        rows = np.flatnonzero(bad)
        if rows.size:
            found.append(PlanError(f"{prefix}.{field}", f"{reason} ({role})", rows))

    check(arch.heads % tp != 0, "tp", f"attention heads ({arch.heads}) are not divisible by tp")
    check(
        kv_heads_uneven(arch, tp),
        "tp",
        f"kv heads ({arch.kv_heads}) neither split nor replicate evenly over tp",
    )
    check(pp > arch.layers, "pp", f"more pipeline stages than layers ({arch.layers})")
    experts = arch.moe.experts if arch.moe else 1
    if arch.moe:
        check(experts % ep != 0, "ep", f"experts ({experts}) are not divisible by ep")
    else:
        check(ep != 1, "ep", "a dense model has no experts to split (ep must be 1)")
    check(ep_pool % ep != 0, "ep", f"ep does not divide {ep_pool_name}")
    return found


Frozen = Sequence[tuple[str, Architecture]]
"""The frozen models a plan's assessment layout lays out, by role (`reference`, `reward`)."""


def frozen_models(
    policy: Architecture,
    reference: Architecture | None,
    reward: Architecture | None,
    needs_reference: bool,
) -> list[tuple[str, Architecture]]:
    """The frozen models by role: the reference where the run keeps one (the policy's
    architecture unless another is given), then a scoring model."""
    found = [("reference", reference or policy)] if needs_reference else []
    return found + ([("reward", reward)] if reward is not None else [])


def plan_problems(
    table: PlanTable,
    policy: Architecture,
    critic: Architecture | None = None,
    *,
    cluster_gpus: int | None = None,
    frozen: Frozen = (),
) -> list[PlanError]:
    """Every way the table's plans fail to lay out the models on the cluster (empty if none);
    `frozen` are the models an assessment layout (plan.assessment) lays out."""
    found = _model_problems(
        policy,
        "policy",
        "rollout",
        table.rollout_tp,
        table.rollout_pp,
        table.rollout_ep,
        table.rollout_tp * table.rollout_dp,
        "tp * dp",
    )
    for arch, role in ((policy, "policy"), (critic, "critic")):
        if arch is not None:
            found += _model_problems(
                arch,
                role,
                "train",
                table.train_tp,
                table.train_pp,
                table.train_ep,
                expert_ranks(table.train_dp, table.train_cp, table.train_tp, table.train_etp),
                "dp * cp * tp / etp",
            )
    rows = np.flatnonzero((table.staleness == 0) & (table.execution != ASYNC))
    if rows.size:
        found.append(
            PlanError(
                "max_staleness", "0 is the on-policy stream, which only async execution runs", rows
            )
        )
    colocated = shares_gpus(table.placement)
    rows = np.flatnonzero(colocated & np.isin(table.execution, (ONE_STEP_OFF, ASYNC)))
    if rows.size:
        found.append(
            PlanError(
                "execution", "overlapping rollout with training needs disaggregated pools", rows
            )
        )
    found += _configuration_problems(table, critic is not None)
    rows = np.flatnonzero(
        table.train_ep_isolated
        & ((table.train_ep == 1) | (table.train_dp % table.train_ep != 0)
           | (table.train_etp != table.train_tp))
    )  # fmt: skip
    if rows.size:
        found.append(
            PlanError(
                "train.expert_layout",
                "isolated expert parallelism shares each data shard over an ep group: it needs "
                "ep > 1 dividing dp, and etp = tp",
                rows,
            )
        )
    found += _assessment_problems(table, frozen)
    split = (table.train_first_layers > 0) | (table.train_last_layers > 0)
    ends = np.maximum(table.train_first_layers, 1) + np.maximum(table.train_last_layers, 1)
    # two stages given both counts have no middle to take the rest: they hold every layer
    both = (table.train_first_layers > 0) & (table.train_last_layers > 0) & (table.train_pp == 2)
    rows = np.flatnonzero(
        split
        & (
            (table.train_pp < 2)
            | (ends + table.train_pp - 2 > policy.layers)
            | (both & (ends != policy.layers))
        )
    )
    if rows.size:
        found.append(
            PlanError(
                "train.first_stage_layers",
                f"the first and last stages' layers need pp > 1, leave every other stage a "
                f"layer and hold the {policy.layers} together",
                rows,
            )
        )
    rows = np.flatnonzero(table.offload_params & (table.train_zero < 3))
    if rows.size:
        found.append(
            PlanError(
                "train.offload.params",
                "streaming parameters from the host needs them sharded: zero must be 3",
                rows,
            )
        )
    if cluster_gpus is not None:
        rows = np.flatnonzero(used_gpus(table) > cluster_gpus)
        if rows.size:
            found.append(
                PlanError(
                    "rollout.gpus", f"plan uses more than the cluster's {cluster_gpus} GPUs", rows
                )
            )
    return found


def _assessment_problems(table: PlanTable, frozen: Frozen) -> list[PlanError]:
    """Where a plan gives the frozen models a layout of their own: each splits over its tp
    and pp, and tp x pp divides the GPUs it runs on (its own pool, else the training pool)."""
    given = table.assess_tp > 0
    if not given.any():
        return []
    if not frozen:
        rows = np.flatnonzero(given)
        return [PlanError("assessment", "the plan runs no frozen model to lay out", rows)]
    tp = np.where(given, table.assess_tp, 1)
    pp = np.where(given, table.assess_pp, 1)
    ones = np.ones_like(tp)
    found: list[PlanError] = []
    for role, arch in frozen:
        found += _model_problems(arch, role, "assessment", tp, pp, ones, ones, "1")
        own = getattr(table, f"{role}_gpus")
        gpus = np.where(own > 0, own, table.train_gpus)
        rows = np.flatnonzero(given & (gpus % (tp * pp) != 0))
        if rows.size:
            found.append(
                PlanError(
                    "assessment",
                    f"tp * pp does not divide the GPUs the {role} model runs on (its own "
                    "pool, else the training pool)",
                    rows,
                )
            )
    return found


def _configuration_problems(table: PlanTable, has_critic: bool) -> list[PlanError]:
    """Table 9's choices that do not apply to the plan (survey §4.1-§4.3)."""
    found: list[PlanError] = []

    def check(bad: BoolArray, field: str, reason: str) -> None:
        rows = np.flatnonzero(bad)
        if rows.size:
            found.append(PlanError(field, reason, rows))

    shared = table.critic_shared
    if not has_critic:
        check(shared, "critic", "a shared actor-critic needs an algorithm with a critic")
    check(
        shared & (table.critic_gpus > 0),
        "pools.critic",
        "a shared critic is the policy's value head: it has no pool of its own",
    )
    intra = intra_stage(table.fusion)
    check(
        intra & (shared | (table.critic_gpus > 0) | (not has_critic)),
        "fusion",
        "intra-stage fusion pipelines the actor's and a separate critic's updates on the same "
        "GPUs: this plan has no such critic (critic-free algorithm, shared value head or a "
        "critic pool of its own)",
    )
    check(
        ~inter_stage(table.fusion) & (table.fusion_chunk > 0),
        "fusion_chunk",
        "the chunk is the granularity of inter-stage fusion: it needs fusion inter-stage or both",
    )
    check(
        inter_stage(table.fusion) & (table.placement != DISAGGREGATED) & table.offload_frozen,
        "fusion",
        "inter-stage fusion runs the assessment while the rollout decodes: the frozen models "
        "cannot be parked on the host then (train.offload.frozen)",
    )
    check(
        (table.placement == PARTIALLY_COLOCATED)
        & (table.reference_gpus == 0)
        & (table.reward_gpus == 0),
        "placement",
        "partially-colocated puts the reference and/or reward model on a group of its own: "
        "give plan.pools.reference or plan.pools.reward",
    )
    return found


def valid_rows(
    table: PlanTable,
    policy: Architecture,
    critic: Architecture | None = None,
    *,
    cluster_gpus: int | None = None,
    frozen: Frozen = (),
) -> BoolArray:
    """Mask of the plans `plan_problems` finds nothing wrong with."""
    ok = np.ones(len(table), dtype=bool)
    for problem in plan_problems(table, policy, critic, cluster_gpus=cluster_gpus, frozen=frozen):
        ok[list(problem.rows)] = False
    return ok


def check_plans(
    table: PlanTable,
    policy: Architecture,
    critic: Architecture | None = None,
    *,
    cluster_gpus: int | None = None,
    frozen: Frozen = (),
) -> None:
    """Raise the first `PlanError` of the table, if any."""
    problems = plan_problems(table, policy, critic, cluster_gpus=cluster_gpus, frozen=frozen)
    if problems:
        raise problems[0]
