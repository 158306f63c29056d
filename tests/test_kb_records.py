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
