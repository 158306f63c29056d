"""Wall time of a full site build (`rlmguide.sitebuild.build`), cold and warm database cache.

Run: python bench/bench_site.py [--repeat N]. Each figure is the median of N builds in a fresh
process into a temporary folder, so imports, loading the records, generating the pages and
MkDocs in strict mode are all counted; "cold" also builds the DuckDB file first.
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

TARGET_SECONDS = 20.0
BUILD = (
    "import sys; from pathlib import Path; from rlmguide.sitebuild import build; "
    "build(Path(sys.argv[1]))"
)


def wall(out: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BUILD, str(out)], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    work = Path(tempfile.mkdtemp(prefix="rlmguide-bench-site-"))
    cache = work / "cache"
    env = {**os.environ, "RLMGUIDE_CACHE_DIR": str(cache)}
    env.pop("RLMGUIDE_RECORDS_DIR", None)
    try:
        cold = []
        for i in range(repeat):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(wall(work / f"cold-{i}", env))
        warm = [wall(work / f"warm-{i}", env) for i in range(repeat)]
        pages = sum(1 for _ in (work / "warm-0").rglob("index.html"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"site build, cold database cache  median {c:6.2f} s  (n={repeat})")
    print(f"site build, warm database cache  median {w:6.2f} s  (n={repeat}, {pages} pages)")
    verdict = "met" if c <= TARGET_SECONDS else "NOT met"
    print(f"target: cold build under {TARGET_SECONDS:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
