"""Export then review over every framework with a mapping x (bundled examples + its deployment
records), nothing set but the accelerator (tests/round_trip.py): how many read back as the
plan and workload exported, how many export refuses, and each that differs, with why.

Run: python bench/bench_round_trip.py
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from round_trip import cases, round_trip


def main() -> None:
    start = time.perf_counter()
    counts: Counter[tuple[str, str]] = Counter()
    for case in cases():
        status, why = round_trip(case)
        counts[case.framework, status] += 1
        if status == "differs":
            print(f"differs  {case.name}: {why}")
    seconds = time.perf_counter() - start
    print(f"\n{'framework':10} {'same':>5} {'differs':>8} {'refused':>8}")
    for framework in sorted({f for f, _ in counts}):
        row = [counts[framework, s] for s in ("same", "differs", "refused")]
        print(f"{framework:10} {row[0]:>5} {row[1]:>8} {row[2]:>8}")
    same, differs = (
        sum(counts[k] for k in counts if k[1] == "same"),
        sum(counts[k] for k in counts if k[1] == "differs"),
    )
    print(f"read back the same: {same}/{same + differs} exported ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
