"""How well the cost core predicts published measurements and published deployments' step
times: ratio predicted/reported per case at the default constants, then leave-one-out over a
grid of the fitted constants (each case predicted with the grid point that fits the others
best), with the median absolute log error (as a factor) and the cases beyond 3x.

Run: python bench/fidelity.py [--quick]   (--quick: the default constants only)
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from dataclasses import replace

from rlmguide.cost.overheads import DEFAULT_OVERHEADS, Overheads
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.fidelity import (
    Comparison,
    calibration,
    leave_one_out,
    median_abs_log_error,
    paired,
)
from rlmguide.rules.ranking import TIE_FRACTION

DECODE_STEP_SECONDS = (1e-3, 2e-3, 4e-3, 6e-3)
BUCKET_SECONDS = (10e-3, 20e-3, 40e-3)
SCALE_OUT_LATENCY_SECONDS = (50e-6, 100e-6, 200e-6)


def summary(label: str, comparisons: list[Comparison]) -> str:
    scored = [c for c in comparisons if c.ratio]
    beyond = [c for c in scored if max(c.ratio, 1 / c.ratio) > 3]
    worst = sorted(scored, key=lambda c: -abs(math.log(c.ratio)))[:3]
    return (
        f"{label}: {len(scored)} of {len(comparisons)} cases predicted; median absolute error "
        f"{median_abs_log_error(scored):.2f}x; beyond 3x: {len(beyond)}; worst: "
        + ", ".join(f"{c.result.id} {c.ratio:.2f}" for c in worst)
    )


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    start = time.perf_counter()
    comparisons = calibration(catalog.records)
    print(f"{'case':<60} {'metric':<20} {'reported':>10} {'predicted':>10} {'ratio':>7}")
    for c in comparisons:
        r = c.result
        shown = f"{c.predicted:10.1f} {c.ratio:7.2f}" if c.ratio else f"{'-':>10} {'-':>7}"
        print(
            f"{r.id:<60} {r.metric:<20} {r.value:>10.1f} {shown}"
            + (f"  ({c.problem})" if c.problem else "")
        )
    print()
    print(summary("default constants", comparisons))
    print(f"({time.perf_counter() - start:.1f} s)")
    pairs = paired(comparisons)
    print(f"\npairs of one model on one accelerator (the tie is {100 * TIE_FRACTION:.0f}%):")
    for p in pairs:
        print(f"  {p.first.result.id} / {p.second.result.id}: ratio off by {p.factor:.2f}x")
    factors = sorted(p.factor for p in pairs)
    if factors:
        print(f"  median {factors[len(factors) // 2]:.2f}x over {len(factors)} pairs")
    if "--quick" in sys.argv:
        return

    grid = [
        replace(
            DEFAULT_OVERHEADS,
            decode_step_seconds=d,
            weight_sync_bucket_seconds=b,
            scale_out_latency_seconds=a,
        )
        for d, b, a in itertools.product(
            DECODE_STEP_SECONDS, BUCKET_SECONDS, SCALE_OUT_LATENCY_SECONDS
        )
    ]
    start = time.perf_counter()
    table = [calibration(catalog.records, overheads) for overheads in grid]
    held_out, chosen = leave_one_out(grid, table)
    print(
        f"\ngrid of {len(grid)} (decode step x bucket cost x scale-out latency) in "
        f"{time.perf_counter() - start:.1f} s"
    )
    print(summary("leave-one-out", held_out))
    in_sample = min(range(len(grid)), key=lambda g: median_abs_log_error(table[g]))
    print(summary(f"best in-sample {_show(grid[in_sample])}", table[in_sample]))
    picks = sorted({_show(grid[g]) for g in chosen})
    print("grid points chosen when one case is held out: " + "; ".join(picks))


def _show(overheads: Overheads) -> str:
    return (
        f"decode {overheads.decode_step_seconds * 1e3:g} ms, bucket "
        f"{overheads.weight_sync_bucket_seconds * 1e3:g} ms, scale-out latency "
        f"{overheads.scale_out_latency_seconds * 1e6:g} us"
    )


if __name__ == "__main__":
    main()
