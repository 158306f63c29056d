"""Start-up checks: the values a launch writes beyond the plan's fields (`launch.*` facts) and
the constraint records of the frameworks' start-up asserts that read them (Megatron's pipeline
split, NeMo-RL's packing under context parallelism, slime's run length)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from launch_support import catalogs, review_json
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules.scenario import parse_scenario, resolve

from rlmguide.export import NotExpressible, build, script
from rlmguide.export.startup import ABSENT, binding, compile_checks, pipeline_split, tripped


def _check(record_id: str) -> Any:
    catalog, _ = catalogs()
    (check,) = [c for c in compile_checks(catalog)[0] if c.id == record_id]
    return check


def _export(data: dict[str, Any], framework: str, version: str | None = None) -> Any:
    catalog, mappings = catalogs()
    resolved = resolve(parse_scenario(data, "test"), catalog.records)
    return build(resolved, catalog, mappings, framework, version)


V07, V08 = "verl-0.7.0-125-gb178a3cd5", "verl-0.8.0"
OVERLONG = {
    # where each verl version's DAPO recipe config declares the soft overlong punishment
    # (verl-recipe 21892b92 and e7f88957, dapo/config/dapo_trainer.yaml)
    V07: "reward_model.overlong_buffer.len",
    V08: "reward.reward_kwargs.overlong_buffer_cfg.len",
}


def _scenario(plan: dict[str, Any], policy: str = "qwen2.5-7b", **workload: Any) -> dict:
    return {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 8, "gpus_per_node": 8},
        "models": {"policy": policy, "reward": "verifier"},
        "workload": {
            "algorithm": "grpo",
            "prompts_per_step": 256,
            "samples_per_prompt": 16,
            "prompt_tokens": 1024,
            "response_tokens": 4096,
            "max_response_tokens": 8192,
            "minibatches_per_step": 4,
            **workload,
        },
        "plan": plan,
    }


UNEVEN = {"placement": "colocated", "execution": "sync", "train": {"tp": 1, "pp": 8, "cp": 1,
          "zero": 1, "recompute": "full"}}  # fmt: skip
"""Qwen2.5-7B's 28 layers over 8 pipeline stages."""


# -- the pipeline split ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layers", "pp", "split"),
    [
        (28, 8, (2, 2)),  # fullest 4; six middle stages of 4 leave 4
        (80, 7, (10, 10)),  # fullest 12; five of 12 leave 20
        (61, 16, (3, 2)),  # fullest 4; fourteen of 4 leave 5
        (94, 16, (5, 5)),  # fullest 6; fourteen of 6 leave 10
        (9, 8, (2, 1)),  # fullest 2; six of 2 would need 12: six of 1 leave 3
        (64, 8, (0, 0)),  # even
        (7, 1, (0, 0)),  # no pipeline
        (5, 2, (3, 2)),  # no middle stage
    ],
)
def test_pipeline_split_by_hand(layers: int, pp: int, split: tuple[int, int]) -> None:
    assert pipeline_split(layers, pp) == split


def test_no_split_when_the_stages_outnumber_what_the_layers_fill() -> None:
    with pytest.raises(ValueError, match="cannot fill"):
        pipeline_split(5, 8)


def _megatron_accepts(layers: int, pp: int, first: int, last: int) -> bool:
    check = _check("megatron-pipeline-stages-split-the-layers")
    facts = {"model.layers": layers, "plan.train.pp": pp} | {
        "launch.pp_first_layers": first,
        "launch.pp_last_layers": last,
    }
    return not tripped([check], facts)


@settings(deadline=None)  # the first example loads the catalog
@given(st.integers(1, 128), st.integers(1, 32))
def test_every_split_passes_megatron_and_fills_no_stage_past_the_costed_one(
    layers: int, pp: int
) -> None:
    try:
        first, last = pipeline_split(layers, pp)
    except ValueError:
        return
    assert _megatron_accepts(layers, pp, first, last)
    if first:
        middle = (layers - first - last) // max(pp - 2, 1) if pp > 2 else 0
        assert max(first, last, middle) <= math.ceil(layers / pp)


def test_megatron_check_refuses_an_uneven_pipeline_without_the_stage_counts() -> None:
    assert not _megatron_accepts(28, 8, 0, 0)
    assert not _megatron_accepts(28, 8, 3, 2)  # 23 left over 6 middle stages
    assert _megatron_accepts(28, 7, 0, 0)
    assert not _megatron_accepts(28, 2, 10, 10)  # two stages must hold every layer


def _megatron_builds(layers: int, pp: int, first: int, last: int) -> bool:
    """get_num_layers_to_build at 103851dc (transformer_block.py L102-L158) transcribed: the
    stage counts given take their layers, the stages left share the rest evenly; two stages
    with both counts have no middle, and must hold every layer for the checkpoint to load."""
    if pp == 1:
        return True
    if first == 0 and last == 0:
        return layers % pp == 0
    rest, left = layers - first - last, pp - (first > 0) - (last > 0)
    if rest < 0:
        return False
    return rest % left == 0 if left > 0 else rest == 0


def test_one_stage_count_alone_splits_the_rest_over_the_other_stages() -> None:
    # slime's run-qwen3.5-27B.sh at 624b824: 64 layers, PP 2, --decoder-last-pipeline-num-layers 30
    assert _megatron_accepts(64, 2, 0, 30)  # the first stage takes 34
    assert _megatron_accepts(64, 3, 0, 30)  # 34 over 2 stages
    assert not _megatron_accepts(64, 4, 0, 30)  # 34 over 3 stages
    assert _megatron_accepts(28, 8, 0, 0) is False and _megatron_accepts(28, 8, 7, 0)  # 21 over 7


@settings(deadline=None)
@given(st.integers(1, 96), st.integers(1, 16), st.integers(0, 40), st.integers(0, 40))
def test_the_check_accepts_exactly_the_splits_megatron_builds(
    layers: int, pp: int, first: int, last: int
) -> None:
    assert _megatron_accepts(layers, pp, first, last) == _megatron_builds(layers, pp, first, last)


# -- export writes what the checks need --------------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "first", "last"),
    [
        (
            "verl",
            "+actor_rollout_ref.actor.megatron.override_transformer_config."
            "num_layers_in_first_pipeline_stage",
            "+actor_rollout_ref.actor.megatron.override_transformer_config."
            "num_layers_in_last_pipeline_stage",
        ),
        (
            "nemo-rl",
            "policy.megatron_cfg.num_layers_in_first_pipeline_stage",
            "policy.megatron_cfg.num_layers_in_last_pipeline_stage",
        ),
        ("slime", "decoder-first-pipeline-num-layers", "decoder-last-pipeline-num-layers"),
    ],
)
def test_an_uneven_pipeline_is_exported_with_megatrons_stage_counts(
    framework: str, first: str, last: str
) -> None:
    done = _export(_scenario(UNEVEN), framework)
    written = {a.key: a.value for a in done.arguments}
    assert (written[first], written[last]) == (2, 2)


def _review(tmp_path: Path, text: str, *flags: str) -> dict[str, Any]:
    path = tmp_path / "launch.sh"
    path.write_text(text)
    return review_json(path, "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-7b", *flags)


@pytest.mark.parametrize("framework", ["verl", "slime"])
def test_review_reports_the_megatron_check_a_launch_without_stage_counts_trips(
    framework: str, tmp_path: Path
) -> None:
    text = script(_export(_scenario(UNEVEN), framework), "test", "qwen2.5-7b")
    assert _review(tmp_path, text)["startup"] == []
    stripped = "\n".join(line for line in text.splitlines() if "pipeline_stage" not in line
                         and "pipeline-num-layers" not in line)  # fmt: skip
    tripped_ids = [c["constraint"] for c in _review(tmp_path, stripped + "\n")["startup"]]
    assert tripped_ids == ["megatron-pipeline-stages-split-the-layers"]


def test_nemo_rl_dtensor_with_context_parallelism_turns_packing_off() -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 1, "cp": 2, "zero": 3, "recompute": "full"}}  # fmt: skip
    done = _export(_scenario(plan), "nemo-rl")
    written = {a.key: a.value for a in done.arguments}
    assert written["policy.dtensor_cfg.context_parallel_size"] == 2
    assert written["policy.sequence_packing.enabled"] is False
    check = _check("nemo-rl-dtensor-context-parallel-without-packing")
    facts = {**ABSENT, "plan.train.cp": 2, "launch.sequence_packing": True}
    assert tripped([check], facts) == [check.record]


MEGATRON_SP_CP = {"placement": "colocated", "execution": "sync", "train": {"tp": 4, "cp": 2,
                  "zero": 1, "recompute": "full", "sequence_parallel": True}}  # fmt: skip
"""Megatron TP 4 with sequence parallelism and CP 2: packing asserts a multiple of 2 x 2 x 4."""


@pytest.mark.parametrize(
    ("train", "multiple"),
    [
        ({"tp": 4, "cp": 2, "zero": 1, "sequence_parallel": True}, 16),  # 4 x 2 x 2
        ({"tp": 2, "cp": 1, "zero": 1, "sequence_parallel": True}, 2),  # TP alone
        ({"tp": 1, "cp": 2, "zero": 3}, 4),  # DTensor: CP's two chunks per rank
        ({"tp": 1, "cp": 1, "zero": 3}, 1),
    ],
)
def test_nemo_rl_pads_sequences_to_what_cp_and_sequence_parallelism_split(
    train: dict[str, Any], multiple: int
) -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {**train, "recompute": "full"}}  # fmt: skip
    written = {a.key: a.value for a in _export(_scenario(plan), "nemo-rl").arguments}
    assert written["policy.make_sequence_length_divisible_by"] == multiple


def test_nemo_rl_sequence_multiple_checks_by_hand() -> None:
    # nemo_rl/models/megatron/data.py L1285-L1296: a multiple of cp x 2 (cp > 1) x tp (with SP)
    megatron = _check("nemo-rl-megatron-sequence-multiple-splits-evenly")
    base = {"plan.train.tp": 4, "plan.train.cp": 2, "plan.train.sequence_parallel": True,
            "launch.sequence_packing": True}  # fmt: skip
    for multiple, holds in ((1, False), (4, False), (8, False), (16, True), (32, True)):
        facts = {**base, "launch.sequence_length_multiple": multiple}
        assert (tripped([megatron], facts) == []) is holds, multiple
    no_sp = {**base, "plan.train.sequence_parallel": False, "launch.sequence_length_multiple": 4}
    assert tripped([megatron], no_sp) == []  # CP alone: 2 x 2
    unpacked = {**base, "launch.sequence_packing": False, "launch.sequence_length_multiple": 1}
    assert tripped([megatron], unpacked) == []  # the assert sits on the packing path only
    tp_sp = {**base, "plan.train.cp": 1, "launch.sequence_length_multiple": 1}
    assert tripped([megatron], tp_sp) == [megatron.record]  # the GRPO base's 1 under TP 4 + SP
    dtensor = _check("nemo-rl-dtensor-context-parallel-sequence-multiple")
    cp2 = {"plan.train.cp": 2, "launch.sequence_length_multiple": 2}
    assert tripped([dtensor], cp2) == [dtensor.record]
    assert tripped([dtensor], {**cp2, "launch.sequence_length_multiple": 4}) == []
    assert tripped([dtensor], {"plan.train.cp": 1, "launch.sequence_length_multiple": 1}) == []


def test_review_reports_a_nemo_rl_megatron_launch_padding_too_short(tmp_path: Path) -> None:
    text = script(_export(_scenario(MEGATRON_SP_CP), "nemo-rl"), "test", "qwen2.5-7b")
    key = "policy.make_sequence_length_divisible_by"
    assert f"{key}=16" in text
    assert _review(tmp_path, text)["startup"] == []
    short = text.replace(f"{key}=16", f"{key}=4")
    tripped_ids = [c["constraint"] for c in _review(tmp_path, short)["startup"]]
    assert tripped_ids == ["nemo-rl-megatron-sequence-multiple-splits-evenly"]


def test_nemo_rl_gives_the_model_the_context_the_scenario_configures() -> None:
    # Qwen3-8B's config stops at 40,960 positions; 1,024 + 65,536 tokens need the run's 131,072
    # (vLLM refuses a max_model_len above max_position_embeddings)
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 1, "cp": 2, "zero": 3, "recompute": "full"}}  # fmt: skip
    data = _scenario(plan, "qwen3-8b", response_tokens=24000, max_response_tokens=65536)
    data["models"]["context_tokens"] = 131072
    key = "+policy.hf_config_overrides.max_position_embeddings"
    written = {a.key: a.value for a in _export(data, "nemo-rl").arguments}
    assert written["policy.max_total_sequence_length"] == 66560
    assert written[key] == 131072
    short = _scenario(plan, "qwen3-8b")  # 1,024 + 8,192 within the record
    assert key not in {a.key for a in _export(short, "nemo-rl").arguments}


def test_nemo_rl_dtensor_refuses_context_parallelism_beside_tensor_parallelism() -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 2, "cp": 2, "zero": 3, "recompute": "full"}}  # fmt: skip
    with pytest.raises(NotExpressible, match="nemo-rl-dtensor-context-parallel-without-sequence"):
        _export(_scenario(plan), "nemo-rl")


def test_nemo_rl_dtensor_expert_parallelism_reshards_after_forward_as_costed() -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 1, "cp": 1, "ep": 8, "zero": 3, "recompute": "full"}}  # fmt: skip
    done = _export(_scenario(plan, "qwen3-30b-a3b"), "nemo-rl")
    written = {a.key: a.value for a in done.arguments}
    assert written["+policy.dtensor_cfg.expert_parallel_size"] == 8
    assert written["+policy.dtensor_cfg.moe_parallelizer.reshard_after_forward"] is True
    dense = _export(_scenario({**plan, "train": {**plan["train"], "ep": 1}}, "qwen3-30b-a3b"),
                    "nemo-rl")  # fmt: skip
    assert not any("moe_parallelizer" in a.key for a in dense.arguments)


def test_nemo_rl_pins_vllm_triton_experts_for_a_moe_policy_so_the_refit_loads() -> None:
    # vLLM 0.25.1 (NeMo-RL's pin) runs bf16 experts in FlashInfer TRTLLM on Blackwell, whose block
    # layout the refit's loader cannot write into (fused_moe/oracle/unquantized.py L67-L79,
    # L287-L304); NeMo-RL's MoE recipes pin the Triton kernel (commit 6d164afb3)
    plan = {"placement": "colocated", "execution": "sync"}
    moe = _scenario(plan, "qwen3-30b-a3b")
    moe["cluster"] = {"accelerator": "b200-sxm-180gb", "nodes": 2, "gpus_per_node": 8}
    written = {a.key: a.value for a in _export(moe, "nemo-rl").arguments}
    assert written["+policy.generation.vllm_kwargs.moe_backend"] == "triton"
    dense = {a.key for a in _export(_scenario(plan), "nemo-rl").arguments}
    assert "+policy.generation.vllm_kwargs.moe_backend" not in dense


def test_verl_0_8_pins_vllm_triton_experts_for_a_moe_policy() -> None:
    # verl 0.8's image runs vLLM 0.20.2, whose default bf16 expert kernels (FlashInfer TRTLLM on
    # Blackwell, CUTLASS on Hopper) re-register w13/w2 in another layout after loading, which
    # verl's refit (load_weights, then process_weights_after_loading) does not survive; verl
    # 0.7's vLLM 0.12 ran Triton already, and the key is vLLM's only
    plan = {"placement": "colocated", "execution": "sync", "rollout": {"tp": 4}}
    key = "+actor_rollout_ref.rollout.engine_kwargs.vllm.moe_backend"
    moe = _scenario(plan, "qwen3-30b-a3b")
    written = {a.key: a.value for a in _export(moe, "verl", V08).arguments}
    assert written[key] == "triton"
    assert key not in {a.key for a in _export(_scenario(plan), "verl", V08).arguments}
    assert key not in {a.key for a in _export(moe, "verl", V07).arguments}


MOE_REFIT = {
    "nemo-rl": "nemo-rl-vllm-moe-refit-needs-triton-experts",
    "verl": "verl-vllm-moe-refit-needs-triton-experts-v0.8",
}


@pytest.mark.parametrize(
    ("framework", "capability", "eager", "stops"),
    [
        # vLLM 0.25.1 (NeMo-RL): FlashInfer TRTLLM on 10.x; Hopper moves FlashInfer behind Triton
        ("nemo-rl", 10.0, False, True),
        ("nemo-rl", 10.3, False, True),
        ("nemo-rl", 9.0, False, False),
        ("nemo-rl", 8.0, False, False),
        ("nemo-rl", 0, False, False),
        # vLLM 0.20.2 (verl 0.8): TRTLLM on 10.x, CUTLASS on 9.0 whose swap the captured graphs miss
        ("verl", 10.0, False, True),
        ("verl", 9.0, False, True),
        ("verl", 9.0, True, False),
        ("verl", 8.9, False, False),
        ("verl", 8.0, False, False),
    ],
)
def test_vllm_moe_refit_check_follows_the_pinned_vllms_kernel_choice(
    framework: str, capability: float, eager: bool, stops: bool
) -> None:
    """The expert kernel vLLM picks where moe_backend is auto, by compute capability, as the
    pinned vLLM's oracle orders it (fused_moe/oracle/unquantized.py L67-L95 at 0.25.1, L66-L80 at
    0.20.2): a FlashInfer kernel breaks the refit, Triton keeps it; a launch that names Triton
    passes everywhere."""
    check = _check(MOE_REFIT[framework])
    facts = {
        "model.is_moe": True, "model.type": "qwen3_moe", "plan.train.lora_rank": 0,
        "cluster.compute_capability": capability, "plan.rollout.attention_dp": 1,
        "plan.rollout.eager": eager,
    }  # fmt: skip
    assert bool(tripped([check], {**facts, "launch.vllm_moe_backend": "auto"})) is stops
    assert not tripped([check], {**facts, "launch.vllm_moe_backend": "triton"})
    assert not tripped([check], {**facts, "model.is_moe": False, "launch.vllm_moe_backend": "auto"})


@pytest.mark.parametrize(
    ("framework", "version", "flagged", "spared"),
    [
        ("nemo-rl", None, "b200-sxm-180gb", ("h100-sxm-80gb", "a100-sxm-80gb")),
        ("verl", V08, "h20-96gb", ("a100-sxm-80gb",)),
    ],
)
def test_review_names_the_moe_refit_stop_of_a_launch_without_triton_experts(
    framework: str, version: str | None, flagged: str, spared: tuple[str, ...], tmp_path: Path
) -> None:
    """audit9's rv/r5: a hand-written MoE launch that leaves vLLM's expert kernel at auto got no
    start-up row; the export pins Triton, and the same script without that line is reported on
    the accelerators where the pinned vLLM picks a FlashInfer kernel, and only there."""
    moe = _scenario({"placement": "colocated", "execution": "sync"}, "qwen3-30b-a3b")
    moe["cluster"] = {"accelerator": flagged, "nodes": 2, "gpus_per_node": 8}
    text = script(_export(moe, framework, version), "test", "qwen3-30b-a3b")
    path = tmp_path / "launch.sh"

    def stops(accelerator: str) -> list[str]:
        flags = ("--accelerator", accelerator, "--policy", "qwen3-30b-a3b")
        return [c["constraint"] for c in review_json(path, *flags)["startup"]]

    path.write_text(text)
    assert stops(flagged) == []
    path.write_text("\n".join(line for line in text.splitlines() if "moe_backend" not in line))
    assert stops(flagged) == [MOE_REFIT[framework]]
    for accelerator in spared:
        assert stops(accelerator) == []


@pytest.mark.parametrize(
    ("nodes", "train", "refused_by"),
    [
        # Automodel's MoE parallelizer asserts a tensor mesh of 1
        (8, {"tp": 2, "ep": 8}, "nemo-rl-dtensor-expert-parallel-without-tensor-parallel"),
        # (EP not dividing the experts is refused for every framework by rule ep-divides-experts)
    ],
)
def test_nemo_rl_dtensor_refuses_expert_layouts_automodel_asserts(
    nodes: int, train: dict[str, int], refused_by: str
) -> None:
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"cp": 1, "zero": 3, "recompute": "full", **train}}  # fmt: skip
    data = _scenario(plan, "qwen3-30b-a3b")
    data["cluster"]["nodes"] = nodes
    with pytest.raises(NotExpressible, match=refused_by):
        _export(data, "nemo-rl")


def test_nemo_rl_dtensor_expert_conditions_by_hand() -> None:
    from rlmguide.rules.expr import Condition
    from rlmguide.rules.facts import FACTS

    catalog, _ = catalogs()
    records = catalog.of("constraint")

    def holds(record_id: str, **facts: int) -> bool:
        env = {("model." if k == "experts" else "plan.train.") + k: v for k, v in facts.items()}
        return bool(Condition(records[record_id].condition, FACTS).evaluate(env))

    # Automodel: EP divides dp x cp x tp (the non-pipeline ranks): 16 x 2 x 1 = 32 takes 8, not 12
    ranks = "nemo-rl-dtensor-expert-parallel-divides-ranks"
    assert holds(ranks, dp=16, cp=2, tp=1, ep=8)
    assert not holds(ranks, dp=16, cp=2, tp=1, ep=12)
    # the MoE parallelizer: no tensor mesh, whole experts, EP dividing the routed experts (128)
    alone = "nemo-rl-dtensor-expert-parallel-without-tensor-parallel"
    assert holds(alone, tp=2, etp=2, ep=1, experts=128)
    assert holds(alone, tp=1, etp=1, ep=8, experts=128)
    assert not holds(alone, tp=2, etp=1, ep=8, experts=128)
    assert not holds(alone, tp=1, etp=1, ep=3, experts=128)


def test_slime_writes_the_run_length_it_asserts(tmp_path: Path) -> None:
    plan = {"placement": "colocated", "execution": "sync"}
    words = {a.key: a.value for a in _export(_scenario(plan), "slime").arguments}
    assert words["num-epoch"] == 1 and "num-rollout" not in words
    scenario = _scenario(plan, steps=300)
    text = script(_export(scenario, "slime"), "test", "qwen2.5-7b")
    assert "--num-rollout 300" in text and "--num-epoch" not in text
    stripped = "\n".join(ln for ln in text.splitlines() if "--num-rollout" not in ln) + "\n"
    tripped_ids = [c["constraint"] for c in _review(tmp_path, stripped)["startup"]]
    assert "slime-run-length-required" in tripped_ids


def test_slime_reinforce_plus_plus_normalises_advantages() -> None:
    plan = {"placement": "colocated", "execution": "sync"}
    done = _export(_scenario(plan, algorithm="reinforce-plus-plus"), "slime")
    assert {a.key: a.value for a in done.arguments}["normalize-advantages"] is True


def test_slime_keeps_the_sglang_expert_group_inside_its_engine() -> None:
    from rlmguide.rules.frameworks import compile_constraints

    catalog, _ = catalogs()
    (record,) = [
        c for c in compile_constraints(catalog)[0]
        if c.id == "slime-sglang-expert-parallel-within-engine"
    ]  # fmt: skip
    assert tripped([record], {"plan.rollout.ep": 8, "plan.rollout.tp": 4})
    assert not tripped([record], {"plan.rollout.ep": 4, "plan.rollout.tp": 8})
    assert tripped([record], {"plan.rollout.ep": 3, "plan.rollout.tp": 4})
    plan = _export(_scenario({}, policy="qwen3-30b-a3b"), "slime").plan["rollout"]
    assert plan["ep"] <= plan["tp"] and plan["tp"] % plan["ep"] == 0


# -- the engine's memory and the training micro-batch in the frameworks' units -----------------

PLAN = {
    "rollout": {"memory_fraction": 0.7005},
    "train": {"micro_batch_tokens": 14866},
    "memory_breakdown_gib": {
        "rollout": {"weights": 3.5, "kv_cache": 17.5, "workspace": 1.0, "trainer_state": 16.0}
    },
    "rollout_concurrency": 512,
}


def test_engine_fraction_in_each_engines_unit_by_hand() -> None:
    from rlmguide.export.startup import engine_fraction

    # vLLM: a share of the whole HBM, as the plan's budget is
    assert engine_fraction(PLAN, 80.0, "vllm") == 0.700
    # SGLang: weights and KV over the memory free when it starts (80 - 16 resident):
    # (0.7005 x 80 - 1 workspace) / 64 = 0.8600 -> 0.860
    assert engine_fraction(PLAN, 80.0, "sglang") == 0.860
    # never below what the weights, workspace and KV take: (3.5 + 17.5 + 1) / 80 = 0.275
    small = {**PLAN, "rollout": {"memory_fraction": 0.1}}
    assert engine_fraction(small, 80.0, "vllm") == 0.275
    assert engine_fraction({"rollout": None}, 80.0, "vllm") is None


RESIDENT = {
    "rollout": {"memory_fraction": 0.45},
    "memory_breakdown_gib": {
        "rollout": {"weights": 14.0, "kv_cache": 21.0, "workspace": 1.0, "trainer_state": 36.0}
    },
}
"""An engine budget of 0.45 x 80 = 36 GiB (weights 14 + KV 21 + workspace 1) beside 36 GiB of
trainer state that stays resident during generation (a03's slime plan, rounded)."""


def test_sglang_fraction_over_the_memory_free_when_the_engine_starts_by_hand() -> None:
    from rlmguide.export.startup import engine_fraction, gpu_share

    # trainer loaded first: weights + KV over 80 - 36 = 44 GiB free: 35 / 44 = 0.79545 -> 0.796
    # (rounded up to hold the weights and KV)
    assert engine_fraction(RESIDENT, 80.0, "sglang") == 0.796
    # engine started first on the empty GPU (slime): over 80 GiB: 35 / 80 = 0.4375 -> 0.438,
    # so 0.438 x 80 = 35.04 + 1 workspace + 36 of trainer = 72.04 GiB, under 80; the 0.796
    # would size 63.68 + 1 + 36 = 100.68 GiB
    fraction = engine_fraction(RESIDENT, 80.0, "sglang", starts_first=True)
    assert fraction == 0.438
    assert fraction * 80.0 + 1.0 + 36.0 <= 80.0 < 0.796 * 80.0 + 1.0 + 36.0
    # the inverse, as review reads such a launch: (0.438 x 80 + 1) / 80 = 0.4505
    assert gpu_share(0.438, RESIDENT, 80.0, "sglang", starts_first=True) == pytest.approx(0.4505)
    assert gpu_share(0.796, RESIDENT, 80.0, "sglang") == pytest.approx((0.796 * 44 + 1) / 80)
    # vLLM asks for its share of the whole GPU whichever starts first
    assert engine_fraction(RESIDENT, 80.0, "vllm", starts_first=True) == 0.45


def test_slime_colocated_engine_and_resident_trainer_fit_the_gpu() -> None:
    # slime starts SGLang on the empty GPU (train.py L19-L21 at 624b824a): its weights and KV
    # take mem_fraction_static x HBM, then the trainer is loaded beside them
    done = _export(_scenario({"placement": "colocated", "execution": "sync"}), "slime")
    assert done.mapping.engine_starts_first
    written = {a.key: a.value for a in done.arguments}
    assert written.get("colocate") is True and written.get("no-offload-train") is True
    terms = done.plan["memory_breakdown_gib"]["rollout"]
    assert terms["trainer_state"] > 0  # the trainer stays resident beside the engine
    hbm = 81559 / 1024  # h100-sxm-80gb as its driver reports it
    held = written["sglang-mem-fraction-static"] * hbm + terms["workspace"] + terms["trainer_state"]
    assert terms["weights"] + terms["kv_cache"] <= written["sglang-mem-fraction-static"] * hbm
    assert held <= hbm


def test_micro_batch_in_whole_per_gpu_budgets_by_hand() -> None:
    from rlmguide.export.startup import micro_batch

    facts = {"plan.train.cp": 2, "plan.train.tp": 2, "workload.sequence_tokens": 5120}
    # 14866 down to a multiple of cp x tp = 4: 14864; 14866 // 5120 = 2 whole sequences, a
    # training micro-batch and a forward-only one (ROLL's infer_batch_size) alike; the critic
    # trains beside the actor at the same budget
    assert micro_batch(PLAN, facts) == {
        "launch.micro_batch_tokens": 14864,
        "launch.critic_micro_batch_tokens": 14864,
        "launch.micro_batch_sequences": 2,
        "launch.forward_micro_batch_sequences": 2,
        "launch.cp_tp": 4,
    }
    # rounding down would fall below the longest sequence, which verl asserts: round up
    tight = {"train": {"micro_batch_tokens": 5121}}
    facts = {"plan.train.cp": 4, "plan.train.tp": 1, "workload.sequence_tokens": 5121}
    assert micro_batch(tight, facts)["launch.micro_batch_tokens"] == 5124


def test_vllm_refuses_a_fraction_the_resident_trainer_leaves_no_room_for() -> None:
    check = _check("vllm-memory-utilization-fits-free-memory")
    facts = {"cluster.memory_gib": 80.0, "launch.resident_gib": 16.0}
    assert not tripped([check], {**facts, "launch.engine_memory_fraction": 0.7})
    assert tripped([check], {**facts, "launch.engine_memory_fraction": 0.9})


SMALL = _scenario({}, steps=100)


@pytest.mark.parametrize(
    ("framework", "fraction", "budget", "per_gpu_of"),
    [
        ("verl", "actor_rollout_ref.rollout.gpu_memory_utilization",
         "actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "cp"),
        ("openrlhf", "vllm.gpu_memory_utilization", "train.max_tokens_per_gpu", "cp_tp"),
        ("nemo-rl", "policy.generation.vllm_cfg.gpu_memory_utilization",
         "policy.sequence_packing.train_mb_tokens", None),
        ("slime", "sglang-mem-fraction-static", "max-tokens-per-gpu", "cp"),
    ],
)  # fmt: skip
def test_every_export_writes_the_engine_memory_and_micro_batch_the_plan_assumed(
    framework: str, fraction: str, budget: str, per_gpu_of: str | None
) -> None:
    from rlmguide.export.startup import engine_fraction

    done = _export(SMALL, framework)
    written = {a.key: a.value for a in done.arguments}
    plan, train = done.plan, done.plan["train"]
    hbm = 81559 / 1024  # h100-sxm-80gb as its driver reports it
    starts_first = done.mapping.engine_starts_first
    assert written[fraction] == engine_fraction(plan, hbm, done.engine or "", starts_first)
    group = {"cp": train["cp"], "cp_tp": train["cp"] * train["tp"], None: 1}[per_gpu_of]
    tokens = written[budget] * group
    longest = 1024 + 8192
    assert longest <= tokens <= max(train["micro_batch_tokens"], longest + group - 1)


# -- algorithms as the frameworks run them -----------------------------------------------------

DAPO = _scenario({}, algorithm="dapo", max_response_tokens=20480, steps=200)
DAPO["run"] = {"oversampling": 1.5}


def _words(framework: str, data: dict[str, Any] = DAPO) -> dict[str, Any]:
    return {a.key: a.value for a in _export(data, framework).arguments}


@pytest.mark.parametrize("version", [V08, V07])
def test_verl_runs_dapo_through_its_recipe_trainer(version: str) -> None:
    done = _export(DAPO, "verl", version)
    assert done.launch.command == "python3 -m recipe.dapo.main_dapo"
    words = {a.key: a.value for a in done.arguments}
    # 1.5 x 256 prompts per generation batch; the last fifth of 20,480 tokens punished
    assert words["data.gen_batch_size"] == 384
    assert words["algorithm.filter_groups.enable"] is True
    assert words[OVERLONG[version]] == 4096
    assert words["actor_rollout_ref.actor.clip_ratio_high"] == 0.28
    assert words["trainer.total_training_steps"] == 200
    if version == V08:
        # the recipe's config always gives an overlong_buffer_cfg, beside which verl's dapo
        # reward manager asserts the response limit
        # (verl/experimental/reward_loop/reward_manager/dapo.py L39-L50 at v0.8.0)
        assert words["reward.reward_kwargs.max_resp_len"] == 20480


REWARD_KWARGS = {V07: ("reward_model.reward_manager", "+reward_model.reward_kwargs."),
                 V08: ("reward.reward_manager.name", "+reward.reward_kwargs.")}  # fmt: skip


@pytest.mark.parametrize("version", [V08, V07])
def test_dapo_one_step_off_on_verl_does_not_bill_an_oversampling_it_does_not_run(
    version: str,
) -> None:
    plan = {"placement": "disaggregated", "execution": "one-step-off"}
    with pytest.raises(NotExpressible, match="without dynamic sampling"):
        _export({**DAPO, "plan": plan}, "verl", version)
    unbilled = {k: v for k, v in DAPO.items() if k != "run"}
    done = _export({**unbilled, "plan": plan}, "verl", version)
    words = {a.key: a.value for a in done.arguments}
    manager, kwargs = REWARD_KWARGS[version]
    assert words[manager] == "dapo"
    assert words[f"{kwargs}overlong_buffer_cfg.len"] == 4096
    # the dapo reward manager asserts the limit beside a buffer and reads the buffer's log
    # switch at every scored response (verl/workers/reward_manager/dapo.py L45-L51, L123 at
    # b178a3cd; verl/experimental/reward_loop/reward_manager/dapo.py L39-L50, L115 at v0.8.0)
    assert words[f"{kwargs}max_resp_len"] == 20480
    assert words[f"{kwargs}overlong_buffer_cfg.log"] is False


@pytest.mark.parametrize(
    ("framework", "refill", "clip"),
    [
        ("openrlhf", ("algo.dynamic_filtering_enable", True),
         ("actor.eps_clip_low_high", [0.2, 0.28])),
        ("nemo-rl", ("grpo.batch_multiplier", 1.5), ("loss_fn.ratio_clip_max", 0.28)),
        ("slime", ("over-sampling-batch-size", 384), ("eps-clip-high", 0.28)),
    ],
)  # fmt: skip
def test_dapo_refills_and_clips_higher_on_every_framework(
    framework: str, refill: tuple[str, Any], clip: tuple[str, Any]
) -> None:
    words = _words(framework)
    assert words[refill[0]] == refill[1]
    assert words[clip[0]] == clip[1]


def test_openrlhf_writes_a_two_valued_flag_as_two_words() -> None:
    text = script(_export(DAPO, "openrlhf"), "test", "qwen2.5-7b")
    assert "--actor.eps_clip_low_high 0.2 0.28 \\" in text


@pytest.mark.parametrize(
    ("framework", "key"),
    [
        ("verl", "actor_rollout_ref.actor.kl_loss_coef"),
        ("openrlhf", "algo.kl.init_coef"),
        ("nemo-rl", "loss_fn.reference_policy_kl_penalty"),
        ("slime", "kl-loss-coef"),
    ],
)
def test_a_kl_loss_comes_with_its_coefficient(framework: str, key: str) -> None:
    words = _words(framework, _scenario({}))  # GRPO keeps a reference
    assert words[key] == 0.001


def test_verl_asks_for_the_validation_data_it_loads_before_training() -> None:
    done = _export(_scenario({}), "verl")
    assert {a.key: a.value for a in done.arguments}["data.val_files"] == "${VAL_DATA}"
    assert ': "${VAL_DATA:?' in script(done, "test", "qwen2.5-7b")


@pytest.mark.parametrize(
    ("framework", "key"),
    [
        ("verl", "actor_rollout_ref.rollout.max_num_batched_tokens"),
        ("nemo-rl", "+policy.generation.vllm_kwargs.max_num_batched_tokens"),
        ("slime", "sglang-chunked-prefill-size"),
    ],
)
def test_engines_schedule_the_tokens_their_workspace_was_costed_at(
    framework: str, key: str
) -> None:
    from rlmguide.export.startup import ENGINE_BATCHED_TOKENS

    assert _words(framework, SMALL)[key] == ENGINE_BATCHED_TOKENS == 8192


def test_openrlhf_launcher_asserts_bind_the_plan() -> None:
    from rlmguide.rules.frameworks import compile_constraints

    catalog, _ = catalogs()
    found = {c.id: c for c in compile_constraints(catalog)[0]}
    group = found["openrlhf-group-advantages-need-several-samples"]
    assert tripped([group], {"workload.algorithm": "grpo", "workload.samples_per_prompt": 1})
    assert not tripped([group], {"workload.algorithm": "ppo", "workload.samples_per_prompt": 1})
    batches = found["openrlhf-enough-sample-batches-for-the-actors"]
    plan = {"plan.train.gpus": 64, "plan.train.cp": 2, "plan.train.tp": 2}
    assert tripped([batches], {**plan, "workload.responses_per_step": 15})  # 64 / 4 = 16 ranks
    assert not tripped([batches], {**plan, "workload.responses_per_step": 16})


# -- what the frameworks' own start-up code asserts (bench/framework_checks.py) ---------------

MEGATRON_PLAN = {"placement": "colocated", "execution": "sync",
                 "train": {"tp": 2, "pp": 2, "cp": 1, "zero": 1, "recompute": "full"}}  # fmt: skip
MEGATRON_KL = _scenario(MEGATRON_PLAN)
"""GRPO keeps a reference; pipeline parallelism puts verl on Megatron."""


def _without(text: str, *needles: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not any(n in ln for n in needles)) + "\n"


@pytest.mark.parametrize("version", [V07, V08])
def test_verl_megatron_reference_gets_the_micro_batch_its_worker_asserts(
    tmp_path: Path, version: str
) -> None:
    """verl/workers/megatron_workers.py L365-L373 at 0.7: the reference role needs a log-prob
    micro-batch size; the export writes the plan's sequences per micro-batch (the token budget
    over the longest sequence, at least one). 0.8's model engine has no such assert."""
    done = _export(MEGATRON_KL, "verl", version)
    assert done.backend == "megatron-lm"
    words = {a.key: a.value for a in done.arguments}
    tokens = done.plan["train"]["micro_batch_tokens"]
    expected = max(1, tokens // (1024 + 8192))
    assert words["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"] == expected
    text = script(done, "test", "qwen2.5-7b")
    assert _review(tmp_path, text)["startup"] == []
    stripped = _without(text, "ref.log_prob_micro_batch_size_per_gpu")
    tripped_ids = [c["constraint"] for c in _review(tmp_path, stripped)["startup"]]
    assert tripped_ids == (["verl-megatron-reference-micro-batch-set"] if version == V07 else [])


def test_verl_megatron_reference_check_binds_only_with_a_reference() -> None:
    check = _check("verl-megatron-reference-micro-batch-set")
    assert tripped([check], {**ABSENT, "workload.needs_reference": True})
    assert not tripped([check], {**ABSENT, "workload.needs_reference": False})
    assert not tripped([check], {"workload.needs_reference": True, "launch.ref_micro_batch": 2})


ONE_STEP_OFF_PLAN = {"placement": "disaggregated", "execution": "one-step-off",
                     "train": {"tp": 1, "cp": 1, "zero": 3, "recompute": "full"}}  # fmt: skip
ONE_STEP_OFF_FSDP = _scenario(ONE_STEP_OFF_PLAN)


@pytest.mark.parametrize("version", [V07, V08])
def test_verl_one_step_off_writes_the_critic_strategy_without_a_critic(
    tmp_path: Path, version: str
) -> None:
    """verl/experimental/one_step_off_policy/main_ppo.py L87 at 0.7 asserts critic.strategy
    equals the actor's, critic or not; critic.strategy defaults to fsdp, the actor runs fsdp2.
    0.8's one-step-off trainer builds engine workers and asserts nothing about it."""
    done = _export(ONE_STEP_OFF_FSDP, "verl", version)
    assert (done.backend, done.plan["execution"]) == ("pytorch-fsdp", "one-step-off")
    words = {a.key: a.value for a in done.arguments}
    assert "critic.model.path" not in words  # GRPO: no critic
    assert words["critic.strategy"] == words["actor_rollout_ref.actor.strategy"] == "fsdp2"
    text = script(done, "test", "qwen2.5-7b")
    assert _review(tmp_path, text)["startup"] == []
    # the header names the version: without the key, 0.7's launch stops at its check
    stripped = _review(tmp_path, _without(text, "critic.strategy"))
    assert stripped["mapping"] == version
    tripping = [c["constraint"] for c in stripped["startup"]]
    assert tripping == (
        ["verl-one-step-off-critic-strategy-is-the-actors"] if version == V07 else []
    )
    # without the header either, a 0.7 file reads as 0.8's (the newest on a tie): no check
    bare = _review(tmp_path, _without(text, "critic.strategy", "# Mapping "))
    assert (bare["mapping"], bare["startup"]) == (V08, [])
    check = _check("verl-one-step-off-critic-strategy-is-the-actors")
    facts = {**ABSENT, "plan.execution": "one-step-off", "launch.critic_strategy": "fsdp",
             "launch.actor_strategy": "fsdp2"}  # fmt: skip
    mine = binding([check], catalogs()[1][version], "pytorch-fsdp", "vllm")
    assert tripped(mine, facts) == ([check.record] if version == V07 else [])
    sync = _export(_scenario({"placement": "colocated", "execution": "sync",
                              "train": {"zero": 3}}), "verl", version)  # fmt: skip
    assert "critic.strategy" not in {a.key for a in sync.arguments}


def _run(text: str, where: Path, tmp_path: Path) -> tuple[int, str, str]:
    """The script run by bash in `where`, with a `python3` that only says it started."""
    import os
    import subprocess

    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    (tools / "python3").write_text('#!/bin/sh\necho started "$1" "$2"\n')
    (tools / "python3").chmod(0o755)
    path = tmp_path / "launch.sh"
    path.write_text(text)
    values = {"MODEL_PATH": "m", "TRAIN_DATA": "t", "VAL_DATA": "v", "REWARD_FUNCTION": "r"}
    environment = {**os.environ, **values, "PATH": f"{tools}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", str(path)], cwd=where, env=environment, capture_output=True, text=True
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("scenario", "module", "files"),
    [
        (ONE_STEP_OFF_FSDP, "verl.experimental.one_step_off_policy.main_ppo",
         ["verl/experimental/one_step_off_policy/main_ppo.py", "verl/trainer/config/x.yaml"]),
        ({**DAPO, "plan": {"placement": "colocated", "execution": "sync"}},
         "recipe.dapo.main_dapo",
         ["recipe/dapo/main_dapo.py", "verl/trainer/config/x.yaml"]),
    ],
    ids=["one-step-off", "dapo-recipe"],
)  # fmt: skip
@pytest.mark.parametrize(("version", "commit"), [(V08, "7aed6b230776"), (V07, "b178a3cd56f5")])
def test_verl_checkout_only_launches_stop_outside_a_checkout_root(
    scenario: dict[str, Any], module: str, files: list[str], version: str, commit: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The one-step-off trainer (at b178a3cd without __init__.py: not in an installed verl) and
    the DAPO recipe (a submodule) resolve their Hydra searchpath file://verl/trainer/config (and
    the recipe its module) against the working folder: the script says so and stops, instead
    of failing inside Hydra."""
    done = _export(scenario, "verl", version)
    assert done.launch.command == f"python3 -m {module}"
    text = script(done, "test", "qwen2.5-7b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = _run(text, elsewhere, tmp_path)
    assert code == 2 and "started" not in out
    assert f"root of a verl checkout at {commit}" in err
    checkout = tmp_path / "verl-checkout"
    for name in files:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("")
    code, out, err = _run(text, checkout, tmp_path)
    assert (code, out.split()) == (0, ["started", "-m", module]), err


def test_verl_launches_of_an_installed_module_check_no_checkout() -> None:
    text = script(_export(SMALL, "verl"), "test", "qwen2.5-7b")
    assert "python3 -m verl.trainer.main_ppo" in text and "checkout" not in text


C250 = "openrlhf-0.8.9.post1-5-gc250c21a"


def _export_version(data: dict[str, Any], framework: str, version: str) -> Any:
    catalog, mappings = catalogs()
    resolved = resolve(parse_scenario(data, "test"), catalog.records)
    return build(resolved, catalog, mappings, framework, version)


def test_openrlhf_before_the_dotted_flags_trains_in_bf16(tmp_path: Path) -> None:
    """At c250c21a --bf16 defaults to false (fp32 DeepSpeed) and DeepSpeed's tensor
    parallelism asserts it (openrlhf/utils/deepspeed/deepspeed.py L73-L75). ZeRO-2: the
    DeepSpeed this version pins refuses AutoTP at stage 3 (the test below)."""
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 2, "cp": 1, "zero": 2, "recompute": "full"}}  # fmt: skip
    done = _export_version(_scenario(plan), "openrlhf", C250)
    words = {a.key: a.value for a in done.arguments}
    assert words["bf16"] is True and words["ds_tensor_parallel_size"] == 2
    text = script(done, "test", "qwen2.5-7b")
    assert "    --bf16 \\" in text
    flags = ("--framework", "openrlhf")
    assert _review(tmp_path, text, *flags)["startup"] == []
    tripped_ids = [c["constraint"] for c in _review(tmp_path, _without(text, "--bf16"), *flags)
                   ["startup"]]  # fmt: skip
    assert tripped_ids == ["openrlhf-deepspeed-tensor-parallel-needs-bf16"]


def test_openrlhf_before_the_dotted_flags_keeps_autotp_below_zero_3(tmp_path: Path) -> None:
    """c250c21a pins deepspeed==0.17.4 (requirements.txt L4), whose engine asserts ZeRO <= 2 once
    tensor_parallel.autotp_size is above 1 (deepspeed/runtime/engine.py L444-L454 at v0.17.4);
    0.11 pins DeepSpeed 0.19.5, which dropped the assert. A TP-2 plan fixed at ZeRO-3 is refused
    at 0.8 and exported at 0.11; at 0.8 it exports at ZeRO-2, and the same script edited back to
    --zero_stage 3 is reported as the start-up stop."""
    zero3 = {"placement": "colocated", "execution": "sync",
             "train": {"tp": 2, "cp": 1, "zero": 3, "recompute": "full"}}  # fmt: skip
    with pytest.raises(NotExpressible, match=r"openrlhf-autotp-zero-at-most-2-v0\.8"):
        _export_version(_scenario(zero3), "openrlhf", C250)
    newer = {a.key: a.value for a in _export(_scenario(zero3), "openrlhf").arguments}
    assert (newer["ds.tensor_parallel_size"], newer["ds.zero_stage"]) == (2, 3)
    zero2 = {**zero3, "train": {**zero3["train"], "zero": 2}}
    text = script(_export_version(_scenario(zero2), "openrlhf", C250), "test", "qwen2.5-7b")
    assert "    --zero_stage 2" in text
    flags = ("--framework", "openrlhf")
    assert _review(tmp_path, text, *flags)["startup"] == []
    edited = text.replace("--zero_stage 2", "--zero_stage 3")
    tripped_ids = [c["constraint"] for c in _review(tmp_path, edited, *flags)["startup"]]
    assert tripped_ids == ["openrlhf-autotp-zero-at-most-2-v0.8"]


def test_openrlhf_before_the_dotted_flags_has_a_sample_batch_per_actor_rank() -> None:
    """The launcher's assert at c250c21a (train_ppo_ray.py L560-L563) by hand: 16 samples x
    1024 prompts over the default 8 per micro-batch is 2048 sample batches, fewer than 512 nodes
    x 8 GPUs of actor ranks; one per micro-batch (what the export writes) is 16384."""
    check = _check("openrlhf-sample-batches-cover-the-actor-ranks")
    ranks = {"plan.train.gpus": 4096, "plan.train.cp": 1, "plan.train.tp": 1}
    facts = {**ranks, "workload.responses_per_step": 16 * 1024}
    assert tripped([check], {**facts, "launch.rollout_micro_batch": 8})
    assert not tripped([check], {**facts, "launch.rollout_micro_batch": 4})
    assert not tripped([check], {**facts, "launch.rollout_micro_batch": 1})
    words = {a.key: a.value for a in _export_version(SMALL, "openrlhf", C250).arguments}
    assert words["micro_rollout_batch_size"] == 1


def test_slime_sets_the_connections_megatron_asserts_for_tensor_parallelism() -> None:
    """Megatron's validate_args (megatron/training/arguments.py L948-L952 at 1dcf0da), which
    slime's parse_args runs in the driver, asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP
    above 1 before Blackwell; the training actors get it through --train-env-vars."""
    from rlmguide.review.shell import command_arguments

    done = _export(MEGATRON_KL, "slime")
    assert done.plan["train"]["tp"] == 2
    text = script(done, "test", "qwen2.5-7b")
    inputs = {"MODEL_ARGS_SCRIPT": "/dev/null", "MODEL_PATH": "m"}
    words, shell = command_arguments(text, "train", inputs)
    assert shell.variables["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    at = words.index("--train-env-vars")
    assert json.loads(words[at + 1]) == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def test_openrlhf_plans_run_at_the_engine_concurrency_it_cannot_set() -> None:
    """OpenRLHF 0.11.0 has no flag for the engines' concurrency and starts vLLM's
    AsyncLLMEngine, whose engine context takes SchedulerConfig's 128 sequences: its export and
    `recommend --framework openrlhf` cost the plan at no more, alike. The older mapping, whose
    synchronous entry points run vLLM's LLM class (1024 on an H100), and verl, which writes the
    plan's max_num_seqs, are not capped."""
    from rlmguide.rules.recommend import recommend, recommender_for
    from rlmguide.rules.scenario import read_mapping

    data = read_mapping(Path(__file__).parent.parent / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
    capped = _export(data, "openrlhf")
    assert capped.mapping.engine_max_seqs == 128
    assert capped.plan["rollout_concurrency"] == 128
    catalog, _ = catalogs()
    resolved = resolve(parse_scenario(data, "test"), catalog.records)
    (ranked,) = recommend(recommender_for(resolved, catalog, only="openrlhf"), 1)["plans"]
    assert ranked["step_seconds"] == capped.plan["step_seconds"]
    older = _export_version(data, "openrlhf", C250)
    assert older.plan["rollout_concurrency"] > 128
    assert older.plan["step_seconds"] < capped.plan["step_seconds"]


# -- slime's per-model architecture scripts ----------------------------------------------------


def test_slime_refuses_a_policy_it_has_no_architecture_script_for() -> None:
    # slime 624b824a has scripts/models/llama3.1-8B-Instruct.sh but none for Llama-3.1-70B
    with pytest.raises(NotExpressible, match=r"no architecture script for llama-3\.1-70b"):
        _export(_scenario({}, policy="llama-3.1-70b"), "slime")
    assert _export(_scenario({}, policy="llama-3.1-8b"), "slime").framework == "slime"
    # the other frameworks load the architecture from the checkpoint
    assert _export(_scenario({}, policy="llama-3.1-70b"), "verl").framework == "verl"


def test_slime_scripts_name_costable_models_and_cover_its_deployments() -> None:
    catalog, mappings = catalogs()
    (slime,) = [m for m in mappings.values() if m.framework == "slime"]
    models = catalog.of("model")
    assert slime.model_scripts
    for model, path in slime.model_scripts.items():
        assert models[model].layers, model  # an architecture to cost, not a name only
        assert path.startswith("scripts/models/") and path.endswith(".sh")
    deployments = load_catalog(record_roots(), ("deployment",)).of("deployment")
    policies = {d.scenario.models.policy for d in deployments.values() if d.framework == "slime"}
    assert policies <= slime.model_scripts.keys()


def test_slime_refuses_a_reward_model_pool_for_a_policy_it_has_a_script_for() -> None:
    # the bundled 70B PPO example is refused for its architecture first; slime's want of a
    # reward-model pool (only a remote scorer behind --rm-url) still refuses a 7B PPO
    data = _scenario({}, algorithm="ppo")
    data["models"]["reward"] = "qwen2.5-7b"
    with pytest.raises(NotExpressible, match=r"workload\.reward_model = true"):
        _export(data, "slime")


SMALL_GPUS = {
    # the audit's a07: Qwen2.5-1.5B GRPO on one node of four A100-40GB, 16k responses
    "cluster": {"accelerator": "a100-sxm-40gb", "nodes": 1, "gpus_per_node": 4},
    "models": {"policy": "qwen2.5-1.5b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
                 "prompt_tokens": 512, "response_tokens": 4096, "max_response_tokens": 16384,
                 "minibatches_per_step": 2},
}  # fmt: skip


@pytest.mark.parametrize(
    "framework", ["verl", "openrlhf", "slime", "nemo-rl", "areal", "roll", "skyrl"]
)
def test_the_reported_rollout_memory_is_what_the_engine_takes_at_the_written_fraction(
    framework: str,
) -> None:
    # vLLM reserves gpu_memory_utilization x HBM and SGLang mem_fraction_static x the memory
    # free at its start (plus the workspace it keeps outside) whether the KV fills it or not;
    # beside it stays what the trainer keeps resident. On 4 x A100-40GB (40 GiB as the driver
    # shows it) every plan's engine takes its whole budget, 0.9 x 40 = 36 GiB with the trainer.
    # By hand for verl: 0.738 x 40 = 29.52 GiB + the FSDP trainer's 6.47 GiB resident = 35.99.
    from rlmguide.export.startup import gpu_share

    done = _export(SMALL_GPUS, framework)
    written = {a.fact: a.value for a in done.arguments}
    plan = done.plan
    terms = plan["memory_breakdown_gib"]["rollout"]
    share = gpu_share(
        written["launch.engine_memory_fraction"], plan, 40.0, done.engine or "",
        done.mapping.engine_starts_first,
    )  # fmt: skip
    held = share * 40.0 + terms["trainer_state"]
    reported = plan["memory_gib_per_gpu"]["rollout"]
    assert reported == pytest.approx(36.0, abs=1e-6)
    # the written fraction is rounded down to three decimals: 0.001 x 40 GiB at most
    assert held == pytest.approx(reported, abs=0.04)
    if framework == "verl":
        assert written["launch.engine_memory_fraction"] == 0.738
        assert terms["trainer_state"] == pytest.approx(6.47, abs=0.005)
    # what the plan's KV fills is less than the engine reserves (the figure reported before)
    filled = terms["weights"] + terms["kv_cache"] + terms["workspace"] + terms["trainer_state"]
    assert filled < reported - 1.0


def test_verl_reward_engine_share_by_hand() -> None:
    # verl 0.8 serves a reward model by an engine of its own that wakes, beside the same resident
    # trainer state, only after the rollout engine sleeps: it gets the rollout engine's share, or
    # what its weights at the training TP and the workspace need. RESIDENT: a 0.45 share beside
    # 36 GiB of trainer state.
    from rlmguide.export.startup import reward_engine_fraction

    check = _check("verl-reward-engine-fits-beside-the-trainer")
    base = {"cluster.memory_gib": 80.0, "workload.reward_model": True, "plan.pools.reward": 0}

    def share(weights_gib: float, tp: int) -> float:
        facts = {"model.reward_weights_gib": weights_gib, "plan.train.tp": tp}
        return reward_engine_fraction(RESIDENT, facts, 0.45, 80.0, "vllm")

    # an 8B reward model (14.96 GiB) at TP 1: (14.96 + 1) / 80 = 0.1995 < 0.45: the rollout share
    assert share(14.96, 1) == 0.45
    # a 32B one (61 GiB) at TP 1: (61 + 1) / 80 = 0.775, more than 80 - 36 = 44 GiB free: the
    # start-up check trips; at TP 4, (15.25 + 1) / 80 = 0.203: the rollout share, which fits
    big = share(61.0, 1)
    assert big == 0.775
    facts = {**base, "launch.resident_gib": 36.0}
    assert tripped([check], {**facts, "launch.reward_engine_memory_fraction": big})
    assert not tripped([check], {**facts, "launch.reward_engine_memory_fraction": share(61.0, 4)})


def test_verl_writes_the_reward_engine_share_the_plan_holds() -> None:
    # the audit's a09: REINFORCE++ on Llama-3.1-8B with an 8B reward model on 8 x A100-80GB.
    # verl's default for the reward engine is 0.5 (_generated_ppo_trainer.yaml L711 at 7aed6b23);
    # the export writes the rollout engine's share, which the plan's rollout memory holds
    data = {
        "cluster": {"accelerator": "a100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
        "models": {"policy": "llama-3.1-8b", "reward": "skywork-reward-llama-3.1-8b"},
        "workload": {"algorithm": "reinforce-plus-plus", "prompts_per_step": 256,
                     "samples_per_prompt": 1, "prompt_tokens": 1024, "response_tokens": 2048,
                     "max_response_tokens": 4096, "minibatches_per_step": 2},
    }  # fmt: skip
    done = _export(data, "verl", "verl-0.8.0")
    written = {a.key: a.value for a in done.arguments}
    actor = written["actor_rollout_ref.rollout.gpu_memory_utilization"]
    assert written["reward.reward_model.rollout.gpu_memory_utilization"] == actor
    terms = done.plan["memory_breakdown_gib"]["rollout"]
    assert actor * 80.0 + terms["trainer_state"] <= 80.0


@pytest.mark.parametrize(
    ("framework", "version", "check"),
    [
        ("verl", V08, "verl-fsdp-model-type-known-to-transformers-v0.8"),
        ("areal", "areal-1.0.4-17-g4aef98d8d", "areal-fsdp-model-type-known-to-transformers"),
        ("areal", "areal-2.0.0", "areal-fsdp-model-type-known-to-transformers"),
    ],
)
def test_fsdp_refuses_a_model_type_the_pinned_transformers_cannot_read(
    framework: str, version: str, check: str
) -> None:
    # the audit's a06: DeepSeek-V3.2 (config.json model_type deepseek_v32, no remote code) on
    # 64 x H200; transformers 5.3.0 (verl's image, AReaL's pyproject) has no deepseek_v32 config,
    # so AutoConfig stops the FSDP engine before training
    plan = {"train": {"tp": 1, "pp": 1, "ep": 1}}
    data = _scenario(plan, "deepseek-v3.2", prompt_tokens=2048, response_tokens=8000,
                     max_response_tokens=32768, prompts_per_step=512)  # fmt: skip
    data["cluster"] = {"accelerator": "h200-sxm-141gb", "nodes": 64, "gpus_per_node": 8}
    with pytest.raises(NotExpressible, match=f"constraint {check}"):
        _export(data, framework, version)


def test_openrlhf_0_8_refuses_a_model_type_its_pinned_transformers_cannot_read() -> None:
    # audit9's sweep: Qwen3.5-27B (model_type qwen3_5) on 16 x H100; OpenRLHF 0.8.9 pins
    # transformers 4.55.2, which has no qwen3_5 config, so the actor's from_pretrained stops at
    # start-up; OpenRLHF 0.11's transformers 5.15.0 reads it
    data = _scenario({}, "qwen3.5-27b")
    data["cluster"]["nodes"] = 2
    check = re.escape("constraint openrlhf-model-type-known-to-transformers-v0.8")
    with pytest.raises(NotExpressible, match=check):
        _export(data, "openrlhf", "openrlhf-0.8.9.post1-5-gc250c21a")
    assert _export(data, "openrlhf", "openrlhf-0.11.0").arguments


def test_openrlhf_0_8_keeps_zero_3_to_moe_blocks_it_makes_deepspeed_leaves() -> None:
    # audit9's c06: GLM-4.5-Air exported to OpenRLHF 0.8.9 at ZeRO-3. Its Glm4MoeMoE (transformers
    # 4.55.2) runs only the experts that got tokens and is no *SparseMoeBlock, so OpenRLHF sets no
    # DeepSpeed leaf (actor.py L119-L133) and ranks gather different experts; Qwen3-MoE gets one
    plan = {"placement": "colocated", "execution": "sync", "train": {"zero": 3}}
    old, new = "openrlhf-0.8.9.post1-5-gc250c21a", "openrlhf-0.11.0"
    glm = _scenario(plan, "glm-4.5-air")
    glm["cluster"] = {"accelerator": "h200-sxm-141gb", "nodes": 4, "gpus_per_node": 8}
    check = re.escape("constraint openrlhf-zero3-moe-needs-a-leaf-block-v0.8")
    with pytest.raises(NotExpressible, match=check):
        _export(glm, "openrlhf", old)
    assert _export(glm, "openrlhf", new).arguments
    qwen = _scenario(plan, "qwen3-30b-a3b")
    qwen["cluster"]["nodes"] = 2
    assert _export(qwen, "openrlhf", old).arguments


@pytest.mark.parametrize("version", ["openrlhf-0.8.9.post1-5-gc250c21a", "openrlhf-0.11.0"])
def test_openrlhf_autotp_stays_within_the_kv_heads(version: str) -> None:
    # DeepSpeed's AutoTP cuts q, k and v by whole KV-head groups (tp_shard.py L42-L56 at v0.17.4):
    # Qwen3-30B-A3B's 4 KV heads leave ranks 4-7 of a TP-8 group empty, and the attention's view(-1)
    # of an empty tensor stops the first forward (audit9's c06: GLM-4.5-Air, 8 KV heads, at TP 16)
    plan = {"placement": "colocated", "execution": "sync", "train": {"zero": 1}}
    wide = _scenario({**plan, "train": {**plan["train"], "tp": 8}}, "qwen3-30b-a3b")
    check = re.escape("constraint openrlhf-autotp-at-most-kv-heads")
    with pytest.raises(NotExpressible, match=check):
        _export(wide, "openrlhf", version)
    narrow = _scenario({**plan, "train": {**plan["train"], "tp": 4}}, "qwen3-30b-a3b")
    written = {a.key: a.value for a in _export(narrow, "openrlhf", version).arguments}
    assert 4 in (written.get("ds_tensor_parallel_size"), written.get("ds.tensor_parallel_size"))


def test_openrlhf_0_11_refuses_a_moe_refit_into_vllm_on_blackwell() -> None:
    """OpenRLHF 0.11 installs vLLM 0.27.1, which runs bf16 experts in FlashInfer TRTLLM's block
    layout on compute capability 10.x, and refits with load_weights alone
    (vllm_worker_wrap.py L48, L69 at 3c3be623), which cannot write bf16 rows into that layout;
    nothing in its CLI reaches vLLM's moe_backend. Hopper keeps Triton; 0.8.9's vLLM 0.10.0 is
    not judged (audit10's d02 exported Qwen3-30B-A3B on GB200 to 0.11)."""
    plan = {"placement": "colocated", "execution": "sync"}
    blackwell = _scenario(plan, "qwen3-30b-a3b")
    blackwell["cluster"] = {"accelerator": "b200-sxm-180gb", "nodes": 2, "gpus_per_node": 8}
    refusal = re.escape("openrlhf-vllm-moe-refit-not-on-blackwell-v0.11")
    with pytest.raises(NotExpressible, match=refusal):
        _export(blackwell, "openrlhf")
    assert _export_version(blackwell, "openrlhf", C250).arguments
    assert _export(_scenario(plan, "qwen3-30b-a3b"), "openrlhf").arguments
    dense = _scenario(plan, "qwen3-8b")
    dense["cluster"] = blackwell["cluster"]
    assert _export(dense, "openrlhf").arguments


@pytest.mark.parametrize(("policy", "refused"), [("gpt-oss-20b", True), ("qwen3-30b-a3b", False)])
def test_openrlhf_0_8_9_refuses_an_architecture_its_vllm_does_not_list(
    policy: str, refused: bool
) -> None:
    """audit11's e09: gpt-oss exported to OpenRLHF 0.8.9, whose vllm==0.10.0 (setup.py L77 at
    c250c21a) has no GptOssForCausalLM in its model registry and stops the engine
    (registry.py L451-L461); 0.11's vLLM 0.27.1 runs it."""
    data = _scenario({"placement": "colocated", "execution": "sync"}, policy)
    data["cluster"] = {"accelerator": "h100-sxm-80gb", "nodes": 2, "gpus_per_node": 8}
    if refused:
        refusal = re.escape("openrlhf-vllm-0.10.0-lacks-newer-architectures-v0.8")
        with pytest.raises(NotExpressible, match=refusal):
            _export_version(data, "openrlhf", C250)
        assert _export(data, "openrlhf").arguments
    else:
        assert _export_version(data, "openrlhf", C250).arguments


SGLANG_MOE_REFIT = "slime-sglang-moe-refit-needs-triton-runner"


@pytest.mark.parametrize(
    ("policy", "runner"),
    [("qwen3-30b-a3b", "triton"), ("glm-4.5-air", "triton"), ("qwen3-8b", None)],
)
def test_slime_keeps_sglangs_moe_runner_on_triton_for_a_blackwell_refit(
    policy: str, runner: str | None, tmp_path: Path
) -> None:
    """SGLang 0.5.15.post1 moves a bf16 Qwen3-MoE or GLM-4.5 left at auto to FlashInfer TRT-LLM on
    compute capability 10.x (arg_groups/overrides.py L835-L894), whose block layout a refit that
    only calls load_weights cannot copy into (unquant.py L341-L424); slime reruns SGLang's
    post-load step only for compressed-tensors (update_weight_from_tensor.py L278-L331 at
    624b824). The export writes --sglang-moe-runner-backend triton on 10.x; review reports the
    same script without it on B200 and GB200, not on H100 (no TRT-LLM there)."""
    data = _scenario({"placement": "colocated", "execution": "sync"}, policy)
    data["cluster"] = {"accelerator": "b200-sxm-180gb", "nodes": 2, "gpus_per_node": 8}
    done = _export(data, "slime")
    written = {a.key: a.value for a in done.arguments}
    assert written.get("sglang-moe-runner-backend") == runner
    if runner is None:
        return
    text = script(done, "test", policy)
    path = tmp_path / "launch.sh"

    def stops(accelerator: str) -> list[str]:
        flags = ("--accelerator", accelerator, "--policy", policy)
        return [c["constraint"] for c in review_json(path, *flags)["startup"]]

    path.write_text(text)
    assert stops("b200-sxm-180gb") == []
    path.write_text("\n".join(line for line in text.splitlines() if "moe-runner" not in line))
    assert stops("b200-sxm-180gb") == [SGLANG_MOE_REFIT]
    assert stops("gb200-186gb") == [SGLANG_MOE_REFIT]
    assert stops("h100-sxm-80gb") == []
    # elsewhere SGLang keeps its own choice (a bf16 NemotronH runs FlashInfer CUTLASS on Hopper)
    data["cluster"]["accelerator"] = "h100-sxm-80gb"
    assert "sglang-moe-runner-backend" not in {a.key for a in _export(data, "slime").arguments}


def test_verl_0_8_keeps_sglangs_moe_runner_on_triton_for_a_blackwell_refit(tmp_path: Path) -> None:
    """verl 0.8's SGLang image (v0.5.12) runs a bf16 Qwen3-MoE's experts in FlashInfer TRT-LLM on
    10.x (server_args.py L2286-L2311) and verl refits it with load_weights alone
    (sglang_rollout.py L295-L359 at 7aed6b23). The export's Qwen3-30B-A3B launch on B200, moved
    to SGLang by hand, passes with engine_kwargs.sglang.moe_runner_backend=triton (the key verl's
    export writes on SGLang) and is reported without it; Hopper keeps Triton by itself."""
    moe = _scenario({"placement": "colocated", "execution": "sync"}, "qwen3-30b-a3b")
    moe["cluster"] = {"accelerator": "b200-sxm-180gb", "nodes": 1, "gpus_per_node": 8}
    text = script(_export(moe, "verl", V08), "test", "qwen3-30b-a3b")
    runner = "+actor_rollout_ref.rollout.engine_kwargs.sglang.moe_runner_backend=triton"
    text = text.replace("rollout.name=vllm", "rollout.name=sglang").replace(
        "+actor_rollout_ref.rollout.engine_kwargs.vllm.moe_backend=triton", runner
    )
    path = tmp_path / "launch.sh"
    flags = ("--accelerator", "b200-sxm-180gb", "--policy", "qwen3-30b-a3b")
    path.write_text(text)
    reviewed = review_json(path, *flags)
    assert reviewed["rollout_engine"] == "sglang"
    assert reviewed["startup"] == []
    path.write_text("\n".join(line for line in text.splitlines() if "moe_runner" not in line))
    stops = [c["constraint"] for c in review_json(path, *flags)["startup"]]
    assert stops == ["verl-sglang-moe-refit-needs-triton-runner-v0.8"]
    check = _check("verl-sglang-moe-refit-needs-triton-runner-v0.8")
    facts = {"model.type": "qwen3_moe", "launch.sglang_moe_runner_backend": "auto"}
    assert tripped([check], {**facts, "cluster.compute_capability": 10.0})
    assert not tripped([check], {**facts, "cluster.compute_capability": 9.0})
    glm = {**facts, "model.type": "glm4_moe", "cluster.compute_capability": 10.0}
    assert not tripped([check], glm)  # 0.5.12 moves GLM-4.5 only for modelopt_fp4


@pytest.mark.parametrize(
    ("model_type", "capability", "refused"),
    [
        ("qwen3_moe", 10.0, True),
        ("qwen3_moe", 10.3, True),
        ("qwen3_5_moe", 10.0, True),
        ("qwen3_moe", 9.0, False),
        ("qwen3_moe", 8.0, False),
        # SGLang 0.5.10.post1 moves GLM-4.5 to TRT-LLM only for modelopt_fp4 (server_args.py
        # L2007-L2025), NemotronH's quantized checkpoints to CUTLASS (L1919-L1940)
        ("glm4_moe", 10.0, False),
        ("nemotron_h", 10.0, False),
    ],
)
def test_areal_sglang_refit_check_follows_sglangs_blackwell_override(
    model_type: str, capability: float, refused: bool
) -> None:
    """AReaL's SGLang (0.5.10.post1) runs a bf16 Qwen3-MoE family policy's experts in FlashInfer
    TRT-LLM on 10.x (server_args.py L1952-L1975) and its SGLangConfig has no field to move them
    back (cli_args.py L1924-L2074 at fee938ea): the refit's copy fails there and only there."""
    from rlmguide.rules.expr import Condition
    from rlmguide.rules.facts import FACTS

    record = catalogs()[0].of("constraint")["areal-sglang-moe-refit-not-on-blackwell"]
    facts = {"model.type": model_type, "cluster.compute_capability": capability}
    assert bool(Condition(record.condition, FACTS).evaluate(facts)) is not refused


@pytest.mark.parametrize("version", [None, "areal-1.0.4-17-g4aef98d8d"])
def test_areal_runs_a_blackwell_moe_refit_on_vllm(version: str | None) -> None:
    """With SGLang refused for Qwen3-30B-A3B on B200, AReaL's export takes its vLLM (0.19.1,
    whose oracle keeps Triton unless VLLM_USE_FLASHINFER_MOE_FP16 is set: oracle/unquantized.py
    L103-L110, L143-L176), which AReaL runs disaggregated only; on H100 and for a dense policy
    on B200 it still chooses SGLang. A colocated plan is refused naming the record."""
    plan: dict[str, Any] = {}
    moe = _scenario(plan, "qwen3-30b-a3b", prompts_per_step=64, samples_per_prompt=8)
    moe["cluster"] = {"accelerator": "b200-sxm-180gb", "nodes": 1, "gpus_per_node": 8}
    assert _export(moe, "areal", version).engine == "vllm"
    dense = _scenario(plan, "qwen3-8b", prompts_per_step=64, samples_per_prompt=8)
    dense["cluster"] = moe["cluster"]
    assert _export(dense, "areal", version).engine == "sglang"
    colocated = {**moe, "plan": {"placement": "colocated"}}
    with pytest.raises(NotExpressible, match="constraint areal-sglang-moe-refit-not-on-blackwell"):
        _export(colocated, "areal", version)
    moe["cluster"] = {**moe["cluster"], "accelerator": "h100-sxm-80gb"}
    assert _export(moe, "areal", version).engine == "sglang"


@pytest.mark.parametrize("version", [C250, "openrlhf-0.11.0"])
def test_review_costs_an_openrlhf_lora_launch_as_lora(version: str, tmp_path: Path) -> None:
    """audit10's d06: review read --ds.lora.rank 64 into plan.train.lora_rank but built the plan
    without it, so OpenRLHF's own LoRA export of Qwen2.5-32B on 8 H100s came back as full
    fine-tuning, Adam over all 32.8 B parameters (45.8 GiB a GPU at ZeRO-3 over 8), "fits: no".
    By hand, rank-64 adapters on q, k, v, o, gate, up and down of 64 layers are 64 x 64 x
    (2 x 10240 + 2 x 6144 + 3 x 32768) = 537 M parameters: Adam's 12 bytes each over 8 ranks
    is 0.75 GiB."""
    lora = _scenario(
        {"placement": "colocated", "execution": "sync", "train": {"lora_rank": 64}}, "qwen2.5-32b"
    )
    lora["cluster"] = {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8}
    lora["workload"] |= {"prompts_per_step": 64, "samples_per_prompt": 8, "response_tokens": 2048,
                         "max_response_tokens": 4096, "minibatches_per_step": 2}  # fmt: skip
    path = tmp_path / "launch.sh"
    path.write_text(script(_export_version(lora, "openrlhf", version), "test", "qwen2.5-32b"))
    estimate = review_json(path, "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-32b")[
        "estimate"
    ]
    assert estimate["train"]["lora_rank"] == 64
    assert estimate["feasible"]
    optimizer = estimate["memory_breakdown_gib"]["training"]["optimizer"]
    assert optimizer == pytest.approx(537e6 * 12 / 8 / 2**30, rel=0.01)


MPE = "max_position_embeddings"
VERL_CONTEXT = [f"+actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides.{MPE}",
                f"+actor_rollout_ref.model.override_config.{MPE}"]  # fmt: skip
LONG_CONTEXT_KEYS = {
    # the engine's key first, then the trainer's: both must carry the same positions
    ("verl", V08): VERL_CONTEXT,
    ("verl", V07): VERL_CONTEXT,
    ("skyrl", None): [f"generator.inference_engine.engine_init_kwargs.hf_overrides.{MPE}",
                      f"trainer.policy.model_config_kwargs.{MPE}",
                      f"trainer.ref.model_config_kwargs.{MPE}"],
    ("roll", None): [f"actor_infer.strategy_args.strategy_config.hf_overrides.{MPE}",
                     f"actor_train.model_args.model_config_kwargs.{MPE}"],
}  # fmt: skip


@pytest.mark.parametrize(("framework", "version"), list(LONG_CONTEXT_KEYS))
def test_engine_and_trainer_get_the_context_the_scenario_configures(
    framework: str, version: str | None
) -> None:
    # audit7's m11 shape: Qwen3-8B's config stops at 40,960 positions; 1,024 + 65,536 tokens need
    # the run's 131,072. Without the override vLLM's max_model_len is the config's and every
    # response stops near 40k (verl, ROLL and SkyRL pass vLLM no longer one)
    plan = {"placement": "colocated", "execution": "sync",
            "train": {"tp": 1, "pp": 1, "cp": 2, "zero": 3, "recompute": "full"}}  # fmt: skip
    data = _scenario(plan, "qwen3-8b", response_tokens=24000, max_response_tokens=65536)
    data["models"]["context_tokens"] = 131072
    done = _export(data, framework, version)
    written = {a.key: a.value for a in done.arguments}
    assert done.engine == "vllm"
    assert done.backend == "pytorch-fsdp"
    for key in LONG_CONTEXT_KEYS[framework, version]:
        assert written.get(key) == 131072, key
    assert any("writes no RoPE scaling" in d for d in done.departures)
    short = _export(_scenario(plan, "qwen3-8b"), framework, version)  # 1,024 + 8,192 fit
    assert not {a.key for a in short.arguments} & set(LONG_CONTEXT_KEYS[framework, version])
    assert not any("writes no RoPE scaling" in d for d in short.departures)


@pytest.mark.parametrize(
    ("framework", "backend", "engine", "check"),
    [
        ("verl", "pytorch-fsdp", "sglang", "verl-sglang-context-within-the-checkpoint"),
        ("roll", "pytorch-fsdp", "sglang", "roll-sglang-context-within-the-checkpoint"),
        ("roll", "megatron-lm", "vllm", "roll-megatron-config-from-the-checkpoint"),
    ],
)
def test_a_context_beyond_the_config_is_refused_where_no_key_reaches_both(
    framework: str, backend: str, engine: str, check: str
) -> None:
    # verl's and ROLL's SGLang take a config change only as a JSON string, ROLL's Megatron
    # trainer none: a launch there with a context beyond the record stops at the check
    catalog, mappings = catalogs()
    checks = compile_checks(catalog)[0]
    mapping = next(m for m in mappings.values() if m.framework == framework)
    bound = {c.id for c in binding(checks, mapping, backend, engine)}
    assert check in bound
    (compiled,) = [c for c in checks if c.id == check]
    assert [r.id for r in tripped([compiled], {"launch.context_positions": 131072})] == [check]
    assert not tripped([compiled], {"launch.context_positions": 0})
    other = "vllm" if engine == "sglang" else engine
    other_backend = "pytorch-fsdp" if backend == "megatron-lm" else backend
    assert check not in {c.id for c in binding(checks, mapping, other_backend, other)}
