"""`rlmguide review` of a real verl launch script end to end: the shell expansion and Hydra
overrides, the reading through the mapping record, the estimate of the plan read, the
framework's best plan and the cost of each change toward it.

Run: python bench/bench_review.py [REPEATS]. "in process" times `rlmguide.review.review`
(records loaded once per call, as the command does); "end to end" is a fresh `rlmguide review
--format json` process, imports included. Each is the median of REPEATS runs (default 3).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rlmguide.review import Hardware, review

SCRIPT = (
    Path(__file__).parent.parent
    / "tests"
    / "fixtures"
    / "review"
    / "verl-run_qwen3moe-30b_megatron_96gb.sh"
)
ACCELERATOR = "h20-96gb"


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    inside = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = review(SCRIPT, hardware=Hardware(ACCELERATOR))
        inside.append(time.perf_counter() - start)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "rlmguide", "review", str(SCRIPT), "--accelerator",
               ACCELERATOR, "--format", "json"]  # fmt: skip
    outside = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        outside.append(time.perf_counter() - start)
    print(f"script: {SCRIPT.name} ({ACCELERATOR})")
    print(f"keys understood: {len(result['understood'])}, not mapped: {len(result['unmapped'])}")
    print(f"changes costed: {len(result['changes'])}")
    print(f"in process: median {statistics.median(inside):.2f} s over {repeats}")
    print(f"end to end: median {statistics.median(outside):.2f} s over {repeats}")


if __name__ == "__main__":
    main()
