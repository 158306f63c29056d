"""The pruned search against the exhaustive one on every bundled example and published
deployment of up to 512 GPUs: the best plan's step time from each, whether they agree, and
both search times. (The test suite compares the quick ones; the MoE clusters above one node
take a minute or more exhaustively.)

Run: python bench/bench_pruning.py [ID ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.recommend import recommend, recommender_for
from rlmguide.rules.scenario import Resolved, read_scenario, resolve
from rlmguide.rules.search import FINE_GRID_UP_TO_GPUS

EXAMPLES = Path(__file__).parent.parent / "examples"


def best(resolved: Resolved, catalog: object, exhaustive: bool) -> tuple[float, float]:
    start = time.perf_counter()
    plan = recommend(recommender_for(resolved, catalog, exhaustive=exhaustive), 1)["plans"][0]  # type: ignore[arg-type]
    return plan["step_seconds"], time.perf_counter() - start


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    # A mixed cluster (cluster.parts) is searched part by part: bench_cost_objective times it.
    single = [(p, read_scenario(p)) for p in EXAMPLES.glob("*.yaml")]
    cases = [(p.stem, resolve(s, catalog.records)) for p, s in single if s.cluster.parts is None]
    for d in catalog.of("deployment").values():
        scenario = d.scenario.model_copy(update={"plan": type(d.scenario.plan)()})  # type: ignore[attr-defined]
        cases.append((d.id, resolve(scenario, catalog.records)))
    wanted = set(sys.argv[1:])
    cases = sorted(
        (c for c in cases if c[1].scenario.cluster.gpus <= FINE_GRID_UP_TO_GPUS),
        key=lambda c: (c[1].scenario.cluster.gpus, c[0]),
    )
    print(f"{'scenario':<62} {'GPUs':>5} {'pruned s/step':>13} {'exhaustive':>10} "
          f"{'same':>5} {'pruned s':>9} {'exhaustive s':>12}")  # fmt: skip
    agree = 0
    shown = [c for c in cases if not wanted or c[0] in wanted]
    for name, resolved in shown:
        pruned, t_pruned = best(resolved, catalog, False)
        full, t_full = best(resolved, catalog, True)
        same = abs(pruned - full) <= 1e-9 * full
        agree += same
        print(
            f"{name:<62} {resolved.scenario.cluster.gpus:>5} {pruned:>13.2f} {full:>10.2f} "
            f"{'yes' if same else 'NO':>5} {t_pruned:>9.2f} {t_full:>12.2f}",
            flush=True,
        )
    print(f"\nsame best plan: {agree} of {len(shown)}")


if __name__ == "__main__":
    main()
