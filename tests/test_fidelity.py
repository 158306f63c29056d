"""The cost core against published measurements (the full report is bench/fidelity.py)."""

from __future__ import annotations

import math

from kb.load import load_catalog
from kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rules.fidelity import calibration, median_abs_log_error


def test_calibration_against_published_results() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    comparisons = calibration(catalog.records)
    scored = [c for c in comparisons if c.ratio]
    rl = [c for c in scored if c.result.metric != "training_seconds"]
    training = [c for c in scored if c.result.metric == "training_seconds"]
    assert len(rl) >= 12 and len(training) >= 4
    # Every recorded setting is predictable today; a change that makes one unpredictable
    # (a stricter check of fixed plans, say) is a regression to look at.
    assert len(scored) >= 25, [c.problem for c in comparisons if not c.ratio]
    for c in scored:
        print(f"{c.result.id}: predicted/reported = {c.ratio:.2f}")
    # The target is 1.35x (issue 3) and the model meets it; this bound leaves room for new
    # calibration records while catching a regression (bench/fidelity.py prints the figures).
    assert median_abs_log_error(scored) < 1.5
    assert all(0.05 < c.ratio < 20 for c in scored)
    assert all(math.isfinite(c.predicted) and c.predicted > 0 for c in scored)
