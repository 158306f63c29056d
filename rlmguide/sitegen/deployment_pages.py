"""Pages of published deployments: one per launch configuration, and an index table.

A deployment is an expert's plan as a framework's authors ran it, so its page leads with what
a reader compares against a recommendation: the hardware, the models, the workload, the plan
in the scenario's own terms, the values filled from the framework's defaults, and the
published step time (or "unknown" when none is published for exactly this configuration).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rlmguide.kb.schema import Deployment
from rlmguide.sitegen.mdtext import (
    UNKNOWN,
    anchor,
    bullets,
    cell,
    document,
    esc,
    fields,
    html,
    html_code,
    number,
    show,
    table,
)
from rlmguide.sitegen.pages import (
    Index,
    Pages,
    index_of,
    page_of,
    record_pages,
    scenario_yaml,
    sources_section,
)


def flat_fields(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted name, value) of every leaf of a nested mapping, in the mapping's order."""
    for key, value in data.items():
        if isinstance(value, Mapping):
            yield from flat_fields(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def record_or_inline(ix: Index, src: str, kind: str, value: Any) -> str:
    """A scenario reference as a link to its record, or the inline record's name."""
    if value is None:
        return UNKNOWN
    if isinstance(value, str):
        return ix.record_link(src, kind, value)
    return f"{html(value.name)} (given inline)"


def hardware(ix: Index, src: str, dep: Deployment) -> str:
    cluster = dep.scenario.cluster
    gpus = cluster.nodes * cluster.gpus_per_node
    accelerator = record_or_inline(ix, src, "accelerator", cluster.accelerator)
    return f"{number(gpus)} x {accelerator} ({cluster.nodes} x {cluster.gpus_per_node} per node)"


def models(ix: Index, src: str, dep: Deployment) -> str:
    given = dep.scenario.models
    parts = [f"policy {record_or_inline(ix, src, 'model', given.policy)}"]
    if given.critic is not None:
        parts.append(f"critic {record_or_inline(ix, src, 'model', given.critic)}")
    reward = "verifier" if given.reward == "verifier" else None
    parts.append(f"reward {reward or record_or_inline(ix, src, 'model', given.reward)}")
    return ", ".join(parts)


def workload(ix: Index, src: str, dep: Deployment) -> str:
    load = dep.scenario.workload
    samples = load.samples_per_prompt or UNKNOWN
    return (
        f"{ix.record_link(src, 'algorithm', load.algorithm)}: {number(load.prompts_per_step)} "
        f"prompts x {samples} samples per step, {number(load.prompt_tokens)} prompt"
        + (" (not published: taken at the cap)" if load.prompt_tokens_from == "cap" else "")
        + f" and {number(load.response_tokens)} response tokens on average"
        + (
            " (not published: the length prior's share of the cap)"
            if load.response_tokens_from == "prior"
            else ""
        )
        + (
            f"; prompts capped at {number(load.max_prompt_tokens)} tokens"
            if load.max_prompt_tokens is not None
            else ""
        )
    )


def step_time(ix: Index, src: str, dep: Deployment) -> str:
    if dep.step_seconds is None:
        return UNKNOWN
    where = f", {html(dep.step_locator)}" if dep.step_locator else ""
    return f"{number(dep.step_seconds)} s ({ix.source_link(src, dep.step_source)}{where})"


def plan_table(dep: Deployment) -> str:
    """The plan field by field, as the scenario file names them (dp follows from the rest)."""
    data = dep.scenario.plan.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    rows = [(html_code(f"plan.{name}"), cell(value)) for name, value in flat_fields(data)]
    return table(["Field", "Value"], rows) if rows else "The file fixes no plan field."


def deployment_page(ix: Index, dep: Deployment) -> str:
    src = page_of("deployment", dep.id)
    file = anchor(dep.url, f"{html_code(dep.file)} at {html_code(dep.commit[:12])}", dep.url)
    defaults = bullets(esc(d) for d in dep.defaults) or "None: the file sets every value."
    return document(
        f"# {esc(dep.name)}",
        esc(dep.description),
        fields(
            [
                ("Id", html_code(dep.id)),
                ("Framework", ix.record_link(src, "framework", dep.framework)),
                ("Repository", ix.source_link(src, dep.source)),
                ("File", file),
                ("Read on", cell(dep.checked)),
                ("Commit date", cell(dep.as_of)),
                ("Hardware", hardware(ix, src, dep)),
                ("Models", models(ix, src, dep)),
                ("Workload", workload(ix, src, dep)),
                ("Published step time", step_time(ix, src, dep)),
            ]
        ),
        "## The plan",
        "The launch configuration in the scenario file's terms (each pool's dp follows from "
        "its GPUs and the other degrees); the full scenario is below.",
        plan_table(dep),
        "## Filled from the framework's defaults",
        defaults,
        "## Scenario",
        scenario_yaml(dep.scenario),
        f"## Notes\n\n{show(dep.notes)}" if dep.notes else "",
        sources_section(ix, src, dep.cited_sources()),
    )


def deployments_index(ix: Index) -> str:
    src = index_of("deployment")
    rows = []
    for dep in ix.of("deployment"):
        plan = dep.scenario.plan
        rows.append(
            [
                ix.record_link(src, "deployment", dep.id),
                ix.record_link(src, "framework", dep.framework),
                hardware(ix, src, dep),
                record_or_inline(ix, src, "model", dep.scenario.models.policy),
                ix.record_link(src, "algorithm", dep.scenario.workload.algorithm),
                f"{cell(plan.placement)} / {cell(plan.execution)}",
                number(dep.step_seconds) if dep.step_seconds is not None else UNKNOWN,
            ]
        )
    headers = ["Deployment", "Framework", "Hardware", "Policy", "Algorithm", "Plan", "Step s"]
    body = table(headers, rows) if rows else "No deployment is recorded yet."
    return document(
        "# Deployments",
        "Published launch configurations, each read from a framework's file at a pinned "
        "commit: the plan an expert chose for a cluster, models and workload. The planner is "
        "judged against them.",
        body,
    )


def deployment_pages(ix: Index) -> Pages:
    return {
        index_of("deployment"): deployments_index(ix),
        **record_pages(ix, "deployment", deployment_page),
    }
