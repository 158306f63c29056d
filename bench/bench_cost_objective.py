"""`recommend --objective cost --max-nodes 128` on every bundled example (a 500-step run): the
node counts searched, the size chosen, the frontier and the time the whole size search takes.

Run: python bench/bench_cost_objective.py [MAX_NODES] [STEPS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.mixed import recommend_mixed, resolve_mixed
from rlmguide.rules.scenario import read_scenario, resolve
from rlmguide.rules.sizing import Objective, recommend_sizes

EXAMPLES = Path(__file__).parent.parent / "examples"


def main() -> None:
    max_nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    total = 0.0
    for path in sorted(EXAMPLES.glob("*.yaml")):
        scenario = read_scenario(path)
        workload = scenario.workload.model_copy(update={"steps": steps})
        scenario = scenario.model_copy(update={"workload": workload})
        if scenario.cluster.parts is not None:
            total += _mixed(path.stem, scenario, catalog)
            continue
        if scenario.plan.rollout.gpus or scenario.plan.train.gpus:
            print(f"{path.stem}: skipped, its plan fixes the pool sizes (no other size fits)")
            continue
        resolved = resolve(scenario, catalog.records)
        start = time.perf_counter()
        result = recommend_sizes(resolved, catalog, max_nodes, Objective("cost"), 1)
        seconds = time.perf_counter() - start
        total += seconds
        sizing = result["sizing"]
        chosen = next(s for s in sizing["sizes"] if s["chosen"])
        cost = sizing["cost_axis"]
        print(
            f"{path.stem}: {len(sizing['searched_nodes'])} node counts searched "
            f"({len(sizing['infeasible'])} without a plan), chosen nodes {chosen['nodes']}: "
            f"{chosen['run_days']:.2f} days, {cost} {chosen[cost]:,.0f}; frontier "
            f"{[s['nodes'] for s in sizing['frontier']]}; {seconds:.1f} s",
            flush=True,
        )
    print(f"total {total:.1f} s")


def _mixed(name: str, scenario: Any, catalog: Any) -> float:
    """A mixed cluster: `--objective cost` over its parts and pairs of parts (as given)."""
    start = time.perf_counter()
    mixed = recommend_mixed(resolve_mixed(scenario, catalog), catalog, 1, Objective("cost"))
    seconds = time.perf_counter() - start
    summary = mixed["mixed"]
    chosen = next(o for o in summary["options"] if o["chosen"])
    cost = summary["cost_axis"]
    print(
        f"{name}: {len(summary['options'])} part options searched "
        f"({len(summary['infeasible'])} without a plan), chosen {chosen['label']}: "
        f"{chosen['run_days']:.2f} days, {cost} {chosen[cost]:,.0f}; frontier "
        f"{summary['frontier']}; {seconds:.1f} s",
        flush=True,
    )
    return seconds


if __name__ == "__main__":
    main()
