"""Export to SkyRL (OmegaConf overrides over the SkyRLTrainConfig dataclasses at a9564572e).

The oracles are SkyRL's own: its config dataclasses, extracted key by key into
tests/fixtures/frameworks/skyrl-a956457-config-keys.tsv (every key written must be declared
there with a value of its type), and validate_cfg's cross-field checks, reproduced below from
their source lines. The deployments' plans were read by hand from SkyRL's example scripts."""

from __future__ import annotations

import ast
import json
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
from test_startup import _check

from rlmguide.cli import cli
from rlmguide.export import Exported, NotExpressible, build, script
from rlmguide.export.mapping import INPUTS
from rlmguide.review.config import hydra_config
from rlmguide.review.shell import command_arguments

FIXTURES = Path(__file__).parent / "fixtures" / "frameworks"

DEPLOYMENTS: dict[str, Deployment] = load_catalog(DEFAULT_ROOTS, ("deployment",)).of(  # type: ignore[assignment]
    "deployment"
)
SKYRL = sorted(d for d, r in DEPLOYMENTS.items() if r.framework == "skyrl")
SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
EXAMPLES = [
    p
    for p in sorted((REPO / "examples").glob("*.yaml"))
    if "parts" not in yaml.safe_load(p.read_text())["cluster"]
]


def export_of(scenario: Any) -> Exported:
    catalog, mappings = catalogs()
    return build(resolve(scenario, catalog.records), catalog, mappings, "skyrl")


@cache
def exported(record_id: str) -> Exported:
    return export_of(DEPLOYMENTS[record_id].scenario)


def small(**plan: Any) -> Any:
    scenario = parse_scenario(read_mapping(SMALL), str(SMALL))
    return scenario.model_copy(update={"plan": scenario.plan.model_copy(update=plan)})


def arguments(done: Exported) -> dict[str, Any]:
    """The exported script's overrides, as the shell reader expands them and OmegaConf's
    dotlist reads them (the user's inputs set to their own names)."""
    text = script(done, "test", "policy")
    module = done.launch.command.split()[-1]
    words, _ = command_arguments(text, module, {v: f"${{{v}}}" for v, _ in INPUTS.values()})
    return hydra_config(words)


# -- every key is SkyRL's ---------------------------------------------------------------------


@cache
def declared() -> dict[str, str]:
    """Dotted key -> annotation, from the extract of SkyRLTrainConfig at a9564572e."""
    rows = (FIXTURES / "skyrl-a956457-config-keys.tsv").read_text().splitlines()
    return {r.split("\t")[0]: r.split("\t")[1] for r in rows if not r.startswith("#")}


DAPO_KEYS = {
    # DAPOAlgorithmConfig (examples/train/algorithms/dapo/main_dapo.py L20-L25 at a9564572e),
    # the algorithm config of the DAPO entry points, which extend AlgorithmConfig by these two
    "trainer.algorithm.overlong_buffer_len": "int",
    "trainer.algorithm.overlong_buffer_penalty_factor": "float",
}


def annotation(key: str, entry_point: str) -> str | None:
    """The annotation a key is declared with, "open" under a Dict field (OmegaConf takes any
    key there: transformer_config_kwargs), or None."""
    keys = declared()
    if key in keys:
        return keys[key]
    if key in DAPO_KEYS and ".dapo." in entry_point:
        return DAPO_KEYS[key]
    parent = key.rsplit(".", 1)[0]
    while "." in parent:
        if keys.get(parent, "").startswith(("Dict", "dict")):
            return "open"
        parent = parent.rsplit(".", 1)[0]
    return None


def test_the_mappings_defaults_are_skyrls() -> None:
    """What review assumes for a key a launch leaves out is the dataclass default at the
    commit (the extract's third column); the open Megatron dicts' defaults are
    DEFAULT_TRANSFORMER_CONFIG_KWARGS and DEFAULT_MEGATRON_OPTIMIZER_KWARGS (config.py
    L418-L431)."""
    _, mappings = catalogs()
    mapping = mappings["skyrl-0.4.0-516-ga9564572e"]
    rows = (FIXTURES / "skyrl-a956457-config-keys.tsv").read_text().splitlines()
    defaults = {r.split("\t")[0]: r.split("\t")[2] for r in rows if not r.startswith("#")}
    kwargs = {
        "trainer.policy.megatron_config.transformer_config_kwargs.recompute_granularity": "full",
        "trainer.policy.megatron_config.optimizer_config_kwargs.optimizer_cpu_offload": False,
    }
    for key, value in mapping.config_defaults.items():
        if key in kwargs:
            assert value == kwargs[key], key
        else:
            assert ast.literal_eval(defaults[key]) == value, key  # the source's Python literal


def members(declared_as: str) -> set[str]:
    """The types an annotation admits: `Optional[X]` and `Union[X, Y]` opened, generics by
    their outer name (`List[str]` -> List)."""
    text = declared_as.strip()
    for wrapper in ("Optional[", "Union["):
        if text.startswith(wrapper) and text.endswith("]"):
            inner, depth, parts, part = text[len(wrapper) : -1], 0, [], ""
            for ch in inner:
                depth += (ch == "[") - (ch == "]")
                if ch == "," and depth == 0:
                    parts.append(part)
                    part = ""
                else:
                    part += ch
            found = {m for p in (*parts, part) for m in members(p)}
            return found | ({"None"} if wrapper == "Optional[" else set())
    return {text.split("[", 1)[0].lower()}


def of_type(value: Any, declared_as: str) -> bool:
    if declared_as == "open":
        return True
    admits = members(declared_as)
    if value is None:
        return "None" in admits
    if isinstance(value, bool):
        return "bool" in admits
    if isinstance(value, int):
        return bool({"int", "float"} & admits)
    if isinstance(value, float):
        return "float" in admits
    if isinstance(value, list):
        return "list" in admits
    return bool({"str", "literal"} & admits)


def test_the_key_extract_has_skyrls_fields() -> None:
    keys = declared()
    assert keys["trainer.placement.colocate_all"] == "bool"
    assert keys["generator.inference_engine.num_engines"] == "int"
    assert keys["trainer.policy.megatron_config.transformer_config_kwargs"].startswith("Dict")
    assert "trainer.algorithm.overlong_buffer_len" not in keys  # the DAPO trainer's own
    assert annotation("trainer.policy.megatron_config.transformer_config_kwargs.x", "m") == "open"
    assert annotation("trainer.no_such_key", "m") is None
    assert not of_type("8", "int") and of_type(8, "Optional[int]")
    assert of_type(None, "Optional[int]") and not of_type(None, "int")
    assert of_type(True, "Union[bool, int]") and not of_type(None, "Union[bool, int]")
    assert of_type(["a"], "List[str]") and not of_type(1.5, "Dict[str, Any]")


def _cases() -> list[Any]:
    found: list[Any] = [pytest.param(("deployment", d), id=d) for d in SKYRL]
    for example in EXAMPLES:
        found.append(pytest.param(("example", str(example)), id=example.stem))
    return found


REFUSED = {
    "dpo-qwen2.5-7b-8xh100": "does not claim DPO",
    "grpo-qwen2.5-7b-llm-judge-16xh100": "has no key for plan.pools.reward",
    "ppo-llama-3.1-70b-1024xh100": "has no key for workload.reward_model",
    "ppo-qwen2.5-7b-shared-critic-fused-16xh100": "does not claim shared-actor-critic",
}
"""The bundled examples export refuses for SkyRL, each with what its one-line error names: a
refusal not listed here, or a listed example that now exports, fails the tests."""


def _exported(case: tuple[str, str]) -> Exported | None:
    """The export of a case, or None where it is refused for the reason `REFUSED` gives."""
    kind, name = case
    if kind == "deployment":
        return exported(name)
    stem = Path(name).stem
    try:
        done = export_of(parse_scenario(read_mapping(Path(name)), name))
    except NotExpressible as refused:
        assert stem in REFUSED, f"{stem} is refused: {refused}"
        assert REFUSED[stem] in str(refused)
        return None
    assert stem not in REFUSED, f"{stem} now exports: take it out of REFUSED"
    return done


@pytest.mark.parametrize("case", _cases())
def test_every_key_exists_in_skyrls_config_with_its_type(case: tuple[str, str]) -> None:
    done = _exported(case)
    if done is None:
        return  # refused as REFUSED says (checked in _exported)
    entry_point = done.launch.command.split()[-1]
    # OmegaConf's from_cli takes no `+` (SkyRLTrainConfig.from_cli_overrides, config.py L1787)
    assert not [a.key for a in done.arguments if a.key.startswith("+")]
    for key, value in arguments(done).items():
        declared_as = annotation(key, entry_point)
        assert declared_as is not None, f"{key} is not a key of SkyRLTrainConfig"
        if (isinstance(value, str) and "${" in value) or key.startswith("data."):
            continue  # the user's inputs
        assert of_type(value, declared_as), (key, value, declared_as)


# -- SkyRL's own checks -----------------------------------------------------------------------


def passes_skyrls_checks(args: dict[str, Any], entry_point: str) -> None:
    """validate_cfg's placement, batch and engine checks (skyrl/train/utils/utils.py at
    a9564572e) and the asynchronous trainers' assertion, each from its source line."""
    place, engine = "trainer.placement.", "generator.inference_engine."
    world = args[place + "policy_num_nodes"] * args[place + "policy_num_gpus_per_node"]
    tp = args.get(engine + "tensor_parallel_size", 1)
    dp = args.get(engine + "data_parallel_size", 1)
    pp = args.get(engine + "pipeline_parallel_size", 1)
    engines = args[engine + "num_engines"] * tp * dp * pp
    colocated = args.get(place + "colocate_all", True)  # config.py L586: on by default
    if colocated:  # L455-L465
        assert world == engines, f"policy GPUs {world} != engine GPUs {engines}"
    megatron = args.get("trainer.strategy") == "megatron"
    if megatron:  # L84-L92: the world divides by PP x CP x TP
        m = "trainer.policy.megatron_config."
        model = (
            args.get(m + "pipeline_model_parallel_size", 1)
            * args.get(m + "context_parallel_size", 1)
            * args.get(m + "tensor_model_parallel_size", 1)
        )
        assert world % model == 0, f"world {world} over PP x CP x TP {model}"
        dp_size = world // model
        assert not args.get("trainer.critic.model.path"), "no critic on Megatron (L194-L202)"
    else:
        dp_size = world // args.get("trainer.policy.sequence_parallel_size", 1)
    prompts, mini = args["trainer.train_batch_size"], args["trainer.policy_mini_batch_size"]
    samples = args["generator.n_samples_per_prompt"]
    assert prompts % mini == 0, "train batch over mini-batch (L95-L98)"
    per_gpu = mini * samples // dp_size
    assert per_gpu > 0, "a mini-batch leaves no sample for a rank (L102-L110)"
    assert (prompts * samples // dp_size) % per_gpu == 0, "per-rank batches (L122-L129)"
    kl = "trainer.algorithm."
    in_reward, in_loss = (
        args.get(kl + "use_kl_in_reward", False),
        args.get(kl + "use_kl_loss", True),
    )
    assert not (in_reward and in_loss), "KL in the reward and in the loss at once (L312-L314)"
    # validate_generator_cfg L489-L497: the input cap, unset the prompt cap (config.py L1731-L1733)
    prompt_cap = args.get("trainer.max_prompt_length", 512)
    input_cap = args.get("generator.max_input_length", prompt_cap)
    if args.get("generator.max_turns", 1) == 1:
        assert input_cap == prompt_cap, "max_input_length != max_prompt_length for one turn"
    else:
        assert input_cap >= prompt_cap, "max_input_length below max_prompt_length"
    if (ep := args.get(engine + "expert_parallel_size", 1)) > 1:  # L552-L561
        assert dp * tp == ep, f"engine EP {ep} != DP x TP {dp * tp}"
    if "async" in entry_point:  # fully_async_trainer.py L388-L392, async_trainer.py L25
        assert not colocated, "the asynchronous trainers refuse colocate_all"
    if args.get("trainer.fully_async.enabled"):  # fully_async_trainer.py L353-L363
        workers = args.get("trainer.fully_async.num_parallel_generation_workers", 768)
        staleness = args.get("trainer.fully_async.max_staleness_steps", 4)
        assert mini <= workers <= mini * (staleness + 1), "Invalid num_parallel_generation_workers"
        # L377-L379
        assert prompts == mini, "train_batch_size must equal policy_mini_batch_size"
        # L393-L404 over ppo_utils.py L464-L476 (config.py L853: regular by default)
        loss = args.get(kl + "policy_loss_type", "regular")
        anchored = loss == "cispo" and args.get(kl + "cispo.cispo_anchor") == "rollout"
        assert anchored or loss not in OLD_LOGPROB_LOSSES, f"{loss} needs old log-probs"


OLD_LOGPROB_LOSSES = {"regular", "dual_clip", "gspo", "cispo", "clip_cov", "kl_cov", "sapo",
                      "cross_entropy", "importance_sampling"}  # fmt: skip
"""LOSSES_WITH_OLD_LOGPROBS (skyrl/backends/skyrl_train/utils/ppo_utils.py L464-L476 at
a9564572e): the losses the fully asynchronous trainer refuses."""


@pytest.mark.parametrize("case", _cases())
def test_exported_launches_pass_skyrls_checks(case: tuple[str, str]) -> None:
    done = _exported(case)
    if done is None:
        return  # refused as REFUSED says (checked in _exported)
    passes_skyrls_checks(arguments(done), done.launch.command.split()[-1])


def test_skyrls_checks_can_fail() -> None:
    args = arguments(exported("skyrl-qwen2.5-1.5b-grpo-gsm8k-4xh100"))
    entry_point = "skyrl.train.entrypoints.main_base"
    passes_skyrls_checks(args, entry_point)
    for change, reason in (
        ({"generator.inference_engine.num_engines": 2}, "policy GPUs 4 != engine GPUs 2"),
        ({"trainer.policy_mini_batch_size": 300}, "train batch over mini-batch"),
        ({"generator.inference_engine.expert_parallel_size": 4}, "engine EP 4"),
        ({"trainer.algorithm.use_kl_in_reward": True}, "KL in the reward and in the loss"),
    ):
        with pytest.raises(AssertionError, match=reason):
            passes_skyrls_checks({**args, **change}, entry_point)
    with pytest.raises(AssertionError, match="refuse colocate_all"):
        passes_skyrls_checks(args, "examples.train.fully_async.main_fully_async")


def test_the_fully_async_default_generation_workers_fail_skyrls_assert() -> None:
    """Without the key, the 768 workers of config.py L954 fail FullyAsyncRayPPOTrainer's
    assert below 768 / (staleness + 1) prompts per mini-batch (fully_async_trainer.py
    L353-L363)."""
    args = {
        **arguments(exported("skyrl-qwen2.5-1.5b-grpo-gsm8k-4xh100")),
        "trainer.placement.colocate_all": False,
        "trainer.fully_async.enabled": True,
        "trainer.fully_async.max_staleness_steps": 1,
    }
    args.pop("trainer.fully_async.num_parallel_generation_workers", None)
    with pytest.raises(AssertionError, match="num_parallel_generation_workers"):
        passes_skyrls_checks(args, "examples.train.fully_async.main_fully_async")


# -- by hand ----------------------------------------------------------------------------------


ASYNC_235B = {
    "cluster": {"accelerator": "h200-sxm-141gb", "nodes": 16, "gpus_per_node": 8},
    "models": {"policy": "qwen3-235b-a22b", "reward": "verifier"},
    "workload": {"algorithm": "grpo", "prompts_per_step": 256, "samples_per_prompt": 16,
                 "prompt_tokens": 1024, "response_tokens": 8192, "max_response_tokens": 32768,
                 "minibatches_per_step": 1, "epochs": 1, "max_staleness": 1},
}  # fmt: skip
"""The launch audit's a16 (/work/notes/audit) at one mini-batch a step, the only batching
SkyRL's fully async trainer runs (fully_async_trainer.py L377-L379): one step of staleness."""


def async_235b(**workload: Any) -> Any:
    """ASYNC_235B with its workload changed and its execution fixed to async."""
    data = {**ASYNC_235B, "workload": {**ASYNC_235B["workload"], **workload}}
    return parse_scenario({**data, "plan": {"execution": "async"}}, "a16")


@cache
def async_grpo() -> Exported:
    return export_of(parse_scenario(ASYNC_235B, "a16"))


def test_fully_async_writes_the_generation_workers_the_plan_runs() -> None:
    """The plan's engines run 8 x 341 sequences at once, 2728 / 16 = 170.5 prompt groups,
    fewer than one mini-batch's 256: the trainer asks at least 256 and at most 256 x (1 + 1)
    (fully_async_trainer.py L353-L363), so 256 workers, where the default 768 failed the assert
    at start-up."""
    done = async_grpo()
    args = arguments(done)
    assert done.launch.command.endswith("examples.train.fully_async.main_fully_async")
    assert args["trainer.train_batch_size"] == args["trainer.policy_mini_batch_size"] == 256
    assert args["trainer.fully_async.max_staleness_steps"] == 1
    engines = args["generator.inference_engine.num_engines"]
    seqs = args["generator.inference_engine.max_num_seqs"]
    assert (engines, seqs) == (8, 341)
    assert args["trainer.fully_async.num_parallel_generation_workers"] == 256
    passes_skyrls_checks(args, done.launch.command.split()[-1])


def test_fully_async_grpo_trains_with_the_rollout_anchored_loss() -> None:
    """Audit4 defect 1: the default loss (regular, config.py L853) is in LOSSES_WITH_OLD_LOGPROBS
    and stops the fully async trainer (L393-L404). GRPO is written with rollout_is, as SkyRL's
    fully_async_run_gsm8k.sh L43 runs it, and the script says it departs."""
    done = async_grpo()
    assert arguments(done)["trainer.algorithm.policy_loss_type"] == "rollout_is"
    assert any("policy_loss_type=rollout_is" in d for d in done.departures)
    assert "rollout_is" in script(done, "test", "policy").split("set -euo")[0]
    with pytest.raises(AssertionError, match="regular needs old log-probs"):
        args = {**arguments(done)}
        args.pop("trainer.algorithm.policy_loss_type")
        passes_skyrls_checks(args, done.launch.command.split()[-1])


def test_fully_async_cispo_anchors_its_ratio_on_the_rollout() -> None:
    """CISPO passes the fully async trainer's loss check only with cispo_anchor=rollout
    (fully_async_trainer.py L395-L396; the default is old, config.py L761)."""
    done = export_of(async_235b(algorithm="cispo"))
    args = arguments(done)
    assert args["trainer.algorithm.policy_loss_type"] == "cispo"
    assert args["trainer.algorithm.cispo.cispo_anchor"] == "rollout"
    assert any("cispo_anchor=rollout" in d for d in done.departures)
    passes_skyrls_checks(args, done.launch.command.split()[-1])


@pytest.mark.parametrize(
    ("workload", "constraint"),
    [
        # audit4's s09: 256 prompts in 4 mini-batches, train_batch_size 256 over 64 (L377-L379)
        ({"minibatches_per_step": 4}, "skyrl-fully-async-one-mini-batch-per-step"),
        # audit4's s14: GSPO's sequence clip is against the old policy (L393-L404)
        ({"algorithm": "gspo"}, "skyrl-fully-async-loss-against-rollout-log-probs"),
    ],
)
def test_fully_async_refusals_name_their_constraint(
    workload: dict[str, Any], constraint: str
) -> None:
    with pytest.raises(NotExpressible, match=rf"\(constraint {constraint}\)"):
        export_of(async_235b(**workload))


def test_the_fully_async_constraints_by_hand() -> None:
    """One optimizer step a training step, and no loss against recomputed old log-probs:
    PPO's clip, GSPO and SAPO are refused asynchronously, the other modes are not judged."""
    compiled = {c.id: c for c in compile_constraints(catalogs()[0])[0]}
    steps = compiled["skyrl-fully-async-one-mini-batch-per-step"]
    loss = compiled["skyrl-fully-async-loss-against-rollout-log-probs"]
    cases = (("async", 1, True), ("async", 4, False), ("one-step-off", 4, True), ("sync", 4, True))
    for execution, minibatches, holds in cases:
        facts = {"plan.execution": execution, "workload.minibatches_per_step": minibatches}
        assert bool(steps.holds(facts, 1)[0]) is holds
    for algorithm, holds in (("grpo", True), ("dapo", True), ("cispo", True), ("ppo", False),
                             ("gspo", False), ("sapo", False)):  # fmt: skip
        for execution in ("async", "sync"):  # holds() caches its comparisons in the facts
            facts = {"plan.execution": execution, "workload.algorithm": algorithm}
            assert bool(loss.holds(facts, 1)[0]) is (holds or execution == "sync")


def test_review_flags_a_fully_async_launch_at_the_default_workers(tmp_path: Path) -> None:
    """Constraint skyrl-fully-async-generation-workers-in-range: review of the export passes;
    the same launch without the key runs the default 768 and trips it. By hand, 256 to 512
    workers pass at 256 prompts per mini-batch and one step of staleness."""
    text = script(async_grpo(), "test", "qwen3-235b-a22b")
    path = tmp_path / "launch.sh"

    def startup(launch: str) -> list[str]:
        path.write_text(launch)
        given = ("--framework", "skyrl", "--accelerator", "h200-sxm-141gb", "--policy",
                 "qwen3-235b-a22b")  # fmt: skip
        return [c["constraint"] for c in review_json(path, *given)["startup"]]

    assert startup(text) == []
    without = [line for line in text.splitlines() if "num_parallel_generation_workers" not in line]
    assert startup("\n".join(without) + "\n") == ["skyrl-fully-async-generation-workers-in-range"]
    check = _check("skyrl-fully-async-generation-workers-in-range")
    facts = {"plan.execution": "async", "plan.max_staleness": 1, "workload.prompts_per_step": 256,
             "workload.minibatches_per_step": 1}  # fmt: skip
    for workers, holds in ((768, False), (513, False), (512, True), (256, True), (255, False)):
        assert bool(check.holds({**facts, "launch.generation_groups": workers}, 1)[0]) is holds


# -- by hand ----------------------------------------------------------------------------------


def test_the_30b_megatron_dapo_recipe_by_hand() -> None:
    """examples/train/algorithms/dapo/run_dapo_qwen3_30b_a3b_megatron_aime.sh at a9564572e:
    2 nodes x 8, two engines of TP 8, Megatron TP 4 PP 1 CP 1 EP 8 ETP 1, 512 prompts x 16 in
    mini-batches of 32, 2k prompts, 8k responses, eager vLLM, no KL loss, clip-higher 0.28."""
    done = exported("skyrl-qwen3-30b-a3b-dapo-megatron-16xh100")
    assert done.launch.command == (
        "uv run --isolated --extra megatron -m examples.train.algorithms.dapo.main_dapo"
    )
    args = arguments(done)
    expected = {
        "trainer.placement.colocate_all": True,
        "trainer.placement.policy_num_nodes": 2,
        "trainer.placement.policy_num_gpus_per_node": 8,
        "generator.inference_engine.num_engines": 2,
        "generator.inference_engine.tensor_parallel_size": 8,
        "trainer.strategy": "megatron",
        "trainer.policy.megatron_config.tensor_model_parallel_size": 4,
        "trainer.policy.megatron_config.pipeline_model_parallel_size": 1,
        "trainer.policy.megatron_config.context_parallel_size": 1,
        "trainer.policy.megatron_config.expert_model_parallel_size": 8,
        "trainer.policy.megatron_config.expert_tensor_parallel_size": 1,
        "trainer.train_batch_size": 512,
        "trainer.policy_mini_batch_size": 32,
        "generator.n_samples_per_prompt": 16,
        "trainer.max_prompt_length": 2048,
        "generator.sampling_params.max_generate_length": 8192,
        "generator.inference_engine.enforce_eager": True,
        "trainer.algorithm.use_kl_loss": False,
        "trainer.algorithm.use_kl_in_reward": False,
        "trainer.algorithm.eps_clip_high": 0.28,
        "trainer.algorithm.loss_reduction": "token_mean",
        "trainer.algorithm.dynamic_sampling.type": "filter",
        # the DAPO trainer's soft overlong punishment over the last fifth of the 8k limit
        "trainer.algorithm.overlong_buffer_len": 8192 // 5,
    }
    assert {k: args.get(k) for k in expected} == expected


def test_the_data_files_are_lists_that_keep_the_users_path() -> None:
    """data.train_data is List[str] (config.py L76): the script writes a one-file list whose
    path the shell expands (double quotes), and ENV_CLASS names the SkyRL-Gym environment."""
    record = "skyrl-qwen2.5-1.5b-grpo-gsm8k-4xh100"
    done = CliRunner().invoke(cli, ["export", "--deployment", record, "--framework", "skyrl"])
    assert done.exit_code == 0, done.output
    text = done.output
    assert '    "data.train_data=[${TRAIN_DATA}]" \\' in text
    assert ': "${ENV_CLASS:?set ENV_CLASS to the environment' in text
    # the policy has a Hugging Face id, so the script runs without MODEL_PATH set
    assert 'MODEL_PATH="${MODEL_PATH:-Qwen/Qwen2.5-1.5B-Instruct}"' in text


# -- refusals name the constraint -------------------------------------------------------------


def test_one_step_off_on_shared_gpus_is_refused() -> None:
    """Constraint skyrl-async-not-colocated: the asynchronous trainers assert colocate_all is
    off, and the mapping has no colocated launch for them."""
    with pytest.raises(NotExpressible, match=r"one-step-off.*constraint skyrl-async-not-colocated"):
        export_of(small(execution="one-step-off", placement="colocated"))


LAYOUT = {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 3, "recompute": "full"}
"""A colocated sync FSDP layout on the 8 GPUs; each case below changes one thing."""


@pytest.mark.parametrize(
    ("change", "constraint"),
    [
        # colocate_all needs the engines to fill exactly the policy's GPUs (validate_cfg)
        ({"rollout": {"gpus": 4, "tp": 1}}, "skyrl-colocate-all-equal-pools"),
        # FSDP's only split is Ulysses: tensor parallelism needs Megatron, which is ZeRO-1
        ({"train": {**LAYOUT, "gpus": 8, "tp": 2}}, "skyrl-fsdp-no-model-parallelism"),
        ({"train": {**LAYOUT, "gpus": 8, "recompute": "selective"}}, "skyrl-fsdp-recompute-whole"),
    ],
)
def test_a_plan_skyrl_refuses_names_its_constraint(
    change: dict[str, Any], constraint: str, tmp_path: Path
) -> None:
    scenario = yaml.safe_load(SMALL.read_text())
    scenario["plan"] = {
        "placement": "colocated",
        "execution": "sync",
        "rollout": {"gpus": 8, "tp": 1},
        "train": {**LAYOUT, "gpus": 8},
        **change,
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    done = CliRunner().invoke(cli, ["export", str(path), "--framework", "skyrl"])
    assert done.exit_code == 1, done.output
    assert f"by constraint {constraint}" in done.output


def test_export_json_names_the_mapping_and_its_commit() -> None:
    done = CliRunner().invoke(
        cli, ["export", str(SMALL), "--framework", "skyrl", "--format", "json"]
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["mapping"] == "skyrl-0.4.0-516-ga9564572e"
    assert data["commit"] == "a9564572eb8e91076be43c1bd5e4615e3de17265"
    assert data["entry_point_file"] == "skyrl/train/entrypoints/main_base.py"
    assert data["input_defaults"] == {"MODEL_PATH": "Qwen/Qwen2.5-7B"}


@pytest.mark.parametrize(
    ("algorithm", "execution", "actor_pass"),
    [
        # rollout_is, no KL in the reward: _skip_policy_forward holds (trainer.py L1279-L1303)
        ("grpo", "async", False),
        # CISPO anchored on the rollout log-probs, likewise (L1293-L1296)
        ("cispo", "async", False),
        # RLOO's KL sits in the reward (use_kl_in_reward): the forward runs (L1302)
        ("rloo", "async", True),
        # the synchronous trainer's regular loss reads the old log-probs
        ("grpo", "sync", True),
    ],
)
def test_the_old_log_prob_pass_is_costed_only_where_skyrl_runs_it(
    algorithm: str, execution: str, actor_pass: bool
) -> None:
    """SkyRL's trainer skips the policy's old-log-prob forward (fwd_logprobs_values_reward,
    trainer.py L1360-L1368 at a9564572) when the loss reads only the rollout engine's log-probs,
    no KL penalty is in the reward and no off-policy correction is on: the fully asynchronous
    launches of the critic-free algorithms. The assessment then runs the reference alone."""
    data = yaml.safe_load(SMALL.read_text())
    data["workload"] |= {"algorithm": algorithm, "minibatches_per_step": 1}
    data["plan"] = {"placement": "disaggregated", "execution": execution}
    done = export_of(parse_scenario(data, "small"))
    parts = done.plan["assessment_seconds_by_model"]
    assert ("actor" in parts) is actor_pass, parts
    stage = next(s for s in done.plan["stages"] if s["name"] == "assessment")
    assert stage["seconds"] == pytest.approx(sum(parts.values()))
