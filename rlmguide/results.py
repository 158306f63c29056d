"""Typed results of the Python API (rlmguide.api): what `recommend`, `estimate`, `export` and
`review` return, each a pydantic model whose `model_dump()` is the command's JSON.

The keys DESIGN.md fixes are typed fields; every other key the planner writes is kept as it
came (`extra="allow"`): the plan dict gains keys with most changes to the planner, and a result
must carry them all, as the JSON does, without a change here. These are outputs, never read
from a user, so the schema's `extra="forbid"` (which guards authored input) does not apply.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr


class Open(BaseModel):
    """An output structure: the contract's keys typed, any further key kept as given."""

    model_config = ConfigDict(extra="allow")

    def __getitem__(self, key: str) -> Any:
        """`plan["step_seconds"]` as on the JSON, for typed and extra keys alike."""
        if key in type(self).model_fields:
            return getattr(self, key)
        extra = self.__pydantic_extra__ or {}
        if key in extra:
            return extra[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class Stage(Open):
    """One stage of a step: Brent's bounds max(W/p, D) <= T <= W/p + D and what it moves."""

    name: str
    seconds: float
    lower_seconds: float
    upper_seconds: float
    work_flop: float
    hbm_bytes: float
    link_bytes: float
    depth_seconds: float
    gpus: int
    bound: str


class RolloutLayout(Open):
    gpus: int
    tp: int
    pp: int
    dp: int
    ep: int


class TrainLayout(Open):
    gpus: int
    tp: int
    pp: int
    cp: int
    dp: int
    ep: int
    zero: int
    recompute: str


class FiredRule(Open):
    id: str
    effect: str
    title: str
    sources: list[str]


class Plan(Open):
    """One costed plan (DESIGN.md, "JSON output of recommend and estimate")."""

    rank: int
    placement: str
    execution: str
    rollout: RolloutLayout | None
    """None for offline methods (DPO and its family), which generate nothing."""
    train: TrainLayout
    step_seconds: float
    tokens_per_second: float
    stages: list[Stage]
    feasible: bool | None
    """None only in a review whose launch lays out memory the plan cannot say (ROLL's experts
    replicated beyond ep x efsdp, the review's `expert_sharding`): no verdict."""
    memory_gib_per_gpu: dict[str, float | None]
    gpu_hours_per_step: float
    run_gpu_hours: float | None
    run_days: float | None
    cost_per_step: float | None
    run_cost: float | None
    bottleneck: str
    rules: list[FiredRule]
    frameworks: list[str]
    launchable_by: list[str] = []
    """The released frameworks that run the plan: those with an export mapping first, then by
    their latest release."""
    also_claimed_by: list[str] = []
    """Frameworks without released end-to-end code whose claims allow the plan too."""
    launch_refused_by: dict[str, str] = {}
    """Released frameworks whose claims allow the plan but whose export mapping cannot launch
    it, each with the refusal `rlmguide export` gives."""

    def row(self) -> dict[str, Any]:
        """The plan as one flat table row: nested mappings as dotted columns
        (`train.tp`, `memory_gib_per_gpu.rollout`), each stage's seconds as
        `seconds.<stage>`, the fired rules by id; lists of records are left out."""
        data = self.model_dump(mode="json")
        row: dict[str, Any] = {}
        for key, value in data.items():
            if key == "stages":
                row.update({f"seconds.{s['name']}": s["seconds"] for s in value})
            elif key == "rules":
                row["rules"] = [r["id"] for r in value]
            else:
                _flatten(key, value, row)
        return row


def _flatten(key: str, value: Any, row: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for inner, item in value.items():
            _flatten(f"{key}.{inner}", item, row)
    elif not (isinstance(value, list) and any(isinstance(v, dict | list) for v in value)):
        row[key] = value


class Search(Open):
    candidates: int
    feasible: int
    seconds: float
    """Wall time of the search: it differs from run to run (compare results without it)."""


class Rejection(Open):
    reason: str
    count: int


def rows_table(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows as columns, every column present in every row (None where a row lacks it)."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return {name: [row.get(name) for row in rows] for name in names}


def _missing(package: str, purpose: str) -> ImportError:
    return ImportError(f"{purpose} needs {package}, which rlmguide does not install: "
                       f"pip install {package}")  # fmt: skip


class PlanTable(Open):
    """A result that holds plans: convertible to a table with one row per plan."""

    plans: list[Plan]

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per plan (see `Plan.row`), best first."""
        return [plan.row() for plan in self.plans]

    def to_arrow(self) -> Any:
        """The plans as a `pyarrow.Table` (pyarrow must be installed)."""
        try:
            import pyarrow as pa
        except ImportError:
            raise _missing("pyarrow", "to_arrow()") from None
        return pa.table(rows_table(self.rows()))

    def to_pandas(self) -> Any:
        """The plans as a `pandas.DataFrame` (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise _missing("pandas", "to_pandas()") from None
        return pd.DataFrame(rows_table(self.rows()))

    def _repr_html_(self) -> str:
        return plans_html(self.plans)


PLAN_COLUMNS = ("rank", "plan", "rollout", "train", "step s", "tokens/s", "GiB per GPU",
                "bottleneck", "frameworks")  # fmt: skip


def _layout(layout: Mapping[str, Any] | None, names: Iterable[str]) -> str:
    if layout is None:
        return "none"
    return f"{layout['gpus']} GPUs " + " ".join(f"{n}{layout[n]}" for n in names if n in layout)


def plans_html(plans: list[Plan]) -> str:
    """A small HTML table of plans for notebooks; every value escaped."""

    def cells(plan: Plan) -> list[str]:
        memory = " / ".join(f"{v:.1f}" for v in plan.memory_gib_per_gpu.values() if v is not None)
        return [
            str(plan.rank),
            f"{plan.placement}, {plan.execution}",
            _layout(plan.rollout and plan.rollout.model_dump(), ("tp", "pp", "ep")),
            _layout(plan.train.model_dump(), ("tp", "pp", "cp", "ep", "zero")),
            f"{plan.step_seconds:,.1f}",
            f"{plan.tokens_per_second:,.0f}",
            memory,
            plan.bottleneck,
            ", ".join(plan.frameworks) or "none",
        ]

    return html_table(PLAN_COLUMNS, [cells(p) for p in plans])


def html_table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Recommendation(PlanTable):
    """`recommend`: the normalised scenario, the search, what was rejected and the plans,
    best first (DESIGN.md's JSON; `sizing`, `mixed` and `what_if` where asked for)."""

    scenario: dict[str, Any]
    search: Search
    rejected: list[Rejection]

    @property
    def best(self) -> Plan:
        return self.plans[0]


class Estimate(Recommendation):
    """`estimate`: the one plan the scenario fixes, with the fields the planner filled in
    (`chosen`). A plan that does not fit is still costed: `plan.feasible` is False and
    `shortfall` says which pool and term overflow by how much."""

    chosen: list[str]
    costed_as: str | None = None
    """The framework whose way of running the plan it was costed with (`estimate --framework`);
    None: as written, framework-neutral (also for `--deployment`, whose framework is not
    applied unless named)."""
    _shortfall: str | None = PrivateAttr(default=None)

    @property
    def plan(self) -> Plan:
        return self.plans[0]

    @property
    def shortfall(self) -> str | None:
        return self._shortfall


class Argument(Open):
    key: str
    value: Any
    fact: str
    file: str


class Launch(Open):
    """`export`: a plan as a framework's launch; `script` is the bash script the command
    prints (`model_dump()` is `export --format json`)."""

    framework: str
    mapping: str
    commit: str
    command: str
    arguments: list[Argument]
    inputs: dict[str, str]
    plan: Plan
    _script: str = PrivateAttr(default="")

    @property
    def script(self) -> str:
        return self._script

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self._script)}</pre>"


class Change(Open):
    field: str
    step_seconds: float | None
    change_percent: float | None
    text: str


class Review(Open):
    """`review`: what a launch file says in plan terms, its estimate, and the best plan the
    same framework runs with a launch of its mapping, with the changes toward it."""

    file: str
    framework: str
    mapping: str
    understood: list[dict[str, Any]]
    unmapped: list[dict[str, Any]]
    assumed: list[dict[str, Any]]
    scenario: dict[str, Any]
    estimate: Plan
    recommendation: Plan | None
    changes: list[Change]

    def _repr_html_(self) -> str:
        shown = [p for p in (self.estimate, self.recommendation) if p is not None]
        changes = html_table(("change",), [[c.text] for c in self.changes])
        return plans_html(shown) + (changes if self.changes else "")
