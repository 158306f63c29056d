"""The cost core against published measurements (the full report is bench/fidelity.py)."""

from __future__ import annotations

import math

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.fidelity import calibration, median_abs_log_error


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
    # None beyond 3x (issue 12's target, met at the default constants): a case that falls
    # out names what the model misses, as eager decoding and the NeMo-RL recipes' rollout EP
    # did.
    beyond = [(c.result.id, round(c.ratio, 2)) for c in scored if not 1 / 3 <= c.ratio <= 3]
    assert not beyond, beyond
    assert all(math.isfinite(c.predicted) and c.predicted > 0 for c in scored)
