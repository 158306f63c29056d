"""Which link a process group crosses, and the time of the collectives the stages issue.

Ranks are laid out innermost-first (tensor, then context, data, pipeline for training; tensor,
pipeline, replicas for rollout), so a group is described by its size and its stride. A group
whose span fits in one scale-up domain (a node, or an NVL72 rack of trays) talks over the
scale-up fabric. A group that spans domains talks over the network, and NCCL runs one ring
per NIC, so with k members per node it streams at up to
k NICs' worth (bounded by the scale-up rate inside the node): 4 nodes of 8 GPUs all-reduce at
~8x the per-GPU line rate (github-stas00-ml-engineering).

Times: alpha + volume / bandwidth, with the ring volumes of Patarasuk & Yuan: all-reduce moves
2(n-1)/n of the buffer per GPU, all-gather and reduce-scatter (n-1)/n of the gathered buffer,
all-to-all (n-1)/n of what a GPU sends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.overheads import Overheads


@dataclass(frozen=True, slots=True)
class Fabric:
    """Achieved link rates (peak x efficiency) and latencies."""

    scale_up_bytes_per_s: float
    scale_out_bytes_per_s: float
    scale_up_latency: float
    scale_out_latency: float
    domain_gpus: int
    node_gpus: int

    @classmethod
    def of(cls, hw: Hardware, eff: EfficiencyFactors, overheads: Overheads) -> Fabric:
        return cls(
            scale_up_bytes_per_s=hw.scale_up_bytes_per_s * eff.scale_up_link,
            scale_out_bytes_per_s=hw.scale_out_bytes_per_s * eff.scale_out_link,
            scale_up_latency=overheads.scale_up_latency_seconds,
            scale_out_latency=overheads.scale_out_latency_seconds,
            domain_gpus=hw.domain_gpus,
            node_gpus=hw.node_gpus,
        )


@dataclass(frozen=True, slots=True)
class Link:
    """The link one process group uses, per plan."""

    size: FloatArray
    bytes_per_s: FloatArray
    latency: FloatArray
    scale_out: BoolArray

    def active(self) -> BoolArray:
        return self.size > 1


def group_link(fabric: Fabric, size: FloatArray, stride: FloatArray) -> Link:
    size = np.asarray(size, dtype=np.float64)
    inside = size * stride <= fabric.domain_gpus
    # Across domains, the group's members in one node stream over that node's NICs.
    per_node = np.minimum(np.maximum(np.floor(fabric.node_gpus / stride), 1.0), size)
    across = np.minimum(fabric.scale_up_bytes_per_s, per_node * fabric.scale_out_bytes_per_s)
    return Link(
        size=size,
        bytes_per_s=np.where(inside, fabric.scale_up_bytes_per_s, across),
        latency=np.where(inside, fabric.scale_up_latency, fabric.scale_out_latency),
        scale_out=~inside,
    )


def all_reduce_bytes(nbytes: FloatArray, link: Link) -> FloatArray:
    """Bytes one GPU sends in a ring all-reduce of an `nbytes` buffer: 2(n-1)/n x nbytes."""
    return 2.0 * (link.size - 1.0) / link.size * nbytes


def gather_bytes(nbytes: FloatArray, link: Link) -> FloatArray:
    """Bytes one GPU sends in an all-gather (or reduce-scatter) of an `nbytes` full buffer."""
    return (link.size - 1.0) / link.size * nbytes


def transfer_seconds(sent: FloatArray, link: Link, calls: FloatArray | float = 1.0) -> FloatArray:
    """Time of `calls` collectives that together send `sent` bytes per GPU; zero for n = 1."""
    return np.where(link.active(), calls * link.latency + sent / link.bytes_per_s, 0.0)


def split_by_link(seconds: FloatArray, link: Link) -> tuple[FloatArray, FloatArray]:
    """The same seconds attributed to the scale-up or the scale-out fabric."""
    return np.where(link.scale_out, 0.0, seconds), np.where(link.scale_out, seconds, 0.0)
