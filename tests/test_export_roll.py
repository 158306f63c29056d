"""Export to ROLL (one YAML config composed whole by examples/start_rlvr_pipeline.py into
RLVRConfig, at 8eb27cc2).

The oracles are ROLL's own: its config dataclasses, extracted key by key into
tests/fixtures/frameworks/roll-8eb27cc-config-keys.tsv with the keys each strategy reads from
its open strategy_config (every key written must be declared there with a value of its type),
and the start-up checks of the config __post_init__s and strategies, reproduced below from their
source lines. Every bundled example either exports and passes them or is refused for a reason
the test names."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from launch_support import catalogs, review_json
from rlmguide.rules.scenario import parse_scenario, read_mapping, resolve
from test_export_skyrl import DEPLOYMENTS, EXAMPLES, SMALL, of_type

from rlmguide.cli import cli
from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.pools import PoolSpelling, devices, read_devices
from rlmguide.review import Hardware, review
from rlmguide.review.recipe import document_config

FIXTURES = Path(__file__).parent / "fixtures" / "frameworks"
MAPPING = "roll-0.3.0-9-g8eb27cc2"


def export_of(scenario: Any) -> Exported:
    catalog, mappings = catalogs()
    return build(resolve(scenario, catalog.records), catalog, mappings, "roll")


def config(done: Exported) -> dict[str, Any]:
    """The exported YAML's keys, dotted, as OmegaConf resolves them with nothing set in the
    environment (a `${oc.env:VAR}` without a default stays as written)."""
    return document_config(script(done, "test", "policy"))


# -- every key is ROLL's ----------------------------------------------------------------------


@cache
def declared() -> dict[str, str]:
    """Dotted key -> annotation, from the extract at 8eb27cc2."""
    rows = (FIXTURES / "roll-8eb27cc-config-keys.tsv").read_text().splitlines()
    return {r.split("\t")[0]: r.split("\t")[1] for r in rows if not r.startswith("#")}


@cache
def defaults() -> dict[str, str]:
    rows = (FIXTURES / "roll-8eb27cc-config-keys.tsv").read_text().splitlines()
    return {r.split("\t")[0]: r.split("\t")[2] for r in rows if not r.startswith("#")}


def annotation(key: str, given: dict[str, Any]) -> str | None:
    """The annotation of a key, or None where ROLL does not declare it: a strategy_config key
    is one the role's strategy reads (`open`: its type is the strategy's or the engine's), a
    rewards entry's keys are RewardConfig's under its own name."""
    role, sep, rest = key.partition(".strategy_args.strategy_config.")
    if sep:
        strategy = given.get(f"{role}.strategy_args.strategy_name")
        for row, declared_as in declared().items():
            names, _, name = row.removeprefix("strategy_config[").partition("].")
            if row.startswith("strategy_config[") and name == rest and strategy in names.split(","):
                return (
                    declared_as
                    if not declared_as.startswith(("read", "vLLM", "SGLang"))
                    else "open"
                )
        return None
    if key.startswith("rewards."):
        _, name, rest = key.split(".", 2)
        return declared().get(f"rewards.<name>.{rest}")
    if key in declared():
        return declared()[key]
    parent = key.rpartition(".")[0]
    # a key of a Dict field (data_args.domain_interleave_probs: Dict[str, float])
    return "open" if declared().get(parent, "").startswith(("Dict", "Optional[Dict")) else None


def test_the_key_extract_has_rolls_fields() -> None:
    keys = declared()
    assert keys["rollout_batch_size"] == "int"
    assert keys["actor_infer.device_mapping"] == "Union[List[int], str]"
    assert keys["actor_train.strategy_args.strategy_config"] == "Optional[Dict]"
    assert "strategy_config[megatron_train,megatron_infer].use_distributed_optimizer" in keys
    given = {"actor_train.strategy_args.strategy_name": "fsdp2_train"}
    assert annotation("actor_train.strategy_args.strategy_config.fsdp_size", given) == "open"
    # a Megatron key is no FSDP2 strategy's
    assert (
        annotation("actor_train.strategy_args.strategy_config.use_distributed_optimizer", given)
        is None
    )
    assert annotation("rewards.math_rule.world_size", {}) == "int"
    assert annotation("no_such_key", {}) is None


def _cases() -> list[Any]:
    found = [
        pytest.param(("deployment", d), id=d)
        for d, r in sorted(DEPLOYMENTS.items())
        if r.framework == "roll"
    ]
    found += [pytest.param(("example", str(p)), id=p.stem) for p in EXAMPLES]
    return found


REFUSED = {
    # what ROLL's launch cannot say, as export names it: the mapping's missing key, or the
    # framework record's missing claim
    "dpo-qwen2.5-7b-8xh100": "no key for workload.reward_kind = none",
    "grpo-qwen2.5-7b-llm-judge-16xh100": "plan.pools.reward = 8, workload.reward_model = true",
    "grpo-qwen3-32b-coding-agent-64xh100": "no key for workload.max_turns = 16",
    "ppo-llama-3.1-70b-1024xh100": "no key for workload.reward_model = true",
    "ppo-qwen2.5-7b-shared-critic-fused-16xh100": "does not claim shared-actor-critic",
    # Qwen3-235B's 94 layers over 8 stages: mcore_adapter takes no first/last stage counts (the
    # record's launch evens them with account_for_*_in_pipeline_split, which no entry writes)
    "roll-qwen3-235b-a22b-rlvr-megatron-256xh800": "megatron-pipeline-stages-split-the-layers",
    # ROLL's FSDP2 strategy parks only the weights: the records' phase offload there is not
    # what the mapping writes (its `absent` reason)
    "roll-qwen3-30b-a3b-rlvr-fsdp2-32xh800": "no key for plan.train.offload_phase = true",
    "roll-qwen3-8b-rlvr-fsdp2-16xh800": "FSDP2's weights alone, Adam staying on the GPU",
}


def _scenario(case: tuple[str, str]) -> Any:
    kind, name = case
    if kind == "deployment":
        return DEPLOYMENTS[name].scenario
    return parse_scenario(read_mapping(Path(name)), name)


@cache
def _export(case: tuple[str, str]) -> Exported | str:
    """The launch, or export's one-line refusal."""
    try:
        return export_of(_scenario(case))
    except NotExpressible as exc:
        return str(exc)


def _named(case: tuple[str, str]) -> str:
    return Path(case[1]).stem if case[0] == "example" else case[1]


@pytest.mark.parametrize("case", _cases())
def test_every_case_exports_or_is_refused_for_its_reason(case: tuple[str, str]) -> None:
    done, name = _export(case), _named(case)
    if name in REFUSED:
        assert isinstance(done, str), f"{name} now exports: update REFUSED"
        assert REFUSED[name] in done and "\n" not in done
    else:
        assert isinstance(done, Exported), done


@pytest.mark.parametrize("case", [c for c in _cases() if _named(c.values[0]) not in REFUSED])
def test_every_key_exists_in_rolls_config_with_its_type(case: tuple[str, str]) -> None:
    done = _export(case)
    assert isinstance(done, Exported), done
    given = config(done)
    for key, value in given.items():
        declared_as = annotation(key, given)
        assert declared_as is not None, f"{key} is not a key of RLVRConfig"
        if isinstance(value, str) and "${" in value:
            continue  # the user's inputs
        if key.endswith(".device_mapping"):
            assert isinstance(value, str)  # evaluated as a Python list (worker_config.py L312)
            continue
        assert of_type(value, declared_as), (key, value, declared_as)


# -- ROLL's start-up checks -------------------------------------------------------------------


def ids(text: str) -> list[int]:
    return read_devices(text)


def passes_rolls_checks(args: dict[str, Any]) -> None:
    """The asserts a config meets when RLVRConfig is built and its strategies start, each from
    its source line at 8eb27cc2."""
    assert args.get("response_length") or args.get("sequence_length"), "base_config.py L272"
    infer = args["actor_infer.strategy_args.strategy_name"]
    assert infer in ("vllm", "sglang"), "actor_infer's strategy (base_config.py L388-L390)"
    for role in ("actor_train", "actor_infer", "reference"):
        if f"{role}.device_mapping" not in args:
            continue
        name = args[f"{role}.strategy_args.strategy_name"]
        conf = f"{role}.strategy_args.strategy_config."
        per_worker = args.get(f"{role}.num_gpus_per_worker", 1)
        if name == "vllm":  # worker_config.py L283-L292
            per_worker = args.get(conf + "tensor_parallel_size", 1) * args.get(
                conf + "pipeline_parallel_size", 1
            )
        elif name != "sglang":  # L278-L282: one GPU per worker for the trainers
            per_worker = 1
        devices_of = ids(args[f"{role}.device_mapping"])
        assert len(devices_of) % per_worker == 0, f"{role} devices over GPUs per worker (L313)"
        if name == "sglang":  # sglang_strategy.py L77-L81, L111
            tp = args.get(conf + "tensor_parallel_size", per_worker)
            assert tp * args.get(conf + "pipeline_parallel_size", 1) % per_worker == 0
            assert conf + "mem_fraction_static" in args, "SGLang needs mem_fraction_static (L111)"
        if name.startswith("fsdp2"):  # fsdp2_strategy.py L833
            ulysses = args.get(f"{role}.model_args.ulysses_size", 1)
            assert args.get(conf + "fsdp_size", 1) >= ulysses, "fsdp size below the Ulysses size"
    for role in ("actor_train", "reference"):
        if "megatron" in str(args.get(f"{role}.strategy_args.strategy_name")):
            # each role's cluster initialises its own parallel state (mcore_adapter initialize.py
            # L62-L69), where an unset expert TP is the role's TP (Megatron-Core core_v0.16.1,
            # parallel_state.py L786-L795)
            conf = f"{role}.strategy_args.strategy_config."
            expert = args.get(conf + "expert_tensor_parallel_size") or args.get(
                conf + "tensor_model_parallel_size", 1
            )
            expert *= args.get(conf + "expert_model_parallel_size", 1)
            expert *= args.get(conf + "pipeline_model_parallel_size", 1)
            gpus = len(ids(args[f"{role}.device_mapping"]))
            assert gpus % expert == 0, f"{role}: {gpus} GPUs over ETP x EP x PP {expert}"
    train = "actor_train.strategy_args."
    if "megatron" in args[train + "strategy_name"]:  # base_config.py L368-L382, config_utils.py
        conf = train + "strategy_config."
        model = 1
        for degree in ("tensor_model_parallel_size", "pipeline_model_parallel_size"):
            model *= args.get(conf + degree, 1)
        model *= args.get(conf + "context_parallel_size", 1)
        gpus = len(ids(args["actor_train.device_mapping"]))
        assert gpus % model == 0, f"{gpus} GPUs over TP x PP x CP {model} (config_utils.py L41)"
        dp = gpus // model
        assert dp == 1 or args["rollout_batch_size"] % dp == 0, "rollout batch over DP (L98)"
    ratio = args.get("async_generation_ratio", 0)
    assert ratio == 0 or ratio >= 1, "async_generation_ratio must be >= 1.0 (rlvr_config.py L222)"


@pytest.mark.parametrize("case", [c for c in _cases() if _named(c.values[0]) not in REFUSED])
def test_exported_launches_pass_rolls_checks(case: tuple[str, str]) -> None:
    done = _export(case)
    assert isinstance(done, Exported), done
    passes_rolls_checks(config(done))


def test_rolls_checks_can_fail() -> None:
    done = export_of(parse_scenario(read_mapping(SMALL), str(SMALL)))
    args = config(done)
    passes_rolls_checks(args)
    conf = "actor_infer.strategy_args.strategy_config."
    for change, reason in (
        ({"actor_infer.strategy_args.strategy_name": "hf_infer"}, "actor_infer's strategy"),
        ({"actor_infer.device_mapping": "list(range(0,7))", conf + "tensor_parallel_size": 2},
         "devices over GPUs per worker"),
        ({"async_generation_ratio": 0.5}, "must be >= 1.0"),
        ({"actor_train.model_args.ulysses_size": 16}, "fsdp size below the Ulysses size"),
    ):  # fmt: skip
        with pytest.raises(AssertionError, match=reason):
            passes_rolls_checks({**args, **change})
    megatron = {
        **args,
        "actor_train.strategy_args.strategy_name": "megatron_train",
        "rollout_batch_size": 100,
    }
    with pytest.raises(AssertionError, match="rollout batch over DP"):
        passes_rolls_checks(megatron)


# -- device lists -----------------------------------------------------------------------------


def test_device_lists_are_parsed_never_evaluated() -> None:
    assert devices(0, 8) == "list(range(0,8))" and devices(8, 4) == "list(range(8,12))"
    assert read_devices("list(range(0,8))") == list(range(8))
    assert read_devices("list(range(16, 24))") == list(range(16, 24))
    assert read_devices("range(4)") == [0, 1, 2, 3]
    assert read_devices("[6, 7]") == [6, 7] and read_devices([0, 1]) == [0, 1]
    assert read_devices("list([0,1,2,3,8,9,10,11])") == [0, 1, 2, 3, 8, 9, 10, 11]
    for bad in ("__import__('os').system('x')", "list(range(0,8))+[9]", "[]", "[1,1]",
                "list(range(0,10**12))", "range(0, 99999999999)", "range(0,8,0)"):  # fmt: skip
        with pytest.raises(PoolSpelling):
            read_devices(bad)


# -- by hand ----------------------------------------------------------------------------------


def test_the_small_example_by_hand() -> None:
    """examples/grpo-qwen2.5-7b-8xh100.yaml: the planner's best ROLL plan, colocated on 8 GPUs
    (FSDP2 over all 8, four vLLM engines of TP 2), 128 prompts x 8 in 4 mini-batches: each of
    the 8 ranks trains 1024 / 8 = 128 samples a step, 32 per optimizer step."""
    done = export_of(parse_scenario(read_mapping(SMALL), str(SMALL)))
    args = config(done)
    expected = {
        "actor_train.device_mapping": "list(range(0,8))",
        "actor_infer.device_mapping": "list(range(0,8))",
        "reference.device_mapping": "list(range(0,8))",
        "actor_train.strategy_args.strategy_name": "fsdp2_train",
        "actor_train.strategy_args.strategy_config.fsdp_size": 8,
        "actor_train.strategy_args.strategy_config.reshard_after_forward": True,
        "actor_infer.strategy_args.strategy_name": "vllm",
        "actor_infer.strategy_args.strategy_config.tensor_parallel_size": 2,
        "rollout_batch_size": 128,
        "num_return_sequences_in_group": 8,
        "actor_train.training_args.per_device_train_batch_size": 1,
        "actor_train.training_args.gradient_accumulation_steps": 32,
        "adv_estimator": "grpo",
        "use_kl_loss": True,
        "init_kl_coef": 0.2,
    }
    assert {k: args.get(k) for k in expected} == expected
    ran = CliRunner().invoke(cli, ["export", str(SMALL), "--framework", "roll"])
    assert ran.exit_code == 0, ran.output
    text = ran.output
    assert "--config_path rlmguide --config_name plan" in text
    # the header names the reference ROLL parks by itself (base_worker.py L130-L142), no key
    header = next(line for line in text.splitlines() if line.startswith("# Plan: "))
    assert "frozen (by roll itself)" in header, header
    assert "${oc.env:TRAIN_DATA}" in text and not text.startswith("#!")
    # the model loads by its Hugging Face id unless MODEL_PATH is set
    assert document_config(text)["pretrain"] == "Qwen/Qwen2.5-7B"
    assert "pretrain: ${oc.env:MODEL_PATH,'Qwen/Qwen2.5-7B'}" in text


def test_the_disaggregated_engines_take_the_ids_after_the_trainers() -> None:
    record = "roll-qwen3-30b-a3b-rlvr-megatron-32xh800"
    args = config(export_of(DEPLOYMENTS[record].scenario))
    train, infer = ids(args["actor_train.device_mapping"]), ids(args["actor_infer.device_mapping"])
    shared = set(train) & set(infer)
    plan = DEPLOYMENTS[record].scenario.plan
    if plan.placement == "colocated":
        assert shared and len(infer) == plan.rollout.gpus
    else:
        assert not shared and min(infer) == len(train)
    assert args["actor_train.strategy_args.strategy_config.use_distributed_optimizer"] is True


# -- refusals name the constraint -------------------------------------------------------------


LAYOUT = {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 1, "recompute": "full"}


def _fixed(tmp_path: Path, plan: dict[str, Any], **workload: Any) -> Path:
    scenario = yaml.safe_load(SMALL.read_text())
    scenario["plan"] = plan
    scenario["workload"].update(workload)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def test_a_rollout_batch_megatron_cannot_split_names_the_check(tmp_path: Path) -> None:
    """100 prompts over 8 data-parallel Megatron ranks: validate_megatron_batch_size raises."""
    plan = {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 2},
        "train": {**LAYOUT, "gpus": 8, "offload": {"phase": True, "frozen": True}},
    }
    path = _fixed(tmp_path, plan, prompts_per_step=100, minibatches_per_step=1)
    done = CliRunner().invoke(cli, ["export", str(path), "--framework", "roll"])
    assert done.exit_code == 1, done.output
    assert "constraint roll-megatron-rollout-batch-divides-data-parallel" in done.output
    assert "roll/configs/base_config.py L368-L382 at 8eb27cc2dc34" in done.output


@pytest.mark.parametrize(
    ("train", "constraint"),
    [
        # FSDP2 has no TP axis, and Megatron is ZeRO 0 or 1
        ({**LAYOUT, "tp": 2, "zero": 3}, "roll-fsdp2-no-tensor-or-pipeline-parallelism"),
        # Ulysses over 8 does not divide Qwen2.5-7B's 28 heads, and Megatron is ZeRO 0 or 1
        ({**LAYOUT, "cp": 8, "zero": 3}, "roll-fsdp2-ulysses-head-divisibility"),
    ],
)
def test_a_plan_roll_refuses_names_its_constraint(
    train: dict[str, Any], constraint: str, tmp_path: Path
) -> None:
    plan = {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 2},
        "train": {**train, "gpus": 8},
    }
    done = CliRunner().invoke(cli, ["export", str(_fixed(tmp_path, plan)), "--framework", "roll"])
    assert done.exit_code == 1, done.output
    assert f"by constraint {constraint}" in done.output


STREAMED = {"phase": True, "optimizer": 1.0, "params": True, "frozen": True}
"""The heavy offload the search falls back to (rules.search.HEAVY_OFFLOADS): phase offload
with a CPU optimizer and streamed parameters."""


def _fsdp2_plan(offload: dict[str, Any]) -> dict[str, Any]:
    return {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 2},
        "train": {**LAYOUT, "gpus": 8, "zero": 3, "offload": offload},
    }


def test_streamed_parameters_write_offload_policy_and_read_back(tmp_path: Path) -> None:
    """A plan that parks its state between phases and streams its parameters is FSDP2 with
    offload_policy (fsdp2_strategy.py L1027-L1043: CPUOffloadPolicy; L964-L967: Adam's states
    to the host; base_worker.py L72-L77: training loads the parameters only): the one key
    carries phase offload, the CPU optimizer and the streaming, and review reads all three."""
    path = _fixed(tmp_path, _fsdp2_plan(STREAMED))
    done = export_of(parse_scenario(read_mapping(path), str(path)))
    args = config(done)
    train = "actor_train.strategy_args."
    assert args[train + "strategy_name"] == "fsdp2_train"
    assert args[train + "strategy_config.offload_policy"] is True
    # a key FSDP2's strategy reads (fsdp2_strategy.py L1027, in the extract)
    assert annotation(train + "strategy_config.offload_policy", args) == "open"
    assert args[train + "strategy_config.reshard_after_forward"] is True  # ZeRO-3
    # one argument per key, named by the first of its facts (the streaming); the phase
    # offload is accounted for by its entry, or export would refuse it as below
    policy = [a for a in done.arguments if a.key.endswith(".offload_policy")]
    assert [(a.value, a.fact) for a in policy] == [(True, "plan.train.offload_params")]
    passes_rolls_checks(args)
    # read back as `rlmguide export` prints it (the model's id as MODEL_PATH's default)
    ran = CliRunner().invoke(cli, ["export", str(path), "--framework", "roll"])
    assert ran.exit_code == 0, ran.output
    launch = tmp_path / "run.yaml"
    launch.write_text(ran.output)
    got = review(launch, "roll", hardware=Hardware("h100-sxm-80gb"))
    assert got["mapping"] == MAPPING
    assert got["estimate"]["train"]["offload"] == STREAMED
    assert got["estimate"]["train"]["zero"] == 3


def test_phase_offload_without_streaming_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Without offload_policy ROLL's FSDP2 parks the weights alone and keeps Adam on the GPU
    (fsdp2_strategy.py L958-L963): the plan's phase offload has no key there."""
    path = _fixed(tmp_path, _fsdp2_plan({"phase": True, "frozen": True}))
    with pytest.raises(NotExpressible) as refused:
        export_of(parse_scenario(read_mapping(path), str(path)))
    why = str(refused.value)
    assert "no key for plan.train.offload_phase = true on pytorch-fsdp" in why
    assert "FSDP2's weights alone, Adam staying on the GPU (fsdp2_strategy.py L958-L963)" in why


def test_export_json_names_the_mapping_and_its_commit() -> None:
    done = CliRunner().invoke(
        cli, ["export", str(SMALL), "--framework", "roll", "--format", "json"]
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["mapping"] == MAPPING
    assert data["commit"] == "8eb27cc2dc34c4d1310b169d9b86d339004d811a"
    assert data["syntax"] == "yaml"
    assert data["entry_point_file"] == "examples/start_rlvr_pipeline.py"
    assert data["input_defaults"] == {"MODEL_PATH": "Qwen/Qwen2.5-7B"}


def test_the_mappings_defaults_are_rolls() -> None:
    """What review assumes for a key a launch leaves out is the dataclass default at the commit;
    a strategy_config key the strategy reads with .get(key, default) has that default (an
    engine's and Megatron's degrees 1, fsdp2_strategy.py L832 fsdp_size 1, vllm_strategy.py
    L110-L116), and FSDP2's reshard_after_forward None reshards every block (L1020-L1025)."""
    mapping = catalogs()[1][MAPPING]
    read_with_default = {
        "actor_infer.strategy_args.strategy_config.tensor_parallel_size": 1,
        "actor_infer.strategy_args.strategy_config.pipeline_parallel_size": 1,
        "actor_infer.strategy_args.strategy_config.enforce_eager": False,
        "actor_infer.strategy_args.strategy_config.enable_prefix_caching": True,
        "actor_train.strategy_args.strategy_config.fsdp_size": 1,
        "actor_train.strategy_args.strategy_config.reshard_after_forward": True,
        "actor_train.strategy_args.strategy_config.offload_policy": False,
        "actor_train.strategy_args.strategy_config.tensor_model_parallel_size": 1,
        "actor_train.strategy_args.strategy_config.pipeline_model_parallel_size": 1,
        "actor_train.strategy_args.strategy_config.context_parallel_size": 1,
        "actor_train.strategy_args.strategy_config.expert_model_parallel_size": 1,
        # FSDP2's expert mesh, read with .get(key, 1) (fsdp2_strategy.py L836-L837)
        "actor_train.strategy_args.strategy_config.ep_size": 1,
        "actor_train.strategy_args.strategy_config.efsdp_size": 1,
        "reference.strategy_args.strategy_config.ep_size": 1,
        "reference.strategy_args.strategy_config.efsdp_size": 1,
    }
    megatron = "strategy_config[megatron_train,megatron_infer]."
    for key, value in mapping.config_defaults.items():
        if key in read_with_default:
            assert value == read_with_default[key], key
        elif ".strategy_config." in key:
            name = key.rpartition(".")[2]
            assert str(value) == defaults()[megatron + name], key
        else:
            assert yaml.safe_load(defaults()[key].replace("None", "null")) == value, key


# -- the forward passes' micro-batch ----------------------------------------------------------

LONG = {
    "cluster": {"accelerator": "h200-sxm-141gb", "nodes": 4, "gpus_per_node": 8},
    "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 128, "samples_per_prompt": 16,
                 "prompt_tokens": 1024, "response_tokens": 12000, "max_response_tokens": 32768,
                 "minibatches_per_step": 8},
}  # fmt: skip
"""The launch audit's s02 (/work/notes/audit4/sc): 1,024 + 32,768 = 33,792 tokens a sequence."""


def test_log_prob_micro_batches_are_the_plans_and_review_costs_them(tmp_path: Path) -> None:
    """compute_log_probs takes a role's infer_batch_size as its micro-batch (roll/pipeline/
    base_worker.py L147), the strategy cuts the batch into chunks of that many samples
    (megatron_strategy.py L261-L266), each response padded to the whole sequence_length
    (utils/functionals.py L1225), 16 by default (roll/configs/worker_config.py L129). The plan
    costs a micro-batch of one 33,792-token sequence: export writes 1 for the old log-probs
    and the reference, and review reads it back as one sequence a forward pass and finds it
    fits; with the key left out (ROLL's 16) review costs 16 x 33,792 tokens a forward and the
    pool does not hold them."""
    done = export_of(parse_scenario(LONG, "s02"))
    assert done.plan["train"]["micro_batch_tokens"] == 33_792
    args = config(done)
    assert (args["actor_train.infer_batch_size"], args["reference.infer_batch_size"]) == (1, 1)
    assert defaults()["actor_train.infer_batch_size"] == "16"
    text = script(done, "s02", "policy")
    flags = ("--accelerator", "h200-sxm-141gb", "--nodes", "4", "--policy", "qwen3-30b-a3b")
    verdicts = {}
    for name, launch in (
        ("written", text),
        ("default", "\n".join(w for w in text.splitlines() if "infer_batch_size" not in w)),
    ):
        path = tmp_path / f"{name}.yaml"
        path.write_text(launch)
        plan = review_json(path, *flags)["estimate"]
        verdicts[name] = plan["train"]["forward_micro_batch_tokens"], plan["feasible"]
        if name == "default":
            over = plan["pool_overflow_gib"]["training"]
    assert verdicts == {"written": (33_792, True), "default": (16 * 33_792, False)}
    assert over > 0


# -- the training micro-batch -----------------------------------------------------------------


def _small(longest_response: int) -> dict[str, Any]:
    """The 7B example with its longest response (and its mean, half of it) set."""
    data: dict[str, Any] = yaml.safe_load(SMALL.read_text())
    data["workload"] |= {
        "max_response_tokens": longest_response,
        "response_tokens": longest_response // 2,
    }
    return data


@pytest.mark.parametrize(
    ("longest", "micro", "steps"),
    # 512 + 1,024 = 1,536 tokens a sequence: 7,447 // 1,536 = 4 of them, which divide a rank's
    # 32; 512 + 1,536 = 2,048: 3, which do not, so 2; 512 + 8,192 = 8,704: 1
    [(1024, 4, 8), (1536, 2, 16), (8192, 1, 32)],
)
def test_the_training_micro_batch_is_the_plans_in_sequences_that_divide_a_ranks_mini_batch(
    tmp_path: Path, longest: int, micro: int, steps: int
) -> None:
    """ROLL cuts a rank's mini-batch into micro-batches of per_device_train_batch_size samples
    and Megatron asserts their count is gradient_accumulation_steps (megatron_strategy.py
    L1286-L1292): export writes the most sequences up to the plan's budget that divide the
    rank's 1,024 / 8 / 4 = 32, the accumulation steps 32 over them, and review reads that
    micro-batch back (micro x the sequence) with the same 4 mini-batches."""
    done = export_of(parse_scenario(_small(longest), "small"))
    budget = done.plan["train"]["micro_batch_tokens"]
    sequence = 512 + longest
    assert max(1, budget // sequence) >= micro
    args = config(done)
    assert args["actor_train.training_args.per_device_train_batch_size"] == micro
    assert args["actor_train.training_args.gradient_accumulation_steps"] == steps
    path = tmp_path / "run.yaml"
    path.write_text(script(done, "small", "policy"))
    got = review_json(path, "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-7b")
    assert got["estimate"]["train"]["micro_batch_tokens"] == micro * sequence
    assert got["scenario"]["workload"]["minibatches_per_step"] == 4


def test_review_costs_rolls_own_training_micro_batch_where_the_launch_gives_none(
    tmp_path: Path,
) -> None:
    """per_device_train_batch_size defaults to 8 (roll/configs/training_args.py L44-L46): a
    launch of the 7B example that leaves it out and accumulates 4 steps trains micro-batches
    of 8 x 8,704 = 69,632 tokens, 8 x 4 = 32 samples an optimizer step of a rank's 128, so 4
    mini-batches; the 80 GB pool does not hold those activations. Given as 2 with 16 steps: 2 x
    8,704 tokens, 4 mini-batches still."""
    assert defaults()["actor_train.training_args.per_device_train_batch_size"] == "8"
    text = script(export_of(parse_scenario(_small(8192), "small")), "small", "policy")
    kept = [w for w in text.splitlines() if "per_device_train_batch_size" not in w]
    read = {}
    for name, micro, steps in (("default", None, 4), ("given", 2, 16)):
        lines = [
            w.replace("gradient_accumulation_steps: 32", f"gradient_accumulation_steps: {steps}")
            for w in kept
        ]
        if micro is not None:
            at = next(i for i, w in enumerate(lines) if "gradient_accumulation_steps" in w)
            indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
            lines.insert(at, f"{indent}per_device_train_batch_size: {micro}")
        path = tmp_path / f"{name}.yaml"
        path.write_text("\n".join(lines) + "\n")
        got = review_json(path, "--accelerator", "h100-sxm-80gb", "--policy", "qwen2.5-7b")
        plan = got["estimate"]
        read[name] = (
            plan["train"]["micro_batch_tokens"],
            got["scenario"]["workload"]["minibatches_per_step"],
            plan["feasible"],
        )
    assert read == {"default": (8 * 8704, 4, False), "given": (2 * 8704, 4, True)}


# -- the reference's expert layout ------------------------------------------------------------

MOE_TP = {
    "cluster": {"accelerator": "a100-sxm-80gb", "nodes": 2, "gpus_per_node": 8},
    "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
                 "prompt_tokens": 1024, "response_tokens": 4000, "max_response_tokens": 8192,
                 "minibatches_per_step": 2, "max_staleness": 1},
    "plan": {"execution": "async"},
}  # fmt: skip
"""The launch audit's a10 (/work/notes/audit6/sc): its best ROLL plan trains Qwen3-30B-A3B at TP 8,
EP 8 and expert TP 1 on 8 A100s, the reference laid out as the policy."""


def test_the_reference_splits_its_experts_as_the_actor() -> None:
    """The reference's megatron_infer cluster builds its own Megatron parallel state from its own
    strategy_config; an expert TP it leaves out is its TP (parallel_state.py L786-L787), so at TP 8
    and EP 8 its experts would need 64 ranks on its 8 GPUs and Megatron would stop (L792-L795).
    Export writes the actor's expert TP for the reference too."""
    done = export_of(parse_scenario(MOE_TP, "a10"))
    args = config(done)
    train, ref = (f"{r}.strategy_args.strategy_config." for r in ("actor_train", "reference"))
    layout = ("tensor_model_parallel_size", "expert_model_parallel_size")
    assert [args[train + k] for k in layout] == [args[ref + k] for k in layout] == [8, 8]
    assert args[train + "expert_tensor_parallel_size"] == 1
    assert args[ref + "expert_tensor_parallel_size"] == 1
    passes_rolls_checks(args)
    without = {k: v for k, v in args.items() if k != ref + "expert_tensor_parallel_size"}
    with pytest.raises(AssertionError, match="reference: 8 GPUs over ETP x EP x PP 64"):
        passes_rolls_checks(without)


def test_fsdp2_experts_split_over_ep_are_sharded_over_the_rest_and_read_back(
    tmp_path: Path,
) -> None:
    """A FSDP2 plan with ep 8 on 32 GPUs splits the experts over 8 ranks and shards each split
    over the other 32 / 8 = 4: ROLL's ep_size 8 with efsdp_size 4 (fsdp2_strategy.py L128-L143,
    L1056-L1060), for the actor and the reference alike; ROLL's default efsdp_size 1 would hold
    4 copies. Review reads the launch back as the same split, costed."""
    scenario = {
        "cluster": {"accelerator": "h100-sxm-80gb", "nodes": 4, "gpus_per_node": 8},
        "models": {"policy": "qwen3-30b-a3b", "reward": "verifier"},
        "workload": {**MOE_TP["workload"], "algorithm": "grpo"},
        "plan": {
            "placement": "colocated",
            "execution": "sync",
            "rollout": {"gpus": 32, "tp": 2},
            "train": {**LAYOUT, "gpus": 32, "ep": 8, "zero": 3},
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    args = config(export_of(parse_scenario(read_mapping(path), str(path))))
    for role in ("actor_train", "reference"):
        key = f"{role}.strategy_args.strategy_config."
        assert args[f"{role}.strategy_args.strategy_name"].startswith("fsdp2_")
        assert (args[key + "ep_size"], args[key + "efsdp_size"]) == (8, 4), role
        assert annotation(key + "efsdp_size", args) == "open"
    passes_rolls_checks(args)
    ran = CliRunner().invoke(cli, ["export", str(path), "--framework", "roll"])
    assert ran.exit_code == 0, ran.output
    launch = tmp_path / "run.yaml"
    launch.write_text(ran.output)
    got = review(launch, "roll", hardware=Hardware("h100-sxm-80gb"))
    assert (got["estimate"]["train"]["ep"], got["estimate"]["train"]["zero"]) == (8, 3)
    assert got["expert_sharding"] is None


# -- the model types mcore_adapter converts ---------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "megatron"),
    [("qwen3-30b-a3b", True), ("gpt-oss-20b", False), ("gemma-2-9b", False)],
)
def test_megatron_builds_only_the_model_types_mcore_adapter_converts(
    policy: str, megatron: bool
) -> None:
    """mcore_adapter looks the checkpoint's model_type up in its templates (model_config.py L181,
    converter/template.py L652-L653: a KeyError for an unregistered type); qwen3_moe has one,
    gpt_oss and gemma2 do not at 8eb27cc2. A plan only Megatron runs (TP 2: FSDP2 has no
    TP axis) exports for the first and is refused for the others (constraint
    roll-megatron-needs-an-mcore-adapter-template)."""
    data = {
        "cluster": {"accelerator": "h200-sxm-141gb", "nodes": 2, "gpus_per_node": 8},
        "models": {"policy": policy, "reward": "verifier"},
        "workload": {"algorithm": "grpo", "prompts_per_step": 64, "samples_per_prompt": 8,
                     "prompt_tokens": 1024, "response_tokens": 2048, "max_response_tokens": 4096,
                     "minibatches_per_step": 4},
        "plan": {"train": {"tp": 2, "zero": 1}},
    }  # fmt: skip
    if megatron:
        done = export_of(parse_scenario(data, policy))
        assert config(done)["actor_train.strategy_args.strategy_name"] == "megatron_train"
        return
    with pytest.raises(NotExpressible, match="cannot run this scenario"):
        export_of(parse_scenario(data, policy))
