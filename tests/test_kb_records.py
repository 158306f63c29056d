"""The shipped knowledge base: valid, complete enough for the seed, and every fact cited."""

from __future__ import annotations

import functools

import pytest
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.validate import validate


@functools.cache
def shipped() -> Catalog:
    return load_catalog([*DEFAULT_ROOTS, RULES_ROOT])


def test_shipped_records_validate() -> None:
    errors = [str(p) for p in validate(shipped()) if p.severity == "error"]
    assert errors == []


@pytest.mark.parametrize(
    ("kind", "ids"),
    [
        (
            "framework",
            {"verl", "openrlhf", "trl", "deepspeed-chat", "nemo-rl", "areal", "slime", "roll"},
        ),
        ("algorithm", {"ppo", "grpo", "dapo", "rloo", "reinforce-plus-plus", "gspo"}),
        (
            "technique",
            {
                "data-parallelism",
                "tensor-parallelism",
                "pipeline-parallelism",
                "sequence-parallelism",
                "context-parallelism",
                "expert-parallelism",
                "colocated-placement",
                "disaggregated-placement",
                "stage-fusion",
                "hybrid-engine-resharding",
                "asynchronous-execution",
                "partial-rollout",
            },
        ),
    ],
)
def test_seed_records_exist(kind: str, ids: set[str]) -> None:
    assert ids <= set(shipped().of(kind))


@pytest.mark.parametrize(("kind", "minimum"), [("accelerator", 8), ("model", 12), ("framework", 8)])
def test_catalog_sizes(kind: str, minimum: int) -> None:
    assert len(shipped().of(kind)) >= minimum


SEED = ("verl", "openrlhf", "trl", "deepspeed-chat", "nemo-rl", "areal", "slime", "roll")


def test_every_seed_framework_has_ten_dimensions_cited() -> None:
    for fw in (shipped().of("framework")[i] for i in SEED):
        assert len(fw.claims) >= 10, fw.id  # type: ignore[attr-defined]
        assert all(c.source and c.checked for c in fw.claims)  # type: ignore[attr-defined]


TRAINING_DEGREES = {
    "tensor-parallelism": "tp",
    "pipeline-parallelism": "pp",
    "context-parallelism": "cp",
}


def test_results_fix_the_training_degrees_their_framework_lacks() -> None:
    """Calibration searches whatever a result leaves open, on physics alone: a degree the
    framework that ran it has no code for (its claim says 'no') must be fixed at 1 in the
    result's scenario, or the prediction may cost a layout that run could not have used
    (DeepSpeed-Chat's OPT-175B row was once predicted at a TP2 x PP16 training layout)."""
    lacking = {
        framework.id: {
            TRAINING_DEGREES[claim.feature]
            for claim in framework.claims  # type: ignore[attr-defined]
            if claim.feature in TRAINING_DEGREES and claim.support == "no"
        }
        for framework in shipped().of("framework").values()
    }
    open_degrees = [
        (result.id, degree)
        for result in shipped().of("result").values()
        if result.scenario is not None and result.framework  # type: ignore[attr-defined]
        for degree in lacking.get(result.framework, set())  # type: ignore[attr-defined]
        if getattr(result.scenario.plan.train, degree) != 1  # type: ignore[attr-defined]
    ]
    assert open_degrees == []
    assert lacking["deepspeed-chat"] == {"tp", "pp", "cp"}


# The 'Nemo RL v0.4' H100 table (docs/about/performance-summary.md at NVIDIA-NeMo/RL commit
# cff17f83), copied by hand: G-Average Seq len, #-GPUs, G-GBS, Tokens/sec/GPU, step seconds.
NEMO_RL_V04 = {
    "llama-8b-grpo-16gpu": (1060, 16, 2048, 1562, 97.7),
    "llama-8b-grpo-1off-16gpu": (1129, 16, 2048, 2161, 74.6),
    "deepseek-v3-grpo-256gpu": (745, 256, 512, 11, 154),
    "deepseek-v3-grpo-1off-512gpu": (744, 512, 512, 11.0, 77.9),
    "qwen3-235b-grpo-128gpu": (5671, 128, 512, 45.7, 506),
    "qwen3-235b-grpo-1off-256gpu": (5691, 256, 512, 52.2, 241),
    "qwen3-30b-a3b-grpo-32gpu": (3154, 32, 2048, 925, 225),
    "qwen3-30b-a3b-grpo-1off-32gpu": (3158, 32, 2048, 864, 244),
    "qwen3-32b-grpo-32gpu": (3206, 32, 2048, 540, 393),
    "qwen3-32b-grpo-1off-64gpu": (3207, 64, 2048, 494, 215),
}


@pytest.mark.parametrize("row", sorted(NEMO_RL_V04))
def test_nemo_rl_v04_rows_follow_the_table(row: str) -> None:
    """Each v0.4 row's step time, GPUs and batch are the table's; its unprinted prompt length
    inverts the page's own definition (tokens/s/GPU x step x GPUs / samples - mean generated
    length), T-GBS 512 sets the optimizer steps, and the engine's sequence cap is vLLM 0.10.0's
    default on the path the recipe takes (AsyncLLM 128 when async_engine is on, vllm.LLM 1024)."""
    mean, gpus, samples, tokens_per_gpu, step = NEMO_RL_V04[row]
    result = shipped().of("result")[f"nemo-rl-perf-{row}-v0.4"]
    scenario = result.scenario  # type: ignore[attr-defined]
    work, plan = scenario.workload, scenario.plan
    assert result.value == step  # type: ignore[attr-defined]
    assert scenario.cluster.nodes * scenario.cluster.gpus_per_node == gpus
    assert work.prompts_per_step * work.samples_per_prompt == samples
    assert work.response_tokens == mean
    assert work.prompt_tokens == round(tokens_per_gpu * step * gpus / samples - mean)
    assert work.minibatches_per_step == samples // 512
    async_engine = plan.execution != "sync" or row.startswith(("deepseek", "qwen3-235b"))
    assert plan.rollout.max_seqs == (128 if async_engine else 1024)


# What the v0.5.0 to v0.7.0 performance recipes (examples/configs/recipes/llm/performance at
# NVIDIA-NeMo/RL tags v0.5.0, v0.6.0 and v0.7.0, resolved through their defaults chains) fix
# beyond the table, copied by hand: vllm_cfg.gpu_memory_utilization where it is not
# grpo_math_1B.yaml's 0.6 (the off-policy recipes set 0.8; three GB200 recipes from v0.6.0 set
# less, a few v0.7.0 ones otherwise), and vllm_kwargs max_num_seqs where a recipe sets it.
NEMO_RL_OWN_MEMORY = {
    "deepseek-v3-grpo-gb200-128gpu-v0.6": 0.3,  # grpo-deepseek-v3-32n4g.yaml
    "deepseek-v3-grpo-gb200-256gpu-v0.6": 0.3,  # grpo-deepseek-v3-64n4g.yaml, from 32n4g
    "qwen3-235b-grpo-gb200-64gpu-v0.6": 0.4,  # grpo-qwen3-235b-16n4g.yaml
    # v0.7.0: the same three GB200 recipes, the Qwen3-235B off-policy ones raised to 0.88, and
    # the Nemotron-3-Super ones (new at v0.7.0) at 0.7.
    "deepseek-v3-grpo-gb200-128gpu-v0.7": 0.3,
    "deepseek-v3-grpo-gb200-256gpu-v0.7": 0.3,
    "qwen3-235b-grpo-gb200-64gpu-v0.7": 0.4,
    "qwen3-235b-grpo-1off-256gpu-v0.7": 0.88,  # grpo-qwen3-235b-32n8g-async-1off.yaml
    "qwen3-235b-grpo-gb200-1off-128gpu-v0.7": 0.88,  # grpo-qwen3-235b-32n4g-async-1off.yaml
    "nemotron-3-super-grpo-256gpu-v0.7": 0.7,
    "nemotron-3-super-grpo-1off-256gpu-v0.7": 0.7,
    "nemotron-3-super-grpo-gb200-128gpu-v0.7": 0.7,
    "nemotron-3-super-grpo-gb200-1off-128gpu-v0.7": 0.7,
}
NEMO_RL_OWN_SEQS = {  # grpo-deepseek-v3-64n8g-fp8-async-1off.yaml, every tag
    "deepseek-v3-grpo-fp8-1off-512gpu": 32,
    "deepseek-v3-grpo-fp8-1off-512gpu-v0.6": 32,
    "deepseek-v3-grpo-fp8-1off-512gpu-v0.7": 32,
}


def nemo_rl_perf_rows() -> list[str]:
    return sorted(
        rid.removeprefix("nemo-rl-perf-")
        for rid in shipped().of("result")
        if rid.startswith("nemo-rl-perf-")
    )


@pytest.mark.parametrize("row", nemo_rl_perf_rows())
def test_nemo_rl_perf_rows_fix_what_their_recipe_fixes(row: str) -> None:
    """Every NeMo RL performance row states what its recipe fixes, so the prediction searches
    none of it: the distributed optimizer (zero 1) and, for MoE models, expert TP 1 (both from
    grpo_math_1B.yaml), the engine's memory share, and its sequence cap: the recipe's own, else
    vLLM's default on the engine path the recipe takes (AsyncLLM 128 where async_engine is on,
    as in every off-policy recipe and the DeepSeek-V3, Qwen3-235B and Nemotron-3-Super ones;
    vllm.LLM 1024)."""
    plan = shipped().of("result")[f"nemo-rl-perf-{row}"].scenario.plan  # type: ignore[attr-defined]
    moe = row.startswith(("deepseek", "qwen3-235b", "qwen3-30b", "nemotron-3-super"))
    assert plan.train.zero == 1
    assert plan.train.etp == (1 if moe else None)
    off_policy = plan.execution != "sync"
    assert plan.rollout.memory_fraction == NEMO_RL_OWN_MEMORY.get(row, 0.8 if off_policy else 0.6)
    async_engine = off_policy or row.startswith(("deepseek", "qwen3-235b", "nemotron-3-super"))
    default_seqs = 128 if async_engine else 1024
    assert plan.rollout.max_seqs == NEMO_RL_OWN_SEQS.get(row, default_seqs)


# The verl DAPO-Math runs whose scripts cap prompts at max_prompt_length=$((1024 * 2)) with
# data.truncation='left' (fully_async_policy shell scripts at b178a3cd, one_step_off_policy
# scripts at 503ea75f, run_deepseek671b_math_megatron_96gb.sh): no source gives their mean.
VERL_DAPO_PROMPT_CAPPED = (
    "verl-dpsk-deepseek-v3-96gpu-rollout",
    "verl-dpsk-deepseek-v3-96gpu-step",
    "verl-fully-async-qwen2.5-math-7b-16-16",
    "verl-fully-async-qwen2.5-math-7b-32-32",
    "verl-fully-async-qwen2.5-math-7b-64-64",
    "verl-fully-async-qwen2.5-math-7b-colocate-128gpu",
    "verl-fully-async-qwen2.5-math-7b-colocate-32gpu",
    "verl-fully-async-qwen2.5-math-7b-colocate-64gpu",
    "verl-fully-async-qwen2.5-math-7b-stream-64-64",
    "verl-one-step-off-qwen2.5-math-7b-fsdp2-4-12",
    "verl-one-step-off-qwen2.5-math-7b-fsdp2-colocate-16gpu",
    "verl-one-step-off-qwen2.5-math-7b-megatron-4-12",
    "verl-one-step-off-qwen2.5-math-7b-megatron-colocate-16gpu",
)


@pytest.mark.parametrize("rid", VERL_DAPO_PROMPT_CAPPED)
def test_verl_dapo_rows_record_the_prompt_cap_as_a_cap(rid: str) -> None:
    """The scripts' 2,048-token prompt cap is the workload's longest prompt, not its mean."""
    work = shipped().of("result")[rid].scenario.workload  # type: ignore[attr-defined]
    assert work.max_prompt_tokens == 2048
    assert work.prompt_tokens < work.max_prompt_tokens


# The engine sequence cap each pinned launch runs where it sets none, copied by hand (fid11,
# checked 2026-12-07). verl b178a3cd: rollout.yaml L68 gives 256 (1024 before e9405d70b and again
# from e2ae919a4). OpenRLHF c250c21a: vllm.LLM on vLLM 0.10.0, 256 sequences on an A100;
# 3c3be623: AsyncLLMEngine on vLLM 0.27.1, the engine-context 128. NeMo RL v0.5.0/v0.6.0: AsyncLLM
# 128 where the recipe turns async_engine on, else vllm.LLM's 1024 on an H100.
LAUNCH_ENGINE_SEQS = {
    ("verl", "b178a3cd56f58b2d502255daba591e92833930a7"): 256,
    ("openrlhf", "c250c21a72176720e11aaf4fedcd6cf853d3df8b"): 256,
    ("openrlhf", "3c3be6234e0cb353e76bb8019947db9dfe99fca7"): 128,
}
NEMO_RL_ASYNC_ENGINE_LAUNCHES = {
    "nemo-rl-deepseek-v3-grpo-megatron-256xh100",
    "nemo-rl-llama-3.1-8b-grpo-fsdp2-noncolocated-16xh100",
    "nemo-rl-qwen3-235b-a22b-grpo-async-1off-256xh100",
    "nemo-rl-qwen3-235b-a22b-grpo-megatron-128xh100",
    "nemo-rl-qwen3-30b-a3b-grpo-async-1off-32xh100",
    "nemo-rl-qwen3-30b-a3b-grpo-async-8off-192xh100",
    "nemo-rl-qwen3-32b-grpo-async-1off-64xh100",
}


def engine_capped_launches() -> list[str]:
    return sorted(
        did
        for did, d in shipped().of("deployment").items()
        if (d.framework, d.commit) in LAUNCH_ENGINE_SEQS or d.framework == "nemo-rl"  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("did", engine_capped_launches())
def test_pinned_launches_state_the_engine_cap_they_run(did: str) -> None:
    """A launch whose framework default at the pinned commit is read states it, rather than being
    costed at vLLM's 1024 of the cost model's default."""
    launch = shipped().of("deployment")[did]
    if launch.framework == "nemo-rl":  # type: ignore[attr-defined]
        expected = 128 if did in NEMO_RL_ASYNC_ENGINE_LAUNCHES else 1024
    else:
        expected = LAUNCH_ENGINE_SEQS[(launch.framework, launch.commit)]  # type: ignore[attr-defined]
    assert launch.scenario.plan.rollout.max_seqs == expected  # type: ignore[attr-defined]
