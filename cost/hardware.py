"""The accelerator and cluster as rates in SI units, with the scenario's network override."""

from __future__ import annotations

from dataclasses import dataclass

from cost.overheads import Overheads
from cost.units import gbits_per_s, gbytes_per_s, gib_to_bytes, tbytes_per_s, tflops
from kb.schema.specs import AcceleratorFigures


@dataclass(frozen=True, slots=True)
class Hardware:
    """Peak figures of one GPU and its links; efficiencies are applied by the formulas."""

    memory_bytes: float
    flops: float
    """Dense bf16 FLOP/s (sparsity-doubled figures are never used)."""
    hbm_bytes_per_s: float
    scale_up_bytes_per_s: float
    """One direction of the GPU's scale-up links (NVLink): half the datasheet's aggregate
    bidirectional figure, the rate a ring collective streams at."""
    scale_out_bytes_per_s: float
    """The GPU's network line rate (one NIC per GPU, as in DGX/HGX systems)."""
    domain_gpus: int
    """GPUs that share the scale-up fabric: a node. Describe an NVL72 rack as a node of 72."""

    @classmethod
    def of(
        cls,
        accelerator: AcceleratorFigures,
        gpus_per_node: int,
        overheads: Overheads,
        scale_out_gbits_per_s: float | None = None,
    ) -> Hardware:
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
        return cls(
            memory_bytes=gib_to_bytes(accelerator.memory_gib),
            flops=tflops(accelerator.bf16_dense_tflops),
            hbm_bytes_per_s=tbytes_per_s(accelerator.hbm_tbytes_per_s),
            scale_up_bytes_per_s=scale_up,
            scale_out_bytes_per_s=gbits_per_s(network),
            domain_gpus=gpus_per_node,
        )
