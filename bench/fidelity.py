"""How well the cost core predicts published measurements it was not fitted on.

Every result with a setting (and every deployment with a published step time) is predicted at
the default constants and then leave-one-source-out over a grid of the fitted constants: the
cases of one publication are predicted with the grid point that fits all the other
publications best (rules.fidelity.leave_group_out), which is the reported figure; grouped by
framework instead, the same question for a framework the fit never saw. The benchmark prints
every case, the figures per source, execution mode, rollout length and framework, every published
ordering (A faster than B in one source) with whether the prediction keeps it (and, where it
does not, both sides' predicted stage seconds and overlap; a pair a record says its source
cannot support, Result.unordered_with, is listed apart and not scored), and what the
constants a framework sets for itself (cost.overheads.OWN_FRAMEWORK_CONSTANTS) change, case by
case.

Run: python bench/fidelity.py [--quick] [--heldout DIR] [--cases FILE]
  --quick    the default constants only (no grid)
  --heldout  also predict the result records under DIR (folders per kind, as kb/records) with
             the grid point fitted on every repository case: measurements kept out of the fit.
  --cases    also give the figures of the cases whose ids FILE lists (one a line, # comments), at
             the default constants and leave-one-source-out: a set added after it was predicted
             (bench/holdout/issue32.txt) re-read once it is in the KB.
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from rlmguide.cost.band import STEP_BAND
from rlmguide.cost.overheads import (
    DEFAULT_OVERHEADS,
    FITTED,
    OWN_FRAMEWORK_CONSTANTS,
    Overheads,
    for_framework,
)
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.fidelity import (
    Case,
    Comparison,
    calibration,
    leave_group_out,
    median_abs_log_error,
    mode_pairs,
    orderings,
    paired,
    predict,
)
from rlmguide.rules.ranking import TIE_FRACTION
from rlmguide.rules.scenario import resolve

GRID = {
    "decode_step_seconds": (1e-3, 2e-3, 4e-3, 6e-3),
    "weight_sync_bucket_seconds": (10e-3, 20e-3, 40e-3),
    "scale_out_latency_seconds": (50e-6, 100e-6, 200e-6),
}
assert set(GRID) == set(FITTED), "the grid spans exactly the fitted constants"


def factor(c: Comparison) -> float:
    return math.exp(abs(math.log(c.ratio))) if c.ratio else math.nan


def figure(comparisons: Iterable[Comparison]) -> str:
    scored = [c for c in comparisons if c.ratio]
    if not scored:
        return "no case predicted"
    worst = max(scored, key=factor)
    beyond = sum(factor(c) > 2 for c in scored)
    return (
        f"{len(scored):3d} cases, median {median_abs_log_error(scored):.2f}x, "
        f"beyond 2x {beyond}, worst {factor(worst):.2f}x ({worst.result.id})"
    )


def by(label: str, comparisons: list[Comparison], key: Callable[[Case], str]) -> None:
    groups: dict[str, list[Comparison]] = defaultdict(list)
    for c in comparisons:
        groups[key(c.result)].append(c)
    print(f"\n{label}:")
    for name in sorted(groups):
        print(f"  {name:<42} {figure(groups[name])}")


def table(rows: list[tuple[Comparison, Comparison | None]]) -> None:
    print(
        f"{'case':<56} {'source':<36} {'framework':<11} {'mode':<12} {'metric':<19} "
        f"{'reported':>9} {'default':>9} {'ratio':>6} {'held-out':>9} {'ratio':>6}"
    )
    for d, h in rows:
        r = d.result
        line = (
            f"{r.id:<56} {r.group:<36} {r.framework:<11} {r.execution:<12} {r.metric:<19} "
            f"{r.value:>9.1f} "
        )
        line += f"{d.predicted:>9.1f} {d.ratio:>6.2f}" if d.ratio else f"{'-':>9} {'-':>6}"
        if h is not None and h.ratio:
            line += f" {h.predicted:>9.1f} {h.ratio:>6.2f}"
        print(line + (f"  ({d.problem})" if d.problem else ""))


def report_own_constants(catalog: dict, defaults: list[Comparison]) -> None:
    """What the constants a framework sets for itself (cost.overheads.OWN_FRAMEWORK_CONSTANTS)
    do, case by case at the default constants: the prediction with them and without."""
    owners = {f for table in OWN_FRAMEWORK_CONSTANTS.values() for f in table}
    print("\nframeworks' own constants (default constants; the cases they change, predicted")
    print("with them and without):")
    with_own, without = [], []
    for c in defaults:
        r = c.result
        if r.framework not in owners or not c.ratio:
            continue
        accelerator = resolve(r.scenario, catalog).accelerator
        own = for_framework(DEFAULT_OVERHEADS, r.framework, accelerator.capacity_gib, "")
        changed = ", ".join(
            f"{name} {getattr(own, name) / 2**30:.2f} GiB"
            if name.endswith("_bytes")
            else f"{name} {getattr(own, name):g}"
            for name in OWN_FRAMEWORK_CONSTANTS
            if getattr(own, name) != getattr(DEFAULT_OVERHEADS, name)
        )
        plain = predict(r, catalog, own_constants=False)
        with_own.append(c)
        without.append(plain)
        if plain.predicted == c.predicted:
            continue
        print(
            f"  {r.id:<56} {r.value:>8.1f}  with {c.predicted:>7.1f} ({c.ratio:.2f})  "
            f"without {plain.predicted:>7.1f} ({plain.ratio:.2f})  {changed}"
        )
    same = sum(a.predicted == b.predicted for a, b in zip(with_own, without, strict=True))
    print(f"  ({same} other cases of these frameworks predicted alike either way)")
    print(f"  with them:    {figure(results_only(with_own))}")
    print(f"  without them: {figure(results_only(without))}")


def grid_points() -> list[Overheads]:
    names = list(GRID)
    return [
        replace(DEFAULT_OVERHEADS, **dict(zip(names, values, strict=True)))
        for values in itertools.product(*(GRID[n] for n in names))
    ]


def show(overheads: Overheads) -> str:
    return (
        f"decode {overheads.decode_step_seconds * 1e3:g} ms, bucket "
        f"{overheads.weight_sync_bucket_seconds * 1e3:g} ms, scale-out latency "
        f"{overheads.scale_out_latency_seconds * 1e6:g} us"
    )


def results_only(comparisons: list[Comparison]) -> list[Comparison]:
    """Deployments repeat the published results they cite: the figures count results."""
    return [c for c in comparisons if c.result.kind == "result"]


def rl_steps(comparisons: list[Comparison]) -> list[Comparison]:
    return [c for c in comparisons if c.result.metric == "step_seconds"]


def report_orderings(comparisons: list[Comparison], label: str) -> None:
    every = orderings(comparisons, TIE_FRACTION)
    found = [o for o in every if not o.set_aside]
    kept = [o for o in found if o.reproduced]
    aside = [o for o in every if o.set_aside]
    print(
        f"\npublished orderings ({label}; A faster than B in one source by more than the "
        f"{100 * TIE_FRACTION:.0f}% tie): {len(kept)} of {len(found)} reproduced, "
        f"{len(aside)} set aside by their records (Result.unordered_with)"
    )
    for o in aside:
        a, b = o.faster, o.slower
        print(
            f"  set aside: {a.result.id} {a.result.value:g} < {b.result.id} {b.result.value:g}"
            f"; predicted {a.predicted:.1f} vs {b.predicted:.1f}"
            f" ({'kept' if o.reproduced else 'not kept'})"
        )
    for o in found:
        if not o.reproduced:
            a, b = o.faster, o.slower
            print(
                f"  not kept: {a.result.id} {a.result.value:g} < {b.result.id} "
                f"{b.result.value:g}; predicted {a.predicted:.1f} vs {b.predicted:.1f}"
            )
            for side in (a, b):
                print(f"    {side.result.id}: {stage_seconds(side)}")


def report_mode_pairs(comparisons: list[Comparison], label: str) -> None:
    """Every published sync / overlapping pair (rules.fidelity.mode_pairs): the speed-up the
    source reports for overlapping and the one predicted ("=" marks equal GPU counts)."""
    pairs = mode_pairs(comparisons)
    print(f"\nsync against overlapping execution ({label}; speed-up = sync / overlapping):")
    if not pairs:
        print("  no pair")
        return
    for p in pairs:
        s, o = p.sync.result, p.overlapped.result
        print(
            f"  {'=' if p.equal_gpus else ' '} {o.id:<54} vs {s.id:<52} reported "
            f"{p.reported:5.2f}x predicted {p.predicted:5.2f}x"
        )
    for name, chosen in (("all", pairs), ("equal GPUs", [p for p in pairs if p.equal_gpus])):
        if not chosen:
            continue
        logs = [math.log(p.predicted / p.reported) for p in chosen]
        print(
            f"  {name}: {len(chosen)} pairs, predicted / reported speed-up geometric mean "
            f"{math.exp(statistics.fmean(logs)):.2f}, median error "
            f"{math.exp(statistics.median(abs(x) for x in logs)):.2f}x, "
            f"speed-up under-predicted in {sum(x < 0 for x in logs)}"
        )


def stage_seconds(c: Comparison) -> str:
    """The predicted plan's stages and overlap, so a missed ordering shows which term misses."""
    return ", ".join(f"{name} {seconds:.1f}" for name, seconds in c.stages)


def print_band(comparisons: list[Comparison], pairs: list) -> None:
    """The 10th-90th percentile of reported / predicted over the held-out RL step times: the
    band cost.band states, and the paired spread the tie states."""
    ratios = sorted(c.result.value / c.predicted for c in comparisons if c.predicted)
    q = statistics.quantiles(ratios, n=10, method="inclusive")
    print(
        f"\nband (cost.band.STEP_BAND: reported / predicted, 10th-90th percentile over "
        f"{len(ratios)} held-out RL step times): {q[0]:.2f}-{q[-1]:.2f}; configured "
        f"{STEP_BAND[0]:.2f}-{STEP_BAND[1]:.2f}"
    )
    factors = sorted(p.factor for p in pairs)
    if factors:
        print(
            f"paired ratio error: median {statistics.median(factors):.2f}x over "
            f"{len(factors)} pairs (the tie, rules.ranking.TIE_FRACTION: {TIE_FRACTION:.2f})"
        )


def option(name: str) -> Path | None:
    """The path given after `name` on the command line, if any."""
    given = (Path(a) for a, prev in zip(sys.argv[1:], sys.argv, strict=False) if prev == name)
    return next(given, None)


def listed(path: Path) -> set[str]:
    if not path.is_file():
        sys.exit(f"--cases: no file {path}")
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def report_cases(path: Path, defaults: list[Comparison], held: list[Comparison | None]) -> None:
    """The figures of the listed cases alone, by execution mode, and the listed ids not found."""
    ids = listed(path)
    found = {c.result.id for c in defaults}
    print(f"\ncases listed in {path} ({len(ids & found)} of {len(ids)} found):")
    for missing in sorted(ids - found):
        print(f"  not a case: {missing}")
    for label, chosen in (("default constants", defaults), ("leave-one-source-out", held)):
        picked = [c for c in chosen if c is not None and c.result.id in ids]
        if not picked:
            continue
        print(f"  {label + ':':<22} {figure(picked)}")
        uncosted = sorted(c.result.id for c in picked if not c.ratio)
        if uncosted:
            print(f"    not costed: {', '.join(uncosted)}")
        by(f"  {label} by execution mode", picked, lambda c: c.execution)


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    start = time.perf_counter()
    # The largest fitting batches (Result.batch) depend on memory, which the grid's fitted
    # latencies leave alone: found once, shared by every grid point.
    batches: dict[tuple[str, bool], int] = {}
    defaults = calibration(catalog.records, DEFAULT_OVERHEADS, batches)
    elapsed = time.perf_counter() - start
    quick = "--quick" in sys.argv
    held: list[Comparison | None] = [None] * len(defaults)
    chosen_overheads = DEFAULT_OVERHEADS
    if not quick:
        grid = grid_points()
        start = time.perf_counter()
        results = [calibration(catalog.records, o, batches) for o in grid]
        loso, chosen = leave_group_out(results)
        lofo, _ = leave_group_out(results, lambda c: c.framework)
        grid_seconds = time.perf_counter() - start
        held = list(loso)
        in_sample = min(range(len(grid)), key=lambda g: median_abs_log_error(results[g]))
        chosen_overheads = grid[in_sample]
    table(list(zip(defaults, held, strict=True)))
    print(f"\n({len(defaults)} cases in {elapsed:.1f} s at the default constants)")
    print(f"default constants, results:        {figure(results_only(defaults))}")
    print(f"default constants, RL step times:  {figure(rl_steps(results_only(defaults)))}")
    deployments = [c for c in defaults if c.result.kind != "result"]
    print(f"default constants, deployments:    {figure(deployments)}")
    report_orderings(defaults, "default constants")
    report_mode_pairs(defaults, "default constants")
    report_own_constants(catalog.records, defaults)
    pairs = paired(defaults)
    print(
        "\npairs of one model on one cluster in one source record "
        f"(the tie is {100 * TIE_FRACTION:.0f}%):"
    )
    factors = sorted(p.factor for p in pairs)
    if factors:
        print(
            f"  median {statistics.median(factors):.2f}x over {len(factors)} pairs "
            f"(quartiles {factors[len(factors) // 4]:.2f}x-{factors[3 * len(factors) // 4]:.2f}x)"
        )
    if not quick:
        print(f"\ngrid of {len(grid)} points ({', '.join(GRID)}) in {grid_seconds:.1f} s")
        print(f"leave-one-source-out, results:       {figure(results_only(loso))}")
        print(f"leave-one-source-out, RL step times: {figure(rl_steps(results_only(loso)))}")
        print(f"leave-one-framework-out, results:    {figure(results_only(lofo))}")
        by("leave-one-source-out by source", results_only(loso), lambda c: c.group)
        by("leave-one-source-out by execution mode", results_only(loso), lambda c: c.execution)
        by("leave-one-source-out by rollout length", results_only(loso), lambda c: c.response_band)
        by("leave-one-source-out by framework", results_only(loso), lambda c: c.framework)
        by("leave-one-framework-out by framework", results_only(lofo), lambda c: c.framework)
        report_orderings(loso, "leave-one-source-out")
        report_mode_pairs(results_only(loso), "leave-one-source-out")
        print_band(rl_steps(results_only(loso)), pairs)
        picks = sorted({show(grid[g]) for g in chosen})
        print("\ngrid points chosen when a source is held out: " + "; ".join(picks))
        held_out = {c.result.group: show(grid[g]) for c, g in zip(defaults, chosen, strict=True)}
        for group in sorted(held_out):
            print(f"  {group:<48} {held_out[group]}")
        print(f"best on every source: {show(chosen_overheads)}")
    cases = option("--cases")
    if cases is not None:
        report_cases(cases, defaults, held)
    heldout_dir = option("--heldout")
    if heldout_dir is not None:
        extra = load_catalog([*DEFAULT_ROOTS, RULES_ROOT, (heldout_dir, None)])
        known = {c.result.id for c in defaults}
        unseen = [
            c
            for c in calibration(extra.records, chosen_overheads)
            if c.result.id not in known and c.result.kind == "result"
        ]
        print(f"\nheld-out measurements under {heldout_dir} ({show(chosen_overheads)}):")
        table([(c, None) for c in unseen])
        print(f"held-out, all:           {figure(unseen)}")
        print(f"held-out, RL step times: {figure(rl_steps(unseen))}")
        by("held-out by source", unseen, lambda c: c.group)
        by("held-out by execution mode", unseen, lambda c: c.execution)
        report_orderings(unseen, "held-out")


if __name__ == "__main__":
    main()
