"""The planner against the experts: for every published deployment, the top plan that its own
framework can run, beside the expert's plan costed as written.

Agreement is counted on placement, execution, rollout TP (the attention's tensor group, within
2x) and training family
(data-parallel sharded: ZeRO-3/FSDP without model parallelism; model-parallel: otherwise); a
departure from the expert's placement or execution is justified when the top plan predicts a
gain of at least 10% over the best plan of the expert's own placement and execution, or lies
within the ranking's tie of it (the ranking then chose the simpler plan).

Run: python bench/bench_experts.py [ID ...]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.ranking import TIE_FRACTION, model_parallel
from rlmguide.rules.recommend import NoFeasiblePlan, recommend, recommender_for
from rlmguide.rules.scenario import fill_plan_defaults, resolve

JUSTIFIED_GAIN = 0.10


def attention_tp(plan: dict[str, Any]) -> float:
    """The tensor group attention runs on: an engine's tp, over its DP-attention groups. (The
    planner writes wide expert parallelism as ep above tp: replicas of tp GPUs sharing experts,
    which is the same layout as one engine of ep GPUs with DP attention.)"""
    rollout = plan["rollout"]
    return rollout["tp"] / rollout.get("attention_dp", 1)


def family(train: dict[str, Any]) -> str:
    parallel = model_parallel(train["tp"], train["pp"], train["ep"], train["zero"])
    return "model-parallel" if parallel else "dp-sharded"


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    wanted = set(sys.argv[1:])
    deployments = [
        d for d in sorted(catalog.of("deployment").values(), key=lambda d: d.id)
        if not wanted or d.id in wanted
    ]  # fmt: skip
    counts = {"placement": 0, "execution": 0, "rollout tp": 0, "train family": 0, "justified": 0}
    departures = 0
    print(
        f"{'deployment':<58} {'expert':<34} {'planner':<34} {'expert s':>9} {'top s':>9} "
        f"{'gain':>6} {'search s':>8}"
    )
    for d in deployments:
        scenario = d.scenario.model_copy(update={"plan": type(d.scenario.plan)()})
        resolved = resolve(scenario, catalog.records)
        fixed, _ = fill_plan_defaults(resolve(d.scenario, catalog.records))
        expert = recommend(
            recommender_for(fixed, catalog, enforce_memory=False, filter_frameworks=False), 1
        )["plans"][0]
        start = time.perf_counter()
        try:
            top = recommend(recommender_for(resolved, catalog, only=d.framework), 1)["plans"][0]
        except NoFeasiblePlan as exc:
            print(f"{d.id:<58} no plan of {d.framework}: {str(exc)[:100]}")
            continue
        seconds = time.perf_counter() - start
        agree = {
            "placement": top["placement"] == expert["placement"],
            "execution": top["execution"] == expert["execution"],
            "rollout tp": 0.5 <= attention_tp(top) / attention_tp(expert) <= 2,
            "train family": family(top["train"]) == family(expert["train"]),
        }
        for key, same in agree.items():
            counts[key] += same
        gain = 1.0 - top["step_seconds"] / expert["step_seconds"]
        departs = not (agree["placement"] and agree["execution"])
        own_gain = None
        if departs:
            departures += 1
            # Against the best plan of the expert's own placement and execution: the
            # departure must gain 10%, or lie within the tie (then it is the simpler plan).
            # Its pools keep the expert's sizes, as the expert chose them too.
            plan = d.scenario.plan
            own = plan.model_copy(
                update={"rollout": type(plan.rollout)(gpus=plan.rollout.gpus),
                        "train": type(plan.train)(gpus=plan.train.gpus)}
            )  # fmt: skip
            same_choice = resolve(d.scenario.model_copy(update={"plan": own}), catalog.records)
            try:
                own_best = recommend(recommender_for(same_choice, catalog, only=d.framework), 1)
            except NoFeasiblePlan as exc:
                # The scenario only approximates some published layouts (OpenRLHF's reward
                # model on the critic's GPUs), and the framework's constraints may refuse the
                # approximation. The best plan of that mode on physics alone is at least as
                # fast as any the framework runs, so the gain over it is a lower bound.
                print(
                    f"{d.id}: {d.framework} runs no plan of the expert's own mode as the "
                    f"scenario writes it ({str(exc)[:90]}...); compared on physics alone"
                )
                own_best = recommend(
                    recommender_for(same_choice, catalog, filter_frameworks=False), 1
                )
            own_gain = 1.0 - top["step_seconds"] / own_best["plans"][0]["step_seconds"]
            if own_gain >= JUSTIFIED_GAIN or abs(own_gain) < TIE_FRACTION:
                counts["justified"] += 1

        def shown(p: dict[str, Any]) -> str:
            return (
                f"{p['placement'][:5]} {p['execution'][:8]} r-tp{attention_tp(p):g} "
                f"{family(p['train'])[:5]}"
            )

        print(
            f"{d.id:<58} {shown(expert):<34} {shown(top):<34} {expert['step_seconds']:>9.1f} "
            f"{top['step_seconds']:>9.1f} {100 * gain:>5.0f}% {seconds:>8.2f}"
            + (
                f"  (vs the expert's own mode: {100 * own_gain:.0f}%)"
                if own_gain is not None
                else ""
            )
        )
    n = len(deployments)
    print()
    for key in ("placement", "execution", "rollout tp", "train family"):
        print(f"agree on {key}: {counts[key]} of {n} ({100 * counts[key] / n:.0f}%)")
    print(
        f"departures from the expert's placement or execution: {departures}, of which "
        f"{counts['justified']} predict >= {100 * JUSTIFIED_GAIN:.0f}% gain over the best plan "
        f"of the expert's own placement and execution, or are within the "
        f"{100 * TIE_FRACTION:.0f}% tie (the simpler plan)"
    )


if __name__ == "__main__":
    main()
