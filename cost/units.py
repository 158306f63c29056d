"""The one place where datasheet units become SI: bytes, bytes per second, FLOP per second.

Datasheets mix GiB (memory), TB/s (HBM, decimal), TFLOP/s, GB/s (NVLink, decimal, aggregate
bidirectional) and Gbit/s (network). Every formula in the cost core works in bytes, seconds and
FLOPs; converting anywhere else is a bug.
"""

from __future__ import annotations

BF16_BYTES = 2
"""Bytes of one bf16 value: weights, gradients, activations and KV cache are stored in bf16."""

FP8_BYTES = 1
"""Bytes of one fp8 value: the weights of an fp8-quantised rollout engine."""

FP32_BYTES = 4
"""Bytes of one fp32 value: master weights, Adam moments and the logits of the loss."""

GIB = 2**30


def gib_to_bytes(gib: float) -> float:
    return gib * GIB


def bytes_to_gib(nbytes: float) -> float:
    return nbytes / GIB


def tbytes_per_s(tb_per_s: float) -> float:
    """HBM bandwidth: decimal terabytes per second to bytes per second."""
    return tb_per_s * 1e12


def gbytes_per_s(gb_per_s: float) -> float:
    """Decimal gigabytes per second (NVLink, PCIe) to bytes per second."""
    return gb_per_s * 1e9


def tflops(tflop_per_s: float) -> float:
    """TFLOP/s to FLOP/s."""
    return tflop_per_s * 1e12


def gbits_per_s(gbit_per_s: float) -> float:
    """Network line rate in Gbit/s to bytes per second."""
    return gbit_per_s * 1e9 / 8
