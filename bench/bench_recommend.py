"""Full `recommend` search on the four bundled scenarios: candidates, feasible, seconds.

Run: python bench/bench_recommend.py. "search" is the in-process search (enumeration, cost
core, rules, ranking); "end to end" is a fresh `rlmguide recommend --format json` process,
imports and record loading included. Candidates per second shows how time grows with them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kb.load import load_catalog
from kb.paths import DEFAULT_ROOTS
from rlmguide.cli import RULES_ROOT
from rules.recommend import recommend, recommender_for
from rules.scenario import read_scenario, resolve

EXAMPLES = Path(__file__).parent.parent / "examples"
CASES = (
    ("8 GPUs / 7B GRPO", "grpo-qwen2.5-7b-8xh100.yaml"),
    ("64 GPUs / 32B GRPO", "grpo-qwen2.5-32b-64xh100.yaml"),
    ("1,024 GPUs / 70B PPO + critic", "ppo-llama-3.1-70b-1024xh100.yaml"),
    ("4,096 GPUs / 671B MoE GRPO", "grpo-deepseek-v3-4096xh800.yaml"),
)


def main() -> None:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    print(
        f"{'case':<32} {'candidates':>13} {'feasible':>12} {'search s':>9} "
        f"{'cand/s':>11} {'end to end s':>13}"
    )
    # Timed as installed: compiled modules cached in __pycache__ (a sandbox may set
    # PYTHONDONTWRITEBYTECODE, which no install does), written by one untimed run first.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "rlmguide", "recommend", "--format", "json"]
    subprocess.run([*command, str(EXAMPLES / CASES[0][1])], env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    for label, name in CASES:
        resolved = resolve(read_scenario(EXAMPLES / name), catalog.records)
        start = time.perf_counter()
        result = recommend(recommender_for(resolved, catalog), 3)
        search = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([*command, str(EXAMPLES / name)], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        whole = time.perf_counter() - start
        s = result["search"]
        print(
            f"{label:<32} {s['candidates']:>13,} {s['feasible']:>12,} {search:>9.2f} "
            f"{s['candidates'] / search:>11,.0f} {whole:>13.2f}"
        )


if __name__ == "__main__":
    main()
