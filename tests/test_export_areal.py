"""Export to AReaL (Hydra overrides over examples/math/gsm8k_grpo.yaml, or gsm8k_ppo.yaml for PPO,
merged over the GRPOConfig dataclasses), at v2.0.0 (fee938e, the default) and v1.0.4-17 (4aef98d).

The oracles are AReaL's own: the config dataclasses, extracted key by key into
tests/fixtures/frameworks/areal-<commit>-config-keys.tsv (every key written must be declared
there with a value of its type), and the base configs (copies at the same commit): Hydra's struct
mode overrides a key the YAML holds plainly and any other only with `+`."""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from launch_support import catalogs, review_json
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Deployment
from rlmguide.rules.frameworks import compile_constraints
from rlmguide.rules.scenario import parse_scenario, read_mapping, resolve

from rlmguide.cli import cli
from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.mapping import INPUTS
from rlmguide.export.pools import PoolSpelling, allocation, read_allocation
from rlmguide.export.render import override_value
from rlmguide.review.config import hydra_config
from rlmguide.review.recipe import flatten
from rlmguide.review.shell import command_arguments

FIXTURES = Path(__file__).parent / "fixtures" / "frameworks"

DEPLOYMENTS: dict[str, Deployment] = load_catalog(DEFAULT_ROOTS, ("deployment",)).of(  # type: ignore[assignment]
    "deployment"
)
MAPPING = "areal-2.0.0"
OLDER = "areal-1.0.4-17-g4aef98d8d"
VERSIONS = {"areal-2.0.0": "fee938e", "areal-1.0.4-17-g4aef98d8d": "4aef98d"}
"""Mapping -> the commit its fixtures (tests/fixtures/frameworks/areal-<commit>-*) were read at."""
SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
DEEPSEEK = REPO / "examples" / "grpo-deepseek-v3-4096xh800.yaml"
EXAMPLES = [
    p
    for p in sorted((REPO / "examples").glob("*.yaml"))
    if "parts" not in yaml.safe_load(p.read_text())["cluster"]
]


def export_of(scenario: Any, version: str | None = None) -> Exported:
    catalog, mappings = catalogs()
    return build(resolve(scenario, catalog.records), catalog, mappings, "areal", version)


def words(done: Exported) -> list[str]:
    text = script(done, "test", "policy")
    module = done.launch.command.split()[-1].removesuffix(".py").replace("/", ".")
    found, _ = command_arguments(text, module, {v: f"${{{v}}}" for v, _ in INPUTS.values()})
    return found


@cache
def declared(mapping: str = MAPPING) -> dict[str, tuple[str, str]]:
    """Dotted key -> (annotation, default), from the extract of GRPOConfig at the mapping's
    commit."""
    rows = (FIXTURES / f"areal-{VERSIONS[mapping]}-config-keys.tsv").read_text().splitlines()
    return {r.split("\t")[0]: (r.split("\t")[1], r.split("\t")[2]) for r in rows if r[0] != "#"}


@cache
def base(mapping: str = MAPPING, config: str = "gsm8k_grpo") -> dict[str, Any]:
    """A base config's leaves, dotted."""
    path = FIXTURES / f"areal-{VERSIONS[mapping]}-{config}.yaml"
    return flatten(yaml.safe_load(path.read_text()))


def in_base(key: str, mapping: str = MAPPING, config: str = "gsm8k_grpo") -> bool:
    """Whether Hydra finds the key in the base config: a leaf of it, or under a mapping the
    YAML gives (a null section takes no child)."""
    return key in base(mapping, config)


def of_type(value: Any, annotation: str) -> bool:
    admits = {part.strip().split("[")[0] for part in annotation.split("|")}
    if value is None:
        return "None" in admits
    if isinstance(value, bool):
        return "bool" in admits
    if isinstance(value, int):
        return bool({"int", "float"} & admits)
    if isinstance(value, float):
        return "float" in admits
    return "str" in admits


def _cases() -> list[Any]:
    found = [
        pytest.param(("deployment", d), id=d)
        for d, r in sorted(DEPLOYMENTS.items())
        if r.framework == "areal"
    ]
    found += [pytest.param(("example", str(p)), id=p.stem) for p in EXAMPLES]
    return found


REFUSED = {
    "dpo-qwen2.5-7b-8xh100": "has no key for workload.reward_kind = none",
    "grpo-qwen2.5-7b-llm-judge-16xh100": "has no key for plan.pools.reward = 8, workload.reward_",
    "grpo-qwen3-32b-coding-agent-64xh100": "has no key for workload.max_turns",
    "ppo-llama-3.1-70b-1024xh100": "has no key for workload.reward_model",
    "ppo-qwen2.5-7b-shared-critic-fused-16xh100": "does not claim shared-actor-critic",
}
"""The cases export refuses for AReaL, each with what its one-line error names: a refusal not
listed here, or a listed case that now exports, fails the tests. (DeepSeek-V3 on 4,096 H800s
exports: export passes over the plans whose rollout expert parallelism AReaL's keys cannot
write, where it once stopped at the first.)"""


def _exported(case: tuple[str, str], version: str | None = None) -> Exported | None:
    """The export of a case, or None where it is refused for the reason `REFUSED` gives."""
    kind, name = case
    scenario = (
        DEPLOYMENTS[name].scenario
        if kind == "deployment"
        else parse_scenario(read_mapping(Path(name)), name)
    )
    stem = name if kind == "deployment" else Path(name).stem
    try:
        done = export_of(scenario, version)
    except NotExpressible as refused:
        if stem not in REFUSED and (version or MAPPING) == MAPPING and scenario.cluster.nodes > 1:
            # v2.0.0's agent workflow cannot start its proxy workers under the Ray scheduler
            assert "areal-ray-scheduler-has-no-agent-proxy" in str(refused)
            return None
        assert stem in REFUSED, f"{stem} is refused: {refused}"
        assert REFUSED[stem] in str(refused)
        return None
    assert stem not in REFUSED, f"{stem} now exports: take it out of REFUSED"
    return done


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", _cases())
def test_every_key_is_areals_and_plus_marks_what_the_base_config_lacks(
    case: tuple[str, str], version: str
) -> None:
    done = _exported(case, version)
    if done is None:
        return  # refused as REFUSED says (checked in _exported)
    assert done.mapping.id == version
    keys = declared(version)
    given = words(done)
    # PPO composes AReaL's PPO example config (its critic section), the rest the GRPO one
    algorithm = done.found.recommender.resolved.scenario.workload.algorithm
    config = "gsm8k_ppo" if algorithm == "ppo" else "gsm8k_grpo"
    assert given[0] == f"--config=examples/math/{config}.yaml"
    for word in given[1:]:
        key, _, _ = word.partition("=")
        plain = key.lstrip("+")
        assert plain in keys, f"{plain} is not a key of GRPOConfig"
        held = in_base(plain, version, config)
        assert key.startswith("+") is not held, f"{key}: Hydra's struct mode"
    for key, value in hydra_config(given[1:]).items():
        if isinstance(value, str) and "${" in value:
            continue  # the user's inputs
        assert of_type(value, keys[key][0]), (key, value, keys[key][0])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_mappings_defaults_are_the_base_configs(version: str) -> None:
    """What review assumes for a key a launch leaves out: the base config's value, else the
    dataclass default at the commit."""
    mapping = catalogs()[1][version]
    for key, value in mapping.config_defaults.items():
        if key in base(version):
            assert base(version)[key] == value, key
        else:
            assert ast.literal_eval(declared(version)[key][1]) == value, key


def test_v2_bounds_a_request_by_its_prompt_and_response() -> None:
    """At v2.0.0 the base config caps prompt plus completion at 2,048 tokens (gconfig.max_tokens)
    and the agent proxy at 32,768 unless rollout.agent.engine_max_tokens says more: both are
    written as the longest prompt plus the longest response. v1.0.4-17 caps a request at
    gconfig.max_tokens too (32,768 by default, cli_args.py L175-L180; remote_inf_engine.py
    L748-L760), written the same way, and has no agent proxy."""
    scenario = parse_scenario(read_mapping(SMALL), str(SMALL))
    newer = hydra_config(words(export_of(scenario))[1:])
    # examples/grpo-qwen2.5-7b-8xh100.yaml: 512-token prompts, responses of up to 8,192
    assert (newer["train_dataset.max_length"], newer["gconfig.max_new_tokens"]) == (512, 8192)
    assert newer["gconfig.max_tokens"] == newer["rollout.agent.engine_max_tokens"] == 8704
    older = hydra_config(words(export_of(scenario, "1.0.4-17-g4aef98d8d"))[1:])
    assert older["gconfig.max_tokens"] == 8704 and "rollout.agent.engine_max_tokens" not in older
    assert {k: v for k, v in older.items() if k in newer} == {
        k: v for k, v in newer.items() if k in older
    }


# -- allocation strings -----------------------------------------------------------------------


def test_allocation_strings_spell_every_degree_and_read_back() -> None:
    facts = {
        "run.training_backend": "megatron-lm",
        "run.rollout_engine": "sglang",
        **{f"plan.train.{d}": v for d, v in (("gpus", 32), ("tp", 2), ("pp", 4), ("cp", 1))},
        **{f"plan.train.{d}": v for d, v in (("ep", 4), ("etp", 1))},
        **{f"plan.rollout.{d}": v for d, v in (("gpus", 32), ("tp", 4), ("pp", 1))},
    }
    # 32 GPUs over TP 2 x PP 4 leave 4 data-parallel ranks; experts over 4 with expert TP 1
    assert allocation("train", {"megatron-lm": "megatron"}, facts) == "megatron:d4p4t2e4"
    assert allocation("rollout", {"sglang": "sglang"}, facts) == "sglang:d8p1t4"
    hybrid = {**facts, "plan.train.etp": 2, "plan.train.cp": 2}
    written = allocation("train", {"megatron-lm": "megatron"}, hybrid)
    assert written == "megatron:(attn:d2p4t2c2|ffn:p4t2e4)"
    assert read_allocation(written) == (
        "megatron",
        {"dp": 2, "tp": 2, "pp": 4, "cp": 2, "ep": 4, "etp": 2, "gpus": 32},
    )
    # AReaL's own spellings: dimensions in any order, absent ones 1 (alloc_mode.py's grammar)
    assert read_allocation("fsdp:d8")[1]["gpus"] == 8
    assert read_allocation("sglang:t2d4")[1] == read_allocation("sglang:d4t2")[1]
    with pytest.raises(KeyError):
        allocation("train", {"megatron-lm": "megatron"}, {**facts, "run.training_backend": "x"})
    for bad in ("fsdp", "fsdp:d4x2", "d4t2", "fsdp:"):
        with pytest.raises(PoolSpelling):
            read_allocation(bad)


def test_a_hybrid_allocation_is_quoted_for_hydras_override_grammar() -> None:
    """Hydra's override grammar reads parentheses as a call: DeepSeek-V3's expert layout
    (`megatron:(attn:...|ffn:...)`) goes in single quotes, which Hydra takes off (AReaL's own
    parse_cli_args refused it unquoted: OverrideParseException, mismatched input '('), and a
    string it takes as written stays bare."""
    assert override_value("megatron:(attn:d2p4t2c2|ffn:p4t2e4)") == (
        "'megatron:(attn:d2p4t2c2|ffn:p4t2e4)'"
    )
    for bare in ("fsdp:d8p1t1", "Qwen/Qwen2.5-7B", "${MODEL_PATH}", "colocation"):
        assert override_value(bare) == bare
    assert override_value(True) == "True" and override_value(None) == "null"
    # on 512 nodes, so through the older mapping (v2.0.0 launches one node: its constraint)
    done = export_of(parse_scenario(read_mapping(DEEPSEEK), str(DEEPSEEK)), OLDER)
    given = words(done)
    written = [w for w in given if w.startswith("actor.backend=")]
    ((_, _, value),) = (w.partition("=") for w in written)
    # the plan's layout decides the form: a hybrid expert layout quoted, a uniform one bare
    # (the search's top plan there has moved between the two as the cost constants changed)
    if "(attn:" in value:
        assert value.startswith("'") and value.endswith(")'"), value
    else:
        assert "'" not in value and value.startswith("megatron:"), value
    assert hydra_config(given[1:])["actor.backend"] == value.strip("'")


def test_the_30b_moe_tau2_deployment_by_hand() -> None:
    """examples/tau2/config_30b_moe_airline.yaml at 4aef98d, as its deployment record reads it:
    32 SGLang GPUs in engines of TP 4, Megatron on the other 32 with TP 2, PP 4, EP 4."""
    record = "areal-qwen3-30b-a3b-tau2-async-grpo-megatron-64xh800"
    done = export_of(DEPLOYMENTS[record].scenario, OLDER)  # its 8 nodes: the 4aef98d mapping
    args = hydra_config(words(done)[1:])
    expected = {
        "actor.backend": "megatron:d4p4t2e4",
        "rollout.backend": "sglang:d8p1t4",
        "cluster.n_nodes": 8,
        "cluster.n_gpus_per_node": 8,
        "scheduler.type": "ray",
        "rollout.max_head_offpolicyness": 2,
        "train_dataset.batch_size": 16,
        "gconfig.n_samples": 8,
        "gconfig.max_new_tokens": 8192,
        "actor.megatron.ddp.use_distributed_optimizer": True,
    }
    assert {k: args.get(k) for k in expected} == expected


# -- what AReaL's launch cannot say -----------------------------------------------------------


def test_a_zero_1_plan_trains_on_megatron_never_on_fsdp() -> None:
    """Constraint areal-fsdp-fully-sharded: FSDP2's fully_shard with reshard_after_forward
    fixed on is ZeRO-3, so an optimizer-sharded plan is written for Megatron."""
    scenario = parse_scenario(read_mapping(SMALL), str(SMALL))
    plan = scenario.plan.model_copy(update={"placement": "disaggregated", "execution": "sync"})
    plan = plan.model_copy(update={"train": plan.train.model_copy(update={"zero": 1})})
    done = export_of(scenario.model_copy(update={"plan": plan}))
    assert done.backend == "megatron-lm"
    assert hydra_config(words(done)[1:])["actor.backend"].startswith("megatron:")


def test_a_one_step_off_launch_has_no_entry_point(tmp_path: Path) -> None:
    data = yaml.safe_load(SMALL.read_text())
    data["plan"] = {"placement": "disaggregated", "execution": "one-step-off"}
    data["workload"]["max_staleness"] = 1
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    done = CliRunner().invoke(cli, ["export", str(path), "--framework", "areal"])
    assert done.exit_code == 1, done.output
    assert "no entry point for one-step-off" in done.output


# -- colocation and offload ---------------------------------------------------------------------


def _pinned(plan: dict[str, Any], algorithm: str = "grpo") -> Any:
    """The 7B example (one node of eight H100s) with its plan pinned as `plan` says."""
    data = yaml.safe_load(SMALL.read_text())
    data["plan"] = plan
    data["workload"]["algorithm"] = algorithm
    return parse_scenario(data, "pinned")


COLOCATED = {"placement": "colocated", "execution": "sync", "rollout": {"gpus": 8, "tp": 1}}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_colocated_plan_forks_one_engine_onto_each_actor_gpu(version: str) -> None:
    """AReaL's own colocated run (tests/test_examples.py test_gsm8k_ppo_colocate at both commits):
    the rollout's scheduling strategy colocation with the actor as its target, weights through the
    disk, enable_offload; and SGLang under its memory saver, so that its weights and KV cache leave
    the GPUs while the actor trains. Eight engines of one GPU on the actor's eight workers."""
    done = export_of(_pinned(COLOCATED), version)
    given = words(done)
    args = hydra_config(given[1:])
    expected = {
        "rollout.scheduling_strategy.type": "colocation",
        "rollout.scheduling_strategy.target": "actor",
        "actor.weight_update_mode": "disk",
        "enable_offload": True,
        "sglang.enable_memory_saver": True,
        "actor.backend": "fsdp:d8p1t1",
        "rollout.backend": "sglang:d8p1t1",
        "rollout.max_head_offpolicyness": 0,
    }
    assert {k: args.get(k) for k in expected} == expected
    # the GRPO config sets weight_update_mode (xccl), so Hydra overrides it without `+`
    assert "actor.weight_update_mode=disk" in given
    # the colocation parks the actor by itself: the plan's phase offload, no actor.offload key
    assert done.plan["train"]["offload"]["phase"] is True
    assert "actor.offload" not in args
    assert (done.backend, done.engine) == ("pytorch-fsdp", "sglang")


def test_a_colocated_ppo_launch_adds_the_keys_the_ppo_config_lacks() -> None:
    """examples/math/gsm8k_ppo.yaml has no weight_update_mode (AReaL's own colocated PPO run
    passes +actor.weight_update_mode=disk); the critic shares the actor's GPUs and is parked
    with it (critic.offload: the plan's phase offload covers every trained model)."""
    done = export_of(_pinned(COLOCATED, "ppo"))
    given = words(done)
    assert given[0] == "--config=examples/math/gsm8k_ppo.yaml"
    assert "+actor.weight_update_mode=disk" in given
    args = hydra_config(given[1:])
    expected = {
        "rollout.scheduling_strategy.type": "colocation",
        "critic.scheduling_strategy.type": "colocation",
        "critic.offload": True,
        "enable_offload": True,
    }
    assert {k: args.get(k) for k in expected} == expected


def test_a_colocated_dapo_plan_parks_no_reference_it_does_not_build() -> None:
    """DAPO keeps no reference (kl_ctl 0: PPOTrainer builds none), so a plan ranked with the
    frozen models parked says ref.offload's default; ref.offload true would ask the trainer to
    park a reference it never built, and enable_offload stays for the colocated actor."""
    done = export_of(_pinned(COLOCATED, "dapo"))
    given = words(done)
    args = hydra_config(given[1:])
    assert args["enable_offload"] is True and args["dynamic_bs"] is True
    assert args.get("ref.offload", False) is False


def test_the_colocation_constraints_by_hand() -> None:
    """PPOTrainer parks the actor whenever the rollout is colocated with it, and the schedulers
    colocate a role only onto as many workers as its target has: one single-GPU engine per
    actor GPU."""
    from rlmguide.rules.expr import Condition
    from rlmguide.rules.facts import FACTS

    records = load_catalog(DEFAULT_ROOTS, ("constraint",)).of("constraint")

    def holds(record_id: str, **facts: Any) -> bool:
        return bool(Condition(records[record_id].condition, FACTS).evaluate(facts))

    parks = "areal-colocated-parks-trainer-state"
    assert holds(parks, **{"plan.placement": "colocated", "plan.train.offload_phase": True})
    assert not holds(parks, **{"plan.placement": "colocated", "plan.train.offload_phase": False})
    assert holds(parks, **{"plan.placement": "disaggregated", "plan.train.offload_phase": False})
    engines = "areal-colocated-rollout-one-gpu-per-engine"
    one = {"plan.placement": "colocated", "plan.rollout.tp": 1, "plan.rollout.pp": 1}
    assert holds(engines, **one)
    assert not holds(engines, **{**one, "plan.rollout.tp": 2})
    assert not holds(engines, **{**one, "plan.rollout.pp": 2})
    assert holds(engines, **{**one, "plan.placement": "disaggregated", "plan.rollout.tp": 4})


def test_phase_offload_on_gpus_of_its_own_parks_the_actor_through_the_memory_saver() -> None:
    parked = {
        "placement": "disaggregated",
        "execution": "sync",
        "train": {"offload": {"phase": True}},
    }
    done = export_of(_pinned(parked))
    args = hydra_config(words(done)[1:])
    expected = {
        "actor.offload": True,
        "enable_offload": True,
        "rollout.scheduling_strategy.type": "separation",
    }
    assert {k: args.get(k) for k in expected} == expected
    assert "actor.weight_update_mode" not in args  # the base config's xccl


def test_streamed_parameters_are_fsdps_cpu_offload_policy() -> None:
    """fsdp.offload_params wraps the model in FSDP2's CPUOffloadPolicy: parameters, gradients and
    Adam on the host, so the plan's streamed parameters come with its CPU optimizer."""
    streamed = {"offload": {"params": True, "optimizer": 1}}
    done = export_of(
        _pinned({"placement": "disaggregated", "execution": "sync", "train": streamed})
    )
    assert done.backend == "pytorch-fsdp"
    given = words(done)
    assert "+actor.fsdp.offload_params=True" in given


def test_adam_on_the_host_has_no_key_on_megatron() -> None:
    """A ZeRO-1 plan trains on Megatron (areal-fsdp-fully-sharded), whose AReaL engine config has
    no CPU offload: the refusal says so and where FSDP's key is."""
    scenario = _pinned(
        {
            "placement": "disaggregated",
            "execution": "sync",
            "train": {"zero": 1, "offload": {"optimizer": 1}},
        }
    )
    # the ZeRO-1 plan is no FSDP plan (named first), and its Megatron twin is refused by
    # areal-megatron-no-cpu-offload: the message names both, or a user moves to Megatron
    with pytest.raises(NotExpressible, match="areal cannot run this scenario") as refused:
        export_of(scenario)
    said = str(refused.value)
    assert "by constraint areal-fsdp-fully-sharded" in said
    assert re.search(
        r"pairs it does not bind refuse them too: on megatron-lm \+ \w+.*"
        r"by constraint areal-megatron-no-cpu-offload \(.*areal/api/cli_args.py at",
        said,
    )
    rule = {c.id: c for c in compile_constraints(catalogs()[0])[0]}["areal-megatron-no-cpu-offload"]
    assert rule.record.component == "megatron-lm"
    for optimizer, params, holds in ((0, False, True), (1, False, False), (0, True, False)):
        facts = {"plan.train.offload_optimizer": optimizer, "plan.train.offload_params": params}
        assert bool(rule.holds(facts, 1)[0]) is holds


def test_adam_on_the_host_alone_is_the_per_layer_optimizer_step() -> None:
    """A CPU optimizer without streamed parameters on FSDP is fsdp.per_layer_optim_step (Adam's
    states on the host, streamed to the GPU layer by layer for the step), not offload_params,
    which would stream the parameters too."""
    alone = {"offload": {"optimizer": 1}}
    done = export_of(_pinned({"placement": "disaggregated", "execution": "sync", "train": alone}))
    assert done.backend == "pytorch-fsdp"
    args = hydra_config(words(done)[1:])
    assert args.get("actor.fsdp.per_layer_optim_step") is True
    assert "actor.fsdp.offload_params" not in args


def test_areal_vllm_engines_run_no_expert_parallelism() -> None:
    """AReaL's vLLMConfig passes tensor and pipeline sizes only (constraint
    areal-vllm-no-expert-parallelism): a plan splitting a vLLM engine's experts is refused."""
    compiled = {c.id: c for c in compile_constraints(catalogs()[0])[0]}
    rule = compiled["areal-vllm-no-expert-parallelism"]
    assert rule.record.component == "vllm"
    for ep, holds in ((1, True), (2, False), (8, False)):
        assert bool(rule.holds({"plan.rollout.ep": ep}, 1)[0]) is holds


def test_review_reads_a_colocated_launch_back_and_reports_the_checks_it_trips(
    tmp_path: Path,
) -> None:
    """The exported colocated launch reads back as the plan it was (colocated, phase offload,
    engines of one GPU) and trips no start-up check; without enable_offload and the disk weight
    update it trips PPOTrainer's two (constraints areal-offload-needs-memory-saver,
    areal-colocation-needs-disk-weight-update)."""
    text = script(export_of(_pinned(COLOCATED)), "test", "qwen2.5-7b")

    def reviewed(body: str) -> dict[str, Any]:
        path = tmp_path / "launch.sh"
        path.write_text(body)
        args = ["review", str(path), "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-7b"]
        done = CliRunner().invoke(cli, [*args, "--format", "json"], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        return json.loads(done.output)

    back = reviewed(text)
    plan = back["scenario"]["plan"]
    assert (plan["placement"], plan["execution"]) == ("colocated", "sync")
    assert plan["train"]["offload"]["phase"] is True
    assert (plan["rollout"]["gpus"], plan["rollout"]["tp"]) == (8, 1)
    assert back["startup"] == [] and back["unmapped"] == []
    stripped = "".join(
        line + "\n"
        for line in text.splitlines()
        if "enable_offload" not in line and "weight_update_mode" not in line
    )
    tripped = sorted(c["constraint"] for c in reviewed(stripped)["startup"])
    assert tripped == [
        "areal-colocation-needs-disk-weight-update",
        "areal-offload-needs-memory-saver",
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_ppo_launches_areals_ppo_config_with_its_critic_on_the_actors_gpus(version: str) -> None:
    """examples/math/gsm8k_ppo_megatron.yaml at 4aef98d, as its deployment record reads it: the
    PPO config's critic section (is_critic, the actor's allocation, colocated with the actor),
    no group reward normalisation; the critic recomputes and shards as the actor does."""
    record = "areal-qwen2.5-1.5b-gsm8k-async-ppo-critic-megatron-8xh800"
    done = export_of(DEPLOYMENTS[record].scenario, version)
    given = words(done)
    assert given[0] == "--config=examples/math/gsm8k_ppo.yaml"
    args = hydra_config(given[1:])
    expected = {
        "actor.backend": "megatron:d4p1t1",
        "rollout.backend": "sglang:d4p1t1",
        "critic.is_critic": True,
        "critic.scheduling_strategy.type": "colocation",
        "critic.scheduling_strategy.target": "actor",
        "critic.gradient_checkpointing": True,
        "critic.megatron.ddp.use_distributed_optimizer": True,
        "gconfig.n_samples": 1,
    }
    assert {k: args.get(k) for k in expected} == expected
    assert "actor.reward_norm.mean_level" not in args
    # the PPO config's critic follows the actor's allocation by interpolation
    assert base(version, "gsm8k_ppo")["critic.backend"] == "${actor.backend}"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("algorithm", "config", "clip"),
    [("ppo", "gsm8k_ppo", 0.2), ("grpo", "gsm8k_grpo", 0.2), ("dapo", "gsm8k_grpo", 0.2)],
)
def test_every_algorithm_clips_as_its_record_and_keeps_the_reward_unscaled(
    version: str, algorithm: str, config: str, clip: float
) -> None:
    """Both base configs clip the ratio at 0.4 and turn a 0/1 reward into -5/+5
    (reward_scaling 10, reward_bias -0.5; areal/trainer/ppo/actor.py applies (r + bias) x
    scaling before GAE or the group normalisation): an export writes the record's clip (DAPO's
    0.2; PPO's 0.2 where the record, as GRPO's, states none), as NeMo-RL's does, and the
    dataclass defaults 1 and 0, plainly (the configs hold all three keys)."""
    held = {"actor.eps_clip": 0.4, "actor.reward_scaling": 10.0, "actor.reward_bias": -0.5}
    assert {k: base(version, config)[k] for k in held} == held
    given = words(export_of(_pinned(COLOCATED, algorithm), version))
    assert given[0] == f"--config=examples/math/{config}.yaml"
    written = {k: v for k, v in hydra_config(given[1:]).items() if k in held}
    unscaled = {"actor.reward_scaling": 1.0, "actor.reward_bias": 0.0}
    assert written == {"actor.eps_clip": clip, **unscaled}
    assert not [w for w in given if w.startswith(("+actor.eps_clip=", "+actor.reward_"))]


@pytest.mark.parametrize("version", VERSIONS)
def test_dapos_clip_overrides_the_grpo_configs_plainly(version: str) -> None:
    """Both base configs hold actor.eps_clip (0.4), so Hydra's struct mode takes DAPO's 0.2
    without `+` (which it refuses for a key the config has) and eps_clip_higher only with it."""
    assert base(version)["actor.eps_clip"] == 0.4
    scenario = parse_scenario(read_mapping(SMALL), str(SMALL))
    workload = scenario.workload.model_copy(update={"algorithm": "dapo"})
    given = words(export_of(scenario.model_copy(update={"workload": workload}), version))
    clips = sorted(w for w in given if "eps_clip" in w)
    assert clips == ["+actor.eps_clip_higher=0.28", "actor.eps_clip=0.2"]


def test_dapo_writes_the_dapo_examples_switches_over_the_grpo_config() -> None:
    """examples/math/gsm8k_dapo_dynamic_bs.yaml's settings: clip-higher 0.28, the overlong penalty
    at factor 1.0 over the last fifth of the response limit, dynamic batch size; none of them
    is in the GRPO config, so each takes Hydra's `+`."""
    scenario = parse_scenario(read_mapping(SMALL), str(SMALL))
    workload = scenario.workload.model_copy(update={"algorithm": "dapo"})
    done = export_of(scenario.model_copy(update={"workload": workload}))
    given = words(done)
    assert given[0] == "--config=examples/math/gsm8k_grpo.yaml"
    args = hydra_config(given[1:])
    expected = {
        "actor.reward_norm.mean_level": "group",
        "actor.eps_clip_higher": 0.28,
        "actor.overlong_reward_penalty": True,
        "actor.overlong_tokens": 8192 // 5,
        "actor.overlong_penalty_factor": 1.0,
        "dynamic_bs": True,
    }
    assert {k: args.get(k) for k in expected} == expected
    assert {w.partition("=")[0] for w in given if "dynamic_bs" in w} == {"+dynamic_bs"}


LONG = {
    "cluster": {"accelerator": "h20-96gb", "nodes": 1, "gpus_per_node": 8},
    "models": {"policy": "qwen3-8b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
                 "prompt_tokens": 1024, "response_tokens": 8192, "max_response_tokens": 32768,
                 "minibatches_per_step": 4},
}  # fmt: skip
"""The launch audit's a11 (/work/notes/audit) in small: 1,024 + 32,768 = 33,792 tokens a request."""


def test_sglang_context_length_holds_the_longest_request(tmp_path: Path) -> None:
    """AReaL's base config leaves SGLang at 32,768 tokens (gsm8k_grpo.yaml L121 at fee938ea);
    a request of 33,792 needs 33,792 + 2 (SGLang 0.5.10.post1's scheduler serves context - 2
    new tokens at most; its tokenizer rejects input + max_new >= context). Review reports
    constraint areal-sglang-context-holds-the-longest-request on the launch without it."""
    done = export_of(parse_scenario(LONG, "long"))
    assert done.engine == "sglang"
    args = hydra_config(words(done)[1:])
    assert args["gconfig.max_tokens"] == 33792
    assert args["sglang.context_length"] == 33794
    text = script(done, "test", "qwen3-8b")
    path = tmp_path / "launch.sh"

    def startup(launch: str) -> list[str]:
        path.write_text(launch)
        given = ("--framework", "areal", "--accelerator", "h20-96gb", "--policy", "qwen3-8b")
        return [c["constraint"] for c in review_json(path, *given)["startup"]]

    assert startup(text) == []
    without = "\n".join(line for line in text.splitlines() if "context_length" not in line)
    assert startup(without + "\n") == ["areal-sglang-context-holds-the-longest-request"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_reference_forward_takes_the_longest_sequence(version: str) -> None:
    """With a KL (kl_ctl > 0) AReaL builds the reference as an engine of its own (rl_trainer.py
    L179-L181) that cuts its batch by ref.mb_spec (fsdp_engine.py, megatron_engine.py), whose
    base value, 10,240 tokens, ffd_allocate refuses for any longer sequence (seqpack.py
    L239-L240). A 33,792-token GRPO request gets the actor's budget on the reference too, plainly
    (the base config holds the key); DAPO, without a KL, builds no reference and writes none."""
    assert base(version)["ref.mb_spec.max_tokens_per_mb"] == 10240
    given = words(export_of(parse_scenario(LONG, "long"), version))
    args = hydra_config(given[1:])
    assert args["actor.kl_ctl"] > 0
    budget = args["actor.mb_spec.max_tokens_per_mb"]
    assert args["ref.mb_spec.max_tokens_per_mb"] == budget >= 33792
    assert f"ref.mb_spec.max_tokens_per_mb={budget}" in given
    dapo = {**LONG, "workload": {**LONG["workload"], "algorithm": "dapo"}}
    args = hydra_config(words(export_of(parse_scenario(dapo, "dapo"), version))[1:])
    assert "actor.kl_ctl" not in args and "ref.mb_spec.max_tokens_per_mb" not in args


def _moe_megatron(etp: int) -> Exported:
    """Qwen3-30B-A3B on Megatron at TP 2 without expert parallelism, experts split by `etp`
    (on 64 H200s: expert TP 1 does not fit)."""
    data = {
        # one node of 64 GPUs: v2.0.0 launches on one node (areal-ray-scheduler-has-no-agent-proxy)
        "cluster": {"accelerator": "h200-sxm-141gb", "nodes": 1, "gpus_per_node": 64},
        "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
        "workload": {"algorithm": "grpo", "prompts_per_step": 128, "samples_per_prompt": 8,
                     "prompt_tokens": 1024, "response_tokens": 4096, "max_response_tokens": 8192,
                     "minibatches_per_step": 4},
        "plan": {"placement": "disaggregated", "execution": "sync",
                 "rollout": {"gpus": 32, "ep": 1},
                 "train": {"gpus": 32, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "etp": etp, "zero": 1,
                           "recompute": "full",
                           "offload": {"optimizer": 0.0, "params": False, "frozen": True}}},
    }  # fmt: skip
    return export_of(parse_scenario(data, f"etp{etp}"))


def test_moe_expert_tensor_parallelism_is_written_in_the_hybrid_allocation(
    tmp_path: Path,
) -> None:
    """AReaL's plain allocation string leaves expert TP at 1 (alloc_mode.py L85-L91 at
    fee938ea); a plan whose experts are split over TP 2 is written in the hybrid form, which
    sets it (hybrid_train_para, L943-L981). Review reads the export back at the plan's
    weights, and the plain string the audit found at 27.0 GiB more a GPU: the experts' other
    half, 128 x 3 x 2,048 x 768 x 48 / 2 = 14,495,514,624 parameters in bf16."""
    done = _moe_megatron(2)
    backend = hydra_config(words(done)[1:])["actor.backend"]
    assert backend == "megatron:(attn:d16p1t2|ffn:p1t2)"
    assert read_allocation(backend)[1]["etp"] == 2
    text = script(done, "test", "qwen3-30b-a3b")
    path = tmp_path / "launch.sh"

    def weights(launch: str) -> float:
        path.write_text(launch)
        given = ["review", str(path), "--framework", "areal", "--accelerator", "h200-sxm-141gb",
                 "--policy", "qwen3-30b-a3b", "--format", "json"]  # fmt: skip
        reviewed = CliRunner().invoke(cli, given, catch_exceptions=False)
        assert reviewed.exit_code == 0, reviewed.output
        estimate = json.loads(reviewed.output)["estimate"]
        return float(estimate["memory_breakdown_gib"]["training"]["weights"])

    costed = done.plan["memory_breakdown_gib"]["training"]["weights"]
    assert weights(text) == pytest.approx(costed, rel=1e-9)
    plain = text.replace(f"actor.backend='{backend}'", "actor.backend=megatron:d16p1t2")
    assert plain != text
    assert weights(plain) - costed == pytest.approx(14_495_514_624 * 2 / 2**30, rel=1e-6)


def test_a_dense_models_tensor_parallelism_stays_in_the_plain_allocation() -> None:
    facts = {"run.training_backend": "megatron-lm", "plan.train.gpus": 8, "plan.train.tp": 2,
             "plan.train.etp": 2, "model.is_moe": False}  # fmt: skip
    assert allocation("train", {"megatron-lm": "megatron"}, facts) == "megatron:d4p1t2"
    moe = {**facts, "model.is_moe": True}
    assert (
        allocation("train", {"megatron-lm": "megatron"}, moe) == "megatron:(attn:d4p1t2|ffn:p1t2)"
    )
    assert read_allocation("megatron:(attn:d4p1t2|ffn:p1t2)")[1] | {"gpus": 8} == {
        "gpus": 8, "dp": 4, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "etp": 2}  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_a_request_is_bounded_at_the_prompt_cap_not_the_mean(version: str) -> None:
    """A prompt the dataset admits (train_dataset.max_length) keeps the whole response budget:
    gconfig.max_tokens is the prompt cap plus the longest response at both versions (the older
    mapping wrote the mean prompt, so a 1,024-token prompt got 8,192 - 512 new tokens fewer)."""
    scenario = parse_scenario(read_mapping(SMALL), str(SMALL))
    scenario = scenario.model_copy(
        update={"workload": scenario.workload.model_copy(update={"max_prompt_tokens": 1024})}
    )
    args = hydra_config(words(export_of(scenario, version))[1:])
    assert args["train_dataset.max_length"] == 1024
    assert args["gconfig.max_tokens"] == 1024 + 8192


MOE_ON_ONE_NODE = {
    # an MoE whose rollout engine splits its experts over its 4 tensor ranks
    "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8},
    "models": {"policy": "qwen1.5-moe-a2.7b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 32, "samples_per_prompt": 8,
                 "prompt_tokens": 512, "response_tokens": 2048, "max_prompt_tokens": 1024},
    "plan": {"placement": "disaggregated", "rollout": {"gpus": 4, "tp": 4, "ep": 4}},
}  # fmt: skip


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_the_rollout_expert_parallelism_is_sglang_ep_size(tmp_path: Path, version: str) -> None:
    # SGLangConfig.ep_size (cli_args.py L1970 at fee938ea, L1783 at 4aef98d8), inside the
    # instance the allocation string sizes (sglang:d1p1t4: 4 GPUs, docs/en/reference/
    # alloc_mode.md L114-L119), and read back by review
    done = export_of(parse_scenario(MOE_ON_ONE_NODE, "moe"), version)
    text = script(done, "moe", "Qwen/Qwen1.5-MoE-A2.7B")
    assert "rollout.backend=sglang:d1p1t4 " in text and "sglang.ep_size=4 " in text
    path = tmp_path / "moe.sh"
    path.write_text(text)
    read = review_json(path, "--accelerator", "h100-sxm-80gb", "--policy", "qwen1.5-moe-a2.7b")
    rollout = read["scenario"]["plan"]["rollout"]
    assert (rollout["tp"], rollout["ep"]) == (4, 4)


def test_an_engine_expert_group_beyond_its_tensor_group_is_refused() -> None:
    over = {
        **MOE_ON_ONE_NODE,
        "plan": {**MOE_ON_ONE_NODE["plan"], "rollout": {"gpus": 4, "tp": 2, "ep": 4}},
    }
    # SGLang's expert groups are carved out of the instance's tensor group (constraint
    # areal-sglang-expert-parallel-within-engine): EP 4 over TP 2 is no SGLang launch, and
    # AReaL's vLLM engine runs none (areal-vllm-no-expert-parallelism)
    with pytest.raises(NotExpressible, match=r"constraint areal-sglang-expert-parallel-within"):
        export_of(parse_scenario(over, "moe"))
