"""`rlmguide export` and `recommend --emit`: plans written as verl and OpenRLHF launches.

The oracles are real files: the frameworks' own config definitions at the mappings' commits
(tests/fixtures/frameworks/, licence headers kept) and the experts' launch scripts behind the
deployment records, whose values are written out below as read by hand from the scripts.
"""

from __future__ import annotations

import argparse
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO, run_cli, sets
from launch_support import catalogs
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, record_roots
from rlmguide.kb.schema import Deployment, MappingEntry
from rlmguide.rules.scenario import parse_scenario, resolve
from test_expert_layout import MOE_SCENARIO

from rlmguide.cli import cli
from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.mapping import INPUTS, apply, lookup_key, pool_shape, unexpressed
from rlmguide.export.render import DEPARTURE_LINE
from rlmguide.review.config import argparse_config, hydra_config
from rlmguide.review.shell import command_arguments

FIXTURES = Path(__file__).parent / "fixtures" / "frameworks"
SMALL = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
DEPLOYMENTS: dict[str, Deployment] = load_catalog(DEFAULT_ROOTS, ("deployment",)).of(  # type: ignore[assignment]
    "deployment"
)
MAPPED = ("verl", "openrlhf", "nemo-rl", "slime", "skyrl")
REFUSED = {
    # the reward model shares the actor's 2 GPUs outside colocate_all, which OpenRLHF's
    # launcher cannot do (constraint openrlhf-reward-model-shares-gpus-only-in-colocate-all)
    "openrlhf-llama-3-8b-ppo-colocate-pairs-8xa100": "openrlhf-reward-model-shares-gpus",
    "openrlhf-llama-3-8b-ppo-ring-attention-8xa100": "openrlhf-reward-model-shares-gpus",
    # A gap of the mapping, not of the framework: slime's mapping has no key for FP8 training.
    "slime-qwen3-30b-a3b-grpo-fp8-16xh100": "no key for plan.train.fp8",
}
EXPORTABLE = sorted(d for d, r in DEPLOYMENTS.items() if r.framework in MAPPED and d not in REFUSED)


@cache
def exported(record_id: str, version: str | None = None) -> Exported:
    """A deployment's plan, as written, exported to its own framework (newest mapping unless
    `version` names one)."""
    catalog, mappings = catalogs()
    record = DEPLOYMENTS[record_id]
    resolved = resolve(record.scenario, catalog.records)
    return build(resolved, catalog, mappings, record.framework, version)


def read_back(done: Exported) -> dict[str, Any]:
    """The emitted script parsed back as the framework's parser would."""
    text = script(done, "test", "policy")
    module = done.launch.command.split()[-1].removesuffix(".py").replace("/", ".")
    # the user's inputs set to their own names, so a key shows which input it takes
    inputs = {var: f"${{{var}}}" for var, _ in INPUTS.values()}
    words, _ = command_arguments(text, module, inputs)
    if done.mapping.syntax == "hydra":
        return hydra_config(words)
    return argparse_config(words)


# -- transforms ------------------------------------------------------------------------------


def entry(**fields: Any) -> MappingEntry:
    return MappingEntry(key="k", file="f", **fields)


FACTS = {
    "workload.prompts_per_step": 512,
    "workload.minibatches_per_step": 16,
    "workload.samples_per_prompt": 12,
    "plan.train.recompute": "full",
    "plan.train.offload_optimizer": 0.5,
    "plan.placement": "disaggregated",
    "plan.train.gpus": 12,
    "plan.rollout.gpus": 4,
    "cluster.gpus_per_node": 8,
    "cluster.nodes": 2,
}


def test_transforms_turn_facts_into_config_values() -> None:
    assert apply(entry(fact="workload.prompts_per_step"), FACTS) == 512
    assert apply(entry(fact="plan.train.offload_optimizer", transform="flag"), FACTS) is True
    assert (
        apply(entry(fact="plan.train.recompute", transform="equals", argument="full"), FACTS)
        is True
    )
    divided = entry(
        fact="workload.prompts_per_step",
        transform="divide",
        argument="workload.minibatches_per_step",
    )
    assert apply(divided, FACTS) == 32  # prompts per mini-batch, verl's unit
    samples = entry(
        fact="workload.prompts_per_step",
        transform="multiply",
        argument="workload.samples_per_prompt",
    )
    assert apply(samples, FACTS) == 6144
    looked = entry(fact="plan.train.recompute", transform="lookup", table={"full": True})
    assert apply(looked, FACTS) is True


def test_a_fused_plan_needs_a_key_of_its_own() -> None:
    # No mapped launch fuses stages (survey §4.3): a launch that says nothing about fusion
    # runs the stages in turn, so a fused plan is refused rather than written unfused.
    facts = {**FACTS, "plan.execution": "sync", "plan.train.offload_optimizer": 0}
    assert unexpressed({**facts, "plan.fusion": "none"}, []) == []
    assert unexpressed({**facts, "plan.fusion": "inter-stage"}, []) == ["plan.fusion = inter-stage"]


def test_a_lookup_without_the_value_refuses_with_what_it_takes() -> None:
    looked = entry(fact="plan.train.recompute", transform="lookup", table={"none": False})
    with pytest.raises(NotExpressible, match=r"no value for plan\.train\.recompute = full"):
        apply(looked, FACTS)


def test_a_division_that_leaves_a_remainder_refuses() -> None:
    odd = {**FACTS, "workload.minibatches_per_step": 3}
    divided = entry(
        fact="workload.prompts_per_step",
        transform="divide",
        argument="workload.minibatches_per_step",
    )
    with pytest.raises(NotExpressible, match="not a whole number"):
        apply(divided, odd)


def test_lookup_keys_spell_booleans_and_whole_numbers_plainly() -> None:
    assert [lookup_key(v) for v in (True, False, 3, 1.0, 0.5, "full")] == [
        "true",
        "false",
        "3",
        "1",
        "0.5",
        "full",
    ]


def test_pools_become_nodes_times_gpus_per_node() -> None:
    assert pool_shape(32, None, 8, 4) == (4, 8)  # whole nodes
    assert pool_shape(4, None, 8, 1) == (1, 4)  # part of one node
    # verl's one-step-off recipe: 4 rollout and 12 training GPUs on 2 nodes of 8 are declared
    # as 2 x 2 and 2 x 6 (dapo_7b_math_fsdp2_4_12.sh), the only even split
    assert pool_shape(12, 4, 8, 2) == (2, 6)
    assert pool_shape(4, 12, 8, 2) == (2, 2)
    assert pool_shape(8, 24, 8, 4) == (1, 8)  # whole nodes stay whole
    with pytest.raises(NotExpressible, match="neither whole nodes"):
        pool_shape(12, None, 8, 2)
    with pytest.raises(NotExpressible, match="cannot share"):
        pool_shape(3, 10, 8, 2)


def test_nodes_transform_reads_the_other_pool_only_when_disaggregated() -> None:
    nodes = entry(fact="plan.train.gpus", transform="nodes", argument="plan.rollout.gpus")
    per_node = entry(
        fact="plan.train.gpus", transform="gpus_per_node", argument="plan.rollout.gpus"
    )
    assert (apply(nodes, FACTS), apply(per_node, FACTS)) == (2, 6)
    colocated = {**FACTS, "plan.placement": "colocated", "plan.train.gpus": 16}
    assert (apply(nodes, colocated), apply(per_node, colocated)) == (2, 8)


# -- the frameworks' own schemas -------------------------------------------------------------


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat |= _flatten(value, f"{prefix}{key}.")
        flat[f"{prefix}{key}"] = value
    return flat


VERL_VERSIONS = ("0.8.0", "0.7.0-125-gb178a3cd5")
VERL_FIXTURES = {"verl-0.8.0": "verl-0.8.0-", "verl-0.7.0-125-gb178a3cd5": "verl-"}
"""Mapping -> the prefix of its copies of verl's trainer configs in tests/fixtures/frameworks/."""


@cache
def verl_schema(name: str, mapping: str = "verl-0.7.0-125-gb178a3cd5") -> dict[str, Any]:
    return _flatten(yaml.safe_load((FIXTURES / f"{VERL_FIXTURES[mapping]}{name}").read_text()))


@cache
def openrlhf_options(commit: str) -> dict[str, tuple[str, str]]:
    """Option (without dashes) -> (type, action), from the argparse extract at `commit`."""
    rows = (FIXTURES / f"openrlhf-{commit[:7]}-train_ppo_ray-options.tsv").read_text().splitlines()
    options = {}
    for row in rows:
        if row.startswith("#"):
            continue
        _, name, kind, action, _ = row.split("\t")
        options[name.removeprefix("--")] = (kind, action)
    return options


def _same_type(value: Any, declared: Any) -> bool:
    """Whether an emitted value has the type of the key's default in verl's YAML (an
    interpolation or a null default accepts any scalar)."""
    if declared is None or (isinstance(declared, str) and declared.startswith("${")):
        return not isinstance(value, dict | list)
    if declared == "???":  # mandatory, no default
        return isinstance(value, str)
    if isinstance(declared, bool):
        return isinstance(value, bool)
    if isinstance(declared, int | float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return type(value) is type(declared)


DAPO_RECIPE_KEYS = {
    # the keys recipe/dapo/config/dapo_trainer.yaml (and dapo_megatron_trainer.yaml) add to verl's
    # trainer config at verl-recipe 21892b92 (the submodule commit of verl b178a3cd), with their
    # defaults there, read by hand
    "verl-0.7.0-125-gb178a3cd5": {
        "data.gen_batch_size": "${data.train_batch_size}",
        "reward_model.overlong_buffer.enable": False,
        "reward_model.overlong_buffer.len": 0,
        "reward_model.overlong_buffer.penalty_factor": 0.0,
        "algorithm.filter_groups.enable": False,
        "algorithm.filter_groups.metric": None,
        "algorithm.filter_groups.max_num_gen_batches": 0,
    },
    # at verl-recipe e7f88957 (the submodule commit of verl v0.8.0): the overlong punishment moved
    # under reward.reward_kwargs, with the response limit the dapo reward manager asserts
    "verl-0.8.0": {
        "data.gen_batch_size": "${data.train_batch_size}",
        "reward.reward_kwargs.overlong_buffer_cfg.enable": False,
        "reward.reward_kwargs.overlong_buffer_cfg.len": 0,
        "reward.reward_kwargs.overlong_buffer_cfg.penalty_factor": 0.0,
        "reward.reward_kwargs.overlong_buffer_cfg.log": False,
        "reward.reward_kwargs.max_resp_len": None,
        "algorithm.filter_groups.enable": False,
        "algorithm.filter_groups.metric": None,
        "algorithm.filter_groups.max_num_gen_batches": 0,
    },
}


def verl_schema_for(done: Exported) -> dict[str, Any]:
    megatron = done.backend == "megatron-lm"
    mapping = done.mapping.id
    schema = dict(
        verl_schema(
            "_generated_ppo_megatron_trainer.yaml" if megatron else "_generated_ppo_trainer.yaml",
            mapping,
        )
    )
    if done.plan["execution"] == "one-step-off":
        # one_step_off_ppo_trainer.yaml extends ppo_trainer with the rollout pool
        extra = verl_schema("one_step_off_ppo_trainer.yaml", mapping)
        schema |= {k: v for k, v in extra.items() if k.startswith("rollout.")}
    if done.plan["execution"] == "async":
        # fully_async_ppo_trainer.yaml adds the rollout pool and async_training
        extra = verl_schema("fully_async_ppo_trainer.yaml", mapping)
        schema |= {k: v for k, v in extra.items() if k.startswith(("rollout.", "async_training."))}
    return schema


@pytest.mark.parametrize("version", VERL_VERSIONS)
@pytest.mark.parametrize("record_id", [d for d in EXPORTABLE if d.startswith("verl")])
def test_every_verl_key_exists_in_verl_config_with_its_type(record_id: str, version: str) -> None:
    assert_verl_keys(exported(record_id, version))


def assert_verl_keys(done: Exported) -> None:
    """Every key of a verl launch is one of verl's trainer config at the commit (or added
    under a mapping with `+`), with the type of its default there."""
    schema = verl_schema_for(done)
    for arg in done.arguments:
        if arg.key.startswith("+"):
            # an added key (Hydra's `+`) is new, under a mapping of the schema: an empty one or
            # an open dict such as override_transformer_config, whose given keys it joins
            # (Hydra creates missing levels: the nearest existing ancestor must be a mapping)
            assert arg.key[1:] not in schema, f"{arg.key} exists: `+` would fail"
            parent = arg.key[1:].rsplit(".", 1)[0]

            def known(name: str) -> bool:
                return name in schema or any(k.startswith(f"{name}.") for k in schema)

            while "." in parent and not known(parent):
                parent = parent.rsplit(".", 1)[0]
            mapping = schema.get(parent) == {} or any(k.startswith(f"{parent}.") for k in schema)
            assert mapping, f"{arg.key}: {parent} is not a mapping"
            continue
        recipe = DAPO_RECIPE_KEYS[done.mapping.id]
        if done.launch.algorithms and arg.key in recipe:
            assert _same_type(arg.value, recipe[arg.key]), arg.key
            continue
        assert arg.key in schema, f"{arg.key} is not a key of verl's trainer config"
        if arg.value is not None and not arg.key.endswith(("model.path", "train_files")):
            assert _same_type(arg.value, schema[arg.key]), (arg.key, arg.value, schema[arg.key])


OPENRLHF_VERSIONS = ("0.11.0", "0.8.9.post1-5-gc250c21a")


@pytest.mark.parametrize("version", OPENRLHF_VERSIONS)
@pytest.mark.parametrize("record_id", [d for d in EXPORTABLE if d.startswith("openrlhf")])
def test_every_openrlhf_flag_exists_in_its_argparse_with_its_type(
    record_id: str, version: str
) -> None:
    done = exported(record_id, version)
    options = openrlhf_options(done.mapping.commit)
    fixed = [*done.mapping.fixed, *done.launch.fixed]
    for flag in fixed:
        assert options[flag.removeprefix("--")][1] == "store_true", flag
    for arg in done.arguments:
        kind, action = options[arg.key]
        if isinstance(arg.value, bool):
            assert action == "store_true", arg.key  # written as a switch, or left out
        else:
            assert action == "store", arg.key
            assert kind == {int: "int", float: "float", str: "str"}[type(arg.value)], arg.key


@pytest.mark.parametrize("record_id", [d for d in EXPORTABLE if d.startswith("nemo-rl")])
def test_every_nemo_rl_key_exists_in_its_base_config_with_its_type(record_id: str) -> None:
    done = exported(record_id)
    schema = _flatten(yaml.safe_load((FIXTURES / "nemo-rl-grpo_math_1B.yaml").read_text()))
    for arg in done.arguments:
        if arg.key.startswith("+"):  # Hydra adds it to the struct config: it must be new
            parent, _, _ = arg.key[1:].rpartition(".")
            assert arg.key[1:] not in schema and isinstance(schema.get(parent), dict), arg.key
            continue
        assert arg.key in schema, f"{arg.key} is not a key of grpo_math_1B.yaml"
        if arg.key != "policy.model_name":
            assert _same_type(arg.value, schema[arg.key]), (arg.key, arg.value, schema[arg.key])


def verl_batches_pass_verl_checks(args: dict[str, Any]) -> None:
    """verl's own batch checks, reproduced (the trainer needs a GPU to import):
    - verl/utils/config.py L85-L113 (validate_config): data.train_batch_size x rollout.n
      divides over the training GPUs (FSDP) or the data-parallel ranks (Megatron);
    - verl/workers/config/actor.py L203-L208: train_batch_size >= ppo_mini_batch_size;
    - verl/workers/fsdp_workers.py L241-L246: ppo_mini_batch_size x n over dp (world size
      over the Ulysses degree) stays above zero; the step splits into whole mini-batches.
    All at b178a3cd56f58b2d502255daba591e92833930a7. The fully asynchronous trainer has no
    train_batch_size (its rollouter asserts 0, fully_async_policy/fully_async_rollouter.py L77)
    and no validate_config: each update is require_batches mini-batches from the queue
    (fully_async_trainer.py L113-L115), which the same worker splits."""
    gpus = args["trainer.nnodes"] * args["trainer.n_gpus_per_node"]
    prefix = "actor_rollout_ref.actor.megatron."
    if prefix + "tensor_model_parallel_size" in args:
        split = (
            args[prefix + "tensor_model_parallel_size"]
            * args[prefix + "pipeline_model_parallel_size"]
            * args[prefix + "context_parallel_size"]
        )
        assert gpus % split == 0
        dp = gpus // split
    else:
        dp = gpus // args["actor_rollout_ref.actor.ulysses_sequence_parallel_size"]
    mini = args["actor_rollout_ref.actor.ppo_mini_batch_size"]
    if "async_training.require_batches" in args:
        assert args["data.train_batch_size"] == 0
        args = {**args, "data.train_batch_size": mini * args["async_training.require_batches"]}
    samples = args["data.train_batch_size"] * args["actor_rollout_ref.rollout.n"]
    assert samples % dp == 0
    assert args["data.train_batch_size"] >= mini
    assert mini * args["actor_rollout_ref.rollout.n"] // dp > 0
    assert args["data.train_batch_size"] % mini == 0


@pytest.mark.parametrize("record_id", [d for d in EXPORTABLE if d.startswith("verl")])
def test_exported_verl_batches_pass_verls_checks(record_id: str) -> None:
    verl_batches_pass_verl_checks(read_back(exported(record_id)))


def test_the_batch_check_can_fail() -> None:
    args = read_back(exported("verl-qwen2.5-math-7b-dapo-fsdp-64xh800"))
    with pytest.raises(AssertionError):
        verl_batches_pass_verl_checks({**args, "actor_rollout_ref.actor.ppo_mini_batch_size": 3})


# -- deployments: export reproduces the experts' scripts ---------------------------------------

SCRIPTS: dict[str, dict[str, Any]] = {
    # examples/grpo_trainer/run_deepseek671b_math_megatron_96gb.sh at b178a3c, variables expanded
    "verl-deepseek-v3-grpo-megatron-96xh20": {
        "data.train_batch_size": 96,
        "actor_rollout_ref.rollout.n": 8,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 32,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 32,
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 8,
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": 12,
        "actor_rollout_ref.actor.megatron.expert_model_parallel_size": 8,
        "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size": 1,
        "actor_rollout_ref.actor.megatron.context_parallel_size": 1,
        "actor_rollout_ref.actor.megatron.param_offload": True,
        "actor_rollout_ref.actor.megatron.grad_offload": True,
        "actor_rollout_ref.actor.megatron.optimizer_offload": True,
        "actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload": True,
        "actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction": 1,
        **{
            f"actor_rollout_ref.actor.megatron.override_transformer_config.recompute_{k}": v
            for k, v in (("granularity", "full"), ("method", "uniform"), ("num_layers", 1))
        },
        "actor_rollout_ref.ref.megatron.param_offload": True,
        "data.max_prompt_length": 2048,
        "data.max_response_length": 9632,
        "trainer.nnodes": 12,
        "trainer.n_gpus_per_node": 8,
    },
    # examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh at b178a3c
    "verl-qwen3-235b-a22b-grpo-megatron-32xh20": {
        "data.train_batch_size": 32,
        "actor_rollout_ref.rollout.n": 8,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 16,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 8,
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 4,
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": 8,
        "actor_rollout_ref.actor.megatron.expert_model_parallel_size": 4,
        "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size": 1,
        "actor_rollout_ref.actor.megatron.param_offload": True,
        "trainer.nnodes": 4,
        "trainer.n_gpus_per_node": 8,
    },
    # examples/ppo_trainer/run_qwen2.5-32b.sh at b178a3c
    "verl-qwen2.5-32b-ppo-critic-fsdp-32xa100": {
        "data.train_batch_size": 1024,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 256,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 4,
        "actor_rollout_ref.model.enable_gradient_checkpointing": True,
        "actor_rollout_ref.actor.fsdp_config.param_offload": False,
        "trainer.nnodes": 4,
        "trainer.n_gpus_per_node": 8,
    },
    # verl/experimental/one_step_off_policy/shell/dapo_7b_math_fsdp2_4_12.sh at b178a3c
    "verl-qwen2.5-math-7b-dapo-one-step-off-16xh20": {
        "data.train_batch_size": 512,
        "actor_rollout_ref.rollout.n": 12,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 32,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 2,
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size": 4,
        "actor_rollout_ref.actor.fsdp_config.param_offload": False,
        "actor_rollout_ref.hybrid_engine": False,
        "actor_rollout_ref.actor.clip_ratio_high": 0.28,  # DAPO's clip-higher
        "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
        "actor_rollout_ref.actor.use_kl_loss": False,
        "algorithm.adv_estimator": "grpo",
        "data.max_prompt_length": 2048,
        "data.max_response_length": 8192,
        "trainer.nnodes": 2,
        "trainer.n_gpus_per_node": 6,
        "rollout.nnodes": 2,
        "rollout.n_gpus_per_node": 2,
    },
    # examples/scripts/train_ppo_llama_ray_70b.sh at c250c21, exported with the mapping of that
    # commit (the flat spelling of the flags)
    "openrlhf-llama-3-70b-ppo-32xa100": {
        "actor_num_nodes": 1,
        "actor_num_gpus_per_node": 8,
        "critic_num_nodes": 1,
        "critic_num_gpus_per_node": 8,
        "ref_num_nodes": 1,
        "ref_num_gpus_per_node": 4,
        "reward_num_nodes": 1,
        "reward_num_gpus_per_node": 4,
        "vllm_num_engines": 4,
        "vllm_tensor_parallel_size": 2,
        "train_batch_size": 128,
        "rollout_batch_size": 1024,
        "max_epochs": 1,
        "prompt_max_len": 1024,
        "generate_max_len": 1024,
        "zero_stage": 3,
        "adam_offload": True,
        "gradient_checkpointing": True,
    },
    # examples/scripts/train_reinforce_llama_ray_hybrid_engine.sh at c250c21
    "openrlhf-llama-3-8b-reinforce-pp-hybrid-8xa100": {
        "colocate_all_models": True,
        "vllm_enable_sleep": True,
        "deepspeed_enable_sleep": True,
        "actor_num_nodes": 1,
        "actor_num_gpus_per_node": 8,
        "ref_num_nodes": 1,
        "ref_num_gpus_per_node": 8,
        "reward_num_nodes": 1,
        "reward_num_gpus_per_node": 8,
        "vllm_num_engines": 4,
        "vllm_tensor_parallel_size": 2,
        "advantage_estimator": "reinforce",
        "train_batch_size": 128,
        "rollout_batch_size": 1024,
        "n_samples_per_prompt": 1,
        "max_epochs": 1,
        "prompt_max_len": 1024,
        "generate_max_len": 1024,
        "zero_stage": 3,
        "gradient_checkpointing": True,
    },
    # examples/scripts/train_reinforce_baseline_ray_agent_async.sh at 3c3be62
    "openrlhf-qwen3-4b-thinking-reinforce-baseline-async-64k-8xa100": {
        "train.async_enable": True,
        "data.max_len": 74240,
        "rollout.max_new_tokens": 64000,
        "rollout.batch_size": 128,
        "rollout.n_samples_per_prompt": 8,
        "train.batch_size": 1024,
        "actor.num_gpus_per_node": 4,
        "ref.num_gpus_per_node": 4,
        "vllm.num_engines": 2,
        "vllm.tensor_parallel_size": 2,
        "ds.enable_sleep": True,
        "ds.zero_stage": 3,
        "ds.ring_attn_size": 2,
        "algo.advantage.estimator": "reinforce_baseline",
    },
    # examples/configs/recipes/llm/performance/grpo-qwen3-32b-8n8g-async-1off.yaml at 6c70893,
    # its parent grpo-qwen3-32b-4n8g.yaml and their base grpo_math_1B.yaml
    "nemo-rl-qwen3-32b-grpo-async-1off-64xh100": {
        "grpo.async_grpo.enabled": True,
        "grpo.async_grpo.max_trajectory_age_steps": 1,
        "grpo.async_grpo.in_flight_weight_updates": True,
        "loss_fn.use_importance_sampling_correction": True,
        "policy.megatron_cfg.enabled": True,
        "policy.megatron_cfg.tensor_model_parallel_size": 4,
        "policy.megatron_cfg.pipeline_model_parallel_size": 4,
        "policy.megatron_cfg.optimizer.use_distributed_optimizer": True,
        "policy.generation.colocated.enabled": False,
        "policy.generation.colocated.resources.num_nodes": 4,
        "policy.generation.colocated.resources.gpus_per_node": 8,
        "policy.generation.vllm_cfg.async_engine": True,
        "policy.generation.vllm_cfg.tensor_parallel_size": 4,
        "grpo.num_prompts_per_step": 64,
        "grpo.num_generations_per_prompt": 32,
        "policy.train_global_batch_size": 512,
        "cluster.gpus_per_node": 8,
        "cluster.num_nodes": 8,
    },
}


VERSION_OF_SCRIPT = {
    "openrlhf-llama-3-70b-ppo-32xa100": "c250c21",
    "openrlhf-llama-3-8b-reinforce-pp-hybrid-8xa100": "c250c21",
}
"""Scripts read at an older commit than the newest mapping, exported at theirs."""


@pytest.mark.parametrize("record_id", sorted(SCRIPTS))
def test_export_reproduces_the_experts_script(record_id: str) -> None:
    args = read_back(exported(record_id, VERSION_OF_SCRIPT.get(record_id)))
    wanted = SCRIPTS[record_id]
    assert {k: args.get(k) for k in wanted} == wanted


def read_plan(done: Exported) -> dict[str, Any]:
    """The plan a framework would run from the emitted launch, in plan terms."""
    args = read_back(done)
    if done.framework == "nemo-rl":
        return nemo_rl_plan(args)
    if done.framework == "slime":
        return slime_plan(args)
    if done.framework == "skyrl":
        return skyrl_plan(args)
    if done.mapping.syntax == "hydra":
        megatron = "actor_rollout_ref.actor.megatron."
        train_gpus = args["trainer.nnodes"] * args["trainer.n_gpus_per_node"]
        prompts = args["data.train_batch_size"]
        if "async_training.trigger_parameter_sync_step" in args:
            # a weight push every trigger_parameter_sync_step updates of require_batches
            # mini-batches (fully_async_trainer.py L113-L115, L525-L530 at b178a3cd)
            pushed = args["async_training.trigger_parameter_sync_step"]
            pushed *= args["async_training.require_batches"]
            prompts = pushed * args["actor_rollout_ref.actor.ppo_mini_batch_size"]
        return {
            "train.tp": args.get(megatron + "tensor_model_parallel_size", 1),
            "train.pp": args.get(megatron + "pipeline_model_parallel_size", 1),
            "train.cp": args.get(megatron + "context_parallel_size")
            or args["actor_rollout_ref.actor.ulysses_sequence_parallel_size"],
            "train.ep": args.get(megatron + "expert_model_parallel_size", 1),
            "train.gpus": train_gpus,
            "rollout.gpus": args["rollout.nnodes"] * args["rollout.n_gpus_per_node"]
            if "rollout.nnodes" in args
            else train_gpus,
            "rollout.tp": args["actor_rollout_ref.rollout.tensor_model_parallel_size"],
            "prompts": prompts,
            "samples": args["actor_rollout_ref.rollout.n"],
            "minibatches": prompts // args["actor_rollout_ref.actor.ppo_mini_batch_size"],
        }
    flat = "rollout_batch_size" in args  # OpenRLHF before the dotted flags
    name = {
        k: (k.replace(".", "_") if flat else k)
        for k in ("rollout.batch_size", "train.batch_size", "vllm.num_engines")
    }
    prompts = args[name["rollout.batch_size"]]
    samples = args["n_samples_per_prompt" if flat else "rollout.n_samples_per_prompt"]
    rollout_tp = args["vllm_tensor_parallel_size" if flat else "vllm.tensor_parallel_size"]
    actor = (
        ("actor_num_nodes", "actor_num_gpus_per_node")
        if flat
        else ("actor.num_nodes", "actor.num_gpus_per_node")
    )
    return {
        "train.tp": args["ds_tensor_parallel_size" if flat else "ds.tensor_parallel_size"],
        "train.pp": 1,
        "train.cp": args["ring_attn_size" if flat else "ds.ring_attn_size"],
        "train.ep": 1,
        "train.gpus": args[actor[0]] * args[actor[1]],
        "rollout.gpus": args[name["vllm.num_engines"]] * rollout_tp,
        "rollout.tp": rollout_tp,
        "prompts": prompts,
        "samples": samples,
        "minibatches": prompts * samples // args[name["train.batch_size"]],
    }


def nemo_rl_plan(args: dict[str, Any]) -> dict[str, Any]:
    megatron = args["policy.megatron_cfg.enabled"]
    cfg = "policy.megatron_cfg." if megatron else "policy.dtensor_cfg."
    cluster = args["cluster.num_nodes"] * args["cluster.gpus_per_node"]
    if args["policy.generation.colocated.enabled"]:
        rollout = train = cluster
    else:
        resources = "policy.generation.colocated.resources."
        rollout = args[resources + "num_nodes"] * args[resources + "gpus_per_node"]
        train = cluster - rollout
    prompts, samples = args["grpo.num_prompts_per_step"], args["grpo.num_generations_per_prompt"]
    return {
        "train.tp": args[
            cfg + ("tensor_model_parallel_size" if megatron else "tensor_parallel_size")
        ],
        "train.pp": args["policy.megatron_cfg.pipeline_model_parallel_size"] if megatron else 1,
        "train.cp": args[cfg + "context_parallel_size"],
        "train.ep": args["policy.megatron_cfg.expert_model_parallel_size"]
        if megatron
        else args.get("policy.dtensor_cfg.expert_parallel_size", 1),
        "train.gpus": train,
        "rollout.gpus": rollout,
        "rollout.tp": args["policy.generation.vllm_cfg.tensor_parallel_size"],
        "prompts": prompts,
        "samples": samples,
        "minibatches": prompts * samples // args["policy.train_global_batch_size"],
    }


def slime_plan(args: dict[str, Any]) -> dict[str, Any]:
    """slime's reading of its flags (slime/utils/arguments.py at 624b824): the rollout takes the
    actor's GPUs under --colocate (L1939-L1952), an engine's GPUs are TP x SGLang's PP
    (sglang_utils/arguments.py L173-L181); absent Megatron degrees are 1."""
    train = args["actor-num-nodes"] * args["actor-num-gpus-per-node"]
    rollout_tp = args["rollout-num-gpus-per-engine"] // args.get("sglang-pp-size", 1)
    prompts, samples = args["rollout-batch-size"], args["n-samples-per-prompt"]
    return {
        "train.tp": args.get("tensor-model-parallel-size", 1),
        "train.pp": args.get("pipeline-model-parallel-size", 1),
        "train.cp": args.get("context-parallel-size", 1),
        "train.ep": args.get("expert-model-parallel-size", 1),
        "train.gpus": train,
        "rollout.gpus": train if args.get("colocate") else args["rollout-num-gpus"],
        "rollout.tp": rollout_tp,
        "prompts": prompts,
        "samples": samples,
        "minibatches": prompts * samples // args["global-batch-size"],
    }


def skyrl_plan(args: dict[str, Any]) -> dict[str, Any]:
    """SkyRL's reading of its keys (skyrl/train/utils/utils.py at a9564572e, validate_cfg): the
    engines' GPUs are num_engines x TP x PP x DP and equal the policy's under colocate_all
    (L455-L465); an engine's GPUs are TP x DP (the planner's rollout TP); FSDP's only split is
    Ulysses (sequence_parallel_size); absent degrees are the dataclass defaults, 1."""
    place, engine = "trainer.placement.", "generator.inference_engine."
    megatron = "trainer.policy.megatron_config."
    train = args[place + "policy_num_nodes"] * args[place + "policy_num_gpus_per_node"]
    per_engine = args.get(engine + "tensor_parallel_size", 1) * args.get(
        engine + "data_parallel_size", 1
    )
    engines = args[engine + "num_engines"] * args.get(engine + "pipeline_parallel_size", 1)
    rollout = engines * per_engine
    prompts = args["trainer.train_batch_size"]
    fsdp = args.get("trainer.strategy", "fsdp") != "megatron"
    return {
        "train.tp": 1 if fsdp else args.get(megatron + "tensor_model_parallel_size", 1),
        "train.pp": 1 if fsdp else args.get(megatron + "pipeline_model_parallel_size", 1),
        "train.cp": args.get("trainer.policy.sequence_parallel_size", 1)
        if fsdp
        else args.get(megatron + "context_parallel_size", 1),
        "train.ep": 1 if fsdp else args.get(megatron + "expert_model_parallel_size", 1),
        "train.gpus": train,
        "rollout.gpus": rollout,
        "rollout.tp": per_engine,
        "prompts": prompts,
        "samples": args["generator.n_samples_per_prompt"],
        "minibatches": prompts // args["trainer.policy_mini_batch_size"],
    }


def planned(plan: dict[str, Any], workload: dict[str, Any]) -> dict[str, Any]:
    """The same values from a plan and workload, as the planner states them."""
    return {
        **{f"train.{k}": plan["train"][k] for k in ("tp", "pp", "cp", "ep", "gpus")},
        **{f"rollout.{k}": plan["rollout"][k] for k in ("gpus", "tp")},
        "prompts": workload["prompts_per_step"],
        "samples": workload["samples_per_prompt"],
        "minibatches": workload["minibatches_per_step"],
    }


@pytest.mark.parametrize(
    ("record_id", "version"),
    [(d, None) for d in EXPORTABLE]
    + [(d, "c250c21") for d in EXPORTABLE if d.startswith("openrlhf")],
)
def test_export_reproduces_the_deployments_plan(record_id: str, version: str | None) -> None:
    """Read back into plan terms, every exported deployment gives its record's plan (OpenRLHF's
    at both mappings)."""
    record = DEPLOYMENTS[record_id]
    done = exported(record_id, version)
    scenario = record.scenario.model_dump(mode="json")
    plan = scenario["plan"]
    plan["train"]["pp"] = plan["train"]["pp"] or 1
    plan["train"]["ep"] = plan["train"]["ep"] or 1
    assert read_plan(done) == planned(plan, scenario["workload"])
    assert (done.plan["execution"], done.plan["placement"]) == (
        plan["execution"],
        plan["placement"],
    )


EXAMPLES = sorted(
    str(p)
    for p in (REPO / "examples").glob("*.yaml")
    if "parts" not in yaml.safe_load(p.read_text())["cluster"]
)
"""The single-accelerator examples; a mixed cluster is refused (tests/test_mixed.py)."""
REFUSED_EXAMPLES = {
    # 70B PPO with a reward model on 1,024 GPUs: NeMo-RL runs a reward model only on GPUs of its
    # own, so its plans give it a pool (nemo-rl-reward-model-own-pool), and the NeMo-RL mapping
    # has no key for a reward model's pool: every launch is refused
    ("ppo-llama-3.1-70b-1024xh100", "nemo-rl"): "no key for plan.pools.reward = ",
    # An LLM judge, an fp8 reference of its own and the rollout's log-probs: no mapping has a key
    # for them yet, so every launch is refused rather than written as a plain reward model.
    **{
        ("grpo-qwen2.5-7b-llm-judge-16xh100", framework): "workload.reward_kind = llm-judge"
        for framework in MAPPED
    },
    # Offline DPO: verl and NeMo-RL claim no DPO; OpenRLHF's mapping is its PPO launcher, which
    # has no key for a run that scores nothing (its DPO is another entry point, train_dpo).
    ("dpo-qwen2.5-7b-8xh100", "verl"): "framework verl does not claim DPO",
    ("dpo-qwen2.5-7b-8xh100", "nemo-rl"): "framework nemo-rl does not claim DPO",
    ("dpo-qwen2.5-7b-8xh100", "openrlhf"): "workload.reward_kind = none",
    # slime has no architecture script for Llama-3.1-70B at 624b824a (scripts/models/), which
    # is refused before its want of a reward-model pool (only a remote scorer behind --rm-url)
    ("ppo-llama-3.1-70b-1024xh100", "slime"): "no architecture script for llama-3.1-70b",
    ("dpo-qwen2.5-7b-8xh100", "slime"): "framework slime does not claim DPO",
    # SkyRL scores with a SkyRL-Gym environment; its mapping has no reward-model key, and it
    # claims no DPO
    ("ppo-llama-3.1-70b-1024xh100", "skyrl"): "workload.reward_model = true",
    ("dpo-qwen2.5-7b-8xh100", "skyrl"): "framework skyrl does not claim DPO",
    # A shared actor-critic with inter-stage fusion: none of the mapped frameworks claims them.
    **{
        ("ppo-qwen2.5-7b-shared-critic-fused-16xh100", framework): "does not claim "
        "shared-actor-critic (plan.critic: shared)"
        for framework in MAPPED
    },
    # Agentic episodes of 16 turns at most: verl's agent loop and SkyRL's generator.max_turns
    # bound them; slime's turns are its generate function's own (the reason is the mapping's
    # `absent`); the OpenRLHF and NeMo-RL mappings have no agent keys, so a launch would run
    # one turn per prompt.
    ("grpo-qwen3-32b-coding-agent-64xh100", "slime"): "no key for workload.max_turns = 16 "
    "on megatron-lm with sglang (workload.max_turns: slime has no argument for an episode's turns",
    **{
        ("grpo-qwen3-32b-coding-agent-64xh100", framework): "no key for workload.max_turns = 16"
        for framework in ("openrlhf", "nemo-rl")
    },
}


@pytest.mark.parametrize("framework", MAPPED)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: Path(p).stem)
def test_every_bundled_example_exports_and_reads_back_to_its_plan(
    example: str, framework: str
) -> None:
    done = CliRunner().invoke(
        cli,
        ["export", example, "--framework", framework, "--format", "json"],
        catch_exceptions=False,
    )
    refusal = REFUSED_EXAMPLES.get((Path(example).stem, framework))
    if refusal is not None:
        assert done.exit_code == 1
        assert refusal in done.output
        return
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    catalog, mappings = catalogs()
    exported_again = build(
        resolve(parse_example(example), catalog.records), catalog, mappings, framework
    )
    # deterministic: the same keys and values from the library as from the command
    assert json.loads(json.dumps(exported_again.as_json()["arguments"])) == data["arguments"]
    resolved = exported_again.found.recommender.resolved
    workload = resolved.scenario.workload.model_dump(mode="json")
    workload["samples_per_prompt"] = resolved.samples_per_prompt  # the algorithm's default
    assert read_plan(exported_again) == planned(data["plan"], workload)
    assert framework in data["plan"]["frameworks"]


def parse_example(path: str) -> Any:
    from rlmguide.rules.scenario import parse_scenario, read_mapping

    return parse_scenario(read_mapping(Path(path)), path)


@pytest.mark.parametrize("record_id", sorted(REFUSED))
def test_a_plan_the_framework_refuses_names_the_constraint(record_id: str) -> None:
    with pytest.raises(NotExpressible, match=REFUSED[record_id]):
        exported(record_id)


def test_the_older_openrlhf_has_no_launch_for_queued_async() -> None:
    """Before ed62d0e2 OpenRLHF had only --async_train (one step off): a staleness of 2 has no
    launch there, and the newest mapping writes it as --train.async_queue_size."""
    args = ["export", SMALL, "--framework", "openrlhf", "--set", "plan.execution=async"]
    args += ["--set", "plan.max_staleness=2", "--format", "json"]
    old = CliRunner().invoke(cli, [*args, "--framework-version", "c250c21"])
    assert old.exit_code == 1
    assert "no entry point for async" in old.output
    new = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert new.exit_code == 0, new.output
    written = {a["key"]: a["value"] for a in json.loads(new.output)["arguments"]}
    assert written["train.async_queue_size"] == 2


def test_a_plan_without_a_launch_is_refused_with_the_launches_known() -> None:
    done = CliRunner().invoke(
        cli,
        ["export", SMALL, "--framework", "verl", "--set", "plan.execution=partial-rollout"],
        catch_exceptions=False,
    )
    assert done.exit_code == 1
    # verl's fully async trainer resumes the requests a weight push interrupts (mapped as
    # async); nothing caps one step's decoding and carries the tail to the next
    assert "no entry point for partial-rollout" in done.output
    assert "sync colocated" in done.output


# -- the command line ------------------------------------------------------------------------


def test_export_json_gives_keys_values_and_the_plan() -> None:
    done = CliRunner().invoke(
        cli,
        ["export", SMALL, "--framework", "openrlhf", "--format", "json"],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["mapping"] == "openrlhf-0.11.0"
    args = {a["key"]: a["value"] for a in data["arguments"]}
    assert args["rollout.batch_size"] == 128  # examples/grpo-qwen2.5-7b-8xh100.yaml
    assert args["rollout.n_samples_per_prompt"] == 8
    assert args["train.batch_size"] == 128 * 8 // 4  # samples per optimizer step
    assert "openrlhf" in data["plan"]["frameworks"]


def test_recommend_emit_prints_the_top_plan_the_framework_runs(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["recommend", SMALL, "--emit", "verl"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("#!/usr/bin/env bash")
    assert "verl" in done.output.splitlines()[1]
    clash = CliRunner().invoke(cli, ["recommend", SMALL, "--emit", "verl", "--framework", "slime"])
    assert clash.exit_code == 2


def test_unknown_framework_version_is_bad_input() -> None:
    done = CliRunner().invoke(
        cli, ["export", SMALL, "--framework", "openrlhf", "--framework-version", "0.9"]
    )
    assert done.exit_code == 2
    assert "known: 0.11.0" in done.output


def test_framework_version_picks_the_verl_mapping_and_the_newest_is_the_default() -> None:
    """verl 0.8.0 (verl-project) is the default; 0.7's mapping is picked by its id or commit.
    The critic's FSDP keys and Megatron's selection differ between them."""
    args = ["export", SMALL, "--framework", "verl", "--format", "json"]
    args += ["--set", "workload.algorithm=ppo", "--set", "plan.train.cp=1"]
    written = {}
    for version in (None, "0.8.0", "7aed6b2", "0.7.0-125-gb178a3cd5", "b178a3cd"):
        extra = ["--framework-version", version] if version else []
        done = CliRunner().invoke(cli, [*args, *extra], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        data = json.loads(done.output)
        written[version] = (data["mapping"], {a["key"] for a in data["arguments"]})
    assert {v: m for v, (m, _) in written.items()} == {
        None: "verl-0.8.0",
        "0.8.0": "verl-0.8.0",
        "7aed6b2": "verl-0.8.0",
        "0.7.0-125-gb178a3cd5": "verl-0.7.0-125-gb178a3cd5",
        "b178a3cd": "verl-0.7.0-125-gb178a3cd5",
    }
    assert "critic.fsdp.param_offload" in written[None][1]
    assert "critic.model.fsdp_config.param_offload" in written["b178a3cd"][1]
    assert not any(k.startswith("critic.model.fsdp_config") for k in written[None][1])


def test_an_unknown_verl_version_is_one_line_with_the_known_ones() -> None:
    done = run_cli("export", SMALL, "--framework", "verl", "--framework-version", "0.6.0")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "Error: --framework-version: verl has no mapping '0.6.0'; "
        "known: 0.8.0, 0.7.0-125-gb178a3cd5"
    )
    assert "Traceback" not in done.stderr


def test_review_reads_each_verl_version_with_its_own_mapping(tmp_path: Path) -> None:
    """A Megatron launch names its version by how it selects Megatron (0.7's
    --config-name=ppo_megatron_trainer.yaml, 0.8's model_engine=megatron)."""
    from rlmguide import api
    from rlmguide.review import Hardware, review

    scenario = api.Scenario.from_deployment("verl-qwen3-235b-a22b-grpo-megatron-32xh20", True, [])
    for version in ("verl-0.8.0", "verl-0.7.0-125-gb178a3cd5"):
        path = tmp_path / f"{version}.sh"
        path.write_text(api.export(scenario, "verl", version=version).script)
        got = review(path, "verl", hardware=Hardware("h20-96gb"))
        assert got["mapping"] == version
        assert got["training_backend"] == "megatron-lm"


def test_export_writes_an_executable_script_from_a_real_process(tmp_path: Path) -> None:
    out = tmp_path / "run.sh"
    done = run_cli(
        "export", "--deployment", "verl-qwen2.5-math-7b-dapo-one-step-off-16xh20",
        "--framework", "verl", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert os.access(out, os.X_OK)
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "python3 -m verl.experimental.one_step_off_policy.main_ppo \\\n" in text
    # the model path defaults to the Hugging Face id the model record cites; the user's wins
    assert 'MODEL_PATH="${MODEL_PATH:-unsloth/Qwen2.5-Math-7B}"' in text
    module = "verl.experimental.one_step_off_policy.main_ppo"
    words, _ = command_arguments(text, module, {"MODEL_PATH": "/models/m"})
    assert hydra_config(words)["actor_rollout_ref.model.path"] == "/models/m"
    words, _ = command_arguments(text, module)
    assert hydra_config(words)["actor_rollout_ref.model.path"] == "unsloth/Qwen2.5-Math-7B"
    # what only the user can give stays required, and is said before the script starts
    assert ': "${TRAIN_DATA:?' in text and "# Set before running: TRAIN_DATA" in text
    again = run_cli(
        "export", "--deployment", "verl-qwen2.5-math-7b-dapo-one-step-off-16xh20",
        "--framework", "verl",
    )  # fmt: skip
    assert again.stdout == text  # deterministic


def test_a_framework_without_a_mapping_fails_with_the_ones_there_are() -> None:
    done = CliRunner().invoke(cli, ["export", SMALL, "--framework", "prime-rl"])
    assert done.exit_code == 1
    assert "areal, nemo-rl, openrlhf, roll, skyrl, slime, verl" in done.output


def test_validate_names_a_mapping_entry_with_an_unknown_fact(
    use_fixture_kb: Path, tmp_path: Path
) -> None:
    folder = use_fixture_kb / "mappings"
    folder.mkdir(exist_ok=True)
    record = yaml.safe_load(
        (REPO / "kb" / "records" / "mappings" / "openrlhf-0.11.0.yaml").read_text()
    )
    record["entries"][3]["fact"] = "plan.rollout.tensor_parallel"
    (folder / "openrlhf-0.11.0.yaml").write_text(yaml.safe_dump(record))
    done = CliRunner().invoke(cli, ["validate"])
    assert done.exit_code == 1
    assert (
        "openrlhf-0.11.0.yaml: entries[3].fact: unknown fact 'plan.rollout.tensor_parallel'"
        in done.output
    )


# -- slime ---------------------------------------------------------------------------------


@cache
def slime_parser() -> argparse.ArgumentParser:
    """An argparse parser with slime's options as declared at 624b824 (and the Megatron and
    SGLang options the mapping emits), from the extract in tests/fixtures/frameworks/."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    types = {"int": int, "float": float, "str": str}
    rows = (FIXTURES / "slime-624b824-arguments-options.tsv").read_text().splitlines()
    for row in rows:
        if row.startswith("#"):
            continue
        _, name, kind, action, nargs = row.split("\t")
        if action == "store":
            many = None if nargs == "None" else nargs
            parser.add_argument(name, type=types.get(kind, str), nargs=many)
        elif action == "BooleanOptionalAction":
            parser.add_argument(name, action=argparse.BooleanOptionalAction)
        else:
            parser.add_argument(name, action=action)
    return parser


def slime_words(done: Exported) -> list[str]:
    text = script(done, "test", "policy")
    inputs = {var: f"${{{var}}}" for var, _ in INPUTS.values()}
    words, _ = command_arguments(text, done.launch.command.split()[-1].removesuffix(".py"), inputs)
    return words


def slime_exports() -> list[tuple[str, str]]:
    """Every bundled example slime runs, by name."""
    return [
        (example, Path(example).stem)
        for example in EXAMPLES
        if (Path(example).stem, "slime") not in REFUSED_EXAMPLES
    ]


@pytest.mark.parametrize("example", [e for e, _ in slime_exports()], ids=lambda p: Path(p).stem)
def test_every_slime_flag_exists_in_its_parser_with_its_type(example: str) -> None:
    catalog, mappings = catalogs()
    done = build(resolve(parse_example(example), catalog.records), catalog, mappings, "slime")
    parser = slime_parser()
    declared = {a.dest: a for a in parser._actions}
    # slime's own parser takes the words: an unknown flag or a value of the wrong type fails
    parsed, unknown = parser.parse_known_args(slime_words(done))
    assert unknown == [], unknown
    for arg in done.arguments:
        negated = arg.key.startswith("no-") and arg.key[3:].replace("-", "_") in declared
        action = declared[(arg.key[3:] if negated else arg.key).replace("-", "_")]
        got = getattr(parsed, action.dest)
        if negated:  # BooleanOptionalAction's --no-X: the option set to false
            assert isinstance(action, argparse.BooleanOptionalAction) and arg.value is True
            assert got is False, arg.key
            continue
        if arg.value is None:  # left out: the parser's default (None) stands
            assert got is None, arg.key
        elif isinstance(arg.value, bool):
            assert action.nargs == 0, arg.key  # a switch, written alone or left out
            assert bool(got) == arg.value, arg.key
        else:
            assert action.type is type(arg.value) or (
                action.type is float and isinstance(arg.value, int)
            ), (arg.key, arg.value, action.type)
            if not str(arg.value).startswith("${"):
                assert got == arg.value, arg.key


def test_the_slime_parser_refuses_a_flag_it_does_not_declare() -> None:
    """The oracle can fail: a misspelt flag and a text for an integer are caught."""
    parser = slime_parser()
    _, unknown = parser.parse_known_args(["--tensor-parallel-size", "2"])
    assert unknown == ["--tensor-parallel-size", "2"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--rollout-batch-size", "many"])


def test_slime_refuses_what_its_constraints_forbid() -> None:
    """One-step-off on shared GPUs: train_async.py asserts --colocate is off (constraint
    slime-async-not-colocated), and the export says so."""
    catalog, mappings = catalogs()
    scenario = parse_example(SMALL)
    fixed = scenario.plan.model_copy(update={"execution": "one-step-off", "placement": "colocated"})
    resolved = resolve(scenario.model_copy(update={"plan": fixed}), catalog.records)
    with pytest.raises(NotExpressible, match="one-step-off"):
        build(resolved, catalog, mappings, "slime")


def slime_passes_its_checks(args: dict[str, Any], entry_point: str) -> None:
    """slime's and Megatron's cross-field checks on a parsed launch, each reproduced from its
    source line (slime at 624b824, Megatron-LM at 1dcf0da): none imports without a GPU stack."""
    world = args["actor-num-nodes"] * args["actor-num-gpus-per-node"]
    model = (
        args.get("tensor-model-parallel-size", 1)
        * args.get("pipeline-model-parallel-size", 1)
        * args.get("context-parallel-size", 1)
    )
    # megatron/training/arguments.py L314-L319: the world divides by TP x PP x CP
    assert world % model == 0, f"world size {world} is not divisible by {model}"
    samples = args["rollout-batch-size"] * args.get("n-samples-per-prompt", 1)
    if (steps := args.get("num-steps-per-rollout")) is not None:
        # slime/utils/arguments.py L1971-L1979: the global batch agrees with the step count
        assert args["global-batch-size"] == samples // steps, "global batch != samples / steps"
    # slime/utils/dp_schedule.py L122-L185 (constraint slime-train-batch-divides-over-dp)
    assert args["global-batch-size"] % (world // model) == 0, "global batch over DP ranks"
    pp = args.get("sglang-pp-size", 1)
    # slime/backends/sglang_utils/arguments.py L174-L181: an engine's GPUs divide by its PP
    assert args.get("rollout-num-gpus-per-engine", 1) % pp == 0, "engine GPUs over SGLang PP"
    if args.get("sglang-dp-size", 1) > 1:  # L183-L184
        assert args.get("sglang-enable-dp-attention"), "DP size without DP attention"
    if args.get("recompute-granularity") == "selective":  # Megatron arguments.py L898-L901
        assert args.get("recompute-method") is None, "selective recompute takes no method"
    if args.get("optimizer-cpu-offload"):  # Megatron arguments.py L1189-L1193
        assert args.get("use-precision-aware-optimizer"), "CPU Adam needs the precision-aware one"
    if entry_point == "train_async":  # train_async.py L11
        assert not args.get("colocate"), "async training cannot colocate"


@pytest.mark.parametrize("example", [e for e, _ in slime_exports()], ids=lambda p: Path(p).stem)
def test_exported_slime_launches_pass_slimes_checks(example: str) -> None:
    catalog, mappings = catalogs()
    done = build(resolve(parse_example(example), catalog.records), catalog, mappings, "slime")
    entry_point = done.launch.command.split()[-1].removesuffix(".py")
    slime_passes_its_checks(argparse_config(slime_words(done)), entry_point)


@pytest.mark.parametrize(
    "record_id", [d for d in EXPORTABLE if DEPLOYMENTS[d].framework == "slime"]
)
def test_exported_slime_deployments_pass_slimes_checks(record_id: str) -> None:
    done = exported(record_id)
    entry_point = done.launch.command.split()[-1].removesuffix(".py")
    slime_passes_its_checks(argparse_config(slime_words(done)), entry_point)


def test_slimes_checks_can_fail() -> None:
    good = {
        "actor-num-nodes": 1,
        "actor-num-gpus-per-node": 8,
        "tensor-model-parallel-size": 2,
        "rollout-batch-size": 32,
        "n-samples-per-prompt": 8,
        "global-batch-size": 256,
        "num-steps-per-rollout": 1,
    }
    slime_passes_its_checks(good, "train")
    for bad, says in (
        ({"tensor-model-parallel-size": 3}, "not divisible"),
        ({"num-steps-per-rollout": 2}, "samples / steps"),
        ({"global-batch-size": 2, "num-steps-per-rollout": None}, "over DP ranks"),
        ({"rollout-num-gpus-per-engine": 3, "sglang-pp-size": 2}, "SGLang PP"),
        ({"sglang-dp-size": 2}, "DP attention"),
        ({"recompute-granularity": "selective", "recompute-method": "uniform"}, "no method"),
        ({"optimizer-cpu-offload": True}, "precision-aware"),
        ({"colocate": True}, "cannot colocate"),
    ):
        with pytest.raises(AssertionError, match=says):
            slime_passes_its_checks({**good, **bad}, "train_async")


def test_the_slime_mapping_page_links_megatron_flags_to_megatron() -> None:
    """The generated page of the slime mapping: Megatron's keys link to Megatron-LM at the
    commit slime pins, slime's to slime; the lines run before the command are shown."""
    from rlmguide.kb.schema.records import KINDS

    from rlmguide.sitegen.mapping_pages import mapping_pages
    from rlmguide.sitegen.pages import build_index

    catalog = load_catalog(record_roots(), tuple(KINDS))
    (page,) = [v for k, v in mapping_pages(build_index(catalog)).items() if "slime-" in k]
    megatron = "https://github.com/NVIDIA/Megatron-LM/blob/1dcf0dafa884ad52ffb243625717a3471643e087"
    assert f"{megatron}/megatron/core/model_parallel_config.py" in page
    slime = "https://github.com/THUDM/slime/blob/624b824a898ab0ec1fcb4d373004c7f3852bf515"
    assert f"{slime}/slime/utils/arguments.py" in page
    assert f"{slime}/megatron/" not in page
    assert "Before the command" in page and "MODEL_ARGS_SCRIPT" in page


def test_the_slime_mapping_is_a_row_of_the_database() -> None:
    """The knowledge base builds with the slime mapping: its other repository and the lines
    before its command are columns of `mappings`."""
    import duckdb
    from rlmguide.kb.db import ensure_database

    con = duckdb.connect(str(ensure_database(record_roots())), read_only=True)
    ((repositories, preamble),) = con.execute(
        "SELECT repositories, preamble FROM mappings WHERE framework = 'slime'"
    ).fetchall()
    assert json.loads(repositories)["megatron/"].endswith(
        "1dcf0dafa884ad52ffb243625717a3471643e087"
    )
    assert preamble[-1] == 'source "${MODEL_ARGS_SCRIPT}"'


def test_slime_export_json_by_hand() -> None:
    """examples/grpo-qwen2.5-7b-8xh100.yaml on slime, checked by hand: 128 prompts x 8 samples
    in 4 optimizer steps is a global batch of 1024 / 4 = 256 samples; the context bound is the
    512-token prompt plus the 8192-token longest response; with one policy version of lag
    allowed, the one-step-off plan (fixed: the fully asynchronous one costs about the same)
    runs through train_async.py with the actor and the rollout on 4 GPUs each of the one node."""
    done = CliRunner().invoke(
        cli,
        ["export", SMALL, "--framework", "slime", "--format", "json",
         "--set", "workload.max_staleness=1", "--set", "plan.execution=one-step-off"],
        catch_exceptions=False,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    args = {a["key"]: a["value"] for a in data["arguments"]}
    assert (data["command"], data["plan"]["execution"]) == (
        "python3 train_async.py",
        "one-step-off",
    )
    assert (args["rollout-batch-size"], args["n-samples-per-prompt"]) == (128, 8)
    assert (args["global-batch-size"], args["num-steps-per-rollout"]) == (256, 4)
    assert (args["rollout-max-context-len"], args["rollout-max-response-len"]) == (8704, 8192)
    assert (args["actor-num-nodes"], args["actor-num-gpus-per-node"]) == (1, 4)
    assert args["rollout-num-gpus"] == 4 and args["colocate"] is False  # left out of the script
    assert args["rollout-num-gpus-per-engine"] == data["plan"]["rollout"]["tp"]
    assert args["pipeline-model-parallel-size"] == data["plan"]["train"]["pp"]
    assert data["preamble"][-1] == 'source "${MODEL_ARGS_SCRIPT}"'
    assert set(data["inputs"]) == {
        "MODEL_PATH",
        "TRAIN_DATA",
        "REWARD_FUNCTION",
        "MEGATRON_CHECKPOINT",
    }


@pytest.mark.parametrize(
    ("assignment", "reason"),
    [
        # the constraint record refuses it before any key is written
        ("plan.train.zero=3", "by constraint slime-megatron-distributed-optimizer-only"),
        # (with parameter offload or LoRA fixed, the planner names the distributed-optimizer
        # constraint as the one refusing every candidate of this scenario)
        ("plan.train.lora_rank=16", "by constraint slime-"),
        ("plan.train.offload.params=true", "slime-megatron-distributed-optimizer-only"),
        # no slime flag says it: refused by name rather than dropped
        ("workload.epochs=2", "has no key for workload.epochs = 2"),
    ],
)
def test_slime_refuses_with_the_reason(assignment: str, reason: str) -> None:
    done = CliRunner().invoke(cli, ["export", SMALL, "--framework", "slime", "--set", assignment])
    assert done.exit_code == 1
    assert reason in done.output


@pytest.mark.parametrize(("tp", "on"), [(4, True), (1, False)])
def test_nemo_rl_turns_on_the_sequence_parallelism_the_plan_is_costed_with(
    tp: int, on: bool
) -> None:
    # NeMo-RL's base config leaves dtensor_cfg.sequence_parallel off; the cost model's
    # activations with tp > 1 assume it (Korthikanti et al.), so the launch must say so.
    plan = [
        "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
        "--set", "plan.rollout.tp=4", "--set", f"plan.train.tp={tp}",
        "--set", "plan.train.zero=3", "--set", "plan.train.recompute=full",
    ]  # fmt: skip
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    done = CliRunner().invoke(
        cli, ["export", example, "--framework", "nemo-rl", *plan], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    assert f"policy.dtensor_cfg.tensor_parallel_size={tp}" in done.output
    assert ("policy.dtensor_cfg.sequence_parallel=True" in done.output) is on


# -- the exported plan is the ranked plan -------------------------------------------------------


def _key(plan: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        json.dumps(plan[k], sort_keys=True)
        for k in ("placement", "execution", "rollout", "train", "critic", "fusion")
    )


@pytest.mark.parametrize("framework", MAPPED)
@pytest.mark.parametrize("staleness", [None, 1])
def test_export_writes_the_plan_recommend_ranks_first_for_the_framework(
    framework: str, staleness: int | None
) -> None:
    # The same search and tie rule: the exported plan is `recommend --framework`'s plan of
    # the rank the export names, and every plan ranked above it has no launch in the mapping.
    given = ["--set", f"workload.max_staleness={staleness}"] if staleness else []
    done = CliRunner().invoke(
        cli, ["export", SMALL, "--framework", framework, "--format", "json", *given],
        catch_exceptions=False,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    rank = data["rank"]
    listed = CliRunner().invoke(
        cli, ["recommend", SMALL, "--framework", framework, "--format", "json",
              "--top", str(rank), *given],
        catch_exceptions=False,
    )  # fmt: skip
    assert listed.exit_code == 0, listed.output
    plans = json.loads(listed.output)["plans"]
    assert _key(plans[rank - 1]) == _key(data["plan"])
    assert data["plan"]["step_seconds"] == pytest.approx(plans[rank - 1]["step_seconds"])
    assert data["passed_over_count"] == rank - 1
    launches = {(x.execution, x.placement) for x in data_mapping(framework).launches}
    for above in plans[: rank - 1]:
        assert (above["execution"], above["placement"]) not in launches or any(
            "does not cover" in p["why"] for p in data["passed_over"]
        )
    if staleness is None:
        # GRPO states no off-policy tolerance: the export is on-policy.
        assert data["plan"]["execution"] == "sync"


def data_mapping(framework: str) -> Any:
    _, mappings = catalogs()
    return max((m for m in mappings.values() if m.framework == framework),
               key=lambda m: m.committed)  # fmt: skip


def test_the_script_says_which_rank_it_writes() -> None:
    done = CliRunner().invoke(cli, ["export", SMALL, "--framework", "verl"])
    assert done.exit_code == 0, done.output
    assert "rank 1 of `rlmguide recommend --framework verl`" in done.output


def test_mapping_pages_show_checkout_checks_and_engine_concurrency() -> None:
    """verl's page lists the lines its checkout-only entry points run first; OpenRLHF
    0.11.0's says at what concurrency its engines run and its plans are costed."""
    from rlmguide.kb.schema.records import KINDS

    from rlmguide.sitegen.mapping_pages import mapping_pages
    from rlmguide.sitegen.pages import build_index

    catalog = load_catalog(record_roots(), tuple(KINDS))
    pages = mapping_pages(build_index(catalog))
    verls = [v for k, v in pages.items() if "verl-" in k]
    assert len(verls) == 2
    for verl in verls:
        assert "Before the command" in verl and "root of a verl checkout" in verl
    (newer,) = [v for k, v in pages.items() if "openrlhf-0.11.0" in k]
    assert "Engine concurrency" in newer and "128 sequences per engine" in newer
    (older,) = [v for k, v in pages.items() if "openrlhf-0.8.9" in k]
    assert "Engine concurrency" not in older


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "nemo-rl", "slime"])
def test_decode_context_parallelism_is_refused_where_no_key_sets_it(framework: str) -> None:
    # No exporter's mapping writes vLLM's decode_context_parallel_size: a plan costed with the
    # KV cache split over two ranks must not be written as a launch that keeps it whole.
    plan = [
        "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
        "--set", "plan.rollout.tp=4", "--set", "plan.rollout.cp=2",
    ]  # fmt: skip
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    done = CliRunner().invoke(cli, ["export", example, "--framework", framework, *plan])
    assert done.exit_code == 1, done.output
    assert "plan.rollout.cp = 2" in done.output


INTERLEAVED = [
    "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
    "--set", "plan.rollout.tp=4", "--set", "plan.train.tp=4", "--set", "plan.train.pp=2",
]  # fmt: skip
"""Qwen2.5-32B (64 layers) on 64 H100s over two pipeline stages: the plan an interleaving is
set on."""


@pytest.mark.parametrize("framework", ["nemo-rl", "skyrl"])
def test_an_interleaved_pipeline_is_refused_where_no_key_sets_it(framework: str) -> None:
    # The plan is costed with (pp - 1) / v bubbles; where no mapping writes Megatron's virtual
    # pipeline size, the launch would run the plain schedule the plan did not cost.
    plan = [*INTERLEAVED, "--set", "plan.train.virtual_stages=2"]
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    done = CliRunner().invoke(cli, ["export", example, "--framework", framework, *plan])
    assert done.exit_code == 1, done.output
    assert "plan.train.virtual_stages = 2" in done.output


VERL_VIRTUAL = "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size"
VIRTUAL_KEYS = {
    "verl-0.7.0-125-gb178a3cd5": VERL_VIRTUAL,
    "verl-0.8.0": VERL_VIRTUAL,
    "slime-0.3.1-38-g624b824": "--num-virtual-stages-per-pipeline-rank",
}
"""The key each mapping writes Megatron's virtual pipeline size to."""


def _written(text: str, key: str) -> list[str]:
    """The values `key` is given in a launch script (`key=v` or `key v`)."""
    words = text.replace("\\\n", " ").split()
    pairs = zip(words, [*words[1:], ""], strict=True)
    return [
        w.partition("=")[2] if "=" in w else nxt for w, nxt in pairs if w.partition("=")[0] == key
    ]


@pytest.mark.parametrize("version", sorted(VIRTUAL_KEYS))
def test_megatron_frameworks_write_the_virtual_pipeline_size_only_where_the_plan_interleaves(
    version: str, tmp_path: Path
) -> None:
    # 64 layers over 2 stages of 4 chunks: 8 layers a chunk. Without interleaving the key stays
    # unwritten: Megatron raises on a virtual size under pp 1, and unset is the plain schedule.
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    framework = version.split("-")[0]
    for v, want in ((4, ["4"]), (1, [])):
        out = tmp_path / f"run-{v}.sh"
        args = ["export", example, "--framework", framework, "--framework-version", version]
        plan = [*INTERLEAVED, "--set", f"plan.train.virtual_stages={v}", "--out", str(out)]
        done = CliRunner().invoke(cli, [*args, *plan])
        assert done.exit_code == 0, done.output
        assert _written(out.read_text(), VIRTUAL_KEYS[version]) == want


SPLIT = [
    "--set", "cluster.nodes=6", "--set", "plan.placement=colocated", "--set", "plan.execution=sync",
    "--set", "plan.rollout.tp=4", "--set", "plan.train.tp=4", "--set", "plan.train.pp=6",
]  # fmt: skip
"""Qwen2.5-32B (64 layers) on 48 H100s over six pipeline stages: (64 + 2) / 6 = 11 a stage
under Megatron's account-for-embedding-and-loss split, 10 decoder layers at each end."""
FIRST_STAGE_KEYS = {
    "verl": "+actor_rollout_ref.actor.megatron.override_transformer_config."
    "num_layers_in_first_pipeline_stage",
    "slime": "--decoder-first-pipeline-num-layers",
    "nemo-rl": "policy.megatron_cfg.num_layers_in_first_pipeline_stage",
    "skyrl": "trainer.policy.megatron_config.transformer_config_kwargs."
    "num_layers_in_first_pipeline_stage",
}
"""The key each framework's newest mapping writes the first stage's layers to."""


@pytest.mark.parametrize("framework", sorted(FIRST_STAGE_KEYS))
def test_the_plans_stage_split_is_written_into_the_launch(framework: str, tmp_path: Path) -> None:
    # Searched for the framework, the plan takes the account-for split and states it; fixed
    # (9 | 4 x 11 | 11), export writes the plan's counts, not the ones it would choose itself.
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    args = ["recommend", example, *SPLIT, "--framework", framework, "--format", "json"]
    found = CliRunner().invoke(cli, [*args, "--top", "1"])
    assert found.exit_code == 0, found.output
    train = json.loads(found.output)["plans"][0]["train"]
    assert (train["first_stage_layers"], train["last_stage_layers"]) == (10, 10)
    out = tmp_path / "run.txt"
    fixed = ["--set", "plan.train.first_stage_layers=9", "--set", "plan.train.last_stage_layers=11"]
    args = ["export", example, "--framework", framework, *SPLIT, *fixed, "--out", str(out)]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert _written(out.read_text(), FIRST_STAGE_KEYS[framework]) == ["9"]


def test_a_stage_split_is_refused_where_no_key_writes_it() -> None:
    # ROLL's mapping writes no stage counts: its plans keep even stages, and a plan that fixes a
    # split cannot be written (the launch would split the layers otherwise than costed).
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    plan = ["--set", "plan.train.pp=2", "--set", "plan.train.first_stage_layers=30",
            "--set", "plan.train.last_stage_layers=34"]  # fmt: skip
    done = CliRunner().invoke(cli, ["export", example, "--framework", "roll", *INTERLEAVED, *plan])
    assert done.exit_code == 1, done.output
    assert "plan.train.first_stage_layers = 30" in done.output


def test_roll_gives_the_reference_the_policys_chunks_only_when_laid_out_as_the_policy(
    tmp_path: Path,
) -> None:
    # ROLL's launch is a YAML config. A reference laid out as the policy (its context and expert
    # keys written beside tp/pp) gets the policy's chunks; one with a layout of its own
    # (plan.assessment, here the search's or the one fixed) runs a plain pipeline; without
    # interleaving neither role has the key.
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    own = ["--set", "plan.assessment.tp=2", "--set", "plan.assessment.pp=1"]
    for v, fixed in ((4, []), (4, own), (1, [])):
        out = tmp_path / f"roll-{v}-{len(fixed)}.yaml"
        plan = [*INTERLEAVED, "--set", f"plan.train.virtual_stages={v}", *fixed, "--out", str(out)]
        done = CliRunner().invoke(cli, ["export", example, "--framework", "roll", *plan])
        assert done.exit_code == 0, done.output
        text = out.read_text()
        config = yaml.safe_load(text)
        actor, reference = (
            config[role]["strategy_args"]["strategy_config"]
            for role in ("actor_train", "reference")
        )
        # the header says what the launch runs: the chunks, and a frozen layout of its own
        header = next(line for line in text.splitlines() if line.startswith("# Plan: "))
        assert ("PP 2 x 4 chunks" in header) == (v > 1)
        as_policy = "context_parallel_size" in reference
        assert ("; frozen models TP " in header) == (not as_policy)
        assert not fixed or "frozen models TP 2 PP 1 replicas" in header
        assert not (fixed and as_policy)
        chunks = v if v > 1 else None
        assert actor.get("virtual_pipeline_model_parallel_size") == chunks
        expected = chunks if as_policy else None
        assert reference.get("virtual_pipeline_model_parallel_size") == expected


def test_roll_refuses_an_interleaving_whose_forward_pass_has_one_micro_batch() -> None:
    # 8 prompts x 8 samples over dp 64 / (4 x 2) = 8: 8 samples a rank, trained as 2
    # micro-batches of one (4 mini-batches: 2 % pp 2 == 0) but scored in max(8 // 16, 1) = 1
    # forward micro-batch, fewer than Megatron's interleaved group of pp = 2.
    plan = [
        *INTERLEAVED, "--set", "plan.train.zero=1", "--set", "plan.train.recompute=full",
        "--set", "workload.prompts_per_step=8", "--set", "workload.samples_per_prompt=8",
    ]  # fmt: skip
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    runs = [
        CliRunner().invoke(cli, ["export", example, "--framework", "roll", *plan, *v])
        for v in ([], ["--set", "plan.train.virtual_stages=2"])
    ]
    assert [r.exit_code for r in runs] == [0, 1], runs[1].output


def test_an_interleaving_that_does_not_split_the_layers_is_refused() -> None:
    # 64 layers over 2 stages leave 32 a rank, which 3 chunks do not divide: Megatron's
    # get_num_layers_to_build asserts at start-up.
    plan = [*INTERLEAVED, "--set", "plan.train.virtual_stages=3"]
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    done = CliRunner().invoke(cli, ["export", example, "--framework", "verl", *plan])
    assert done.exit_code == 1, done.output
    assert "megatron-virtual-stages-split-the-layers" in done.output


@pytest.mark.parametrize("framework", ["verl", "slime"])
def test_an_interleaving_whose_mini_batches_miss_whole_groups_is_refused(framework: str) -> None:
    # 12 prompts x 8 samples in 4 mini-batches over dp 64 / (4 x 2) = 8: 24 sequences a step,
    # 3 per rank. verl rounds a rank's 3 up to 4 micro-batches (a multiple of pp 2) and asserts
    # against its 3 sequences; slime aligns the step's 24 to dp x pp = 16 and needs 32.
    # Plain 1F1B runs it (24 divides over the 8 ranks).
    plan = [
        *INTERLEAVED, "--set", "plan.train.zero=1", "--set", "plan.train.recompute=full",
        "--set", "workload.prompts_per_step=12", "--set", "workload.samples_per_prompt=8",
    ]  # fmt: skip
    example = str(REPO / "examples" / "grpo-qwen2.5-32b-64xh100.yaml")
    runs = [
        CliRunner().invoke(cli, ["export", example, "--framework", framework, *plan, *v])
        for v in ([], ["--set", "plan.train.virtual_stages=2"])
    ]
    assert [r.exit_code for r in runs] == [0, 1], runs[1].output


@pytest.mark.parametrize("version", ["verl-0.8.0", "verl-0.7.0-125-gb178a3cd5"])
def test_verl_engines_with_attention_groups_write_tp_and_dp(version: str, tmp_path: Path) -> None:
    # verl's engine spans tensor_model_parallel_size x data_parallel_size GPUs, its dp ranks the
    # attention groups, with EP over all of them (RolloutConfig's assert): a plan's 4-GPU engine
    # in 4 attention groups is tp 1 x dp 4, and review reads it back as that engine.
    path = tmp_path / "scenario.yaml"
    path.write_text(json.dumps(MOE_SCENARIO))
    pinned = sets("plan.placement=colocated", "plan.execution=sync", "plan.rollout.tp=4",
                  "plan.rollout.attention_dp=4", "plan.rollout.ep=4", "plan.train.tp=4",
                  "plan.train.pp=1", "plan.train.ep=4", "plan.train.zero=1")  # fmt: skip
    out = tmp_path / "run.sh"
    args = ["export", str(path), "--framework", "verl", "--framework-version", version]
    done = CliRunner().invoke(cli, [*args, *pinned, "--out", str(out)])
    assert done.exit_code == 0, done.output
    text = out.read_text()
    rollout = "actor_rollout_ref.rollout."
    assert _written(text, rollout + "tensor_model_parallel_size") == ["1"]
    assert _written(text, rollout + "data_parallel_size") == ["4"]
    assert _written(text, rollout + "expert_parallel_size") == ["4"]
    read = CliRunner().invoke(
        cli, ["review", str(out), "--accelerator", "h100-sxm-80gb", "--format", "json"]
    )
    assert read.exit_code == 0, read.output
    engine = json.loads(read.output)["estimate"]["rollout"]
    assert (engine["tp"], engine["attention_dp"], engine["ep"]) == (4, 4, 4)


def test_also_reads_belongs_to_a_lookup_and_names_its_table() -> None:
    base = {"fact": "plan.train.zero", "key": "actor.strategy", "file": "config.yaml"}
    MappingEntry(**base, transform="lookup", table={"3": "fsdp2"}, also_reads={"fsdp": "3"})
    with pytest.raises(ValueError, match="not in the table"):
        MappingEntry(**base, transform="lookup", table={"3": "fsdp2"}, also_reads={"fsdp": "2"})
    with pytest.raises(ValueError, match="lookup transform"):
        MappingEntry(**base, also_reads={"fsdp": "3"})


# -- the gradient buffers each framework's Megatron backend keeps ----------------------------------

MOE_MEGATRON = {
    "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 8, "gpus_per_node": 8},
    "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 128, "samples_per_prompt": 8,
                 "prompt_tokens": 1024, "response_tokens": 4096, "max_response_tokens": 8192,
                 "minibatches_per_step": 4},
    "plan": {"execution": "sync", "rollout": {"ep": 1},
             "train": {"tp": 1, "pp": 1, "cp": 1, "ep": 8, "etp": 1, "zero": 1, "recompute": "full",
                       "offload": {"optimizer": 0.0, "params": False, "frozen": True}}},
}  # fmt: skip
"""Qwen3-30B-A3B on Megatron at TP 1, EP 8: per GPU the dense part (48 layers of attention
18,874,368 + QK-norms 256 + router 262,144 + two norms 4,096, the untied embeddings
2 x 151,936 x 2,048 and the final norm) 1,541,093,376 parameters, and 128 experts x 3 x 2,048 x
768 x 48 layers / 8 = 3,623,878,656: 5,164,972,032 in all."""

FP32_GRADIENT_KEYS = {
    # AReaL DistributedDataParallelConfig (areal/api/cli_args.py L719 at fee938ea), on GPUs of
    # its own (AReaL's only placement)
    "areal": ("disaggregated", "+actor.megatron.ddp.grad_reduce_in_fp32"),
    # the older AReaL mapping: the same default (L718 at 4aef98d8), and its launches cross nodes
    "areal@4aef98d": ("disaggregated", "+actor.megatron.ddp.grad_reduce_in_fp32"),
    # SkyRL MegatronDDPConfig (skyrl/train/config/config.py L250 at a9564572)
    "skyrl": ("disaggregated", "trainer.policy.megatron_config.ddp_config.grad_reduce_in_fp32"),
    # ROLL: no key; bf16 turns accumulate_allreduce_grads_in_fp32 on in mcore_adapter's
    # TrainingArguments.__post_init__ (training_args.py L431-L433 at 8eb27cc2)
    "roll": ("colocated", None),
}
PARKS_TRAINER = {"roll", "skyrl"}
"""ROLL's Megatron strategy parks the trainer's whole state every step (constraint
roll-megatron-parks-trainer-state-every-step); SkyRL parks the policy's weights and optimizer
around the reference's pass where the reference shares its GPUs, as here (colocate_policy_ref,
worker_dispatch.py L124-L176 at a9564572; the mapping's phase_offload)."""


@pytest.mark.parametrize("framework", sorted(FP32_GRADIENT_KEYS))
def test_megatron_plans_cost_the_fp32_gradients_the_framework_keeps(framework: str) -> None:
    """AReaL, SkyRL and ROLL keep Megatron's gradient buffers in fp32 by default: their plans
    are costed at 4 bytes a parameter, 5,164,972,032 x 4 B = 19.241 GiB per GPU here (it was
    half that, bf16, before), and the AReaL and SkyRL exports write the key."""
    catalog, mappings = catalogs()
    placement, key = FP32_GRADIENT_KEYS[framework]
    framework, _, version = framework.partition("@")
    plan = {**MOE_MEGATRON["plan"], "placement": placement}
    plan["train"] = {
        **plan["train"],
        "offload": {**plan["train"]["offload"], "phase": framework in PARKS_TRAINER},
    }
    data = {**MOE_MEGATRON, "plan": plan}
    if framework == "areal" and not version:  # AReaL 2.0's launch runs on one node
        data["cluster"] = {**data["cluster"], "nodes": 1, "gpus_per_node": 64}
    scenario = parse_scenario(data, "moe")
    done = build(resolve(scenario, catalog.records), catalog, mappings, framework, version or None)
    assert done.plan["train"]["fp32_gradients"] is True
    written = {a.key: a.value for a in done.arguments}
    if key is not None:
        assert written[key] is True
    terms = done.plan["memory_breakdown_gib"]["training"]
    if framework in PARKS_TRAINER:
        return  # its peak is the reference's pass, with the trainer's state parked
    assert terms["gradients"] == pytest.approx(5_164_972_032 * 4 / 2**30, rel=1e-4)
    assert terms["gradients"] == pytest.approx(2 * terms["weights"], rel=1e-9)


@pytest.mark.parametrize(
    ("version", "prefix", "use_loss"),
    [(None, "algo.kl.", "use_loss"), ("c250c21a", "", "use_kl_loss")],
)
def test_openrlhf_grpo_puts_the_kl_in_the_loss(
    version: str | None, prefix: str, use_loss: str
) -> None:
    """GRPO's KL is a loss term (kb/records/algorithms/grpo.yaml): OpenRLHF keeps it in the
    reward unless told (3c3be623: --algo.kl.use_loss, train_ppo_ray.py L484-L486; c250c21a:
    --use_kl_loss, L390), with k3, GRPO's estimator (DeepSeekMath eq. 4, the one the flag's help
    gives GRPO). REINFORCE++ keeps it in the reward, as the algorithm does, with its record's k1
    (the flag's default, written all the same)."""
    catalog, mappings = catalogs()
    estimator = f"{prefix}estimator" if prefix else "kl_estimator"
    coefficient = f"{prefix}init_coef" if prefix else "init_kl_coef"

    def written(algorithm: str) -> dict[str, Any]:
        data = yaml.safe_load((REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml").read_text())
        data["workload"]["algorithm"] = algorithm
        scenario = parse_scenario(data, algorithm)
        done = build(resolve(scenario, catalog.records), catalog, mappings, "openrlhf", version)
        return {a.key: a.value for a in done.arguments}

    grpo = written("grpo")
    assert grpo[prefix + use_loss] is True
    assert grpo[estimator] == "k3"
    assert grpo[coefficient] > 0
    reinforce = written("reinforce-plus-plus")
    # the switch left off (its default): the reward side, which review reads back from it; a
    # store_true flag that is off is not written into the script
    assert reinforce[prefix + use_loss] is False
    assert reinforce[estimator] == "k1"


@pytest.mark.parametrize(
    ("policy", "accelerator", "nodes", "path", "quantized"),
    [
        # FP8 release (no bf16 copy named by a framework): the folder NeMo-RL's guide converts to
        ("deepseek-v3", "h200-sxm-141gb", 64, "DeepSeek-V3-bf16", "FP8"),
        ("gpt-oss-120b", "h100-sxm-80gb", 4, "gpt-oss-120b-bf16", "MXFP4"),
        # Kimi-K2's release is DeepSeek-V3's FP8 blocks (its config.json quantization_config)
        ("kimi-k2", "h200-sxm-141gb", 128, "Kimi-K2-Instruct-bf16", "FP8"),
        # verl's example trains from this bf16 copy (run_gpt_oss_20b_fsdp.sh L63 at 7aed6b23)
        ("gpt-oss-20b", "h100-sxm-80gb", 1, "lmsys/gpt-oss-20b-bf16", "MXFP4"),
        ("qwen2.5-7b", "h100-sxm-80gb", 1, "Qwen/Qwen2.5-7B", None),
    ],
)
def test_a_quantised_release_is_not_the_default_policy_path(
    policy: str, accelerator: str, nodes: int, path: str, quantized: str | None
) -> None:
    """The plans cost bf16 weights; DeepSeek-V3's release is FP8 and gpt-oss's MXFP4, which
    transformers' quantisers do not train (is_trainable False in quantizer_finegrained_fp8.py
    and quantizer_mxfp4.py, transformers 5.3.0) and verl's Megatron converter refuses
    (verl/models/mcore/config_converter.py L340-L342 at 7aed6b23). The default is a bf16 copy,
    the script says why, and review still knows the model from it."""
    from rlmguide.kb.model_names import match_model

    from rlmguide import api

    data = yaml.safe_load((REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml").read_text())
    data["cluster"] = {"accelerator": accelerator, "nodes": nodes, "gpus_per_node": 8}
    data["models"]["policy"] = policy
    data.pop("plan", None)
    launch = api.export(data, "verl")
    assert launch.input_defaults["MODEL_PATH"] == path
    models = load_catalog(record_roots(), ("model",)).of("model")
    assert match_model(path, models) == policy
    described = launch.inputs["MODEL_PATH"]
    # Kimi-K2's config.json maps its classes to the checkpoint's own Python (auto_map), and its
    # model_type kimi_k2 is none that verl's transformers registers: only remote code loads it.
    remote = "actor_rollout_ref.model.trust_remote_code=True" in launch.script
    assert remote == (policy == "kimi-k2")
    if quantized is None:
        assert "bf16" not in described
    else:
        assert f"stores {quantized} weights" in described
        assert f'MODEL_PATH="${{MODEL_PATH:-{path}}}"' in launch.script


def _assert_built_with(launch: Any, backend: str, megatron_bridge: bool) -> None:
    """The export trains on `backend`, and writes vanilla_mbridge=False with the departure that
    says verl's image lacks Megatron-Bridge exactly where the model needs that bridge."""
    assert f"# Training backend {backend}," in launch.script
    assert ("actor_rollout_ref.actor.megatron.vanilla_mbridge=False" in launch.script) is (
        megatron_bridge
    )
    said = any("installs no Megatron-Bridge" in note for note in launch.departures)
    assert said is megatron_bridge
    # an install step, not the algorithm's: the header's words say what its lines hold
    for note in launch.departures:
        assert f"{DEPARTURE_LINE} {note}" in launch.script
    assert "Departs from the algorithm's record" not in launch.script


@pytest.mark.parametrize(
    ("policy", "nodes", "version", "backend", "megatron_bridge"),
    [
        # mbridge registers no qwen3_next (08975e6, 892727e0); Megatron-Bridge has its architecture
        ("qwen3-next-80b-a3b", 8, None, "megatron-lm", True),
        ("qwen3-next-80b-a3b", 8, "0.7.0-125-gb178a3cd5", "megatron-lm", True),
        # minimax_m2: Megatron-Bridge's bridge came after b178a3cd5, so only FSDP builds it there
        ("minimax-m2.5", 16, None, "megatron-lm", True),
        ("minimax-m2.5", 16, "0.7.0-125-gb178a3cd5", "pytorch-fsdp", False),
        # qwen3_moe is mbridge's own: verl's default stands
        ("qwen3-30b-a3b", 2, None, "megatron-lm", False),
    ],
)
def test_verl_megatron_builds_the_model_with_a_bridge_that_registers_it(
    policy: str, nodes: int, version: str | None, backend: str, megatron_bridge: bool
) -> None:
    """verl's default vanilla_mbridge builds the model with mbridge, which raises for a config
    model_type it has not registered (mbridge/core/auto_bridge.py L46-L52): those Megatron-Bridge
    builds are written with vanilla_mbridge=False and say that verl's image lacks it; where
    neither bridge has the model, Megatron is refused (constraint
    verl-megatron-no-bridge-for-minimax-m2)."""
    from rlmguide import api

    data = yaml.safe_load((REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml").read_text())
    data["cluster"] = {"accelerator": "h200-sxm-141gb", "nodes": nodes, "gpus_per_node": 8}
    data["models"]["policy"] = policy
    data.pop("plan", None)
    launch = api.export(data, "verl", version=version)
    _assert_built_with(launch, backend, megatron_bridge)


V07 = "0.7.0-125-gb178a3cd5"


@pytest.mark.parametrize(
    ("policy", "nodes", "version", "tp", "backend", "megatron_bridge"),
    [
        # Megatron-Bridge only, at both commits (mbridge registers gemma3, not the text-only
        # gemma3_text): built with vanilla_mbridge=False where Megatron is forced (TP 2)
        ("gemma-2b", 1, None, 2, "megatron-lm", True),
        ("gemma-2b", 1, V07, 2, "megatron-lm", True),
        ("gemma-2-9b", 1, None, 2, "megatron-lm", True),
        ("gemma-2-9b", 1, V07, 2, "megatron-lm", True),
        ("gemma-3-1b", 1, None, 2, "megatron-lm", True),
        ("gemma-3-1b", 1, V07, 2, "megatron-lm", True),
        # Megatron-Bridge's GLM-4.7-Flash, GLM-5 and Kimi-K2.5 bridges are at 38803fd4 (0.8.0),
        # not 9de81190: at b178a3cd5 the planner's Megatron choice falls back to FSDP
        ("glm-4.7-flash", 2, None, None, "megatron-lm", True),
        ("glm-4.7-flash", 2, V07, None, "pytorch-fsdp", False),
        ("glm-5", 16, None, None, "megatron-lm", True),
        ("glm-5", 16, V07, None, "pytorch-fsdp", False),
        ("kimi-k2.5", 16, None, 2, "megatron-lm", True),
        ("kimi-k2.5", 16, V07, 2, None, False),
        # qwen3_5_moe is mbridge's own at 08975e6 (0.8.0) only
        ("qwen3.6-35b-a3b", 2, None, None, "megatron-lm", False),
        ("qwen3.6-35b-a3b", 2, V07, None, "pytorch-fsdp", False),
        # no bridge at either commit: the planner keeps FSDP and a forced Megatron plan is refused;
        # at 0.8.0 FSDP is refused too, its image's transformers 5.3.0 reading no deepseek_v32
        # config (constraint verl-fsdp-model-type-known-to-transformers-v0.8)
        ("deepseek-v3.2", 16, None, None, None, False),
        ("deepseek-v3.2", 16, V07, None, "pytorch-fsdp", False),
        *(
            (policy, nodes, version, tp, "pytorch-fsdp" if tp is None else None, False)
            for policy, nodes in (
                ("phi-3-mini", 1),
                ("internlm2-7b", 1),
                ("chatglm3-6b", 1),
                ("llama-4-scout", 4),
            )
            for version in (None, V07)
            for tp in (None, 2)
        ),
    ],
)
def test_verl_megatron_needs_a_bridge_for_the_config_model_type(
    policy: str,
    nodes: int,
    version: str | None,
    tp: int | None,
    backend: str | None,
    megatron_bridge: bool,
) -> None:
    """Each model record's cited config.json model_type against the bridges verl's Megatron
    path can build it with (mbridge 08975e6 / 892727e0 by model_type, Megatron-Bridge 38803fd4 /
    9de81190 by architecture): Megatron-Bridge-only types are written with
    vanilla_mbridge=False and the departure that names it; types neither registers get no
    Megatron plan (constraints verl-megatron-no-bridge-v0.8, verl-megatron-no-bridge), so a
    forced one (backend None) is refused."""
    from rlmguide import api
    from rlmguide.api import RequestFailed

    data = yaml.safe_load((REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml").read_text())
    data["cluster"] = {"accelerator": "h200-sxm-141gb", "nodes": nodes, "gpus_per_node": 8}
    data["models"]["policy"] = policy
    # Phi-3-mini's 4k and Gemma's and ChatGLM3's 8k contexts hold a 2k-token response
    data["workload"]["max_response_tokens"] = 2048
    data.pop("plan", None)
    if tp is not None:
        data["plan"] = {"train": {"tp": tp}}
    if backend is None:
        with pytest.raises(RequestFailed, match="cannot export to verl"):
            api.export(data, "verl", version=version)
        return
    launch = api.export(data, "verl", version=version)
    _assert_built_with(launch, backend, megatron_bridge)


def test_the_header_names_the_rollout_pipeline_the_script_writes() -> None:
    """An SGLang engine split into pipeline stages is named in the plan line as the flags
    write it (slime's --sglang-pp-size), not as a tensor-parallel engine alone."""
    done = CliRunner().invoke(
        cli,
        ["export", SMALL, "--framework", "slime", "--set", "plan.rollout.pp=2"],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output
    header = next(line for line in done.output.splitlines() if line.startswith("# Plan:"))
    assert "rollout 8 GPUs TP 2 PP 2;" in header, header
    assert "--sglang-pp-size 2" in done.output
    assert "--rollout-num-gpus-per-engine 4" in done.output
