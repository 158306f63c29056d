"""Plans the cost core evaluates per second: one plan per call, and one call on many plans.

Run: python bench/bench_plans.py [--plans N] [--repeat R] [--single S] [--model NAME]

The plans are what `recommend` searches: every valid layout of a policy on a 4-node x 8 H100
cluster (placement, execution mode, staleness, rollout gpus/tp/pp/ep, train gpus/tp/pp/cp/ep,
ZeRO stage, recompute, prefix caching), sampled with replacement up to N rows. Figures are
medians over R timed runs after one warm-up run, in this process.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
from rlmguide.cost import Needs, PlanTable, evaluate, valid_rows
from rlmguide.kb.schema import Workload
from rlmguide.kb.schema.specs import AcceleratorFigures, Architecture

# H100 SXM datasheet figures; Qwen2.5-7B and Qwen3-30B-A3B configs (published numbers).
H100 = AcceleratorFigures(
    memory_gib=80, hbm_tbytes_per_s=3.35, bf16_dense_tflops=989, scale_up_gbytes_per_s=900,
    scale_up_domain_gpus=8, scale_out_gbits_per_s=400,
)  # fmt: skip
MODELS = {
    "qwen2.5-7b": Architecture(
        layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944, vocab=152064,
        max_context_tokens=131072, qkv_bias=True,
    ),
    "qwen3-30b-a3b": Architecture(
        layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, ffn=6144, vocab=151936,
        max_context_tokens=40960,
        moe=dict(experts=128, experts_per_token=8, expert_ffn=768),
    ),
}  # fmt: skip
WORKLOAD = Workload(
    prompts_per_step=512, samples_per_prompt=16, prompt_tokens=1024, response_tokens=4096,
    max_response_tokens=16384, minibatches_per_step=4,
)  # fmt: skip
NODES, GPUS_PER_NODE = 4, 8


def candidate_plans(arch: Architecture) -> PlanTable:
    """Every combination of the searched fields, filtered to valid layouts."""
    gpus = NODES * GPUS_PER_NODE
    counts = [8, 16, 24, 32]
    degrees = [1, 2, 4, 8]
    eps = degrees if arch.moe else [1]
    rows: list[tuple[object, ...]] = []
    for r_gpus, r_tp, r_pp, r_ep in itertools.product(counts, degrees, [1, 2, 4], eps):
        if r_gpus % (r_tp * r_pp):
            continue
        for t_gpus, t_tp, t_pp, t_cp, t_ep in itertools.product(
            counts, degrees, [1, 2, 4], [1, 2], eps
        ):
            if t_gpus % (t_tp * t_pp * t_cp):
                continue
            colocated = r_gpus == t_gpus
            if not colocated and r_gpus + t_gpus > gpus:
                continue
            placements = ["colocated", "disaggregated"] if colocated else ["disaggregated"]
            for placement in placements:
                executions = (
                    ["sync", "partial-rollout"]
                    if placement == "colocated"
                    else ["sync", "one-step-off", "async", "partial-rollout"]
                )
                for execution in executions:
                    for zero, recompute in itertools.product(
                        range(4), ["none", "selective", "full"]
                    ):
                        rows.append((placement, execution, r_gpus, r_tp, r_pp, r_ep, t_gpus,
                                     t_tp, t_pp, t_cp, t_ep, zero, recompute))  # fmt: skip
    names = ("placement", "execution", "rollout_gpus", "rollout_tp", "rollout_pp", "rollout_ep",
             "train_gpus", "train_tp", "train_pp", "train_cp", "train_ep", "train_zero",
             "train_recompute")  # fmt: skip
    columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    n = len(rows)
    rng = np.random.default_rng(0)
    table = PlanTable.from_arrays(
        **columns,
        staleness=rng.integers(1, 5, n),
        prefix_caching=rng.integers(0, 2, n).astype(bool),
    )
    return table.take(valid_rows(table, arch, cluster_gpus=gpus))


def timed(fn: object, repeat: int) -> float:
    fn()  # type: ignore[operator]  # warm-up: first-touch page faults, numpy dispatch caches
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plans", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--single", type=int, default=300, help="single-plan calls to time")
    parser.add_argument("--model", choices=sorted(MODELS), default="qwen2.5-7b")
    args = parser.parse_args()
    arch = MODELS[args.model]
    candidates = candidate_plans(arch)
    picks = np.random.default_rng(1).integers(0, len(candidates), args.plans)
    table = candidates.take(picks)

    def batched() -> object:
        return evaluate(H100, arch, WORKLOAD, table, needs=Needs(), nodes=NODES,
                        gpus_per_node=GPUS_PER_NODE)  # fmt: skip

    singles = [candidates.take([i]) for i in picks[: args.single]]

    def one_by_one() -> None:
        for plan in singles:
            evaluate(H100, arch, WORKLOAD, plan, needs=Needs(), nodes=NODES,
                     gpus_per_node=GPUS_PER_NODE)  # fmt: skip

    batch_seconds = timed(batched, args.repeat)
    single_seconds = timed(one_by_one, max(1, args.repeat // 2))
    feasible = int(np.count_nonzero(batched().feasible))  # type: ignore[attr-defined]
    cluster = f"{NODES} x {GPUS_PER_NODE} H100"
    print(f"model {args.model}, {cluster}, {len(candidates)} distinct valid plans")
    rate = args.plans / batch_seconds
    print(
        f"batched: {args.plans} plans in {batch_seconds:.3f} s -> {rate:,.0f} plans/s "
        f"(median of {args.repeat}; {feasible} fit in memory)"
    )
    per_call = single_seconds / len(singles)
    print(
        f"single:  {len(singles)} calls in {single_seconds:.3f} s -> "
        f"{1 / per_call:,.0f} plans/s ({per_call * 1e3:.2f} ms per call)"
    )
    target = args.plans / batch_seconds >= 100_000
    print(f"target >= 100,000 plans/s batched: {'met' if target else 'NOT met'}")


if __name__ == "__main__":
    main()
