"""How well the cost core predicts published measurements: ratio predicted/reported per case,
and the median absolute log error (as a factor).

Run: python bench/fidelity.py
"""

from __future__ import annotations

import math

from kb.load import load_catalog
from kb.paths import DEFAULT_ROOTS
from rlmguide.cli import RULES_ROOT
from rules.fidelity import calibration, median_abs_log_error


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    comparisons = calibration(catalog.records)
    print(f"{'result':<52} {'metric':<20} {'reported':>10} {'predicted':>10} {'ratio':>7}")
    for c in comparisons:
        r = c.result
        shown = f"{c.predicted:10.1f} {c.ratio:7.2f}" if c.ratio else f"{'-':>10} {'-':>7}"
        print(
            f"{r.id:<52} {r.metric:<20} {r.value:>10.1f} {shown}"
            + (f"  ({c.problem})" if c.problem else "")
        )
    scored = [c for c in comparisons if c.ratio]
    worst = sorted(scored, key=lambda c: -abs(math.log(c.ratio)))[:3]
    print(
        f"\n{len(scored)} of {len(comparisons)} cases predicted; median absolute error "
        f"{median_abs_log_error(scored):.2f}x (target 1.35x); beyond 3x: "
        f"{sum(1 for c in scored if max(c.ratio, 1 / c.ratio) > 3)}"
    )
    print("worst: " + ", ".join(f"{c.result.id} {c.ratio:.2f}" for c in worst))


if __name__ == "__main__":
    main()
