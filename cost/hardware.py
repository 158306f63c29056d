"""The accelerator and cluster as rates in SI units, with the scenario's network override."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.units import gbits_per_s, gbytes_per_s, gib_to_bytes, tbytes_per_s, tflops
from rlmguide.kb.schema.specs import AcceleratorFigures


@dataclass(frozen=True, slots=True)
class Hardware:
    """Peak figures of one GPU and its links; efficiencies are applied by the formulas."""

    memory_bytes: float
    """Memory of one GPU as its driver reports it (AcceleratorFigures.capacity_gib: the most
    any allocator or vLLM's gpu_memory_utilization can reach), not the datasheet figure."""
    flops: float
    """Dense bf16 FLOP/s (sparsity-doubled figures are never used)."""
    fp8_flops: float
    """Dense fp8 FLOP/s; the bf16 rate where the part has no fp8 figure (the scenario is
    refused before that can matter)."""
    hbm_bytes_per_s: float
    scale_up_bytes_per_s: float
    """One direction of the GPU's scale-up links (NVLink): half the datasheet's aggregate
    bidirectional figure, the rate a ring collective streams at."""
    scale_out_bytes_per_s: float
    """The GPU's network line rate (one NIC per GPU, as in DGX/HGX systems)."""
    domain_gpus: int
    """GPUs that share the scale-up fabric: the node (an HGX board), or a rack of several
    nodes (GB200 NVL72: 18 trays of 4)."""
    node_gpus: int
    """GPUs of one host: they share its NICs, host memory and PCIe or C2C links."""
    host_bytes_per_s: float
    """Achieved host<->GPU copy rate per GPU, one direction (offload traffic)."""
    host_memory_bytes: float
    """Host memory of one node: given, recorded, or assumed (see `of`)."""
    host_overhead: float = 1.0
    """Host CPU time per GPU operation relative to the x86 host the host-side constants
    (Overheads.decode_step_seconds, eager_layer_seconds) were fitted on: they scale by it."""
    fp32_flops: float = 0.0
    """float32 FLOP/s of the CUDA cores (matmuls with TF32 off); 0 where the record gives no
    figure, and the terms that need it are then left out rather than guessed."""

    def matmul_rate(self, fp8: BoolArray) -> FloatArray:
        """Peak FLOP/s per plan: fp8 where the plan runs its matmuls in fp8."""
        return np.where(fp8, self.fp8_flops, self.flops)

    @classmethod
    def of(
        cls,
        accelerator: AcceleratorFigures,
        gpus_per_node: int,
        overheads: Overheads,
        scale_out_gbits_per_s: float | None = None,
        *,
        domain_gpus: int | None = None,
        host_link_gbytes_per_s: float | None = None,
        host_memory_gib_per_node: float | None = None,
    ) -> Hardware:
        """Unset, the scale-up domain is the node; the host link and host memory come from
        the accelerator record (its reference system), else the overheads' fallback link
        rate and assumed host memory (Overheads.unrecorded_host_memory_gib_per_gpu)."""
        if accelerator.scale_up_gbytes_per_s is not None:
            scale_up = gbytes_per_s(accelerator.scale_up_gbytes_per_s) / 2
        else:
            # No scale-up fabric (PCIe cards): peer traffic crosses PCIe at the host copy rate.
            scale_up = overheads.host_bytes_per_s
        network = (
            scale_out_gbits_per_s
            or accelerator.scale_out_gbits_per_s
            or overheads.fallback_scale_out_gbits_per_s
        )
        link = host_link_gbytes_per_s or accelerator.host_link_gbytes_per_s
        host_rate = (
            gbytes_per_s(link) * overheads.host_link_efficiency
            if link
            else overheads.host_bytes_per_s
        )
        per_gpu = (
            accelerator.host_memory_gib_per_gpu or overheads.unrecorded_host_memory_gib_per_gpu
        )
        host_memory = host_memory_gib_per_node or per_gpu * gpus_per_node
        return cls(
            memory_bytes=gib_to_bytes(accelerator.capacity_gib),
            flops=tflops(accelerator.bf16_dense_tflops),
            fp8_flops=tflops(accelerator.fp8_dense_tflops or accelerator.bf16_dense_tflops),
            hbm_bytes_per_s=tbytes_per_s(accelerator.hbm_tbytes_per_s),
            scale_up_bytes_per_s=scale_up,
            scale_out_bytes_per_s=gbits_per_s(network),
            domain_gpus=domain_gpus or gpus_per_node,
            node_gpus=gpus_per_node,
            host_bytes_per_s=host_rate,
            host_memory_bytes=gib_to_bytes(host_memory),
            host_overhead=accelerator.host_overhead or 1.0,
            fp32_flops=tflops(accelerator.fp32_dense_tflops or 0.0),
        )
