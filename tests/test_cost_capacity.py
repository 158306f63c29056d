"""A GPU's capacity is the memory its driver reports, not the datasheet's: nvidia-smi shows an
H100 SXM 80GB as 81559 MiB, and neither PyTorch's allocator nor vLLM's gpu_memory_utilization
ever gets more (AcceleratorFigures.capacity_gib)."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from rlmguide.cost.evaluate import evaluate
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.units import GIB
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema.records import Accelerator
from rlmguide.kb.schema.specs import AcceleratorFigures
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

MIB = 2**20
H100_SMI = H100.model_copy(update={"visible_memory_mib": 81559})
KV = 5120 * 57_344  # bytes of one mean sequence of Qwen2.5-7B (1024 + 4096 tokens), tp 1


@cache
def accelerators() -> dict[str, Accelerator]:
    return load_catalog(DEFAULT_ROOTS).records["accelerator"]  # type: ignore[return-value]


def test_the_h100_record_has_the_capacity_nvidia_smi_prints() -> None:
    h100 = accelerators()["h100-sxm-80gb"]
    assert h100.memory_gib == 80  # the datasheet figure stays on the record (and the site)
    assert h100.visible_memory_mib == 81559
    assert h100.visible_memory_source == "github-nvidia-nccl-issue-1264"
    assert h100.capacity_gib == pytest.approx(79.647, abs=5e-4)  # 81559 / 1024 = 79.6475
    # 81559 MiB = 85,520,809,984 bytes, the total the driver reports for an H100
    assert Hardware.of(h100, 8, DEFAULT_OVERHEADS).memory_bytes == 85_520_809_984
    # where no driver output was found the datasheet figure stands
    gb200 = accelerators()["gb200-186gb"]
    assert gb200.visible_memory_mib is None
    assert Hardware.of(gb200, 4, DEFAULT_OVERHEADS).memory_bytes == 186 * GIB


def test_the_rollout_kv_budget_is_0_9_of_the_visible_memory() -> None:
    # Qwen2.5-7B on one H100 of its own (disaggregated: nothing of the trainer stays on it).
    # The engine may fill 0.9 x 81559 MiB = 76,968,728,985.6 bytes: less the weights
    # (15,231,233,024) and the workspace (1 GiB) that leaves 60,663,754,137.6 bytes of KV,
    # floor(60,663,754,137.6 / 293,601,280) = 206 sequences. The datasheet's 80 GiB would have
    # admitted 207 (0.9 x 80 GiB leaves 61,004,436,480 bytes).
    plan = one_plan(placement="disaggregated", rollout_gpus=1, train_gpus=8)
    r = evaluate(H100_SMI, QWEN25_7B, workload(), plan)
    budget = 0.9 * 81559 * MIB
    assert budget - 2 * QWEN7B_PARAMS - GIB == pytest.approx(60_663_754_137.6)
    assert r.rollout_concurrency[0] == 206
    assert r.memory_terms_gib["rollout"]["kv_cache"][0] * GIB == pytest.approx(206 * KV)
    assert r.headroom_gib["rollout"][0] == pytest.approx(0.1 * 79.6474609375)
    datasheet = evaluate(H100, QWEN25_7B, workload(), plan)
    assert datasheet.rollout_concurrency[0] == 207


def test_the_training_pool_fits_in_the_visible_memory() -> None:
    # The same plan's training peak is unchanged; only the room around it shrinks, by
    # 80 GiB - 81559 MiB = 0.3525 GiB.
    plan = one_plan(placement="disaggregated", rollout_gpus=1, train_gpus=8)
    seen = evaluate(H100_SMI, QWEN25_7B, workload(), plan)
    sheet = evaluate(H100, QWEN25_7B, workload(), plan)
    assert seen.memory_train_gib[0] == pytest.approx(sheet.memory_train_gib[0])
    lost = sheet.headroom_gib["train"][0] - seen.headroom_gib["train"][0]
    assert lost == pytest.approx(80 - 81559 / 1024)


def test_no_record_claims_more_memory_than_its_datasheet() -> None:
    for acc in accelerators().values():
        assert acc.capacity_gib <= acc.memory_gib, acc.id
        assert Hardware.of(acc, 8, DEFAULT_OVERHEADS).memory_bytes <= acc.memory_gib * GIB


@given(gib=st.integers(1, 512), mib=st.integers(1, 600_000))
def test_capacity_never_exceeds_the_datasheet(gib: int, mib: int) -> None:
    figures = {"memory_gib": gib, "hbm_tbytes_per_s": 3.35, "bf16_dense_tflops": 989.5}
    if mib > gib * 1024:
        with pytest.raises(ValidationError, match="the driver never reports more"):
            AcceleratorFigures(**figures, visible_memory_mib=mib)
        return
    acc = AcceleratorFigures(**figures, visible_memory_mib=mib)
    assert acc.capacity_gib == mib / 1024 <= gib
    assert Hardware.of(acc, 8, DEFAULT_OVERHEADS).memory_bytes == mib * MIB <= gib * GIB


def test_a_driver_figure_comes_with_its_source() -> None:
    h100 = accelerators()["h100-sxm-80gb"].model_dump(exclude={"ridge_flop_per_byte"})
    with pytest.raises(ValidationError, match="go together"):
        Accelerator.model_validate({**h100, "visible_memory_source": None})
    assert "github-nvidia-nccl-issue-1264" in accelerators()["h100-sxm-80gb"].cited_sources()
