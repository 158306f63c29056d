"""`rlmguide review` of real launch scripts end to end: verl's (shell expansion and Hydra
overrides) and slime's (a bash script that sources its model's flags through the BASH_SOURCE
idiom, with `if` blocks and argparse flags), each read through its mapping record, the plan
read estimated, the framework's best plan found and each change toward it costed.

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

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures" / "review"
CASES = (
    # script, accelerator, prompt tokens (slime's scripts bound no prompt: the slime deployment
    # records' 2048)
    (FIXTURES / "verl-run_qwen3moe-30b_megatron_96gb.sh", "h20-96gb", None),
    (FIXTURES / "slime-624b824" / "scripts" / "run-qwen3-30B-A3B.sh", "h100-sxm-80gb", 2048),
)


def bench(script: Path, accelerator: str, prompt_tokens: int | None, repeats: int) -> None:
    inside = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = review(script, hardware=Hardware(accelerator, prompt_tokens=prompt_tokens))
        inside.append(time.perf_counter() - start)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "rlmguide", "review", str(script), "--accelerator",
               accelerator, "--format", "json"]  # fmt: skip
    if prompt_tokens is not None:
        command += ["--prompt-tokens", str(prompt_tokens)]
    outside = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        outside.append(time.perf_counter() - start)
    print(f"script: {script.name} ({result['framework']}, {accelerator})")
    print(f"keys understood: {len(result['understood'])}, not mapped: {len(result['unmapped'])}")
    print(f"changes costed: {len(result['changes'])}")
    print(f"in process: median {statistics.median(inside):.2f} s over {repeats}")
    print(f"end to end: median {statistics.median(outside):.2f} s over {repeats}")


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for script, accelerator, prompt_tokens in CASES:
        bench(script, accelerator, prompt_tokens, repeats)


if __name__ == "__main__":
    main()
