"""The pruned search (rollout layouts probed where colocated pairs are many, splits coarse to
fine above 512 GPUs) against the full grid: the same top plans, and the time each takes, on the
large bundled scenarios and on every published deployment as published and moved to 96 and 256
nodes (its model and workload, the plan left open).

Run: python bench/bench_coarse.py [--quick]. A row says "same" when the top three plans
(placement, execution, both layouts, step time) of the two searches agree; the last line
counts the scenarios where they do not.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.recommend import NoFeasiblePlan, recommend, recommender_for
from rlmguide.rules.scenario import InputError, read_scenario, resolve

ROOT = Path(__file__).parent.parent
LARGE = (
    ROOT / "examples" / "grpo-deepseek-v3-4096xh800.yaml",
    ROOT / "examples" / "ppo-llama-3.1-70b-1024xh100.yaml",
    ROOT / "bench" / "scenarios" / "grpo-llama-3.1-405b-32768xh100.yaml",
    ROOT / "bench" / "scenarios" / "grpo-deepseek-v3-32768xh100.yaml",
)
NODES = (None, 96, 256)
KEYS = ("placement", "execution", "rollout", "train", "step_seconds")


def top_plans(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: plan[k] for k in KEYS} for plan in result["plans"]]


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    cases: list[tuple[str, Any]] = [(path.stem, read_scenario(path)) for path in LARGE]
    if "--quick" not in sys.argv:
        for d in sorted(catalog.of("deployment").values(), key=lambda d: d.id):
            open_plan = type(d.scenario.plan)()
            for nodes in NODES:
                cluster = d.scenario.cluster.model_copy(
                    update={"nodes": nodes or d.scenario.cluster.nodes}
                )
                scenario = d.scenario.model_copy(update={"plan": open_plan, "cluster": cluster})
                cases.append((f"{d.id} @{cluster.nodes} nodes", scenario))
    print(f"{'scenario':<60} {'GPUs':>7} {'coarse s':>9} {'full s':>8}  top 3")
    differ = compared = 0
    for label, scenario in cases:
        try:
            resolved = resolve(scenario, catalog.records)
            start = time.perf_counter()
            coarse = recommend(recommender_for(resolved, catalog), 3)
            middle = time.perf_counter()
            full = recommend(recommender_for(resolved, catalog, full_grid=True), 3)
            end = time.perf_counter()
        except (NoFeasiblePlan, InputError) as error:
            print(f"{label[:60]:<60} {'':>7} no plan: {str(error)[:60]}")
            continue
        same = top_plans(coarse) == top_plans(full)
        compared += 1
        differ += not same
        print(
            f"{label[:60]:<60} {resolved.gpus:>7,} {middle - start:>9.2f} {end - middle:>8.2f}  "
            f"{'same' if same else 'DIFFERENT'}"
        )
    print(f"\n{compared - differ} of {compared} scenarios: the same top three plans")


if __name__ == "__main__":
    main()
