"""Full `recommend` search on the bundled scenarios, two 32,768-GPU scenarios and every
published deployment's cluster: candidates, feasible, seconds.

Run: python bench/bench_recommend.py [--no-deployments]. "search" is the in-process search
(enumeration, cost core, rules, ranking); "end to end" is a fresh `rlmguide recommend --format
json` process, imports and record loading included. Candidates per second shows how time grows
with them.
"""

from __future__ import annotations

import os
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


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    print(
        f"{'case':<44} {'candidates':>13} {'feasible':>12} {'search s':>9} "
        f"{'cand/s':>11} {'end to end s':>13}"
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
    if "--no-deployments" not in sys.argv:
        for d in sorted(catalog.of("deployment").values(), key=lambda d: d.id):
            scenario = d.scenario.model_copy(update={"plan": type(d.scenario.plan)()})
            runs.append((d.id, scenario, ["--deployment", d.id]))
    slowest = 0.0
    for label, scenario, args in runs:
        resolved = resolve(scenario, catalog.records)
        start = time.perf_counter()
        result = recommend(recommender_for(resolved, catalog), 3)
        search = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([*command, *args], env=env, check=True, stdout=subprocess.DEVNULL)
        whole = time.perf_counter() - start
        slowest = max(slowest, whole) if resolved.gpus <= 4096 else slowest
        s = result["search"]
        print(
            f"{label[:44]:<44} {s['candidates']:>13,} {s['feasible']:>12,} {search:>9.2f} "
            f"{s['candidates'] / search:>11,.0f} {whole:>13.2f}"
        )
    print(f"\nslowest end to end up to 4,096 GPUs: {slowest:.2f} s")


if __name__ == "__main__":
    main()
