"""How many launch files from the wild `rlmguide review` reads right, per framework and per
field, against the engineers' readings in tests/test_review_wild.py (the launch files are in
tests/fixtures/review/wild/, each reviewed with nothing but --accelerator).

Run: python bench/bench_review_wild.py. Prints, per framework, the files read right on every
field and each field's right/judged count; then every field over all frameworks, the share of
files read right on every field, each misread field with what was wanted and what review read,
and the time taken. A file review refuses counts as misread on every field.
"""

from __future__ import annotations

import importlib.util
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent.parent / "tests"


def _readings() -> Any:
    spec = importlib.util.spec_from_file_location("wild", TESTS / "test_review_wild.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FRAMEWORKS = ("areal", "nemo-rl", "openrlhf", "roll", "skyrl", "slime", "verl")
"""Each fixture's name starts with its framework's (verl-recipe's with verl)."""


def framework(name: str) -> str:
    return next((f for f in FRAMEWORKS if name.startswith(f)), name.split("-", 1)[0])


def main() -> None:
    from rlmguide.review import Hardware, NotCostable, ReviewError, review

    wild = _readings()
    start = time.perf_counter()
    right: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    files: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wrong: list[str] = []
    for name, wanted in sorted(wild.READINGS.items()):
        fw = framework(name)
        try:
            got = review(wild.WILD / name, hardware=Hardware(wild.accelerator(name)))
            fields = wild.fields_read(wanted, got)
        except (ReviewError, NotCostable) as exc:
            fields = wild.fields_read(wanted, None)
            said = str(exc).replace(f"{wild.WILD}/", "")
            wrong.append(f"{name}: refused, so every field misread: {said[:300]}")
        bad = {k: (a, b) for k, (a, b) in fields.items() if a != b}
        for field, (a, b) in fields.items():
            right[fw][field][0] += a == b
            right[fw][field][1] += 1
        files[fw][0] += not bad
        files[fw][1] += 1
        if "refused" not in {b for _, b in bad.values() if isinstance(b, str)}:
            wrong += [f"{name}: {k}: wanted {a!r}, read {b!r}" for k, (a, b) in bad.items()]
    seconds = time.perf_counter() - start

    order = list(wild.FIELD_ORDER)
    print("per framework: files read right on every field; then field right/judged")
    for fw in sorted(files):
        ok, n = files[fw]
        print(f"\n{fw}: {ok}/{n} files right on every field")
        cells = [f"{f} {right[fw][f][0]}/{right[fw][f][1]}" for f in order if f in right[fw]]
        for i in range(0, len(cells), 6):
            print("  " + ", ".join(cells[i : i + 6]))
    print("\nper field, all frameworks (right/judged, share):")
    total: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for per in right.values():
        for f, (ok, n) in per.items():
            total[f][0] += ok
            total[f][1] += n
    for f in order:
        if f in total:
            ok, n = total[f]
            print(f"  {f:<22} {ok:>3}/{n:<3} {ok / n:6.1%}")
    ok = sum(v[0] for v in files.values())
    n = sum(v[1] for v in files.values())
    print(f"\nfiles read right on every field: {ok}/{n} ({ok / n:.1%})")
    worst = min(total, key=lambda f: total[f][0] / total[f][1])
    share = total[worst][0] / total[worst][1]
    print(f"lowest field share: {worst} {share:.1%} (target: >= 95% on every field)")
    print("\nmisread:" if wrong else "\nmisread: none")
    for line in wrong:
        print(f"  {line}")
    print(f"\n{n} files reviewed in {seconds:.1f} s ({seconds / n:.2f} s each)")


if __name__ == "__main__":
    main()
