"""The recommendation as a terminal report (rich) or Markdown: plans, stages, rules, notes."""

from __future__ import annotations

from typing import Any

from rlmguide.formats import print_rows
from rlmguide.runreport import print_mixed, print_run, print_sizing
from rlmguide.survey_report import print_survey


def layout(plan: dict[str, Any]) -> tuple[str | None, str]:
    """The rollout and training layouts as text; no rollout (None) for an offline plan."""
    r = plan["rollout"]
    train = _train_layout(plan)
    if r is None:
        return None, train
    attention = f" adp{r['attention_dp']}" if r.get("attention_dp", 1) > 1 else ""
    attention += f" dcp{r['cp']}" if r.get("cp", 1) > 1 else ""
    fp8 = " fp8" if r.get("precision") == "fp8" else ""
    rollout = f"{r['gpus']} GPUs: tp{r['tp']} pp{r['pp']} ep{r['ep']}{attention} x dp{r['dp']}{fp8}"
    # Said when off: two plans differing only in it otherwise printed identically.
    if plan.get("prefix_caching") is False:
        rollout += ", no prefix caching"
    if r.get("cuda_graphs") is False:
        rollout += ", eager"
    if parts := plan.get("parts"):  # a mixed cluster: the part each pool runs on
        rollout = f"{rollout} (on {parts['rollout']})"
        train = f"{train} (on {parts['train']})"
    return rollout, train


def _train_layout(plan: dict[str, Any]) -> str:
    t = plan["train"]
    # Expert tensor parallelism is shown only where experts are folded (etp differs from tp).
    folded = f" etp{t['etp']}" if t.get("etp", t["tp"]) != t["tp"] else ""
    offload = [k for k, v in t.get("offload", {}).items() if v]
    extras = "".join(
        [
            f", offload {'+'.join(offload)}" if offload else "",
            ", fp8" if t.get("precision") == "fp8" else "",
            f", LoRA r{t['lora_rank']}" if t.get("lora_rank") else "",
            ", no SP" if t["tp"] > 1 and t.get("sequence_parallel") is False else "",
            f", vp {t['virtual_stages']}" if t.get("virtual_stages", 1) > 1 else "",
            f", first/last {t['first_stage_layers'] or 'even'}/{t['last_stage_layers'] or 'even'}"
            if t.get("first_stage_layers") or t.get("last_stage_layers")
            else "",
            ", EP isolated (dense work x ep)" if t.get("expert_layout") == "isolated" else "",
        ]
    )
    group = f" in groups of {t['shard_group']}" if t.get("shard_group") else ""
    train = (
        f"{t['gpus']} GPUs: tp{t['tp']} pp{t['pp']} cp{t['cp']} ep{t['ep']}{folded} "
        f"x dp{t['dp']}, ZeRO-{t['zero']}{group}, recompute {t['recompute']}{extras}"
    )
    pools = {k: v for k, v in plan.get("pools", {}).items() if v}
    if pools:
        train += "; own pools " + ", ".join(f"{k} {v}" for k, v in pools.items())
    return train + configuration(plan)


def configuration(plan: dict[str, Any]) -> str:
    """Table 9's choices where they depart from a separate critic and no fusion."""
    parts = []
    if plan.get("critic") == "shared":
        parts.append("shared actor-critic")
    if plan.get("fusion", "none") != "none":
        chunk = plan.get("fusion_chunk")
        parts.append(
            f"{plan['fusion']} fusion" + (f" in chunks of {chunk} samples" if chunk else "")
        )
    return "; " + ", ".join(parts) if parts else ""


def _variants(plan: dict[str, Any]) -> str:
    """The staleness / prefix-caching variants a row stands for, and a tie it won."""
    also = plan.get("also_as") or {}
    parts = []
    if len(also.get("max_staleness", [])) > 1:
        parts.append("staleness " + "/".join(str(k) for k in also["max_staleness"]))
    if len(also.get("prefix_caching", [])) > 1:
        parts.append("prefix caching on/off")
    if tie := plan.get("tie"):
        where = f"rank {tie['faster_rank']}" if tie.get("faster_rank") else "a plan"
        if tie.get("faster_listed_under") == "also":
            where = "a plan under also"
        parts.append(f"tie: simpler than {where}, {tie['faster_by_percent']}% faster")
    if others := plan.get("also"):
        shown = ", ".join(_differs(a) for a in others[:2])
        rest = plan.get("also_count", len(others)) - 2
        more = f" and {rest} more" if rest > 0 else ""
        parts.append(f"also (within 2%): {shown}{more}")
    return "; ".join(parts)


def _differs(also: dict[str, Any]) -> str:
    """A near-identical row in short: the fields it changes and its time against the row."""
    words = []
    for key, value in also["differs"].items():
        if key == "offload":
            value = "+".join(k for k, v in value.items() if v) or "none"
        words.append(f"{key} {value}")
    return f"{' '.join(words)} ({also['change_percent']:+.1f}%)"


def _print_what_if(found: list[dict[str, Any]], fmt: str) -> None:
    title = "what if: configurations no framework in the KB runs (not plans to launch)"
    if not found:
        rows = [("none", "", "", "", "every configuration tried is runnable, or none applies")]
    else:
        rows = [
            (
                f"critic {w['critic']}, fusion {w['fusion']}"
                + (
                    f", assessment tp {w['assessment']['tp']} pp {w['assessment']['pp']}"
                    if w.get("assessment")
                    else ""
                )
                + (", EP isolated" if w.get("expert_layout") == "isolated" else ""),
                f"{w['placement']} {w['execution']}",
                f"{w['step_seconds']:.1f}",
                f"{w['gain_percent']:+.1f}%",
                "claimed by " + ", ".join(w["claimed_by"]) + " (cannot run this plan)"
                if w["claimed_by"]
                else "claimed by no framework",
            )
            for w in found
        ]
    print_rows(["configuration", "plan", "step s", "gain", "frameworks"], rows, fmt, title=title)


def _print_off_policy(found: list[dict[str, Any]], fmt: str) -> None:
    rows = [
        (
            f"{w['execution']} (staleness {w['max_staleness']})",
            w["plan"],
            f"{w['step_seconds']:.1f}",
            f"{w['gain_percent']:+.1f}%",
            w["allowed_by"],
            ", ".join(w["frameworks"]) or "none",
        )
        for w in found
    ]
    print_rows(
        ["lag", "plan", "step s", "gain", "ranked with", "frameworks"],
        rows,
        fmt,
        title="what if the run accepted a lag: faster plans that train on older samples "
        "(not ranked: the scenario is on-policy)",
    )


def _print_research(found: list[dict[str, Any]], fmt: str) -> None:
    rows = [
        (
            w["plan"] + configuration(w),
            f"{w['step_seconds']:.1f}",
            f"{w['gain_percent']:+.1f}%",
            ", ".join(f"{s['framework']} ({s['availability']})" for s in w["shown_by"]),
        )
        for w in found
    ]
    print_rows(
        ["plan", "step s", "gain", "shown by"],
        rows,
        fmt,
        title="what research systems would gain: plans no released framework runs "
        "(not ranked; --include-research ranks them)",
    )


def print_report(result: dict[str, Any], fmt: str, timing: bool = True) -> None:
    """The recommendation as tables; `timing` adds the search's wall time, which differs from
    run to run (for the terminal, never for a page or a file that should repeat its bytes)."""
    search = result["search"]
    summary = f"{search['candidates']:,} candidate plans, {search['feasible']:,} feasible"
    if timing:
        summary += f", searched in {search['seconds']:.2f} s"
    if result["plans"][0].get("offline"):
        _print_offline_plans(result, fmt, summary)
    else:
        _print_online_plans(result, fmt, summary)
    _print_best(result, fmt)


def _print_online_plans(result: dict[str, Any], fmt: str, summary: str) -> None:
    rows = []
    for plan in result["plans"]:
        rollout, train = layout(plan)
        staleness = f" (staleness {plan['max_staleness']})" if plan["max_staleness"] else ""
        rows.append(
            (
                plan["rank"],
                plan["placement"],
                plan["execution"] + staleness,
                rollout,
                train,
                _with_band(plan),
                f"{plan['tokens_per_second']:,.0f}",
                "{rollout:.0f} / {train:.0f}".format(**plan["memory_gib_per_gpu"]),
                "{rollout:.0f} / {train:.0f}".format(**plan["headroom_gib_per_gpu"]),
                plan["bottleneck"],
                _variants(plan),
            )
        )
    print_rows(
        [
            "rank",
            "placement",
            "execution",
            "rollout",
            "train",
            "step s (likely)",
            "tokens/s",
            "GiB/GPU r/t",
            "headroom GiB r/t",
            "bottleneck",
            "also / tie",
        ],
        rows,
        fmt,
        title=summary,
    )


def _with_band(plan: dict[str, Any]) -> str:
    """The step time and where it is likely to land (cost.band): "113.0 (55-174)"."""
    low, high = plan.get("step_seconds_band", (None, None))
    step = f"{plan['step_seconds']:.1f}"
    return step if low is None else f"{step} ({low:.0f}-{high:.0f})"


def _print_offline_plans(result: dict[str, Any], fmt: str, summary: str) -> None:
    """Offline preference optimisation: the trainer's layout is the whole plan; there is no
    rollout, placement or execution mode to show."""
    rows = [
        (
            plan["rank"],
            _train_layout(plan),
            _with_band(plan),
            f"{plan['tokens_per_second']:,.0f}",
            f"{plan['memory_gib_per_gpu']['train']:.0f}",
            f"{plan['headroom_gib_per_gpu']['train']:.0f}",
            plan["bottleneck"],
            _variants(plan),
        )
        for plan in result["plans"]
    ]
    print_rows(
        ["rank", "train (offline: nothing generated)", "step s (likely)", "tokens/s", "GiB/GPU",
         "headroom GiB", "bottleneck", "also / tie"],
        rows,
        fmt,
        title=summary,
    )  # fmt: skip


AGENTIC_ROWS = (
    ("episodes_in_flight_per_engine", "episodes in flight", "{:.0f}"),
    ("decode_batch", "decoding at once (mean)", "{:.1f}"),
    ("kv_kept", "KV kept across turns", "{}"),
    ("kv_held_gib", "KV held by waiting episodes, GiB per GPU", "{:.1f}"),
    ("prefill_seconds", "prefill, s", "{:.1f}"),
    ("gpu_work_seconds", "GPU work, s", "{:.1f}"),
    ("environment_work_seconds", "environment pool work, s", "{:.1f}"),
    ("episode_chain_seconds", "longest episode's chain, s", "{:.1f}"),
    ("gpu_wait_seconds", "rollout time the GPUs wait, s", "{:.1f}"),
)


def _agentic_rows(parts: dict[str, Any]) -> list[tuple[str, str]]:
    return [(label, shown.format(parts[key])) for key, label, shown in AGENTIC_ROWS]


def _print_best(result: dict[str, Any], fmt: str) -> None:
    best = result["plans"][0]
    total = sum(s["seconds"] for s in best["stages"]) or 1.0
    stages = [
        (
            s["name"],
            f"{s['seconds']:.2f}",
            f"{100 * s['seconds'] / total:.0f}%",
            f"{s['lower_seconds']:.2f}",
            f"{s['upper_seconds']:.2f}",
            f"{s['work_flop']:.3g}",
            s["gpus"],
            s["bound"],
        )
        for s in best["stages"]
    ]
    print_rows(
        [
            "stage",
            "seconds",
            "share",
            "lower (max(W/p,D))",
            "upper (W/p+D)",
            "FLOP",
            "GPUs",
            "bound",
        ],
        stages,
        fmt,
        title="stages of plan 1",
    )
    parts = best.get("assessment_seconds_by_model", {})
    if parts:
        shown = {"actor": "actor (old log-probs)"}
        pools = best.get("pools", {})
        print_rows(
            ["model", "seconds", "runs on"],
            [
                (
                    shown.get(role, role),
                    f"{seconds:.2f}",
                    f"own {pools[role]} GPUs, beside" if pools.get(role) else "training GPUs",
                )
                for role, seconds in parts.items()
            ],
            fmt,
            title="assessment of plan 1 by model",
        )
    if "agentic" in best:
        print_rows(["term", "value"], _agentic_rows(best["agentic"]), fmt,
                   title="agentic episodes of plan 1 (per rollout engine)")  # fmt: skip
    memory = [
        (pool, term, f"{gib:.1f}")
        for pool, terms in best["memory_breakdown_gib"].items()
        for term, gib in terms.items()
        if gib >= 0.05
    ]
    print_rows(
        ["pool", "term", "GiB"],
        memory,
        fmt,
        title="memory of plan 1 at each pool's peak (per GPU; host: per node)",
    )
    if best["rules"]:
        print_rows(
            ["rule", "effect", "title", "sources"],
            [(r["id"], r["effect"], r["title"], ", ".join(r["sources"])) for r in best["rules"]],
            fmt,
            title="guidelines behind plan 1",
        )
    launchable = best.get("launchable_by")
    if launchable is None:  # a result without the split (an older JSON read back)
        notes = [("frameworks", ", ".join(best["frameworks"]) or "none in the KB claims all of it")]
    else:
        notes = [
            ("launchable by", ", ".join(launchable) or "no released framework (research only)")
        ]
        if best.get("also_claimed_by"):
            notes.append(
                ("also claimed by", ", ".join(best["also_claimed_by"]) + " (no released code)")
            )
        if best.get("reference_parked_by"):
            notes.append(
                ("reference parked by", ", ".join(best["reference_parked_by"])
                 + " (they run it with the frozen models on the host while training)")
            )  # fmt: skip
        for framework, why in (best.get("launch_refused_by") or {}).items():
            notes.append((f"not launched by {framework}", why))
        if result.get("ranked_for"):
            notes.append(
                (f"ranked for {result['ranked_for']['framework']}", result["ranked_for"]["why"])
            )
        if result.get("no_launchable_plan"):
            notes.append(("launch", result["no_launchable_plan"]))
    if "step_seconds_band" in best:
        low, high = best["step_seconds_band"]
        notes.append(
            ("step time", f"{best['step_seconds']:.0f} s, likely {low:.0f}-{high:.0f} s (four "
                          "published runs in five landed inside the model's band)")
        )  # fmt: skip
    overlap = best.get("overlap")
    if overlap:
        notes.append(
            ("pipeline", f"{overlap['pipeline']}; weights pushed {overlap['weights_pushed']}; "
                         f"{overlap['seconds']:.0f} s a step overlap "
                         f"({100 * overlap['share']:.0f}% of the shorter side hidden)")
        )  # fmt: skip
    departure = result.get("departure")
    if departure:
        notes.append(
            ("departure", f"{departure['why']} ({departure['simplest_plan']}: "
                          f"{departure['simplest_step_seconds']:.1f} s)")
        )  # fmt: skip
    if result.get("pool_search"):
        notes.append(("own pools", result["pool_search"]["why"]))
    notes += [("what would move it", n) for n in result["notes"]]
    notes += [("rejected", f"{r['reason']}: {r['count']:,}") for r in result["rejected"]]
    if result.get("costed_as"):
        notes.append(
            (
                "costed as",
                f"{result['costed_as']} runs it (its gradient buffers, "
                "frozen models and engine concurrency; --framework changes it)",
            )
        )
    notes += [("chosen by estimate", c) for c in result.get("chosen", [])]
    notes += [("scenario", n) for n in result.get("resolution_notes", [])]
    print_rows(["", "note"], notes, fmt, title="notes")
    print_run(result, fmt)
    if result.get("off_policy_what_if"):
        _print_off_policy(result["off_policy_what_if"], fmt)
    if result.get("research_what_if"):
        _print_research(result["research_what_if"], fmt)
    if "what_if" in result:
        _print_what_if(result["what_if"], fmt)
    for plan in result["plans"]:
        if "survey_model" in plan:
            print_survey(plan["survey_model"], fmt, plan["rank"])
    if "sizing" in result:
        print_sizing(result["sizing"], fmt)
    if "mixed" in result:
        print_mixed(result["mixed"], fmt)
