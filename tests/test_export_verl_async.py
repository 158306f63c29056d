"""verl's fully asynchronous trainer (verl/experimental/fully_async_policy) as export writes it and
review reads it back, at both pinned verl commits: the entry point, the keys of the fully async
config (tests/fixtures/frameworks/*fully_async_ppo_trainer.yaml, copies of the file at each
commit) with the plan's values, and the start-up asserts its constraint records stand for."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from launch_support import catalogs
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules.frameworks import compile_constraints
from rlmguide.rules.scenario import parse_scenario, resolve
from test_startup import V07, V08, _check, _export, _review, _run, _scenario, _without

from rlmguide.cli import cli
from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.startup import ABSENT, binding, tripped

FIXTURES = REPO / "tests" / "fixtures" / "frameworks"
CONFIGS = {V07: "verl-fully_async_ppo_trainer.yaml", V08: "verl-0.8.0-fully_async_ppo_trainer.yaml"}
MODULE = "verl.experimental.fully_async_policy.fully_async_main"
TRAIN = {"tp": 1, "cp": 1, "zero": 3, "recompute": "full"}


def async_plan(staleness: int = 2, **train: Any) -> dict[str, Any]:
    return {"placement": "disaggregated", "execution": "async", "max_staleness": staleness,
            "rollout": {"gpus": 32, "tp": 2}, "train": {"gpus": 32, **TRAIN, **train}}  # fmt: skip


# 8 nodes of 8 GPUs, 256 prompts x 16 samples in 4 mini-batches, a run of 200 steps
ASYNC = _scenario(async_plan(), steps=200)


@cache
def fully_async_config(version: str) -> dict[str, Any]:
    """The fully async config at the version's commit, flattened to dotted keys (the leaves)."""

    def flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in tree.items():
            if isinstance(value, dict):
                out |= flat(value, f"{prefix}{key}.")
            else:
                out[f"{prefix}{key}"] = value
        return out

    return flat(yaml.safe_load((FIXTURES / CONFIGS[version]).read_text()))


def words(done: Exported) -> dict[str, Any]:
    return {a.key.lstrip("+"): a.value for a in done.arguments}


@pytest.mark.parametrize("version", [V07, V08])
def test_the_async_launch_writes_the_fully_async_keys_with_the_plans_values(version: str) -> None:
    done = _export(ASYNC, "verl", version)
    assert done.launch.command == f"python3 -m {MODULE}"
    assert (done.plan["execution"], done.plan["max_staleness"]) == ("async", 2)
    assert done.backend == "pytorch-fsdp"
    written = words(done)
    config = fully_async_config(version)
    # every async_training key and the rollout pool's are keys of the fully async config, of
    # the type of its default there
    for key, value in written.items():
        if key.startswith(("async_training.", "rollout.")):
            assert key in config, key
            declared = config[key]
            if isinstance(declared, bool) or isinstance(value, bool):
                assert type(value) is type(declared), (key, value, declared)
            elif value is not None and declared is not None:
                # an untyped YAML default: OmegaConf takes a whole number for 0.1
                assert isinstance(value, int | float) and isinstance(declared, int | float)
    # the plan's numbers, by hand: staleness 2 steps; 256 prompts in 4 mini-batches of 64, one
    # mini-batch an update, a push every 4 updates; 200 steps x 256 prompts; 32 + 32 GPUs
    assert written["async_training.staleness_threshold"] == 2
    assert written["async_training.require_batches"] == 1
    assert written["async_training.trigger_parameter_sync_step"] == 4
    assert written["actor_rollout_ref.actor.ppo_mini_batch_size"] == 64
    assert written["async_training.partial_rollout"] is True
    assert written["rollout.total_rollout_steps"] == 51_200
    assert (written["rollout.nnodes"], written["rollout.n_gpus_per_node"]) == (4, 8)
    assert (written["trainer.nnodes"], written["trainer.n_gpus_per_node"]) == (4, 8)
    # the step is counted in mini-batches: data.train_batch_size is the 0 the rollouter asserts
    # and the synchronous trainer's run length is not written
    assert "data.train_batch_size" not in written
    assert "data.train_batch_size=0" in done.launch.fixed
    assert "actor_rollout_ref.hybrid_engine=False" in done.launch.fixed
    assert "trainer.total_training_steps" not in written
    # the rollout's log-probs stand for the old policy's: b178's key is in the fully async
    # config, 0.8's bypass_mode already True there
    recompute = _export(_scenario(async_plan(), recompute_old_logprobs=False), "verl", version)
    key = (
        "async_training.use_rollout_log_probs"
        if version == V07
        else "algorithm.rollout_correction.bypass_mode"
    )
    assert words(recompute)[key] is True and config[key] is True
    # b178's config leaves calculate_log_probs off, which the rollouter asserts on (L400)
    given = "actor_rollout_ref.rollout.calculate_log_probs=True" in done.launch.fixed
    assert given is (version == V07)
    assert config.get("actor_rollout_ref.rollout.calculate_log_probs") is (
        None if version == V07 else True
    )


@pytest.mark.parametrize("version", [V07, V08])
def test_a_run_without_a_length_runs_the_data_not_the_configs_100_prompts(version: str) -> None:
    """rollout.total_rollout_steps defaults to 100 prompts in the fully async config; null
    leaves trainer.total_epochs over the data (fully_async_rollouter.py L125-L127 at b178)."""
    assert fully_async_config(version)["rollout.total_rollout_steps"] == 100
    done = _export(_scenario(async_plan()), "verl", version)
    assert words(done)["rollout.total_rollout_steps"] is None
    assert "rollout.total_rollout_steps=null" in script(done, "test", "qwen2.5-7b")


@pytest.mark.parametrize(("version", "checkout"), [(V07, True), (V08, False)])
def test_the_fsdp_launch_needs_a_checkout_only_where_its_config_searches_files(
    version: str, checkout: bool, tmp_path: Path
) -> None:
    """b178's fully async config finds verl's through file://verl/trainer/config, and the
    package has no __init__.py; v0.8.0's searches pkg://verl.trainer.config."""
    text = script(_export(ASYNC, "verl", version), "test", "qwen2.5-7b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = _run(text, elsewhere, tmp_path)
    if checkout:
        assert code == 2 and "started" not in out and "root of a verl checkout" in err
    else:
        assert (code, out.split()) == (0, ["started", "-m", MODULE]), err


@pytest.mark.parametrize("version", [V07, V08])
def test_the_megatron_launch_names_its_config_and_checks_the_checkout(
    version: str, tmp_path: Path
) -> None:
    done = _export(_scenario(async_plan(tp=2, zero=1, recompute="selective")), "verl", version)
    assert done.backend == "megatron-lm"
    assert done.launch.fixed[0] == "--config-name=fully_async_ppo_megatron_trainer.yaml"
    text = script(done, "test", "qwen2.5-7b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, _, err = _run(text, elsewhere, tmp_path)
    assert code == 2 and "root of a verl checkout" in err


@pytest.mark.parametrize("version", [V07, V08])
def test_review_reads_the_async_export_back_as_its_plan(version: str, tmp_path: Path) -> None:
    done = _export(ASYNC, "verl", version)
    got = _review(tmp_path, script(done, "test", "qwen2.5-7b"))
    assert got["mapping"] == version and got["startup"] == []
    estimate, workload = got["estimate"], got["scenario"]["workload"]
    assert (estimate["execution"], estimate["placement"], estimate["max_staleness"]) == (
        "async",
        "disaggregated",
        2,
    )
    assert (estimate["rollout"]["gpus"], estimate["train"]["gpus"]) == (32, 32)
    assert (workload["prompts_per_step"], workload["minibatches_per_step"]) == (256, 4)


@pytest.mark.parametrize(
    ("version", "dropped", "where"),
    [
        (V08, "actor_rollout_ref.hybrid_engine=False", "fully_async_rollouter.py L413-L414"),
        (V08, "data.train_batch_size=0", "fully_async_rollouter.py L413-L414"),
        (V07, "actor_rollout_ref.hybrid_engine=False", "fully_async_rollouter.py L76-L77, L400"),
        (V07, "calculate_log_probs=True", "fully_async_rollouter.py L76-L77, L400"),
    ],
)
def test_review_names_the_rollouters_assert_for_a_launch_without_its_setting(
    version: str, dropped: str, where: str, tmp_path: Path
) -> None:
    """audit9: a fully async launch without hybrid_engine=False (verl's config defaults it on,
    _generated_ppo_trainer.yaml L433 at 7aed6b23) was "no entry point"; the rollouter asserts it
    off, train_batch_size 0 and, at 0.7, calculate_log_probs, so review names that assert."""
    path = tmp_path / "launch.sh"
    text = script(_export(ASYNC, "verl", version), "test", "qwen2.5-7b")
    path.write_text(_without(text, dropped))
    done = CliRunner().invoke(cli, ["review", str(path), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code != 0
    assert "no entry point" not in done.output
    assert "would stop at start-up" in done.output and where in done.output
    assert dropped.split("=")[0] in done.output.split("asserts")[1].split("(")[0]


def launch_as_verls_scripts(require: int, trigger: int, staleness: str) -> str:
    """A launch with the keys verl's own fully async scripts set
    (fully_async_policy/shell/dapo_7b_math_fsdp2_8_8.sh at b178a3cd: 32 prompts a mini-batch,
    four mini-batches an update, a push every four updates)."""
    keys = {
        "data.train_batch_size": 0, "data.gen_batch_size": 1, "data.max_prompt_length": 2048,
        "data.max_response_length": 8192, "actor_rollout_ref.rollout.n": 16,
        "actor_rollout_ref.actor.strategy": "fsdp2", "critic.strategy": "fsdp2",
        "actor_rollout_ref.hybrid_engine": False, "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 32,
        "actor_rollout_ref.rollout.calculate_log_probs": True,
        "actor_rollout_ref.rollout.name": "vllm",
        "trainer.nnodes": 1, "trainer.n_gpus_per_node": 8, "rollout.nnodes": 1,
        "rollout.n_gpus_per_node": 8, "async_training.staleness_threshold": staleness,
        "async_training.trigger_parameter_sync_step": trigger,
        "async_training.require_batches": require, "async_training.partial_rollout": True,
    }  # fmt: skip
    lines = [f"    {k}={v} \\" for k, v in keys.items()]
    return "\n".join(
        ["#!/bin/bash", f"python3 -m {MODULE} \\", *lines, "    trainer.val_before_train=False", ""]
    )


def test_review_counts_a_step_as_require_batches_times_trigger_mini_batches(
    tmp_path: Path,
) -> None:
    """A push every trigger_parameter_sync_step updates of require_batches mini-batches of
    ppo_mini_batch_size prompts: 4 x 4 x 32 = 512 prompts in 16 mini-batches."""
    got = _review(tmp_path, launch_as_verls_scripts(4, 4, "1"), "--framework", "verl")
    workload = got["scenario"]["workload"]
    assert (workload["prompts_per_step"], workload["minibatches_per_step"]) == (512, 16)
    assert got["estimate"]["execution"] == "async"
    got = _review(tmp_path, launch_as_verls_scripts(1, 4, "0"), "--framework", "verl")
    workload = got["scenario"]["workload"]
    assert (workload["prompts_per_step"], workload["minibatches_per_step"]) == (128, 4)


def test_a_fractional_staleness_threshold_is_refused_in_one_line(tmp_path: Path) -> None:
    """verl's scripts set staleness_threshold 0.1 or 0.5: a fraction of a step ahead, which no
    plan's whole-step max_staleness costs."""
    path = tmp_path / "launch.sh"
    path.write_text(launch_as_verls_scripts(4, 4, "0.1"))
    args = ["review", str(path), "--framework", "verl", "--accelerator", "h100-sxm-80gb",
            "--policy", "qwen2.5-7b"]  # fmt: skip
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == [
        "Error: async_training.staleness_threshold: 0.1 lets generation run a fraction of a step "
        "ahead; a plan's max_staleness counts whole steps (0, 1, 2, ...), so this bound has no "
        "plan to cost"
    ]


def test_b178_review_flags_a_critic_strategy_left_at_its_default(tmp_path: Path) -> None:
    """fully_async_main.py L83-L84 at b178 asserts critic.strategy equals the actor's, critic
    or not (constraint verl-fully-async-critic-strategy-is-the-actors); 0.8 asserts nothing."""
    done = _export(ASYNC, "verl", V07)
    text = script(done, "test", "qwen2.5-7b")
    assert words(done)["critic.strategy"] == words(done)["actor_rollout_ref.actor.strategy"]
    stripped = _review(tmp_path, _without(text, "critic.strategy"))
    assert [c["constraint"] for c in stripped["startup"]] == [
        "verl-fully-async-critic-strategy-is-the-actors"
    ]
    check = _check("verl-fully-async-critic-strategy-is-the-actors")

    def facts(execution: str = "async", critic: str = "fsdp") -> dict[str, Any]:
        # a fresh dict each time: a check caches its comparisons in the facts it is given
        return {**ABSENT, "plan.execution": execution, "launch.critic_strategy": critic,
                "launch.actor_strategy": "fsdp2"}  # fmt: skip

    for version, trips in ((V07, True), (V08, False)):
        mine = binding([check], catalogs()[1][version], "pytorch-fsdp", "vllm")
        assert tripped(mine, facts()) == ([check.record] if trips else [])
    assert not tripped([check], facts(critic="fsdp2"))
    assert not tripped([check], facts(execution="one-step-off"))


@pytest.mark.parametrize("version", [V07, V08])
def test_gspo_runs_fully_async_only_where_the_loss_mode_survives(version: str) -> None:
    """v0.8.0's bypass mode overwrites loss_mode (rollout_corr_helper.py L1133-L1137):
    constraint verl-fully-async-ppo-clip-loss-only-v0.8. b178 keeps GSPO's loss."""
    scenario = _scenario(async_plan(), algorithm="gspo")
    if version == V08:
        with pytest.raises(NotExpressible, match=r"verl-fully-async-ppo-clip-loss-only-v0\.8"):
            _export(scenario, "verl", version)
    else:
        assert (
            words(_export(scenario, "verl", version))[
                "actor_rollout_ref.actor.policy_loss.loss_mode"
            ]
            == "gspo"
        )


def test_the_reward_model_pool_constraints_by_hand() -> None:
    """b178 runs a reward model on trainer_pool whatever the plan (fully_async_main.py
    L47-L58); v0.8.0 asserts a pool of its own (fully_async_rollouter.py L423-L428)."""
    compiled = {c.id: c for c in compile_constraints(catalogs()[0])[0]}
    shared = compiled["verl-fully-async-reward-model-on-trainer-pool"]
    own = compiled["verl-fully-async-reward-model-own-pool-v0.8"]
    for execution, reward, pool, on_trainer, apart in (
        ("async", True, 0, True, False),
        ("async", True, 8, False, True),
        ("async", False, 0, True, True),
        ("one-step-off", True, 0, True, True),
        ("sync", True, 8, True, True),
    ):
        for check, holds in ((shared, on_trainer), (own, apart)):
            facts = {"plan.execution": execution, "workload.reward_model": reward,
                     "plan.pools.reward": pool}  # fmt: skip
            assert bool(check.holds(facts, 1)[0]) is holds, (check.id, execution, reward, pool)


@pytest.mark.parametrize("version", [V07, V08])
def test_a_plan_past_the_rollouters_16_prompts_a_server_says_so(version: str) -> None:
    """The rollouter admits at most 16 prompts per rollout server (fully_async_rollouter.py
    L207 at b178a3cd, L541 at v0.8.0). The 16 + 16 H20 deployment's plan runs 494 sequences an
    engine, past 16 x 16; the coding agent's 128 are 16 x 8, at the cap."""
    catalog, mappings = catalogs()

    def departures(scenario: Any) -> tuple[int, bool]:
        done = build(resolve(scenario, catalog.records), catalog, mappings, "verl", version)
        said = any("16 prompts in flight per rollout server" in d for d in done.departures)
        return words(done)["actor_rollout_ref.rollout.max_num_seqs"], said

    deployments = load_catalog(record_roots(), ("deployment",)).of("deployment")
    record = deployments["verl-qwen2.5-math-7b-dapo-fully-async-32xh20"]
    # the record now states the 256 its launch ran (fid11); the planner's own cap is tried
    scenario = record.scenario  # type: ignore[attr-defined]
    rollout = scenario.plan.rollout.model_copy(update={"max_seqs": None})
    scenario = scenario.model_copy(
        update={"plan": scenario.plan.model_copy(update={"rollout": rollout})}
    )
    assert departures(scenario) == (494, True)
    agent = REPO / "examples" / "grpo-qwen3-32b-coding-agent-64xh100.yaml"
    assert departures(parse_scenario(yaml.safe_load(agent.read_text()), str(agent))) == (128, False)
