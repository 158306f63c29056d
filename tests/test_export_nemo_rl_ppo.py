"""NeMo-RL's PPO launch: examples/run_ppo.py at 7ea279abf, its value model laid out as the policy.

The expected lines were read by hand from NeMo-RL's examples/configs/ppo_math_1B.yaml and
ppo_math_1B_megatron.yaml at 7ea279abfbeb698b092856d0dab61e7cf39bc909 (each key declared there,
else written with `+` as Hydra's struct mode needs), and from nemo_rl/algorithms/ppo.py: the
batches and epochs (PPOConfig, L168-L216), the KL in the reward (L1241-L1242, L1546-L1552;
advantage_estimator.py L386-L394), the value model's backend checks (L381-L406).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from launch_support import review_json

from rlmguide.cli import cli

SCENARIO = """\
cluster: {accelerator: h100-sxm-80gb, nodes: 2, gpus_per_node: 8}
models: {policy: qwen2.5-7b, reward: verifier}
workload: {algorithm: ppo, prompts_per_step: 1024, samples_per_prompt: 1, prompt_tokens: 1024,
  max_prompt_tokens: 1024, response_tokens: 4096, max_response_tokens: 16384,
  minibatches_per_step: 4, epochs: 1}
"""

PPO_LINES = [
    # the step: 1,024 prompts of one response, four optimizer steps of 256, one pass
    "ppo.num_prompts_per_step=1024",
    "ppo.num_generations_per_prompt=1",
    "ppo.ppo_epochs=1",
    "policy.train_global_batch_size=256",
    "ppo.adv_estimator.name=gae",
    # the KL on PPO's record's side (the reward), the reference log-probs computed for it
    "loss_fn.use_kl_in_reward=True",
    "loss_fn.reference_policy_kl_penalty=0.001",
    "ppo.skip_reference_policy_logprobs_calculation=False",
    # PPO's symmetric clip, no DAPO overlong shaping (both on in PPO-DAPO's base config)
    "loss_fn.ratio_clip_max=0.2",
    "ppo.reward_shaping.enabled=False",
]


def _invoke(tmp_path: Path, scenario_text: str, plan: tuple[str, ...]) -> tuple[int, str, Path]:
    scenario = tmp_path / "ppo.yaml"
    scenario.write_text(scenario_text)
    out = tmp_path / "run.sh"
    sets = [x for item in plan for x in ("--set", item)]
    done = CliRunner().invoke(
        cli, ["export", str(scenario), "--framework", "nemo-rl", "--out", str(out), *sets]
    )
    return done.exit_code, done.output, out


def _export(tmp_path: Path, *plan: str) -> str:
    code, output, out = _invoke(tmp_path, SCENARIO, plan)
    assert code == 0, output
    return out.read_text()


def _arguments(text: str) -> set[str]:
    return {
        line.strip().rstrip("\\").strip() for line in text.splitlines() if line.startswith("    ")
    }


MEGATRON_PLAN = (
    "plan.placement=disaggregated", "plan.execution=sync",
    "plan.rollout.gpus=8", "plan.rollout.tp=2", "plan.train.gpus=8", "plan.train.zero=1",
    "plan.train.tp=4", "plan.train.pp=2", "plan.train.cp=1", "plan.train.recompute=full",
)  # fmt: skip


def test_a_megatron_ppo_plan_launches_run_ppo_with_the_value_model_laid_out_as_the_policy(
    tmp_path: Path,
) -> None:
    text = _export(tmp_path, *MEGATRON_PLAN)
    args = _arguments(text)
    assert "uv run python examples/run_ppo.py \\" in text
    assert "--config=examples/configs/ppo_math_1B_megatron.yaml" in args
    assert set(PPO_LINES) <= args
    # the value model's own section, the policy's degrees (the base config's are all 1)
    for key, value in [
        ("megatron_cfg.enabled", True), ("megatron_cfg.tensor_model_parallel_size", 4),
        ("megatron_cfg.pipeline_model_parallel_size", 2), ("megatron_cfg.context_parallel_size", 1),
        ("megatron_cfg.activation_checkpointing", True), ("dtensor_cfg.enabled", False),
        ("megatron_cfg.optimizer.use_distributed_optimizer", True),
    ]:  # fmt: skip
        assert f"policy.{key}={value}" in args, key
        assert f"value.{key}={value}" in args, key
    # ppo_math_1B.yaml declares no recompute_granularity (read with a default, megatron/setup.py
    # L1071-L1072): Hydra's struct mode takes it only with +
    assert {"+policy.megatron_cfg.recompute_granularity=full",
            "+value.megatron_cfg.recompute_granularity=full"} <= args  # fmt: skip
    # the rollout on a node of its own: two nodes, one of them vLLM's (ppo.py L582-L597)
    assert {"cluster.num_nodes=2", "policy.generation.colocated.enabled=False",
            "policy.generation.colocated.resources.num_nodes=1"} <= args  # fmt: skip
    assert not [a for a in args if a.startswith("grpo.")]


def test_a_dtensor_ppo_plan_keeps_the_value_model_unpacked(tmp_path: Path) -> None:
    text = _export(
        tmp_path, "plan.placement=colocated", "plan.execution=sync", "plan.rollout.tp=2",
        "plan.train.zero=3", "plan.train.tp=2", "plan.train.cp=1", "plan.train.recompute=full",
    )  # fmt: skip
    args = _arguments(text)
    assert "--config=examples/configs/ppo_math_1B.yaml" in args
    assert set(PPO_LINES) <= args
    for key, value in [
        ("dtensor_cfg.enabled", True), ("dtensor_cfg.tensor_parallel_size", 2),
        ("dtensor_cfg.context_parallel_size", 1), ("dtensor_cfg.activation_checkpointing", True),
        ("dtensor_cfg.sequence_parallel", True), ("megatron_cfg.enabled", False),
    ]:  # fmt: skip
        assert f"policy.{key}={value}" in args, key
        assert f"value.{key}={value}" in args, key
    # the value model's packing stays the base config's off (ppo.py L395-L398)
    assert not [a for a in args if a.startswith("value.sequence_packing")]
    assert "policy.generation.colocated.enabled=True" in args


def test_review_reads_a_nemo_rl_ppo_launch_back(tmp_path: Path) -> None:
    _export(tmp_path, *MEGATRON_PLAN)
    read = review_json(tmp_path / "run.sh", "--accelerator", "h100-sxm-80gb")
    assert read["entry_point"] == "uv run python examples/run_ppo.py"
    assert read["training_backend"] == "megatron-lm"
    assert read["scenario"]["workload"]["algorithm"] == "ppo"
    assert read["scenario"]["models"]["policy"] == "qwen2.5-7b"
    plan = read["scenario"]["plan"]
    assert (plan["placement"], plan["execution"]) == ("disaggregated", "sync")
    assert {k: plan["train"][k] for k in ("gpus", "tp", "pp", "cp", "zero", "recompute")} == {
        "gpus": 8, "tp": 4, "pp": 2, "cp": 1, "zero": 1, "recompute": "full",
    }  # fmt: skip
    assert (plan["rollout"]["gpus"], plan["rollout"]["tp"]) == (8, 2)
    assert read["estimate"]["critic"] == "separate"
    assert read["unmapped"] == [] and read["startup"] == []


def test_review_names_the_value_model_checks_a_ppo_launch_trips(tmp_path: Path) -> None:
    # DTensor: the value model packs nothing; Megatron with context parallelism: it must pack
    # (ppo.py L381-L406 at 7ea279abf)
    dtensor = tmp_path / "dtensor.sh"
    dtensor.write_text(
        "uv run python examples/run_ppo.py --config=examples/configs/ppo_math_1B.yaml "
        "policy.model_name=Qwen/Qwen2.5-7B cluster.num_nodes=1 cluster.gpus_per_node=8 "
        "ppo.adv_estimator.name=gae value.sequence_packing.enabled=True\n"
    )
    megatron = tmp_path / "megatron.sh"
    megatron.write_text(
        "uv run python examples/run_ppo.py --config=examples/configs/ppo_math_1B_megatron.yaml "
        "policy.model_name=Qwen/Qwen2.5-7B cluster.num_nodes=1 cluster.gpus_per_node=8 "
        "ppo.adv_estimator.name=gae policy.megatron_cfg.enabled=True "
        "policy.dtensor_cfg.enabled=False "
        "value.megatron_cfg.enabled=True value.dtensor_cfg.enabled=False "
        "policy.megatron_cfg.context_parallel_size=2 value.megatron_cfg.context_parallel_size=2\n"
    )
    for path, check in [
        (dtensor, "nemo-rl-dtensor-ppo-value-packs-nothing"),
        (megatron, "nemo-rl-megatron-ppo-value-context-parallel-needs-packing"),
    ]:
        read = review_json(path, "--accelerator", "h100-sxm-80gb")
        assert read["scenario"]["workload"]["algorithm"] == "ppo", path
        assert check in str(read["startup"]), (path, read["startup"])


DTENSOR_PLAN = (
    "plan.placement=colocated", "plan.execution=sync", "plan.rollout.tp=4",
    "plan.train.zero=3", "plan.train.tp=4", "plan.train.cp=1", "plan.train.recompute=full",
)  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "refused"),
    [
        # Qwen2ForCausalLM / LlamaForCausalLM: NeMo-RL forces Hugging Face's class, whose
        # token-classification head has one output (automodel/setup.py L84-L156 at 7ea279abf)
        ("qwen2.5-7b", False),
        ("llama-3.1-8b", False),
        # Qwen3MoeForCausalLM / DeepseekV3ForCausalLM: Automodel's own class with its
        # vocabulary-wide lm_head (model_init.py L753-L783 at 24b47e85)
        ("qwen3-30b-a3b", True),
        ("deepseek-v3", True),
        # GptOssForCausalLM, likewise registered with an adapter that converts per tensor
        ("gpt-oss-120b", True),
    ],
)
def test_a_dtensor_ppo_value_model_is_refused_where_automodel_builds_its_causal_lm(
    tmp_path: Path, policy: str, refused: bool
) -> None:
    scenario = SCENARIO.replace("qwen2.5-7b", policy).replace(
        "h100-sxm-80gb, nodes: 2", "h200-sxm-141gb, nodes: 32"
    )
    code, output, out = _invoke(tmp_path, scenario, DTENSOR_PLAN)
    if refused:
        assert code != 0
        reason = "refuses 2 of 2 candidates by constraint nemo-rl-dtensor-ppo-value-needs-hf-head"
        assert reason in output
        assert "vocabulary-wide lm_head" in output
    else:
        assert code == 0, output
        assert "value.dtensor_cfg.enabled=True" in out.read_text()


def test_review_reads_the_value_models_packing_budget_as_the_critics(tmp_path: Path) -> None:
    """NeMo-RL builds the value model's section apart from the policy's (ppo.py L395-L398 at
    7ea279ab): its value.sequence_packing budgets size the critic's micro-batches, never the
    actor's. The export writes both at the plan's 17,408 tokens; a launch that doubles the value
    model's reads back the actor's budget and step as exported, and names the critic's."""
    text = _export(tmp_path, *MEGATRON_PLAN)
    assert "value.sequence_packing.train_mb_tokens=17408" in text
    exported = review_json(tmp_path / "run.sh", "--accelerator", "h100-sxm-80gb")
    edited = tmp_path / "edited.sh"
    for budget in ("train_mb_tokens", "logprob_mb_tokens"):
        key = f"value.sequence_packing.{budget}"
        text = text.replace(f"{key}=17408", f"{key}=34816")
    edited.write_text(text)
    read = review_json(edited, "--accelerator", "h100-sxm-80gb")
    fields = {u["key"]: u["field"] for u in read["understood"]}
    assert fields["value.sequence_packing.train_mb_tokens"] == "launch.critic_micro_batch_tokens"
    assert fields["policy.sequence_packing.train_mb_tokens"] == "launch.micro_batch_tokens"
    assert read["scenario"]["plan"]["train"]["micro_batch_tokens"] == 17408
    assert read["estimate"]["step_seconds"] == exported["estimate"]["step_seconds"]
    (critic,) = [m for m in read["memory_keys"] if m["setting"].startswith("critic micro-batch")]
    assert (critic["launch"], critic["plan"]) == (34816, 17408)
