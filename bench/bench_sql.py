"""Wall time of `rlmguide sql` cold (cache empty) and warm, beside `python -c "import duckdb"`.

Run: python bench/bench_sql.py [--repeat N]. Each figure is the median of N runs of a fresh
process, so start-up and imports are counted as a user would feel them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "select count(*) from frameworks"


def wall(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    cache = Path(tempfile.mkdtemp(prefix="rlmguide-bench-"))
    # Timed as installed: Python keeps compiled modules in __pycache__ unless told not to
    # (PYTHONDONTWRITEBYTECODE, which some sandboxes set), and the first cold run writes them.
    env = {**os.environ, "RLMGUIDE_CACHE_DIR": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cli = [sys.executable, "-m", "rlmguide", "sql", QUERY, "--format", "csv"]
    baseline = [sys.executable, "-c", "import duckdb"]
    try:
        cold = []
        for _ in range(repeat):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(wall(cli, env))
        warm = [wall(cli, env) for _ in range(repeat)]
        base = [wall(baseline, env) for _ in range(repeat)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    b, c, w = (statistics.median(x) for x in (base, cold, warm))
    print(f"python -c 'import duckdb'     median {b * 1000:7.1f} ms  (n={repeat})")
    print(f"rlmguide sql, cold cache      median {c * 1000:7.1f} ms  ({c / b:.2f}x baseline)")
    print(f"rlmguide sql, warm cache      median {w * 1000:7.1f} ms  ({w / b:.2f}x baseline)")
    print(f"target: warm within 1.5x of baseline: {'met' if w <= 1.5 * b else 'NOT met'}")


if __name__ == "__main__":
    main()
