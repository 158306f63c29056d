"""The Python API: scenarios in, typed results out; the `rlmguide` command is a thin layer
over it (parsing flags, printing, exit codes).

    from rlmguide import Scenario, recommend
    result = recommend(Scenario.from_yaml("examples/grpo-qwen2.5-7b-8xh100.yaml"))
    result.best.step_seconds, result.to_arrow()

Every function returns a pydantic model from `rlmguide.results` whose `model_dump()` is the
command's `--format json` output. Bad input raises `BadInput` (the command's exit 2), a request
that cannot be met `RequestFailed` (exit 1); both carry a one-line message.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import PrivateAttr

from rlmguide.errors import BadInput, RequestFailed, RlmguideError
from rlmguide.formats import non_finite, suggestion
from rlmguide.kb.paths import record_roots
from rlmguide.kb.schema import Scenario as ScenarioSchema
from rlmguide.results import Estimate, Launch, Recommendation, Review
from rlmguide.rules import RECOMMEND_KINDS

__all__ = [
    "BadInput",
    "RequestFailed",
    "RlmguideError",
    "Scenario",
    "connect",
    "estimate",
    "export",
    "recommend",
    "review",
]


def invalid_records(exc: Any) -> RequestFailed:
    """Records that do not validate, with the first ten problems."""
    shown = "\n".join(f"  {p}" for p in exc.problems[:10])
    more = len(exc.problems) - 10
    tail = f"\n  ... and {more} more" if more > 0 else ""
    return RequestFailed(f"{exc}; run `rlmguide validate`:\n{shown}{tail}")


def _invalid_rules(exc: Exception) -> RequestFailed:
    return RequestFailed(f"invalid rule or constraint records; run `rlmguide validate`: {exc}")


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    *parents, leaf = dotted.split(".")
    if not leaf or not all(parents):
        raise BadInput(f"--set {dotted}: a path is field names joined by dots: plan.train.tp")
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise BadInput(f"--set {dotted}: {part} is not a mapping")
        node = child
    node[leaf] = value


Changes = Mapping[str, Any] | Iterable[tuple[str, Any]] | None
"""Fields to set, by dotted path."""


class Scenario(ScenarioSchema):
    """A cluster, its models, a workload and (optionally) a partly fixed plan: the scenario
    file's fields (`rlmguide schema scenario`), checked against the supported ranges.

    Build one from keyword arguments (`Scenario(cluster={...}, models={...}, workload={...})`),
    a dict (`from_dict`), a YAML file (`from_yaml`) or a published deployment
    (`from_deployment`); `updated` sets fields by dotted path. Ids (models, accelerators,
    algorithms) are checked against the knowledge base when a function uses the scenario.
    """

    _origin: str = PrivateAttr(default="scenario")

    def __init__(self, /, **data: Any) -> None:
        from rlmguide.rules.scenario import InputError, parse_scenario

        try:
            parse_scenario(data, "Scenario")  # the one-line message and the ranges
        except InputError as exc:
            raise BadInput(str(exc)) from None
        super().__init__(**data)

    def __eq__(self, other: object) -> bool:
        """The same fields, wherever each scenario came from."""
        if not isinstance(other, ScenarioSchema):
            return NotImplemented
        return dict(self) == dict(other)

    __hash__ = ScenarioSchema.__hash__

    @property
    def origin(self) -> str:
        """Where the scenario came from (a file, a deployment), as messages name it."""
        return self._origin

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], changes: Changes = None, origin: str = "scenario"
    ) -> Scenario:
        """The scenario a mapping describes, with `changes` applied first (dotted paths:
        `{"plan.train.tp": 4}`, or (path, value) pairs applied in order); `origin` names it
        in error messages."""
        from rlmguide.rules.scenario import InputError, parse_scenario

        if not isinstance(data, Mapping):
            raise BadInput(f"{origin}: a scenario is a mapping with cluster, models and workload")
        data = copy.deepcopy(dict(data))
        pairs = changes.items() if isinstance(changes, Mapping) else changes or ()
        for dotted, value in pairs:
            _set(data, dotted, value)
        try:
            parsed = parse_scenario(data, origin)
        except InputError as exc:
            raise BadInput(str(exc)) from None
        # validated already: construct without a second validation
        scenario = cls.model_construct(parsed.model_fields_set, **dict(parsed))
        scenario._origin = origin
        return scenario

    @classmethod
    def from_yaml(cls, path: str | Path, changes: Changes = None) -> Scenario:
        """A scenario file (regular, UTF-8, at most 4 MiB), with `changes` applied."""
        from rlmguide.rules.scenario import InputError, read_mapping

        try:
            data = read_mapping(Path(path))
        except InputError as exc:
            raise BadInput(str(exc)) from None
        return cls.from_dict(data, changes, str(path))

    @classmethod
    def from_deployment(
        cls, deployment: str, plan: bool = True, changes: Changes = None
    ) -> Scenario:
        """A published deployment's scenario (`rlmguide list deployments`); `plan=False`
        drops its plan, to search one."""
        from rlmguide.kb.load import load_catalog

        records = load_catalog(record_roots(), ("deployment",)).of("deployment")
        if deployment not in records:
            raise BadInput(
                f"--deployment: unknown deployment {deployment!r}"
                + suggestion(deployment, sorted(records))
                + "; see `rlmguide list deployments`"
            )
        data = records[deployment].scenario.model_dump(mode="json", exclude_unset=True)
        if not plan:
            data.pop("plan", None)
        return cls.from_dict(data, changes, f"deployment {deployment}")

    def updated(self, changes: Changes) -> Scenario:
        """This scenario with fields set by dotted path: `{"cluster.nodes": 2}`."""
        data = self.model_dump(mode="json", exclude_unset=True)
        return type(self).from_dict(data, changes, self._origin)


def _as_scenario(scenario: Scenario | Mapping[str, Any] | str | Path) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, ScenarioSchema):
        return Scenario.from_dict(scenario.model_dump(mode="json", exclude_unset=True))
    if isinstance(scenario, str | Path):
        return Scenario.from_yaml(scenario)
    return Scenario.from_dict(scenario)


def _resolved(scenario: Scenario, mixed: bool = False) -> tuple[Any, Any]:
    """The scenario with its ids resolved, and the catalog a recommendation reads; with
    `mixed`, a mixed-accelerator cluster resolves part by part, else it is refused."""
    from rlmguide.kb.load import load_catalog
    from rlmguide.rules.scenario import InputError, resolve

    catalog = load_catalog(record_roots(), RECOMMEND_KINDS)
    try:
        if mixed and scenario.cluster.parts is not None:
            from rlmguide.rules.mixed import resolve_mixed

            return resolve_mixed(scenario, catalog), catalog
        return resolve(scenario, catalog.records), catalog
    except InputError as exc:
        raise BadInput(str(exc)) from None


def _check_framework(framework: str, catalog: Any) -> None:
    known = sorted(catalog.of("framework"))
    if framework not in known:
        raise BadInput(
            f"--framework: unknown framework {framework!r}" + suggestion(framework, known)
        )


def _finite(result: dict[str, Any]) -> dict[str, Any]:
    if where := non_finite(result):
        # the bounds on scenario numbers should make this unreachable; never return it as a plan
        raise BadInput(f"the scenario's numbers give a non-finite estimate at {where}")
    return result


@contextlib.contextmanager
def _failures() -> Iterator[None]:
    """The planner's failures as the API's errors, one line each."""
    from rlmguide.cost.plans import PlanError
    from rlmguide.rules.recommend import InvalidRecords, NoFeasiblePlan
    from rlmguide.rules.scenario import InputError
    from rlmguide.rules.sizing import SizingError

    try:
        yield
    except NoFeasiblePlan as exc:
        raise RequestFailed(f"no feasible plan: {exc}") from None
    except SizingError as exc:
        raise RequestFailed(str(exc)) from None
    except InvalidRecords as exc:
        raise _invalid_rules(exc) from None
    except (PlanError, InputError, OverflowError) as exc:
        raise BadInput(str(exc)) from None


def _recommender(resolved: Any, catalog: Any, **options: Any) -> Any:
    from rlmguide.rules.recommend import recommender_for

    with _failures():
        return recommender_for(resolved, catalog, **options)


def _launch_check(scenario: Scenario, catalog: Any) -> Any:
    """Export's own predicate (export.writer.Writer.refusal) over every framework's newest
    mapping: a plan's `launchable_by` lists a framework with a mapping only where its export
    writes the plan."""
    from rlmguide.export import MappingError
    from rlmguide.export.writer import launch_check

    try:
        return launch_check(catalog, scenario.workload.algorithm)
    except MappingError as exc:
        raise RequestFailed(f"invalid mapping record; run `rlmguide validate`: {exc}") from None


Objective = Literal["time", "cost"]


def recommend(
    scenario: Scenario | Mapping[str, Any] | str | Path,
    *,
    top: int = 3,
    framework: str | None = None,
    what_if: bool = False,
    include_research: bool = False,
    objective: Objective | None = None,
    max_nodes: int | None = None,
    deadline: float | None = None,
    budget: float | None = None,
    survey: bool = False,
) -> Recommendation:
    """Plans for the scenario, best first (`rlmguide recommend`).

    `framework` keeps the plans that framework runs; `what_if` adds what Table 9's
    configurations no framework runs would gain; `include_research` ranks the plans only
    research systems run too (by default they are what-ifs, `research_what_if`).
    `objective`, `max_nodes`, `deadline` (days) and `budget` search node counts too (the
    result's `sizing`). A mixed-accelerator cluster is searched on each part and across parts
    (the result's `mixed`). `survey` adds the survey's idealised work, depth and memory to
    every plan (`survey_model`).
    """
    from rlmguide.rules.recommend import recommend as run

    if not _whole(top) or not 1 <= top <= 100:
        raise BadInput(f"top: {top} is not between 1 and 100")
    sizing = {"objective": objective, "max_nodes": max_nodes, "deadline": deadline,
              "budget": budget}  # fmt: skip
    _check_sizing(sizing)
    scenario = _as_scenario(scenario)
    resolved, catalog = _resolved(scenario, mixed=True)
    if framework is not None:
        _check_framework(framework, catalog)
    if not isinstance(include_research, bool):
        raise BadInput(f"include_research: {include_research!r} is not true or false")
    options = {
        "only": framework,
        "research": include_research,
        "launch_check": _launch_check(scenario, catalog),
    }
    if not hasattr(resolved, "accelerator"):  # a mixed-accelerator cluster (rules.mixed)
        result = _mixed_search(resolved, catalog, top, options, sizing)
    elif any(v is not None for v in sizing.values()):
        result = _size_search(resolved, catalog, top, options, sizing)
    else:
        recommender = _recommender(resolved, catalog, **options)
        with _failures():
            result = run(recommender, top, what_if)
    if survey:
        _add_survey(result, resolved)
    return Recommendation.model_validate(_finite(result))


def _add_survey(result: dict[str, Any], resolved: Any) -> None:
    """The survey block on every plan, each judged by its own scenario (on a mixed cluster,
    the part or crossing of parts it runs on)."""
    from rlmguide.survey_report import add_survey_model

    if hasattr(resolved, "accelerator"):
        add_survey_model(result, resolved)
        return
    from rlmguide.rules.mixed import option_resolved

    def judged_by(plan: dict[str, Any]) -> Any:
        return option_resolved(resolved, plan["parts"]["rollout"], plan["parts"]["train"])

    add_survey_model(result, resolved, judged_by)


def _whole(value: Any) -> bool:
    """An int that is not a bool (a count is never True)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_sizing(sizing: Mapping[str, Any]) -> None:
    """The size search's arguments as the command's flags check them."""
    from rlmguide.kb.schema.bounds import BOUNDS

    most = int(BOUNDS["cluster.nodes"][1])
    if sizing["objective"] not in (None, "time", "cost"):
        raise BadInput(f"objective: {sizing['objective']!r} is not time or cost")
    nodes = sizing["max_nodes"]
    if nodes is not None and (not _whole(nodes) or not 1 <= nodes <= most):
        raise BadInput(f"--max-nodes: {nodes!r} is not a whole number between 1 and {most}")
    for name in ("deadline", "budget"):
        value = sizing[name]
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if value is not None and not (ok and 0 < value < float("inf")):
            raise BadInput(f"--{name}: {value!r} is not a positive number")


def _size_search(
    resolved: Any, catalog: Any, top: int, options: Mapping[str, Any], sizing: Mapping[str, Any]
) -> dict[str, Any]:
    """`recommend` over node counts (rules.sizing), after checking the arguments make sense."""
    from rlmguide.kb.schema.bounds import MAX_GPUS
    from rlmguide.rules.runcost import price, run_steps, run_terms
    from rlmguide.rules.sizing import Objective, recommend_sizes

    cluster = resolved.scenario.cluster
    max_nodes = sizing["max_nodes"] or cluster.nodes
    if max_nodes * cluster.gpus_per_node > MAX_GPUS:
        raise BadInput(
            f"--max-nodes {max_nodes}: {max_nodes} x {cluster.gpus_per_node} GPUs exceeds the "
            f"{MAX_GPUS:,} GPUs the search supports"
        )
    if sizing["deadline"] is not None and run_steps(resolved, run_terms(resolved)) is None:
        raise BadInput(
            "--deadline needs the run's length: set workload.steps (or trained_samples or "
            "trained_tokens)"
        )
    if sizing["budget"] is not None and price(resolved) is None:
        raise BadInput(
            f"--budget needs a price: {resolved.accelerator_id} has no public price in the "
            "knowledge base; set cluster.price_per_gpu_hour"
        )
    objective = Objective(sizing["objective"] or "time", sizing["deadline"], sizing["budget"])
    with _failures():
        return recommend_sizes(resolved, catalog, max_nodes, objective, top, **options)


def _mixed_search(
    mixed: Any, catalog: Any, top: int, options: Mapping[str, Any], sizing: Mapping[str, Any]
) -> dict[str, Any]:
    """`recommend` on every part of a mixed cluster and across parts (rules.mixed)."""
    from rlmguide.rules.mixed import check_mixed_flags, recommend_mixed
    from rlmguide.rules.scenario import InputError
    from rlmguide.rules.sizing import Objective

    try:
        check_mixed_flags(mixed, dict(sizing))
    except InputError as exc:
        raise BadInput(str(exc)) from None
    objective = Objective(sizing["objective"] or "time", sizing["deadline"], sizing["budget"])
    with _failures():
        return recommend_mixed(mixed, catalog, top, objective, **options)


ESTIMATE_REQUIRED = ("placement", "execution", "rollout.tp", "train.tp", "train.zero",
                     "train.recompute")  # fmt: skip
OFFLINE_REQUIRED = ("train.tp", "train.zero", "train.recompute")


def _get(plan: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        plan = getattr(plan, part)
    return plan


def estimate(
    scenario: Scenario | Mapping[str, Any] | str | Path,
    *,
    survey: bool = False,
    framework: str | None = None,
) -> Estimate:
    """The cost of exactly the plan the scenario fixes (`rlmguide estimate`): placement,
    execution and both layouts (the trainer's alone offline). A plan that does not fit is
    still returned, with `plan.feasible` False and `shortfall` saying why. `survey` adds the
    survey's idealised work, depth and memory (`survey_model` on the plan). `framework`
    costs the plan as that framework runs it, as `recommend --framework` does: its gradient
    buffers (fp32 on a Megatron backend), where it keeps frozen models, its engine's default
    concurrency and the cost constants it sets for itself; without one the plan is costed
    as written (bf16 gradients unless plan.train.fp32_gradients says otherwise)."""
    from rlmguide.rules.recommend import memory_shortfall
    from rlmguide.rules.recommend import recommend as run
    from rlmguide.rules.scenario import fill_plan_defaults

    resolved, catalog = _resolved(_as_scenario(scenario))
    if framework is not None:
        _check_framework(framework, catalog)
    plan = resolved.scenario.plan
    # Offline methods generate nothing: the trainer's layout is the whole plan.
    required = ESTIMATE_REQUIRED if resolved.algorithm.online else OFFLINE_REQUIRED
    missing = [f"plan.{name}" for name in required if _get(plan, name) is None]
    if plan.placement == "disaggregated":
        missing += [f"plan.{p}.gpus" for p in ("rollout", "train") if getattr(plan, p).gpus is None]
    if missing:
        raise BadInput(
            f"estimate needs a fixed plan; missing: {', '.join(missing)} "
            "(or use `rlmguide recommend` to search)"
        )
    unset = plan.train.offload is None
    resolved, chosen = fill_plan_defaults(resolved)
    recommender = _recommender(
        resolved, catalog, enforce_memory=False, filter_frameworks=False, costed_as=framework
    )
    with _failures():
        result = _finite(run(recommender, 1))
    result["chosen"] = chosen
    if framework is None and unset:
        result["notes"] += _parked_reference_note(resolved, catalog, result["plans"][0])
    result["costed_as"] = framework
    if survey:
        _add_survey(result, resolved)
    found = Estimate.model_validate(result)
    (plan_row,) = result["plans"]
    if not plan_row["feasible"]:
        found._shortfall = memory_shortfall(plan_row)
    return found


def _parked_reference_note(resolved: Any, catalog: Any, costed: dict[str, Any]) -> list[str]:
    """Why an estimate whose scenario leaves plan.train.offload out keeps the frozen models
    on the training GPUs while the planner does not always: the search also costs each plan
    with them parked on the host outside their passes (its parked twin, the only way NeMo-RL, ROLL,
    SkyRL and slime run it: their mappings imply offload_frozen), so the note gives that
    plan's memory and step beside this one's, costed alike."""
    from rlmguide.rules.recommend import frozen_roles, judges_of
    from rlmguide.rules.recommend import recommend as run

    train = resolved.scenario.plan.train
    if not frozen_roles(resolved) or resolved.scenario.plan.pools.reference:
        return []
    offload = train.offload.model_copy(update={"frozen": True})
    parked_plan = resolved.scenario.plan.model_copy(
        update={"train": train.model_copy(update={"offload": offload})}
    )
    parked = replace(resolved, scenario=resolved.scenario.model_copy(update={"plan": parked_plan}))
    recommender = _recommender(parked, catalog, enforce_memory=False, filter_frameworks=False)
    with _failures():
        (other,) = _finite(run(recommender, 1))["plans"]
    on_gpu = costed["memory_breakdown_gib"]["training"].get("frozen_models", 0.0)
    parkers = sorted(judges_of(catalog).frozen_on_host)
    peak = costed["memory_gib_per_gpu"]["train"]
    return [
        "plan.train.offload is not given: costed with none, the frozen models kept on the "
        f"training GPUs ({on_gpu:.1f} GiB a GPU at the peak, {peak:.1f} GiB in all, "
        f"{costed['step_seconds']:.1f} s a step). The planner also costs the plan "
        "with them parked on the host outside their assessment passes, the only way "
        f"{', '.join(parkers)} run it (their mappings' implied offload_frozen): "
        f"{other['memory_gib_per_gpu']['train']:.1f} GiB a training GPU, "
        f"{other['step_seconds']:.1f} s a step; plan.train.offload.frozen: true or "
        "--framework estimates that plan"
    ]


def export(
    scenario: Scenario | Mapping[str, Any] | str | Path,
    framework: str,
    *,
    version: str | None = None,
) -> Launch:
    """The scenario's plan (where it fixes one) or the best plan `framework` can run, as that
    framework's launch (`rlmguide export`): `script` is the bash script, `model_dump()` the
    keys, values and plan. `version` picks the mapping by id or commit (default the newest).
    A plan the framework cannot express raises RequestFailed naming what refuses it."""
    from rlmguide.export import MappingError, NotExpressible, UnknownVersion, build, script
    from rlmguide.kb.load import load_catalog

    scenario = _as_scenario(scenario)
    resolved, catalog = _resolved(scenario)
    _check_framework(framework, catalog)
    mappings = load_catalog(record_roots(), ("mapping",)).of("mapping")
    try:
        exported = build(resolved, catalog, mappings, framework, version)
    except UnknownVersion as exc:
        raise BadInput(str(exc)) from None
    except NotExpressible as exc:
        raise RequestFailed(f"cannot export to {framework}: {exc}") from None
    except MappingError as exc:
        raise RequestFailed(f"invalid mapping record; run `rlmguide validate`: {exc}") from None
    if defaults := _input_defaults(resolved, exported.inputs):
        exported = replace(exported, defaults=defaults)
    if note := _release_note(resolved, exported.inputs):
        exported = replace(exported, inputs={**exported.inputs, "MODEL_PATH": note})
    launch = Launch.model_validate(exported.as_json())
    # catalog models and inline ones both carry a name; the bare Architecture does not
    name = getattr(resolved.policy, "name", resolved.policy_id)
    launch._script = script(exported, scenario.origin, f"{name}, model record {resolved.policy_id}")
    return launch


def _input_defaults(resolved: Any, inputs: Mapping[str, str]) -> dict[str, str]:
    """The Hugging Face ids an exported script loads its models by when the user sets none:
    the policy's and a reward model record's (`kb.model_names.hf_id`), and the policy's FP8
    release for an FP8 rollout (its record's `fp8_checkpoint`)."""
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.model_names import hf_id

    named = load_catalog(record_roots(), ("model", "source"))
    models, sources = named.of("model"), named.of("source")
    reward = resolved.scenario.models.reward
    reward = getattr(reward, "model", reward)  # a reward given with its kind names its model
    found = {}
    for var, model in (("MODEL_PATH", resolved.policy_id), ("REWARD_MODEL_PATH", reward)):
        known = var in inputs and isinstance(model, str) and model in models
        if known and (value := hf_id(model, models, sources)) is not None:
            found[var] = value
    policy = models.get(resolved.policy_id)
    if "MODEL_PATH" in found and getattr(policy, "release_quantization", None):
        # a quantised release does not train: the bf16 copy, else the folder converting it
        # makes (named so that review still knows the model)
        folder = f"{found['MODEL_PATH'].rsplit('/', 1)[-1]}-bf16"
        found["MODEL_PATH"] = getattr(policy, "bf16_checkpoint", None) or folder
    if "FP8_MODEL_PATH" in inputs and getattr(policy, "fp8_checkpoint", None):
        found["FP8_MODEL_PATH"] = policy.fp8_checkpoint  # type: ignore[union-attr]
    return found


def _release_note(resolved: Any, inputs: Mapping[str, str]) -> str | None:
    """The policy path's description where the makers' release is quantised: why the default
    is a bf16 copy and how the framework's own documentation makes one."""
    from rlmguide.kb.load import load_catalog

    policy = load_catalog(record_roots(), ("model",)).of("model").get(resolved.policy_id)
    quantized = getattr(policy, "release_quantization", None)
    if "MODEL_PATH" not in inputs or not quantized:
        return None
    how = getattr(policy, "bf16_conversion", None)
    return (
        f"{inputs['MODEL_PATH']}, in bf16: the makers' release stores {quantized.upper()} "
        "weights, which the trainer cannot train as they are" + (f"; {how}" if how else "")
    )


def review(
    path: str | Path,
    *,
    framework: str | None = None,
    policy: str | None = None,
    accelerator: str | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    prompt_tokens: int | None = None,
) -> Review:
    """A launch script or NeMo-RL recipe read as its framework would, its plan costed and set
    beside the best plan the same framework runs (`rlmguide review`). The file's commands are
    never run. `accelerator` is needed (a launch never names it) unless an export's header
    does; `policy` where the model path matches no record and no export header names one
    (a flag wins over the header, said so); `prompt_tokens`, the mean prompt, in place of the
    launch's prompt cap or where the launch bounds prompt and response together."""
    from rlmguide.review import Hardware, NotCostable, ReviewError
    from rlmguide.review import review as run_review
    from rlmguide.rules.recommend import NoFeasiblePlan
    from rlmguide.rules.scenario import InputError

    for name, value in (("nodes", nodes), ("gpus-per-node", gpus_per_node),
                        ("prompt-tokens", prompt_tokens)):  # fmt: skip
        if value is not None and (not _whole(value) or value < 1):
            raise BadInput(f"--{name}: {value!r} is not a positive whole number")
    hardware = Hardware(accelerator, nodes, gpus_per_node, prompt_tokens)
    try:
        result = run_review(Path(path), framework, policy, hardware)
    except (ReviewError, InputError) as exc:
        # InputError: a value the launch sets that no scenario accepts, named by its field
        raise BadInput(str(exc)) from None
    except NoFeasiblePlan as exc:
        raise RequestFailed(f"no feasible plan: {exc}") from None
    except NotCostable as exc:
        raise RequestFailed(str(exc)) from None
    return Review.model_validate(_finite(result))


def connect() -> Any:
    """A read-only DuckDB connection to the knowledge base, locked as `rlmguide sql`'s is:
    no writes, files, network, extensions or settings, and bounded memory and threads.
    `rlmguide sql "SELECT * FROM duckdb_tables()"` lists what it holds."""
    from rlmguide.kb.db import InvalidRecords
    from rlmguide.knowledge import open_database

    try:
        return open_database()
    except InvalidRecords as exc:
        raise invalid_records(exc) from None
