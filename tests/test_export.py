"""`rlmguide export` and `recommend --emit`: plans written as verl and OpenRLHF launches.

The oracles are real files: the frameworks' own config definitions at the mappings' commits
(tests/fixtures/frameworks/, licence headers kept) and the experts' launch scripts behind the
deployment records, whose values are written out below as read by hand from the scripts.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO, run_cli

from kb.load import load_catalog
from kb.paths import DEFAULT_ROOTS, record_roots
from kb.schema import Deployment, MappingEntry
from rlmguide.cli import cli
from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.mapping import INPUTS, apply, lookup_key, pool_shape
from rlmguide.review.config import argparse_config, hydra_config
from rlmguide.review.shell import command_arguments
from rules import RECOMMEND_KINDS
from rules.scenario import resolve

FIXTURES = Path(__file__).parent / "fixtures" / "frameworks"
SMALL = str(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
DEPLOYMENTS: dict[str, Deployment] = load_catalog(DEFAULT_ROOTS, ("deployment",)).of(  # type: ignore[assignment]
    "deployment"
)
MAPPED = ("verl", "openrlhf", "nemo-rl")
REFUSED = {
    # the reward model shares the actor's 2 GPUs outside colocate_all, which OpenRLHF's
    # launcher cannot do (constraint openrlhf-reward-model-shares-gpus-only-in-colocate-all)
    "openrlhf-llama-3-8b-ppo-colocate-pairs-8xa100": "openrlhf-reward-model-shares-gpus",
}
EXPORTABLE = sorted(d for d, r in DEPLOYMENTS.items() if r.framework in MAPPED and d not in REFUSED)


@cache
def _catalogs() -> tuple[Any, Any]:
    return load_catalog(record_roots(), RECOMMEND_KINDS), load_catalog(
        record_roots(), ("mapping",)
    ).of("mapping")


@cache
def exported(record_id: str, version: str | None = None) -> Exported:
    """A deployment's plan, as written, exported to its own framework (newest mapping unless
    `version` names one)."""
    catalog, mappings = _catalogs()
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


@cache
def verl_schema(name: str) -> dict[str, Any]:
    return _flatten(yaml.safe_load((FIXTURES / f"verl-{name}").read_text()))


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


def verl_schema_for(done: Exported) -> dict[str, Any]:
    megatron = done.backend == "megatron-lm"
    schema = dict(
        verl_schema(
            "_generated_ppo_megatron_trainer.yaml" if megatron else "_generated_ppo_trainer.yaml"
        )
    )
    if done.plan["execution"] == "one-step-off":
        # one_step_off_ppo_trainer.yaml extends ppo_trainer with the rollout pool
        extra = verl_schema("one_step_off_ppo_trainer.yaml")
        schema |= {k: v for k, v in extra.items() if k.startswith("rollout.")}
    return schema


@pytest.mark.parametrize("record_id", [d for d in EXPORTABLE if d.startswith("verl")])
def test_every_verl_key_exists_in_verl_config_with_its_type(record_id: str) -> None:
    done = exported(record_id)
    schema = verl_schema_for(done)
    for arg in done.arguments:
        if arg.key.startswith("+"):
            # an added key must sit under an open (empty) mapping of the schema
            parent = arg.key[1:].rsplit(".", 1)[0]
            assert schema.get(parent) == {}, f"{arg.key}: {parent} is not an open mapping"
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
    All at b178a3cd56f58b2d502255daba591e92833930a7."""
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
    samples = args["data.train_batch_size"] * args["actor_rollout_ref.rollout.n"]
    mini = args["actor_rollout_ref.actor.ppo_mini_batch_size"]
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
    if done.mapping.syntax == "hydra":
        megatron = "actor_rollout_ref.actor.megatron."
        train_gpus = args["trainer.nnodes"] * args["trainer.n_gpus_per_node"]
        prompts = args["data.train_batch_size"]
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


EXAMPLES = sorted(str(p) for p in (REPO / "examples").glob("*.yaml"))
REFUSED_EXAMPLES = {
    # 70B PPO with a reward model on 1,024 GPUs: every NeMo-RL launch is refused by a constraint
    # record (its reward model needs GPUs of its own, its DTensor offload is all or nothing, ...)
    ("ppo-llama-3.1-70b-1024xh100", "nemo-rl"): "by constraint nemo-rl-",
    # An LLM judge, an fp8 reference of its own and the rollout's log-probs: no mapping has a key
    # for them yet, so every launch is refused rather than written as a plain reward model.
    **{
        ("grpo-qwen2.5-7b-llm-judge-16xh100", framework): "workload.reward_kind = llm-judge"
        for framework in ("verl", "openrlhf", "nemo-rl")
    },
    # A shared actor-critic with inter-stage fusion: none of the mapped frameworks claims them.
    **{
        ("ppo-qwen2.5-7b-shared-critic-fused-16xh100", framework): "does not claim "
        "shared-actor-critic (plan.critic: shared)"
        for framework in ("verl", "openrlhf", "nemo-rl")
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
    catalog, mappings = _catalogs()
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
    from rules.scenario import parse_scenario, read_mapping

    return parse_scenario(read_mapping(Path(path)), path)


def test_a_plan_the_framework_refuses_names_the_constraint() -> None:
    record_id = "openrlhf-llama-3-8b-ppo-colocate-pairs-8xa100"
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
        ["export", SMALL, "--framework", "verl", "--set", "plan.execution=async"],
        catch_exceptions=False,
    )
    assert done.exit_code == 1
    assert "no entry point for async" in done.output
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
    assert ': "${MODEL_PATH:?' in text  # the model path is the user's to give, never invented
    words, _ = command_arguments(
        text, "verl.experimental.one_step_off_policy.main_ppo", {"MODEL_PATH": "/models/m"}
    )
    assert hydra_config(words)["actor_rollout_ref.model.path"] == "/models/m"
    again = run_cli(
        "export", "--deployment", "verl-qwen2.5-math-7b-dapo-one-step-off-16xh20",
        "--framework", "verl",
    )  # fmt: skip
    assert again.stdout == text  # deterministic


def test_a_framework_without_a_mapping_fails_with_the_ones_there_are() -> None:
    done = CliRunner().invoke(cli, ["export", SMALL, "--framework", "slime"])
    assert done.exit_code == 1
    assert "nemo-rl, openrlhf, verl" in done.output


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
