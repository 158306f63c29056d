"""The rollout and training layouts of a plan table as float arrays, ready for the formulas."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from rlmguide.cost.arrays import BoolArray, FloatArray, IntArray, floats
from rlmguide.cost.collectives import Fabric, Link, group_link
from rlmguide.cost.plans import PlanTable, expert_ranks, model_parallel
from rlmguide.cost.units import BF16_BYTES, FP8_BYTES, FP32_BYTES


@dataclass(frozen=True, slots=True)
class RolloutLayout:
    """Inference replicas of tp x pp GPUs; dp replicas; experts over ep ranks; attention in
    attention_dp groups of tp / attention_dp ranks (SGLang DP attention), each sequence's KV
    cache split by tokens over cp of a group's ranks (vLLM decode context parallelism)."""

    gpus: FloatArray
    tp: FloatArray
    pp: FloatArray
    ep: FloatArray
    dp: FloatArray
    attention_dp: FloatArray
    cp: FloatArray
    fp8: BoolArray
    weight_bytes: FloatArray
    """Bytes per weight in the engine: 2 in bf16, 1 in fp8."""
    eager: BoolArray
    """Decode steps launch their kernels from the host (no CUDA graphs)."""
    memory_fraction: FloatArray
    """The launch's share of GPU memory for the engine; 0 = the cost model's budget."""
    max_seqs: FloatArray
    """The launch's cap on sequences per engine; 0 = the cost model's cap."""
    per_tensor: BoolArray
    """New weights arrive one tensor per broadcast and engine load call, not in buckets."""

    @classmethod
    def of(cls, table: PlanTable) -> RolloutLayout:
        return cls(
            gpus=floats(table.rollout_gpus),
            tp=floats(table.rollout_tp),
            pp=floats(table.rollout_pp),
            ep=floats(table.rollout_ep),
            dp=floats(table.rollout_dp),
            attention_dp=floats(table.rollout_attention_dp),
            cp=floats(table.rollout_cp),
            fp8=table.rollout_fp8,
            weight_bytes=np.where(table.rollout_fp8, FP8_BYTES, BF16_BYTES).astype(np.float64),
            eager=table.rollout_eager,
            memory_fraction=table.rollout_memory_fraction,
            max_seqs=floats(table.rollout_max_seqs),
            per_tensor=table.rollout_per_tensor,
        )

    def seq_cap(self, default: float) -> FloatArray:
        """Sequences one engine runs at once at most: the launch's cap, else `default`."""
        return np.where(self.max_seqs > 0, self.max_seqs, default)

    @property
    def attention_tp(self) -> FloatArray:
        """Ranks one sequence's attention (and KV cache) is split over."""
        return self.tp / self.attention_dp

    @property
    def head_tp(self) -> FloatArray:
        """Ranks the KV heads are split over: decode context parallelism makes each cp ranks
        that would hold copies of the same heads hold a share of the tokens instead."""
        return self.attention_tp / self.cp


@dataclass(frozen=True, slots=True)
class TrainLayout:
    """Megatron order, innermost first: tp, cp, dp, pp; ZeRO shards over dp x cp. Expert
    layers fold the same tp x cp x dp ranks into etp x ep x expert-dp (MoE parallel folding);
    etp = tp is the classic layout, where ep is carved out of dp x cp."""

    gpus: FloatArray
    tp: FloatArray
    pp: FloatArray
    cp: FloatArray
    ep: FloatArray
    etp: FloatArray
    dp: FloatArray
    zero: IntArray
    hybrid_group: FloatArray
    """The plan's shard group (plan.train.shard_group) where it shards in groups; 0 = every
    dp x cp rank is one group."""
    frozen_group: FloatArray
    """The frozen models' own shard group (plan.train.frozen_shard_group); 0 = hybrid_group's."""
    recompute: IntArray
    fp8: BoolArray
    lora_rank: FloatArray
    offload_phase: BoolArray
    offload_optimizer: FloatArray
    offload_params: BoolArray
    offload_frozen: BoolArray
    micro_tokens: FloatArray
    """A launch's micro-batch tokens over the context-parallel group; 0 = the search's."""
    forward_micro_tokens: FloatArray
    """A launch's forward-only micro-batch tokens over the context-parallel group; 0 = as
    the training micro-batch's budget."""
    fp32_gradients: BoolArray
    sequence_parallel: BoolArray
    virtual_stages: FloatArray
    """Chunks of layers per pipeline rank (Megatron's interleaved 1F1B); 1 = plain 1F1B."""
    first_layers: FloatArray
    """Decoder layers of the first pipeline stage; 0 = even stages."""
    last_layers: FloatArray
    """Decoder layers of the last pipeline stage; 0 = even stages."""
    ep_isolated: BoolArray
    """The survey's isolated EP: the ep ranks of a group run the same tokens (B.3.6)."""

    @property
    def data_shards(self) -> FloatArray:
        """Data-parallel ranks with tokens of their own: dp, or dp / ep where an isolated EP
        group shares one shard."""
        return np.where(self.ep_isolated, self.dp / self.ep, self.dp)

    @classmethod
    def of(cls, table: PlanTable) -> TrainLayout:
        return cls(
            gpus=floats(table.train_gpus),
            tp=floats(table.train_tp),
            pp=floats(table.train_pp),
            cp=floats(table.train_cp),
            ep=floats(table.train_ep),
            etp=floats(table.train_etp),
            dp=floats(table.train_dp),
            zero=table.train_zero,
            hybrid_group=floats(table.train_shard_group),
            frozen_group=floats(table.train_frozen_shard_group),
            recompute=table.train_recompute,
            fp8=table.train_fp8,
            lora_rank=floats(table.train_lora_rank),
            offload_phase=table.offload_phase,
            offload_optimizer=table.offload_optimizer,
            offload_params=table.offload_params,
            offload_frozen=table.offload_frozen,
            micro_tokens=floats(table.train_micro_tokens),
            forward_micro_tokens=floats(table.train_forward_micro_tokens),
            fp32_gradients=table.train_fp32_gradients,
            sequence_parallel=table.train_sequence_parallel,
            # Interleaving needs pipeline stages: a searched pp = 1 runs the plain schedule.
            virtual_stages=np.where(table.train_pp > 1, floats(table.train_virtual_stages), 1.0),
            first_layers=floats(table.train_first_layers),
            last_layers=floats(table.train_last_layers),
            ep_isolated=table.train_ep_isolated,
        )

    def with_gpus(self, gpus: FloatArray) -> TrainLayout:
        """The same layout on a pool of `gpus` GPUs (a model's own pool): data parallelism
        takes what tp x pp x cp leaves, at least one rank."""
        dp = np.maximum(np.floor(gpus / (self.tp * self.pp * self.cp)), 1.0)
        return replace(self, gpus=gpus, dp=dp)

    def assessed(self, tp: FloatArray, pp: FloatArray) -> TrainLayout:
        """The frozen models' layout where a plan gives them one (`tp` > 0, plan.assessment):
        data-parallel replicas of tp x pp GPUs over the same pool, with no context
        parallelism, no ZeRO sharding (and so no gathers and nothing streamed) and the
        experts over the tensor group; elsewhere this layout, unchanged."""
        own = tp > 0
        a_tp, a_pp = np.where(own, tp, self.tp), np.where(own, pp, self.pp)
        return replace(
            self,
            tp=a_tp,
            pp=a_pp,
            cp=np.where(own, 1.0, self.cp),
            ep=np.where(own, 1.0, self.ep),
            etp=np.where(own, a_tp, self.etp),
            dp=np.where(own, np.maximum(np.floor(self.gpus / (a_tp * a_pp)), 1.0), self.dp),
            zero=np.where(own, 0, self.zero),
            offload_params=np.where(own, False, self.offload_params),
            ep_isolated=np.where(own, False, self.ep_isolated),
            # the training split's stage counts are for its own pp
            first_layers=np.where(own, 0.0, self.first_layers),
            last_layers=np.where(own, 0.0, self.last_layers),
        )

    def relaid(self, other: TrainLayout) -> BoolArray:
        """Where `other` (this pool's assessment layout) holds a frozen model's weights in
        other shards than this one: other tensor or pipeline degrees, or this one shards
        them further (ZeRO-3 shards weights, ZeRO-1 and 2 do not; context parallelism's
        ranks; experts over ep)."""
        return (
            (other.tp != self.tp)
            | (other.pp != self.pp)
            | ((other.zero >= 3) != (self.zero >= 3))
            | (other.cp != self.cp)
            | (other.ep != self.ep)
        )

    @property
    def lora(self) -> BoolArray:
        return self.lora_rank > 0

    @property
    def model_parallel(self) -> BoolArray:
        """Megatron's family (plans.model_parallel), which runs Megatron-Core's layers; the
        others run the Hugging Face model code under FSDP or DeepSpeed."""
        return np.asarray(model_parallel(self.tp, self.pp, self.ep, self.zero), dtype=bool)

    @property
    def gradient_bytes(self) -> FloatArray:
        """Bytes of a gradient in the buffer outside ZeRO-3: fp32 where the backend keeps fp32
        gradient buffers (Megatron's main grads, `fp32_gradients`), else bf16. ZeRO-3 keeps
        its own fp32 shard and reduces in the backend's reduce dtype (model_pass)."""
        return np.where(self.fp32_gradients & (self.zero < 3), FP32_BYTES, BF16_BYTES)

    @property
    def shard_group(self) -> FloatArray:
        """Ranks ZeRO shards the dense states over and reduces their gradients in: the dp x cp
        ranks, or the plan's smaller group under hybrid sharding (a pool resized below it by
        `with_gpus` is one group)."""
        whole = self.dp * self.cp
        return np.where(self.hybrid_group > 0, np.minimum(self.hybrid_group, whole), whole)

    def frozen_sharding(self) -> TrainLayout:
        """This layout as ZeRO-3 shards the frozen models: in their own group where the plan
        gives them one (a framework whose reference builds its FSDP mesh from its own key,
        plan.train.frozen_shard_group), else in the trained models' group."""
        if not (self.frozen_group > 0).any():
            return self
        return replace(
            self, hybrid_group=np.where(self.frozen_group > 0, self.frozen_group, self.hybrid_group)
        )

    @property
    def replicas(self) -> FloatArray:
        """Copies of the sharded states across the dp x cp ranks: 1, or more under hybrid
        sharding, whose gradient shards are all-reduced across them."""
        return self.dp * self.cp / self.shard_group

    @property
    def expert_shard_group(self) -> FloatArray:
        """Ranks that hold the same experts (expert data parallelism), within one replica."""
        ranks = expert_ranks(self.dp, self.cp, self.tp, self.etp) / self.ep
        return np.where(self.replicas > 1, np.maximum(ranks / self.replicas, 1.0), ranks)


@dataclass(frozen=True, slots=True)
class TrainLinks:
    """The process groups of a training layout and the link each uses (ranks innermost
    first: tp, cp, dp, pp; experts over ep ranks strided by etp)."""

    tp: Link
    cp: Link
    ep: Link
    shard: Link
    """dp x cp ranks holding the same dense weights: gradients and ZeRO shards (one group's
    under hybrid sharding)."""
    replica: Link
    """The ranks holding the same shard in each replica (hybrid sharding; a group of 1
    otherwise): the gradient shards' all-reduce."""
    expert_shard: Link
    pp: Link
    """Neighbouring pipeline stages (a group of 2, or of 1 without pipelining)."""

    @classmethod
    def of(cls, fabric: Fabric, layout: TrainLayout) -> TrainLinks:
        tp, cp, ep, dp, pp = layout.tp, layout.cp, layout.ep, layout.dp, layout.pp
        return cls(
            tp=group_link(fabric, tp, 1.0),
            cp=group_link(fabric, cp, tp),
            ep=group_link(fabric, ep, layout.etp),
            shard=group_link(fabric, layout.shard_group, tp),
            replica=group_link(fabric, layout.replicas, tp * layout.shard_group),
            expert_shard=group_link(fabric, layout.expert_shard_group, layout.etp * ep),
            pp=group_link(fabric, np.where(pp > 1, 2.0, 1.0), tp * cp * dp),
        )
