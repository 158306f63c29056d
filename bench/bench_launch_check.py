"""The launch check over everything: every bundled example, every deployment's scenario and
every atlas setup (rules.atlas's grid at three response lengths), exported to every mapped
framework and version, each written launch read back and judged (rlmguide.review.check).

Run: python bench/bench_launch_check.py. Prints how many launches were written, refused and
passed, the refusals by their first words, and every launch that fails with what it trips.
"""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path
from typing import Any

from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules import RECOMMEND_KINDS
from rlmguide.rules.atlas import grid
from rlmguide.rules.scenario import parse_scenario, read_mapping, resolve

from rlmguide.export import NotExpressible, build
from rlmguide.review.check import launch_problems

EXAMPLES = Path(__file__).parent.parent / "examples"
TARGETS = (
    ("verl", None),
    ("verl", "0.7.0-125-gb178a3cd5"),
    ("openrlhf", None),
    ("openrlhf", "0.8.9.post1-5-gc250c21a"),
    ("nemo-rl", None),
    ("slime", None),
)
RESPONSES = (4096, 16384, 32768)


def scenarios(catalog: Any) -> list[tuple[str, str, Any]]:
    """(kind, name, scenario) of everything checked."""
    found: list[tuple[str, str, Any]] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        data = read_mapping(path)
        if "parts" not in data["cluster"]:  # a mixed cluster is planned only
            found.append(("example", path.stem, parse_scenario(data, path.name)))
    for name, record in sorted(
        load_catalog(record_roots(), ("deployment",)).of("deployment").items()
    ):
        found.append(("deployment", name, record.scenario))
    for setup in grid(catalog.records):
        for longest in RESPONSES:
            data = setup.scenario()
            data["workload"].update(max_response_tokens=longest, response_tokens=min(4096, longest))
            name = f"{setup.model}/{setup.accelerator}/{setup.gpus}/{setup.algorithm}/{longest}"
            found.append(("atlas", name, parse_scenario(data, name)))
    return found


def main() -> int:
    catalog = load_catalog(record_roots(), RECOMMEND_KINDS)
    mappings = load_catalog(record_roots(), ("mapping",)).of("mapping")
    counts: collections.Counter[str] = collections.Counter()
    refusals: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    start = time.perf_counter()
    checked = scenarios(catalog)
    for kind, name, scenario in checked:
        resolved = resolve(scenario, catalog.records)
        for framework, version in TARGETS:
            counts[f"{kind} exports tried"] += 1
            try:
                done = build(resolved, catalog, mappings, framework, version)
            except NotExpressible as exc:
                counts[f"{kind} refused"] += 1
                refusals[" ".join(str(exc).split()[:6])] += 1
                continue
            counts[f"{kind} written"] += 1
            problems = launch_problems(done, catalog)
            if problems:
                failures.append(f"{kind} {name} {done.mapping.id}: {'; '.join(problems)}")
            else:
                counts[f"{kind} passed"] += 1
    seconds = time.perf_counter() - start
    kinds = collections.Counter(kind for kind, _, _ in checked)
    print(f"scenarios: {dict(kinds)}; targets: {len(TARGETS)} mappings; {seconds:.0f} s")
    for kind in kinds:
        whats = ("exports tried", "written", "refused", "passed")
        row = [f"{counts[f'{kind} {what}']} {what}" for what in whats]
        print(f"  {kind}: " + ", ".join(row))
    print("refusals, by their first words:")
    for reason, n in refusals.most_common(12):
        print(f"  {n:4d}  {reason}")
    print(f"failing launches: {len(failures)}")
    for line in failures:
        print(f"  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
