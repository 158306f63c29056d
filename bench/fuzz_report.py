"""Every fuzz case as its own `rlmguide` process: the mutated scenarios, issue 19's reproducers
and issue 30's generated runs (review scripts, recipes, flags and outputs, each in a sandbox
holding stand-ins for the user's files).

Run: python bench/fuzz_report.py [--limit N] [--every K] [--jobs J]. Prints how the cases
ended (exit codes, internal errors, errors longer than one line, non-finite JSON), hangs (a
process past the 60 s bound is killed and counted), files changed outside the outputs a case
names (or any sign something in the input was run), and the worst wall time and peak memory of
one command.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from fuzz_corpus import (
    BASE_FILE,
    REPRODUCERS,
    WRONG_INPUT,
    Run,
    cases,
    damage,
    materialise,
    runs,
    snapshot,
)

TIMEOUT = 60.0
"""Seconds one command may take; past it the process is killed and counted as a hang."""


CACHE_TIMEOUT = 900.0
"""Seconds the one-off build of the knowledge base's cache may take (the site's atlas among
it): set-up, not a case, so not bound by TIMEOUT; killed at TIMEOUT on a loaded machine, it left
every database command to build it again and be counted as a hang."""


def run(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float = TIMEOUT
) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, seconds, peak MiB) of one process, its own rusage via wait4;
    exit code -9 when it was killed at the time limit."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "rlmguide", *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=cwd,
            env={**os.environ, **env},
        )
        killer = threading.Timer(timeout, process.kill)
        killer.start()
        _, status, usage = os.wait4(process.pid, 0)
        killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read(), err.read(), seconds, usage.ru_maxrss / 1024


def finite(text: str) -> bool:
    try:
        json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    except ValueError:
        return False
    return True


def commands() -> list[tuple[str, Run]]:
    """Every case as a `Run` (the scenario corpus as files in its sandbox)."""
    found = [
        (
            "scenario",
            Run(
                case.name,
                ("recommend", "{dir}/s.yaml", "--format", "json", "--top", "1"),
                {"s.yaml": case.text},
            ),
        )
        for case in cases()
    ]
    latin1 = BASE_FILE.read_bytes() + b"# caf\xe9\n"
    for name, args in REPRODUCERS.items():
        swapped = tuple(a.replace("{non_utf8}", "{dir}/latin1.yaml") for a in args)
        found.append(("issue 19", Run(name, swapped, {"latin1.yaml": latin1})))
    found += [("wrong input", case) for case, _ in WRONG_INPUT]
    for one in runs():
        kind = "review" if one.args[0] == "review" else "flags"
        if one.outputs:
            kind = "outputs"
        elif one.name.startswith("recipe"):
            kind = "recipes"
        found.append((kind, one))
    return found


def one_case(kind: str, case: Run, work: Path, index: int) -> dict[str, object]:
    folder = work / f"case-{index:04d}"
    folder.mkdir()
    materialise(case, folder)
    before = snapshot(folder)
    args = [a.replace("{dir}", str(folder)) for a in case.args]
    code, out, err, seconds, peak = run(args, folder, case.env)
    changed = damage(case, before, snapshot(folder))
    shutil.rmtree(folder, ignore_errors=True)
    lines = err.strip().splitlines()
    return {
        "kind": kind,
        "name": case.name,
        "code": code,
        "internal": "internal error" in err or "Traceback" in err,
        "long_error": code in (1, 2) and len(lines) != 1,
        "bad_json": code == 0 and "json" in args and "--out" not in args and not finite(out),
        "hang": code == -9,
        "changed": changed,
        "seconds": seconds,
        "peak": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="run only the first N cases")
    parser.add_argument("--every", type=int, default=1, help="run every K-th case only")
    parser.add_argument("--jobs", type=int, default=2, help="processes at once")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlmguide-fuzz-"))
    os.environ.setdefault("RLMGUIDE_CACHE_DIR", str(work / "cache"))
    # build the cache once, so the figures are of the commands
    code, _, err, seconds, _ = run(["sql", "SELECT 1"], work, {}, CACHE_TIMEOUT)
    print(f"cache built in {seconds:.0f} s (exit {code}{': ' + err.strip() if code else ''})")
    todo = commands()[: options.limit][:: options.every]
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
        results = list(pool.map(lambda item: one_case(*item[1], work, item[0]), enumerate(todo)))
    shutil.rmtree(work, ignore_errors=True)
    kinds = collections.Counter(r["kind"] for r in results)
    codes = collections.Counter(r["code"] for r in results)

    def named(flag: str) -> str:
        found = [f"{r['kind']}: {r['name']}" for r in results if r[flag]]
        return f"{len(found)} {found[:5]}"

    slowest = max(results, key=lambda r: r["seconds"])
    hungriest = max(results, key=lambda r: r["peak"])
    print(f"cases run: {len(results)} (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")")
    print("exit codes: " + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
    print(f"internal errors: {named('internal')}")
    print(f"errors not on one line: {named('long_error')}")
    print(f"exit 0 with non-finite or invalid JSON: {named('bad_json')}")
    print(f"hangs (killed at {TIMEOUT:.0f} s): {named('hang')}")
    print(f"user files changed or input run: {named('changed')}")
    print(f"worst time: {slowest['seconds']:.2f} s ({slowest['kind']}: {slowest['name']})")
    print(f"worst peak memory: {hungriest['peak']:.0f} MiB ({hungriest['kind']}: "
          f"{hungriest['name']})")  # fmt: skip
    print(f"wall time: {time.perf_counter() - started:.0f} s with {options.jobs} jobs")


if __name__ == "__main__":
    main()
