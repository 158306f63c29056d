"""Wall time of a full site build (`rlmguide.sitegen.sitebuild.build`), cold and warm cache, and
what a visitor downloads.

Run: python bench/bench_site.py [--repeat N]. Each time is the median of N builds in a fresh
process into a temporary folder, so imports, loading the records, generating the pages and
MkDocs in strict mode are all counted; "cold" also builds the DuckDB file and the cost pages
(calibration, plots) first. Then the built site's bytes: in total, the search index, and the
median page of each section (a page's HTML alone; the theme's CSS and JS are cached).
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
    "import sys; from pathlib import Path; from rlmguide.sitegen.sitebuild import build; "
    "build(Path(sys.argv[1]))"
)


def wall(out: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BUILD, str(out)], env=env, check=True)
    return time.perf_counter() - start


def site_bytes(root: Path) -> list[str]:
    """Total bytes, the search index's, and the median page of each top-level section."""
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    index = (root / "search" / "search_index.json").stat().st_size
    sections: dict[str, list[int]] = {}
    for page in root.rglob("index.html"):
        parts = page.relative_to(root).parts
        sections.setdefault(parts[0] if len(parts) > 1 else "(home)", []).append(
            page.stat().st_size
        )
    lines = [f"site bytes {total:,}; search index {index:,} (loaded when search opens)"]
    vendor = [p.stat().st_size for p in (root / "vendor").rglob("*") if p.is_file()]
    lines.append(f"  vendor/ {sum(vendor):,} (DuckDB-WASM, loaded by the SQL page alone)")
    for name, sizes in sorted(sections.items()):
        median = statistics.median(sizes)
        lines.append(f"  {name:<14} {len(sizes):4} pages, median {median / 1024:6.1f} KiB")
    return lines


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
        weights = site_bytes(work / "warm-0")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"site build, cold cache  median {c:6.2f} s  (n={repeat})")
    print(f"site build, warm cache  median {w:6.2f} s  (n={repeat}, {pages} pages)")
    for line in weights:
        print(line)
    verdict = "met" if c <= TARGET_SECONDS else "NOT met"
    print(f"target: cold build under {TARGET_SECONDS:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
