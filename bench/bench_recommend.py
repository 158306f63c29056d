"""Full `recommend` search on the bundled scenarios, two 32,768-GPU scenarios and every
published deployment's cluster: candidates, feasible, seconds.

Run: python bench/bench_recommend.py [--no-deployments] [--repeat N] [--case TEXT]. "search" is
the in-process search (enumeration, cost core, rules, ranking; without the export launch check
the command adds); "end to end" is a fresh `rlmguide recommend --format json` process, imports,
record loading and the launch check included, and "e2e cpu" its user + system CPU time, which
other work on a shared machine disturbs less than the wall clock. With --repeat, each case runs
N times and the seconds are the range, fastest-slowest; --case keeps the cases whose label
contains TEXT. Candidates per second shows how time grows with them (fastest search).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.rules.recommend import recommend, recommender_for
from rlmguide.rules.scenario import read_scenario, resolve

EXAMPLES = Path(__file__).parent.parent / "examples"
SCENARIOS = Path(__file__).parent / "scenarios"
CASES = (
    ("8 GPUs / 7B GRPO", EXAMPLES / "grpo-qwen2.5-7b-8xh100.yaml"),
    ("64 GPUs / 32B GRPO", EXAMPLES / "grpo-qwen2.5-32b-64xh100.yaml"),
    ("1,024 GPUs / 70B PPO + critic", EXAMPLES / "ppo-llama-3.1-70b-1024xh100.yaml"),
    ("4,096 GPUs / 671B MoE GRPO", EXAMPLES / "grpo-deepseek-v3-4096xh800.yaml"),
    ("64 GPUs / 32B coding agent", EXAMPLES / "grpo-qwen3-32b-coding-agent-64xh100.yaml"),
    ("32,768 GPUs / 405B GRPO", SCENARIOS / "grpo-llama-3.1-405b-32768xh100.yaml"),
    ("32,768 GPUs / 671B MoE GRPO", SCENARIOS / "grpo-deepseek-v3-32768xh100.yaml"),
)


def span(values: list[float]) -> str:
    """The range of a case's timings, fastest-slowest (one value as it is)."""
    low, high = min(values), max(values)
    return f"{low:.2f}" if len(values) == 1 else f"{low:.2f}-{high:.2f}"


def child_cpu() -> float:
    """User + system CPU seconds of the waited-for child processes so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-deployments", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, metavar="N")
    parser.add_argument("--case", default="", metavar="TEXT")
    args = parser.parse_args()
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    print(
        f"{'case':<44} {'candidates':>13} {'feasible':>12} {'search s':>11} "
        f"{'cand/s':>11} {'end to end s':>13} {'e2e cpu s':>11}"
    )
    # Timed as installed: compiled modules cached in __pycache__ (a sandbox may set
    # PYTHONDONTWRITEBYTECODE, which no install does), written by one untimed run first.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "rlmguide", "recommend", "--format", "json"]
    subprocess.run([*command, str(CASES[0][1])], env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    runs: list[tuple[str, Any, list[str]]] = [
        (label, read_scenario(path), [str(path)]) for label, path in CASES
    ]
    if not args.no_deployments:
        for d in sorted(catalog.of("deployment").values(), key=lambda d: d.id):
            scenario = d.scenario.model_copy(update={"plan": type(d.scenario.plan)()})
            runs.append((d.id, scenario, ["--deployment", d.id]))
    slowest = 0.0
    for label, scenario, arguments in runs:
        if args.case not in label:
            continue
        resolved = resolve(scenario, catalog.records)
        searches, wholes, cpus = [], [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = recommend(recommender_for(resolved, catalog), 3)
            searches.append(time.perf_counter() - start)
            start, cpu = time.perf_counter(), child_cpu()
            subprocess.run([*command, *arguments], env=env, check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip
            wholes.append(time.perf_counter() - start)
            cpus.append(child_cpu() - cpu)
        slowest = max(slowest, min(wholes)) if resolved.gpus <= 4096 else slowest
        s = result["search"]
        print(
            f"{label[:44]:<44} {s['candidates']:>13,} {s['feasible']:>12,} "
            f"{span(searches):>11} {s['candidates'] / min(searches):>11,.0f} "
            f"{span(wholes):>13} {span(cpus):>11}"
        )
    print(f"\nslowest end to end up to 4,096 GPUs (fastest of its runs): {slowest:.2f} s")


if __name__ == "__main__":
    main()
