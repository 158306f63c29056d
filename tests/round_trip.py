"""Export then review, for every framework with a mapping: each bundled example (the best plan
the framework runs) and each of the framework's deployment records (its own plan). The script
export writes is read back with nothing set but the accelerator (no environment variable, no
--policy, no --nodes) and must give the same plan and workload. Shared by
tests/test_round_trip.py and bench/bench_round_trip.py."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots

from rlmguide import api
from rlmguide.errors import RlmguideError
from rlmguide.review import Hardware, NotCostable, ReviewError, review

REPO = Path(__file__).parent.parent
MAPPED = ("verl", "openrlhf", "nemo-rl", "slime", "skyrl", "areal", "roll")
OLDER = {"verl": ("0.7.0-125-gb178a3cd5",), "areal": ("1.0.4-17-g4aef98d8d",)}
"""Mappings besides the framework's newest whose launches are also read back (review picks a
mapping by the keys a launch uses, which must find the one it was written with)."""
WORKLOAD = (
    "algorithm",
    "prompts_per_step",
    "samples_per_prompt",
    "prompt_tokens",
    "max_response_tokens",
    "minibatches_per_step",
    "epochs",
    "reasoning_budget",
)
BUDGET = 4096
"""A reasoning budget given to the small example for one more case per framework: the launch
writes it as its response cap, and the lengths it cuts in its header (export.render.budget_line)."""
SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"


@dataclass(frozen=True)
class Case:
    name: str
    framework: str
    example: Path | None = None
    deployment: str | None = None
    version: str | None = None
    """The framework's mapping (None: its newest)."""
    budget: int | None = None
    """A workload.reasoning_budget given to the example."""

    def scenario(self) -> Any:
        if self.example is not None:
            origin = str(self.example.relative_to(REPO))
            return api.Scenario.from_dict(self.stated(), origin=origin)
        return api.Scenario.from_deployment(self.deployment, True, [])  # type: ignore[arg-type]

    def stated(self) -> dict[str, Any]:
        """The scenario as written: its accelerator and workload."""
        if self.example is not None:
            data = yaml.safe_load(self.example.read_text())
            if self.budget is not None:
                data["workload"]["reasoning_budget"] = self.budget
            return data  # type: ignore[no-any-return]
        records = load_catalog(record_roots(), ("deployment",)).of("deployment")
        return records[self.deployment].scenario.model_dump(mode="json")


def cases() -> list[Case]:
    found = [
        Case(f"{example.stem}-{framework}", framework, example=example)
        for example in sorted((REPO / "examples").glob("*.yaml"))
        if "parts" not in yaml.safe_load(example.read_text())["cluster"]
        for framework in MAPPED
    ]
    found += [
        Case(f"{SMALL.stem}-budget-{framework}", framework, example=SMALL, budget=BUDGET)
        for framework in MAPPED
    ]
    deployments = load_catalog(record_roots(), ("deployment",)).of("deployment")
    found += [
        Case(i, d.framework, deployment=i)
        for i, d in sorted(deployments.items())
        if d.framework in MAPPED
    ]
    found += [
        Case(f"{c.name}@{version}", c.framework, c.example, c.deployment, version, c.budget)
        for c in list(found)
        for version in OLDER.get(c.framework, ())
    ]
    return found


def terms(plan: dict[str, Any]) -> dict[str, Any]:
    """What a plan fixes: placement, execution, pools, every degree (the virtual pipeline
    stages too), offload, precision, the frozen models' own layout."""
    rollout, train = plan["rollout"], plan["train"]
    return {
        "placement": plan["placement"],
        "execution": plan["execution"],
        **{f"rollout.{k}": rollout.get(k) for k in ("gpus", "tp", "pp", "ep", "fp8")},
        **{
            f"train.{k}": train.get(k)
            for k in ("gpus", "tp", "pp", "cp", "ep", "zero", "recompute", "offload", "fp8")
        },
        # unset is the plain schedule, which review reads as 1
        "train.virtual_stages": train.get("virtual_stages") or 1,
        "pools": {k: v for k, v in (plan.get("pools") or {}).items() if v},
        "assessment": plan.get("assessment"),
    }


def round_trip(case: Case) -> tuple[str, str]:
    """("same", ""), ("refused", why export refuses) or ("differs", what differs or fails)."""
    try:
        launch = api.export(case.scenario(), case.framework, version=case.version)
    except RlmguideError as exc:
        return "refused", str(exc)
    stated = case.stated()
    with tempfile.TemporaryDirectory() as folder:
        # a framework launched from one YAML config (ROLL) is that config
        path = Path(folder) / (
            "run.yaml" if launch.model_dump().get("syntax") == "yaml" else "run.sh"
        )
        path.write_text(launch.script)
        hardware = Hardware(stated["cluster"]["accelerator"])
        try:
            got = review(path, case.framework, hardware=hardware)
        except (ReviewError, NotCostable) as exc:
            return "differs", f"review: {exc}"
    wanted, read = terms(launch.model_dump(mode="json")["plan"]), terms(got["estimate"])
    workload = got["scenario"]["workload"]
    diffs = [f"{k}: {wanted[k]} -> {read[k]}" for k in wanted if wanted[k] != read[k]]
    if got["mapping"] != launch.mapping and not _readable_by(launch, got["mapping"]):
        diffs.append(f"mapping: {launch.mapping} -> {got['mapping']}")
    given = stated["workload"]
    episodes = bool(given.get("agent"))
    diffs += [
        f"workload.{k}: {given.get(k)} -> {workload.get(k)}"
        for k in WORKLOAD
        # an episode's launch bounds its turns and its whole trajectory, not one turn
        if k in given and given[k] != workload.get(k) and not (episodes and k in EPISODE)
    ]
    if given.get("reasoning_budget") and given["response_tokens"] != workload["response_tokens"]:
        # the header states the lengths the budget cuts, the mean among them
        diffs.append(
            f"workload.response_tokens: {given['response_tokens']} -> {workload['response_tokens']}"
        )
    if episodes or workload.get("agent"):
        diffs += [
            f"workload.{name}: {was} -> {now}"
            for name, was, now in zip(
                ("agent.max_turns", "longest trajectory"),
                longest_episode(given),
                longest_episode(workload),
                strict=True,
            )
            if was != now
        ]
    return ("differs", "; ".join(diffs)) if diffs else ("same", "")


def _readable_by(launch: Any, mapping_id: str) -> bool:
    """Whether every key the launch writes is one of another mapping's (a launch two versions
    spell alike is read with the newest, as review breaks ties)."""
    from rlmguide.review.review import _keys

    mapping = load_catalog(record_roots(), ("mapping",)).of("mapping")[mapping_id]
    fixed = (f.lstrip("-+").partition("=")[0] for f in launch.fixed)
    written = {a.key.lstrip("+") for a in launch.arguments}
    return written | set(fixed) <= _keys(mapping)  # type: ignore[arg-type]


EPISODE = ("max_response_tokens",)
"""Workload fields an agentic launch does not state one by one."""


def longest_episode(workload: dict[str, Any]) -> tuple[int, float]:
    """The most turns an episode takes and the tokens after the prompt of the longest one."""
    from rlmguide.cost.episode import Episode
    from rlmguide.kb.schema import Workload

    parsed = Workload.model_validate(workload)
    episode = Episode.of(parsed)
    longest = parsed.max_response_tokens or parsed.response_tokens
    return int(episode.max_turns), episode.longest_trajectory_response(
        parsed.response_tokens, longest
    )
