"""`review` as tables (or Markdown): the reading, what was not mapped, the estimate, the
framework's best plan and the changes toward it."""

from __future__ import annotations

from typing import Any

from rlmguide.formats import print_rows
from rlmguide.report import layout


def _plan_row(name: str, plan: dict[str, Any], judged: bool = True) -> tuple[Any, ...]:
    """`judged` False: the plan misstates the launch's memory, so no verdict is shown."""
    rollout, train = layout(plan)
    fits = ("yes" if plan.get("feasible", True) else "no") if judged else "not costed"
    return (
        name,
        plan["placement"],
        plan["execution"],
        rollout,
        train,
        f"{plan['step_seconds']:.1f}",
        fits,
        plan["bottleneck"],
    )


def _source(source: str | list[str] | None) -> str:
    """A source as shown: a record id, the first records of a list and how many, or nothing."""
    if isinstance(source, list):
        more = f" and {len(source) - 2} more" if len(source) > 2 else ""
        return ", ".join(source[:2]) + more
    return source or ""


def print_review(result: dict[str, Any], fmt: str) -> None:
    print_rows(
        ["config key", "value", "scenario field", "field value"],
        [
            (
                u["key"] + (" (default)" if u["default"] else ""),
                u["value"],
                u["field"],
                u["field_value"],
            )
            for u in result["understood"]
        ],
        fmt,
        title=f"{result['file']}: {result['framework']} ({result['mapping']}: "
        f"{result['mapping_from']}), "
        f"{result['training_backend']} with {result['rollout_engine']}",
    )
    print_rows(
        ["assumed", "value", "why", "source"],
        [(a["field"], a["value"], a["why"], _source(a["source"])) for a in result["assumed"]],
        fmt,
        title="Not in the file",
    )
    if result["unknown_variables"]:
        print_rows(
            ["shell variable"],
            [(v,) for v in result["unknown_variables"]],
            fmt,
            title="Set by a command substitution (not run: read as empty)",
        )
    if result["config_missing"]:
        print_rows(
            ["named config"],
            [(result["config_missing"],)],
            fmt,
            title="Named but not found (its settings are missing from the reading)",
        )
    if result["unsourced"]:
        print_rows(
            ["sourced file"],
            [(f,) for f in result["unsourced"]],
            fmt,
            title="Sourced or run but not found (its settings are missing from the reading)",
        )
    print_rows(
        ["config key", "value"],
        [(u["key"], u["value"]) for u in result["unmapped"]],
        fmt,
        title=f"Not mapped to the plan ({len(result['unmapped'])} keys)",
    )
    if result["startup"]:
        print_rows(
            ["constraint", "check", "where"],
            [
                (c["constraint"], c["title"], f"{c['file']} {c['lines'] or ''}".strip())
                for c in result["startup"]
            ],
            fmt,
            title=f"Would stop at start-up ({result['framework']}'s own checks)",
        )
    if result["algorithm_keys"]:
        print_rows(
            ["config key", "launch", "export", "where"],
            [
                (
                    a["key"] + (" (default)" if a["default"] else ""),
                    a["launch"],
                    a["export"],
                    f"{a['file']} at {a['commit'][:9]}",
                )
                for a in result["algorithm_keys"]
            ],
            fmt,
            title=f"Runs otherwise than {result['scenario']['workload']['algorithm']} "
            "(the keys an export of it writes)",
        )
    if result["memory_keys"]:
        print_rows(
            ["memory setting", "launch", "plan", "verdict"],
            [(m["setting"], m["launch"], m["plan"], m["verdict"]) for m in result["memory_keys"]],
            fmt,
            title="Memory settings against the estimate's plan",
        )
    if result["algorithm_settings"]:
        print_rows(
            ["algorithm setting", "launch", "record", "verdict"],
            [
                (a["setting"], a["launch"], a["record"], a["verdict"])
                for a in result["algorithm_settings"]
            ],
            fmt,
            title="Algorithm settings against the algorithm's record",
        )
    if result["sharding"]:
        print_rows(
            ["config key", "launch", "trainer ranks", "verdict"],
            [
                (
                    result["sharding"]["key"],
                    result["sharding"]["value"],
                    result["sharding"]["world"],
                    result["sharding"]["text"],
                )
            ],
            fmt,
            title="Hybrid sharding (plan.train.shard_group)",
        )
    if frozen := result.get("frozen_sharding"):
        print_rows(
            ["config key", "launch", "trainer ranks", "verdict"],
            [(frozen["key"], frozen["value"], frozen["world"], frozen["text"])],
            fmt,
            title="The reference's shard group (plan.train.frozen_shard_group)",
        )
    experts = result.get("expert_sharding")
    if experts:
        print_rows(
            ["model", "ep_size", "efsdp_size", "replicas", "verdict"],
            [
                (
                    experts["model"],
                    experts["ep_size"],
                    experts["efsdp_size"],
                    experts["replicas"],
                    experts["text"],
                )
            ],
            fmt,
            title="Expert sharding (not in the plan)",
        )
    if reference := result.get("reference_experts"):
        print_rows(
            ["layout", "costed", "stops at start-up", "verdict"],
            [
                (
                    ", ".join(f"{k} {v}" for k, v in reference["layout"].items()),
                    "yes" if reference["costed"] else "no",
                    "yes" if reference["stops"] else "no",
                    reference["text"],
                )
            ],
            fmt,
            title="The reference's expert layout",
        )
    judged = result["estimate"]["feasible"] is not None
    rows = [_plan_row("reviewed", result["estimate"], judged=judged)]
    if result["recommendation"] is not None:
        rows.append(_plan_row(f"best on {result['framework']}", result["recommendation"]))
    print_rows(
        ["plan", "placement", "execution", "rollout", "train", "step s", "fits", "bottleneck"],
        rows,
        fmt,
        title="Estimate and recommendation"
        + (f" (none: {result['no_recommendation']})" if result["recommendation"] is None else "")
        + (f" ({result['tie']})" if result.get("tie") else "")
        + (
            f"; the estimate rests on assumed {', '.join(result['rests_on_assumptions'])}"
            if result["rests_on_assumptions"]
            else ""
        ),
    )
    print_rows(
        ["change", "step s alone", "step time"],
        [
            (
                c["text"].split(":")[0],
                "" if c["step_seconds"] is None else f"{c['step_seconds']:.1f}",
                c["text"].split(": ", 1)[1],
            )
            for c in result["changes"]
        ],
        fmt,
        title="Changes toward the best plan, by predicted gain",
    )
