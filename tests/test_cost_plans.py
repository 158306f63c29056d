"""Plan tables: construction from arrays or scenario plans, and typed factorisation errors."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from rlmguide.cost import PlanError, PlanTable, check_plans, plan_problems, valid_rows
from rlmguide.cost.layouts import TrainLayout
from rlmguide.cost.plans import head_tps, tp_lays_out_heads
from rlmguide.kb.schema import Plan, TrainPlan
from test_cost_specs import DEEPSEEK_V3, LLAMA31_70B, QWEN3_30B_A3B, QWEN25_7B, one_plan


def test_dp_follows_from_gpus_and_the_other_degrees() -> None:
    t = one_plan(rollout_gpus=32, rollout_tp=4, rollout_pp=2, train_gpus=32, train_tp=2,
                 train_pp=2, train_cp=2)  # fmt: skip
    assert t.rollout_dp[0] == 4  # 32 / (4 * 2)
    assert t.train_dp[0] == 4  # 32 / (2 * 2 * 2)


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        (dict(rollout_gpus=12, rollout_tp=8, train_gpus=12), "rollout.gpus", "not a whole number"),
        (dict(train_tp=2, train_pp=2, train_cp=3), "train.gpus", "not a whole number"),
        (dict(train_zero=4), "train.zero", "ZeRO stage"),
        (dict(rollout_tp=0), "rollout.tp", "positive"),
        (dict(execution="eventually"), "execution", "must be one of"),
        (dict(train_recompute="sometimes"), "train.recompute", "must be one of"),
        (dict(rollout_tp=[1, 2], train_tp=[1, 1, 1]), "rollout.tp", "entries"),
    ],
)
def test_invalid_tables_raise_plan_errors(
    fields: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(PlanError) as caught:
        one_plan(**fields)
    assert caught.value.field == field
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("arch", "fields", "field", "reason"),
    [
        (QWEN25_7B, dict(rollout_gpus=24, rollout_tp=3, train_gpus=24), "rollout.tp", "heads"),
        (QWEN25_7B, dict(rollout_gpus=32, train_gpus=32, train_pp=32), "train.pp", "layers"),
        (QWEN25_7B, dict(rollout_ep=2), "rollout.ep", "dense model"),
        (QWEN3_30B_A3B, dict(train_ep=3, rollout_gpus=24, train_gpus=24), "train.ep", "experts"),
        (QWEN3_30B_A3B, dict(train_tp=8, train_ep=2), "train.ep", "dp * cp"),
        (QWEN25_7B, dict(execution="async"), "execution", "disaggregated"),
    ],
)
def test_layout_problems_name_field_reason_and_rows(
    arch: object, fields: dict[str, object], field: str, reason: str
) -> None:
    table = one_plan(**fields)
    problems = plan_problems(table, arch)  # type: ignore[arg-type]
    assert problems, "expected a problem"
    first = problems[0]
    assert first.field == field and reason in first.reason and first.rows == (0,)
    with pytest.raises(PlanError, match=f"plan.{field}"):
        check_plans(table, arch)  # type: ignore[arg-type]


def test_kv_heads_must_split_or_replicate_evenly() -> None:
    # Llama-3.1-70B has 8 KV heads: tp 4 splits them, tp 16 replicates them (one per rank)
    table = one_plan(rollout_gpus=16, rollout_tp=16, train_gpus=16, train_tp=4)
    assert not plan_problems(table, LLAMA31_70B)
    # 12 heads, 4 KV heads, tp 6: heads split but 4 KV heads neither split nor replicate
    toy = QWEN25_7B.model_copy(update={"heads": 12, "hidden": 1536})
    [problem] = plan_problems(one_plan(rollout_gpus=6, rollout_tp=6, train_gpus=6), toy)
    assert problem.field == "rollout.tp" and "kv heads" in problem.reason


def test_tps_that_lay_out_the_heads_by_hand() -> None:
    # Phi-4: 40 heads, 10 KV heads. 4 and 8 divide 40 but neither divide 10 nor are multiples
    # of it (vLLM's LlamaAttention asserts either); 20 and 40 replicate each KV head 2 and 4x.
    phi4 = QWEN25_7B.model_copy(update={"heads": 40, "kv_heads": 10, "hidden": 5120})
    assert head_tps(phi4) == [1, 2, 5, 10, 20, 40]
    tps = np.array([1, 2, 4, 8, 16])
    assert tp_lays_out_heads(phi4, tps).tolist() == [True, True, False, False, False]
    # Qwen2.5-7B: 28 heads, 4 KV heads: 4 splits them, 28 replicates them 7x, 14 does not.
    assert head_tps(QWEN25_7B) == [1, 2, 4, 28]
    # Latent attention has no KV heads to split: every divisor of the 128 heads does.
    assert head_tps(DEEPSEEK_V3) == [1, 2, 4, 8, 16, 32, 64, 128]


def test_cluster_size_is_checked_when_known() -> None:
    table = one_plan(placement="disaggregated", rollout_gpus=32, train_gpus=8)
    assert plan_problems(table, QWEN25_7B) == []
    [problem] = plan_problems(table, QWEN25_7B, cluster_gpus=32)
    assert problem.field == "rollout.gpus" and "32 GPUs" in problem.reason


def test_valid_rows_masks_bad_plans_for_enumerators() -> None:
    table = PlanTable.from_arrays(
        placement="colocated", execution="sync", rollout_gpus=8, rollout_tp=[1, 2, 4, 8],
        train_gpus=8, train_tp=1, train_ep=[1, 1, 2, 1], train_zero=1, train_recompute="full",
    )  # fmt: skip
    # row 2: a dense model has no experts for ep 2; row 3: 28 heads over tp 8
    assert valid_rows(table, QWEN25_7B).tolist() == [True, True, False, False]
    assert len(table.take(valid_rows(table, QWEN25_7B))) == 2


def test_from_plans_fills_neutral_defaults_and_requires_the_rest() -> None:
    plan = Plan(
        placement="colocated", execution="sync",
        rollout={"gpus": 16, "tp": 2}, train={"tp": 4, "zero": 3, "recompute": "selective"},
    )  # fmt: skip
    table = PlanTable.from_plans([plan])
    row = table.row(0)
    assert row["rollout"] == {"gpus": 16, "tp": 2, "pp": 1, "dp": 8, "ep": 1, "attention_dp": 1,
                              "cp": 1, "precision": "bf16", "cuda_graphs": True}  # fmt: skip
    no_offload = {"phase": False, "optimizer": 0.0, "params": False, "frozen": False}
    assert row["train"] == {"gpus": 16, "tp": 4, "pp": 1, "cp": 1, "dp": 4, "ep": 1, "etp": 4,
                            "zero": 3, "recompute": "selective", "precision": "bf16",
                            "lora_rank": None, "offload": no_offload,
                            "fp32_gradients": False, "sequence_parallel": True,
                            "virtual_stages": 1, "first_stage_layers": None,
                            "last_stage_layers": None, "expert_layout": "folded"}  # fmt: skip
    assert row["pools"] == {"critic": None, "reference": None, "reward": None}
    assert row["prefix_caching"] is True and row["max_staleness"] == 1
    with pytest.raises(PlanError, match=r"train\.zero"):
        PlanTable.from_plans([Plan(placement="colocated", execution="sync",
                                   rollout={"gpus": 8, "tp": 1}, train={"tp": 1})])  # fmt: skip
    with pytest.raises(PlanError):
        PlanTable.from_plans([])


def test_categorical_codes_and_names_are_interchangeable() -> None:
    by_name = one_plan(placement="disaggregated", execution="one-step-off", train_recompute="none")
    by_code = one_plan(placement=1, execution=1, train_recompute=0)
    for field in ("placement", "execution", "train_recompute"):
        assert np.array_equal(getattr(by_name, field), getattr(by_code, field))


def test_uneven_pipeline_stages_are_valid_plans() -> None:
    # DeepSeek-V3's 61 layers split over 2 (31 + 30) or 16 stages, as Megatron's first/last
    # stage layer counts allow; only more stages than layers is an error.
    for pp in (2, 16):
        table = one_plan(rollout_pp=pp, rollout_gpus=16, train_pp=pp, train_gpus=16)
        assert plan_problems(table, DEEPSEEK_V3) == []


def test_expert_tensor_parallelism_defaults_to_tp_and_folds_experts() -> None:
    table = one_plan(train_tp=2, train_ep=[2, 8, 8], train_etp=[2, 2, 1])
    assert table.train_etp.tolist() == [2, 2, 1]
    assert one_plan(train_tp=4).train_etp.tolist() == [4]
    # ep 8 needs dp * cp * tp / etp = 4 * 2 / etp ranks: only the folded row (etp 1) fits.
    assert valid_rows(table, QWEN3_30B_A3B).tolist() == [True, False, True]
    with pytest.raises(PlanError, match="divide tp"):
        one_plan(train_tp=4, train_etp=3)


def test_a_stage_split_needs_stages_and_leaves_every_stage_a_layer() -> None:
    # Qwen2.5-7B (28 layers): a split needs pp > 1, and the ends must leave the pp - 2 middle
    # stages a layer each (9 + 18 + 1 = 28 fits pp 3; 10 + 18 leaves none).
    with pytest.raises(ValidationError, match="need pp > 1"):
        TrainPlan(pp=1, first_stage_layers=4)
    table = one_plan(train_pp=3, train_gpus=3, rollout_gpus=3,
                     train_first_layers=[9, 10, 0], train_last_layers=[18, 18, 0])  # fmt: skip
    assert valid_rows(table, QWEN25_7B).tolist() == [True, False, True]
    # two stages given both counts have no middle: 10 + 17 would leave a layer unbuilt
    two = one_plan(train_pp=2, train_gpus=2, rollout_gpus=2,
                   train_first_layers=[10, 10, 10], train_last_layers=[18, 17, 0])  # fmt: skip
    assert valid_rows(two, QWEN25_7B).tolist() == [True, False, True]
    layout = TrainLayout.of(table)
    assert layout.first_layers.tolist() == [9.0, 10.0, 0.0]
    # the frozen models' own layout has its own pp: its stages are even
    assert layout.assessed(np.array([1.0] * 3), np.array([1.0] * 3)).first_layers.tolist() == [
        0.0, 0.0, 0.0
    ]  # fmt: skip


def test_virtual_stages_need_pipeline_stages() -> None:
    # Interleaving chunks of one rank's layers needs pipeline stages to interleave; a searched
    # pp = 1 candidate runs the plain schedule whatever the plan's virtual_stages.
    with pytest.raises(ValidationError, match="needs pp > 1"):
        TrainPlan(pp=1, virtual_stages=2)
    assert TrainPlan(pp=4, virtual_stages=2).virtual_stages == 2
    table = one_plan(train_pp=[1, 2], train_gpus=16, rollout_gpus=16, train_virtual_stages=4)
    assert TrainLayout.of(table).virtual_stages.tolist() == [1.0, 4.0]
