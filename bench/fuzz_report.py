"""Every case of the fuzz corpus and every reproducer of issue 19 as its own `rlmguide` process.

Run: python bench/fuzz_report.py [--limit N]. Prints how the cases ended (exit codes, internal
errors, non-finite output) and the worst wall time and peak memory of any single command, the
figures the issue asks to quote. Each process runs under a 60 s timeout.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from fuzz_corpus import BASE_FILE, REPRODUCERS, cases

TIMEOUT = 60.0


def run(args: list[str]) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, seconds, peak MiB) of one process, its own rusage via wait4."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "rlmguide", *args], stdout=out, stderr=err, text=True
        )
        killer = threading.Timer(TIMEOUT, process.kill)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="run only the first N cases")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlmguide-fuzz-"))
    commands: list[tuple[str, list[str]]] = []
    for i, case in enumerate(cases()[: options.limit]):
        path = work / f"case-{i:03d}.yaml"
        path.write_bytes(case.text)
        commands.append((case.name, ["recommend", str(path), "--format", "json", "--top", "1"]))
    non_utf8 = work / "latin1.yaml"
    non_utf8.write_bytes(BASE_FILE.read_bytes() + b"# caf\xe9\n")
    for name, args in REPRODUCERS.items():
        commands.append((name, [a.replace("{non_utf8}", str(non_utf8)) for a in args]))
    os.environ.setdefault("RLMGUIDE_CACHE_DIR", str(work / "cache"))
    run(["sql", "SELECT 1"])  # build the cache once, so the figures are of the commands

    codes: collections.Counter[int] = collections.Counter()
    internal, not_json, slowest, hungriest = [], [], (0.0, ""), (0.0, "")
    for name, args in commands:
        code, out, err, seconds, peak = run(args)
        codes[code] += 1
        if "internal error" in err or "Traceback" in err:
            internal.append(name)
        if code == 0 and "json" in args and not finite(out):
            not_json.append(name)
        slowest = max(slowest, (seconds, name))
        hungriest = max(hungriest, (peak, name))
    print(
        f"cases run: {len(commands)} ({len(commands) - len(REPRODUCERS)} corpus, "
        f"{len(REPRODUCERS)} reproducers)"
    )
    print("exit codes: " + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
    print(f"internal errors: {len(internal)} {internal[:5]}")
    print(f"exit 0 with non-finite or invalid JSON: {len(not_json)} {not_json[:5]}")
    print(f"worst time: {slowest[0]:.2f} s ({slowest[1]})")
    print(f"worst peak memory: {hungriest[0]:.0f} MiB ({hungriest[1]})")


if __name__ == "__main__":
    main()
