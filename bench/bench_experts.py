"""The planner against the experts: for every published deployment, the top plan that its own
framework can run, beside the expert's plan costed as written.

Agreement is counted on five dimensions: placement, execution, rollout TP (the attention's
tensor group, within 2x), training family (data-parallel sharded: ZeRO-3/FSDP without model
parallelism; model-parallel: otherwise) and offload class (none; phase offload of trainer state;
a CPU optimizer or streamed parameters). Each deployment is judged twice: as-is, and leave one
framework out, where the tie-breaks and cost constants read from the deployment's own framework
are not used (Recommender's `held_out`: its default rollout TP and training family, which the
median of the other released frameworks' recorded defaults then stands in for, and
cost.overheads.READ_FROM_ONE_FRAMEWORK). A departure from the expert's placement or execution is
justified when the top plan predicts a gain of at least 10% over the best plan of the expert's
own placement and execution, or lies within the ranking's tie of it (the ranking then chose the
simpler plan); every top plan that departs from the simplest plan beyond the tie names the
simpler plan it beat and its predicted gain. A run that lags the trainer tolerates its own lag:
where its workload states no tolerance, the search may use lagging plans up to the expert's.

Every disagreement (leave one framework out) is given its kind, from the fastest plan of the
framework that agrees with the expert on that dimension: `tie` where it lies within the ranking's
tie of the fastest plan (the cost model rates the expert's choice as fast, and the ranking's
order of simplicity chose another: a matter of ranking policy), `model +x%` where it is x% slower
than the fastest (the cost model, the record or the expert is off: read the record and the
mechanics), `none` where the framework runs no plan that agrees (a constraint or memory refuses
the expert's choice). The agreeing plans are those the search tries, whose pool splits are its
own; for placement and execution the best plan of the expert's mode at the expert's pool sizes
is tried too, so elsewhere x is an upper bound. Each kind carries the two predicted step times
it rests on: the fastest plan that agrees with the expert on that dimension and the fastest
that does not (for the training family, the best plan of each family). A deployment whose mean
response length is not
published gives only its cap, and the length prior (kb.schema.length_prior: the median share of
the cap over published runs) supplies the mean; such deployments are marked "prior" and counted
apart. One still recorded with its mean at the cap (`response_tokens` = `max_response_tokens`:
the multi-turn launches whose cap is per turn, where the prior's single-turn runs say nothing)
has every response run to the cap, so there is no long tail for one-step-off, asynchronous or
partial rollouts to hide; it is marked "no tail".

Run: python bench/bench_experts.py [--heldout DIR] [ID ...]
  --heldout DIR  also judge the deployment records in DIR (kept outside the knowledge base so that
                 nothing is tuned on them), reported separately.
"""

from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Deployment
from rlmguide.rules.ranking import TIE_FRACTION, model_parallel
from rlmguide.rules.recommend import (
    NoFeasiblePlan,
    judges_of,
    lagging,
    recommend,
    recommender_for,
)
from rlmguide.rules.scenario import fill_plan_defaults, resolve

JUSTIFIED_GAIN = 0.10
DIMENSIONS = ("placement", "execution", "rollout tp", "train family", "offload")
MODES = ("as-is", "lofo")


def attention_tp(plan: dict[str, Any]) -> float:
    """The tensor group attention runs on: an engine's tp, over its DP-attention groups. (The
    planner writes wide expert parallelism as ep above tp: replicas of tp GPUs sharing experts,
    which is the same layout as one engine of ep GPUs with DP attention.)"""
    rollout = plan["rollout"]
    return rollout["tp"] / rollout.get("attention_dp", 1)


def family(train: dict[str, Any]) -> str:
    parallel = model_parallel(train["tp"], train["pp"], train["ep"], train["zero"])
    return "model-parallel" if parallel else "dp-sharded"


def offload_class(train: dict[str, Any]) -> str:
    """The ranking's three offload levels: a CPU optimizer or streamed parameters move the Adam
    step off the GPU; phase offload only parks trainer state outside its phase."""
    offload = train.get("offload") or {}
    if offload.get("optimizer") or offload.get("params"):
        return "cpu"
    return "phase" if offload.get("phase") else "none"


def agrees(top: dict[str, Any], expert: dict[str, Any]) -> dict[str, bool]:
    """Whether a plan agrees with the expert's on each of DIMENSIONS."""
    return {
        "placement": top["placement"] == expert["placement"],
        "execution": top["execution"] == expert["execution"],
        "rollout tp": 0.5 <= attention_tp(top) / attention_tp(expert) <= 2,
        "train family": family(top["train"]) == family(expert["train"]),
        "offload": offload_class(top["train"]) == offload_class(expert["train"]),
    }


def tailless(d: Deployment) -> bool:
    """The mean response length is recorded at the cap (none is published): no length tail."""
    workload = d.scenario.workload
    return workload.response_tokens == workload.max_response_tokens


def prior(d: Deployment) -> bool:
    """The mean response length is the length prior's (none is published)."""
    return d.scenario.workload.response_tokens_from == "prior"


def length_mark(d: Deployment) -> str:
    return "; prior" if prior(d) else "; no tail" if tailless(d) else ""


def shown(p: dict[str, Any]) -> str:
    return (
        f"{p['placement'][:5]} {p['execution'][:8]} r-tp{attention_tp(p):g} "
        f"{family(p['train'])[:5]} {offload_class(p['train'])}"
    )


@dataclass
class Verdict:
    deployment: Deployment
    expert: dict[str, Any]
    top: dict[str, Any] | None = None
    agree: dict[str, bool] = field(default_factory=dict)
    own_gain: float | None = None
    """Gain of the top plan over the best plan of the expert's own placement and execution."""
    departure: dict[str, Any] | None = None
    tie: dict[str, Any] | None = None
    refused: str = ""
    seconds: float = 0.0
    causes: dict[str, str] = field(default_factory=dict)
    """Per dimension the top plan disagrees on: `tie`, `model +x%` or `none` (module docstring)."""
    tie_defaults: dict[str, Any] = field(default_factory=dict)
    """The defaults the ranking's ties leaned to (the result's `tie_defaults`)."""

    @property
    def departs(self) -> bool:
        return not (self.agree.get("placement") and self.agree.get("execution"))

    @property
    def justified(self) -> bool:
        gain = self.own_gain
        return gain is not None and (gain >= JUSTIFIED_GAIN or abs(gain) < TIE_FRACTION)


def searched(d: Deployment) -> Any:
    """The deployment's scenario with its plan left to the search. Where the run lags the trainer
    and its workload states no tolerance, the expert's lag is taken as the run's tolerance (the
    run's decision, which an algorithm record without one leaves on-policy): lagging plans up to
    it may then compete."""
    scenario, plan = d.scenario, d.scenario.plan
    workload = scenario.workload
    if workload.max_staleness is None and plan.execution not in (None, "sync"):
        workload = workload.model_copy(update={"max_staleness": plan.max_staleness or 1})
    return scenario.model_copy(update={"plan": type(plan)(), "workload": workload})


def judge(d: Deployment, catalog: Any, judges: Any, expert: dict[str, Any], lofo: bool) -> Verdict:
    held_out = d.framework if lofo else None
    verdict = Verdict(d, expert)
    resolved = resolve(searched(d), catalog.records)
    start = time.perf_counter()
    try:
        result = recommend(
            recommender_for(resolved, catalog, judges, only=d.framework, held_out=held_out), 1
        )
    except NoFeasiblePlan as exc:
        verdict.refused = str(exc)[:100]
        return verdict
    verdict.seconds = time.perf_counter() - start
    top = verdict.top = result["plans"][0]
    verdict.departure, verdict.tie = result["departure"], top["tie"]
    verdict.tie_defaults = result["tie_defaults"]
    verdict.agree = agrees(top, expert)
    own_seconds: float | None = None
    if verdict.departs:
        # Against the best plan of the expert's own placement and execution, its pools kept at
        # the expert's sizes (the expert chose them too).
        plan = d.scenario.plan
        own = plan.model_copy(
            update={"rollout": type(plan.rollout)(gpus=plan.rollout.gpus),
                    "train": type(plan.train)(gpus=plan.train.gpus)}
        )  # fmt: skip
        same_choice = resolve(searched(d).model_copy(update={"plan": own}), catalog.records)
        try:
            own_best = recommend(
                recommender_for(same_choice, catalog, judges, only=d.framework, held_out=held_out),
                1,
            )
            own_seconds = own_best["plans"][0]["step_seconds"]
        except NoFeasiblePlan:
            # The scenario only approximates some published layouts (OpenRLHF's reward model on
            # the critic's GPUs) and the framework's constraints may refuse the approximation;
            # the best plan of that mode on physics alone is at least as fast as any the
            # framework runs, so the gain over it is a lower bound.
            own_best = recommend(
                recommender_for(same_choice, catalog, judges, filter_frameworks=False), 1
            )
        verdict.own_gain = 1.0 - top["step_seconds"] / own_best["plans"][0]["step_seconds"]
    missed = [k for k in DIMENSIONS if not verdict.agree[k]]
    if lofo and missed:
        rec = recommender_for(resolved, catalog, judges, only=d.framework, held_out=held_out)
        verdict.causes = causes(rec, expert, missed, own_seconds)
    return verdict


CAUSE_ROWS = 20_000
"""Ranked rows read for the plans that agree with the expert, fastest first: past them the
dimension's best agreeing plan is counted as beyond the tie (`model`, without its figure)."""


MODE = ("placement", "execution")
"""The dimensions the best plan of the expert's own placement and execution also agrees on
(`judge` searches it with the pools at the expert's sizes): the search's own splits of the
pools are coarse away from its best, so its fastest plan of another mode may be slower than
that mode's best."""


def causes(
    rec: Any, expert: dict[str, Any], missed: list[str], own_seconds: float | None
) -> dict[str, str]:
    """For each dimension in `missed`, the kind of the disagreement (module docstring): where
    the fastest plan the framework runs that agrees with the expert lies against the fastest
    plan of all. `own_seconds`: the best plan of the expert's own mode that the framework
    runs, where it runs one."""
    costs, _ = rec.run()
    eligible = rec.launchable & ~lagging(rec, costs.plans)
    order = np.argsort(costs.step_seconds, kind="stable")
    order = order[eligible[order]]
    fastest = float(costs.step_seconds[order[0]])
    best: dict[str, float] = {}
    other: dict[str, float] = {}  # per dimension, the fastest plan that departs from the expert
    if own_seconds is not None:
        best = {key: own_seconds for key in missed if key in MODE}
    for i in order[:CAUSE_ROWS]:
        seconds = float(costs.step_seconds[i])
        if all(best.get(key, np.inf) <= seconds and key in other for key in missed):
            break
        for key, same in agrees(costs.plans.row(int(i)), expert).items():
            if key in missed and same and seconds < best.get(key, np.inf):
                best[key] = seconds
            if key in missed and not same:
                other.setdefault(key, seconds)
    beyond = "model" if len(order) > CAUSE_ROWS else "none"
    found = {}
    for key in missed:
        if key not in best:
            found[key] = beyond
            continue
        gap = best[key] / fastest - 1.0
        kind = "tie" if gap < TIE_FRACTION else f"model +{100 * gap:.0f}%"
        departing = f"{other[key]:.1f} s" if key in other else "beyond the rows read"
        found[key] = f"{kind} (expert's {best[key]:.1f} s, other {departing})"
    return found


def expert_plan(d: Deployment, catalog: Any, judges: Any) -> dict[str, Any]:
    fixed, _ = fill_plan_defaults(resolve(d.scenario, catalog.records))
    return recommend(
        recommender_for(fixed, catalog, judges, enforce_memory=False, filter_frameworks=False), 1
    )["plans"][0]


def why(v: Verdict) -> str:
    """The departure of the top plan from the simplest plan (its gain and the plan it beat), or
    the faster plan it was preferred to as the simpler of a tie."""
    notes = []
    if v.departure:
        notes.append(
            f"beats the simpler '{v.departure['simplest_plan']}' by "
            f"{v.departure['gain_percent']:.0f}%"
        )
    if v.tie:
        notes.append(
            f"chosen over the {v.tie['faster_by_percent']:.0f}% faster '{v.tie['faster_plan']}' "
            "as the simpler of a tie"
        )
    return "; ".join(notes)


def report(title: str, verdicts: list[Verdict]) -> None:
    judged = [v for v in verdicts if v.top]
    n = len(verdicts)
    print(f"\n{title}: {n} deployments from {len({v.deployment.framework for v in verdicts})} "
          f"frameworks ({n - len(judged)} with no plan of their framework)")  # fmt: skip
    for key in DIMENSIONS:
        agree = sum(v.agree.get(key, False) for v in verdicts)
        print(f"  agree on {key:<13} {agree:>3} of {n} ({100 * agree / max(n, 1):.0f}%)")
    departs = [v for v in judged if v.departs]
    print(
        f"  departures from the expert's placement or execution: {len(departs)}, of which "
        f"{sum(v.justified for v in departs)} predict >= {100 * JUSTIFIED_GAIN:.0f}% gain over "
        f"the best plan of the expert's own placement and execution, or are within the "
        f"{100 * TIE_FRACTION:.0f}% tie (the simpler plan)"
    )


def by_framework(verdicts: list[Verdict]) -> None:
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        groups[v.deployment.framework].append(v)
    print(f"  {'framework':<10} {'n':>3} " + " ".join(f"{k:>13}" for k in DIMENSIONS))
    for name, group in sorted(groups.items()):
        counts = [sum(v.agree.get(k, False) for v in group) for k in DIMENSIONS]
        cells = " ".join(f"{c:>6} ({100 * c / len(group):>3.0f}%)" for c in counts)
        print(f"  {name:<10} {len(group):>3} {cells}")


def mode(p: dict[str, Any]) -> str:
    return f"{p['placement'][:5]} {p['execution'][:8]}"


def mode_misses(verdicts: list[Verdict]) -> None:
    """Every deployment whose top plan departs from the expert's placement or execution: the
    expert's mode and the top plan's, the step time predicted for the expert's layout as
    written, for the best plan of the expert's mode at the expert's pool sizes and for the top
    plan, and the kind of each disagreement (module docstring: `tie` is a ranking-policy
    miss, `model +x%` and `none` are the cost model's, the record's or a constraint's)."""
    missed = [(v, v.top) for v in verdicts if v.top and v.departs]
    print(f"  placement or execution misses: {len(missed)}")
    print(f"    {'deployment':<62} {'framework':<9} {'expert':<15} {'top':<15} "
          f"{'layout s':>9} {'mode s':>9} {'top s':>9}  kinds")  # fmt: skip
    for v, top in missed:
        own = (
            f"{top['step_seconds'] / (1.0 - v.own_gain):>9.1f}"
            if v.own_gain is not None and v.own_gain < 1.0
            else f"{'-':>9}"
        )
        kinds = ", ".join(f"{k}: {v.causes[k]}" for k in MODE if k in v.causes)
        print(
            f"    {v.deployment.id:<62} {v.deployment.framework:<9} {mode(v.expert):<15} "
            f"{mode(top):<15} {v.expert['step_seconds']:>9.1f} {own} "
            f"{top['step_seconds']:>9.1f}  {kinds}{length_mark(v.deployment)}"
        )


def tie_defaults(verdicts: list[Verdict]) -> None:
    """Per framework, the defaults its searches' ties leaned to: its own record's, or the
    median of the other released frameworks' (and whose)."""
    print("  tie defaults per framework (own record, or the median of the others' records):")
    seen: dict[str, str] = {}
    for v in verdicts:
        said = "; ".join(
            f"{name} {d['value']} ({'own' if d['own'] else ', '.join(d['frameworks'])})"
            for name, d in v.tie_defaults.items()
        )
        seen.setdefault(v.deployment.framework, said or "none")
    for name, said in sorted(seen.items()):
        print(f"    {name:<10} {said}")


def by_cause(verdicts: list[Verdict]) -> None:
    """The disagreements by kind (module docstring), and how many are on deployments whose
    mean length is the prior's or that have no length tail."""
    print(f"  disagreements by kind: {'dimension':<13} {'tie':>4} {'model':>6} {'none':>5} "
          f"{'prior':>6} {'no tail':>8}")  # fmt: skip
    for key in DIMENSIONS:
        missed = [v for v in verdicts if key in v.causes]
        kinds = Counter(v.causes[key].split()[0] for v in missed)
        no_tail = sum(tailless(v.deployment) for v in missed)
        priors = sum(prior(v.deployment) for v in missed)
        print(f"  {'':<23}{key:<13} {kinds['tie']:>4} {kinds['model']:>6} {kinds['none']:>5} "
              f"{priors:>6} {no_tail:>8}")  # fmt: skip


def main() -> None:
    args = sys.argv[1:]
    heldout_dir: Path | None = None
    if "--heldout" in args:
        at = args.index("--heldout")
        if at + 1 >= len(args):
            sys.exit("usage: bench_experts.py [--heldout DIR] [ID ...]")
        heldout_dir = Path(args[at + 1])
        del args[at : at + 2]
    roots = [*DEFAULT_ROOTS, RULES_ROOT]
    heldout_ids: set[str] = set()
    if heldout_dir is not None:
        roots.append((heldout_dir, "deployment"))
        heldout_ids = {p.stem for p in heldout_dir.glob("*.yaml")}
    catalog = load_catalog(roots)
    judges = judges_of(catalog)
    wanted = set(args)
    deployments: list[Deployment] = [
        d for d in sorted(catalog.of("deployment").values(), key=lambda d: d.id)  # type: ignore[misc]
        if not wanted or d.id in wanted
    ]  # fmt: skip
    verdicts: dict[str, dict[str, Verdict]] = {mode: {} for mode in MODES}
    print(
        f"{'deployment (leave one framework out)':<62} {'expert':<38} {'planner':<38} "
        f"{'expert s':>9} {'top s':>9} {'gain':>5} {'agree':>6}"
    )
    for d in deployments:
        expert = expert_plan(d, catalog, judges)
        for mode in MODES:
            verdicts[mode][d.id] = judge(d, catalog, judges, expert, lofo=mode == "lofo")
        v = verdicts["lofo"][d.id]
        tag = " (held out)" if d.id in heldout_ids else ""
        if not v.top:
            print(f"{d.id + tag:<62} {shown(expert):<38} no plan of {d.framework}: {v.refused}")
            continue
        marks = "".join(k[0].upper() if v.agree[k] else "." for k in DIMENSIONS)
        gain = 1.0 - v.top["step_seconds"] / expert["step_seconds"]
        print(
            f"{d.id + tag:<62} {shown(expert):<38} {shown(v.top):<38} "
            f"{expert['step_seconds']:>9.1f} {v.top['step_seconds']:>9.1f} {100 * gain:>4.0f}% "
            f"{marks:>6}"
        )
        if v.departs or not all(v.agree.values()):
            own = (
                f"vs the best plan of the expert's own mode: {100 * v.own_gain:+.0f}%; "
                if v.own_gain is not None
                else ""
            )
            print(f"    {own}{why(v) or 'the simplest plan within the tie'}")
            kinds = ", ".join(f"{k}: {c}" for k, c in v.causes.items())
            print(f"    disagreements: {kinds}{length_mark(d)}")
    for mode in MODES:
        title = "as-is" if mode == "as-is" else "leave one framework out"
        known = [verdicts[mode][d.id] for d in deployments if d.id not in heldout_ids]
        report(f"{title}, knowledge-base deployments", known)
        if mode == "lofo":
            by_framework(known)
            by_cause(known)
            mode_misses(known)
            tie_defaults(known)
        if heldout_ids:
            held = [verdicts[mode][d.id] for d in deployments if d.id in heldout_ids]
            report(f"{title}, held-out deployments ({heldout_dir})", held)
            if mode == "lofo":
                by_framework(held)
    searches = sorted(v.seconds for v in verdicts["lofo"].values() if v.top)
    if searches:
        median = searches[len(searches) // 2]
        print(f"\nsearch seconds per deployment: median {median:.2f}, max {searches[-1]:.2f}")


if __name__ == "__main__":
    main()
