"""The plan atlas: `recommend` over a grid of common setups, one row per setup.

"For 64 H100s and a 32B model, what do I run?" is answered by looking the setup up instead of
writing a scenario. Each row is the top plan exactly as `rlmguide recommend` ranks it, or the
reason no plan fits: with recommend's launch check, where the atlas is given one (`Atlas`). The
rows depend on the records the search reads and on the code (cost, rules and the check's), so
they are cached under a digest of both (`atlas_rows`): a warm build reads the cache and
searches nothing. This module imports only the standard library at the top, because the
database's cache name includes `code_digest()` on the warm path of `rlmguide sql`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlmguide.rules import RECOMMEND_KINDS as READ_KINDS

REPO = Path(__file__).resolve().parent.parent
CODE_GLOBS = ("cost/*.py", "rules/*.py", "rules/records/*.yaml", "kb/*.py", "kb/schema/*.py")
"""Every module and rule file here can change a recommendation, so any edit recomputes: the
cost and rules code, and the loader and schema the records are read with (a scenario's
defaults are the schema's). The launch check's package is added to these (`code_files`)."""

TABLE = "atlas"
DENSE = ("qwen2.5-1.5b", "qwen2.5-7b", "qwen2.5-32b", "llama-3.1-70b", "llama-3.1-405b")
MOE = ("qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3")
MODELS = DENSE + MOE
"""Dense and mixture-of-experts policies from 1.5B to 671B parameters."""
GPUS = (8, 32, 128, 1024, 4096)
GPUS_PER_NODE = 8
ACCELERATORS = ("h100-sxm-80gb", "h200-sxm-141gb", "h20-96gb", "b200-sxm-180gb", "a100-sxm-80gb")
ALGORITHMS = ("grpo", "dapo", "ppo")

SAMPLES_PER_PROMPT = {"grpo": 16, "dapo": 16, "ppo": 1}
"""GRPO and DAPO sample groups of 16 (the design's example workload); PPO samples once per
prompt, its critic giving the baseline (examples/ppo-*.yaml)."""
PROMPTS = {"grpo": 512, "dapo": 512, "ppo": 1024}
"""Prompts per step on up to 512 GPUs; see `prompts_per_step`."""
TRAINED_PER_GPU = 8
"""Responses each GPU trains per optimizer step at least: a larger cluster takes a larger
batch, since every framework's data-parallel ranks split each mini-batch (constraint records
such as verl-train-batch-divides-over-dp)."""
COMMON_WORKLOAD = {
    "prompt_tokens": 1024,
    "response_tokens": 4096,
    "max_response_tokens": 16384,
    "minibatches_per_step": 4,
    "epochs": 1,
}


def prompts_per_step(algorithm: str, gpus: int) -> int:
    """The algorithm's prompts per step, grown with the cluster so that each of the step's
    mini-batches gives every GPU TRAINED_PER_GPU responses to train (powers of two)."""
    samples = SAMPLES_PER_PROMPT[algorithm]
    least = gpus * TRAINED_PER_GPU * COMMON_WORKLOAD["minibatches_per_step"] // samples
    return max(PROMPTS[algorithm], 1 << (max(least, 1) - 1).bit_length())


COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("model_id", "VARCHAR", "policy model (models.id)"),
    ("moe", "BOOLEAN", "true for a mixture of experts"),
    ("params_b", "DOUBLE", "total parameters of the policy, billions"),
    ("accelerator_id", "VARCHAR", "accelerators.id"),
    ("gpus", "BIGINT", "GPUs in the cluster (nodes x gpus_per_node)"),
    ("nodes", "BIGINT", "nodes of gpus_per_node GPUs"),
    ("algorithm_id", "VARCHAR", "algorithms.id (PPO: a critic of the policy's shape)"),
    (
        "prompts_per_step",
        "BIGINT",
        "prompts per RL step (grown with the cluster: 8 responses "
        "per GPU and optimizer step at least)",
    ),
    ("samples_per_prompt", "BIGINT", "responses per prompt (group size)"),
    ("response_tokens", "BIGINT", "mean response length, tokens (prompts 1,024; longest 16,384)"),
    ("feasible", "BOOLEAN", "false when no plan fits; `infeasible_reason` says why"),
    ("infeasible_reason", "VARCHAR", "the binding constraint when no plan fits"),
    ("placement", "VARCHAR", "colocated | partially-colocated | disaggregated"),
    ("execution", "VARCHAR", "sync | one-step-off | async | partial-rollout"),
    ("rollout_layout", "VARCHAR", "the rollout pool in short: GPUs, tp, pp, dp, ep"),
    ("train_layout", "VARCHAR", "the training pool in short: GPUs, tp, pp, cp, dp, ep, ZeRO"),
    ("rollout_gpus", "BIGINT", "GPUs of the rollout pool"),
    ("rollout_tp", "BIGINT", "rollout tensor parallelism"),
    ("train_gpus", "BIGINT", "GPUs of the training pool"),
    ("train_tp", "BIGINT", "training tensor parallelism"),
    ("train_pp", "BIGINT", "training pipeline parallelism"),
    ("train_zero", "BIGINT", "training ZeRO stage"),
    ("step_seconds", "DOUBLE", "predicted wall time of one RL step in steady state, seconds"),
    ("tokens_per_second", "DOUBLE", "prompt + response tokens trained per second, whole cluster"),
    ("bottleneck", "VARCHAR", "the stage that binds the step time"),
    ("memory_gib_rollout", "DOUBLE", "predicted memory per GPU of the rollout pool, GiB"),
    ("memory_gib_train", "DOUBLE", "predicted memory per GPU of the training pool, GiB"),
    ("frameworks", "VARCHAR[]", "frameworks whose claims and constraints allow the plan"),
    (
        "framework",
        "VARCHAR",
        "the first framework that launches the plan: released code, an "
        "export mapping first, then the newest release (null where no plan that fits is "
        "launchable: `no_launch_reason`)",
    ),
    ("launchable_by", "VARCHAR[]", "released frameworks that run the plan, in that order"),
    (
        "reference_parked_by",
        "VARCHAR[]",
        "those of `launchable_by` that run the plan with the frozen models parked on the host "
        "while training (ROLL, SkyRL: the plan's parked twin, within 2% of its step time)",
    ),
    (
        "launch_refused_by",
        "VARCHAR[]",
        "released frameworks whose claims allow the plan but whose export refuses it "
        "(`rlmguide recommend` says why)",
    ),
    (
        "ranked_for",
        "VARCHAR",
        "null where the default ranking's top plan is launchable; else the mapped framework "
        "whose own ranking (`rlmguide recommend --framework`) gave the row's plan: every "
        "runner of the default ranking's best plans refuses them at export",
    ),
    (
        "no_launch_reason",
        "VARCHAR",
        "null where a released framework launches the row's plan; else 'no launchable plan' "
        "and why: who refuses the best plan that fits at export, and what binds each mapped "
        "framework's own ranking",
    ),
    (
        "plan",
        "VARCHAR",
        "the plan as a scenario's `plan` block pins it, JSON: placement, execution and the "
        "pools' degrees, offload left to the search (a scenario with it exports this plan)",
    ),
    ("candidates", "BIGINT", "plans the search costed"),
)
DOC = (
    "The plan atlas: the top plan `rlmguide recommend` gives for each setup of a grid of "
    "models, cluster sizes, accelerators and algorithms (GRPO and DAPO: 512 prompts x 16 "
    "samples; PPO: 1,024 prompts x 1 sample; more on large clusters; verifier reward), a "
    "plan a released framework launches (one with an export mapping only where its export "
    "writes it), or why none fits or none is launchable."
)


@dataclass(frozen=True)
class Setup:
    model: str
    accelerator: str
    gpus: int
    algorithm: str

    @property
    def workload(self) -> dict[str, int]:
        return {
            "prompts_per_step": prompts_per_step(self.algorithm, self.gpus),
            "samples_per_prompt": SAMPLES_PER_PROMPT[self.algorithm],
        }

    def scenario(self) -> dict[str, Any]:
        return {
            "cluster": {
                "accelerator": self.accelerator,
                "nodes": self.gpus // GPUS_PER_NODE,
                "gpus_per_node": GPUS_PER_NODE,
            },
            "models": {"policy": self.model, "reward": "verifier"},
            "workload": {"algorithm": self.algorithm, **self.workload, **COMMON_WORKLOAD},
        }


def grid(records: dict[str, dict[str, Any]]) -> list[Setup]:
    """The setups whose model, accelerator and algorithm are all in the records, in a fixed
    order (a test knowledge base without them simply has a smaller atlas)."""
    return [
        Setup(model, accelerator, gpus, algorithm)
        for model, accelerator, gpus, algorithm in itertools.product(
            MODELS, ACCELERATORS, GPUS, ALGORITHMS
        )
        if model in records.get("model", {})
        and accelerator in records.get("accelerator", {})
        and algorithm in records.get("algorithm", {})
    ]


def _pool(layout: dict[str, Any], keys: Sequence[str]) -> str:
    shown = [f"{key} {layout[key]}" for key in keys if layout.get(key, 1) != 1]
    return " · ".join([f"{layout['gpus']} GPUs", *shown])


def pinned(plan: Mapping[str, Any]) -> dict[str, Any]:
    """A shown plan (a plan of `recommend`'s result) as a scenario's plan: its placement, mode
    and every degree its runners were judged on (offload, the frozen models' layout and the
    rest stay the export's to choose, as a framework's own launch does)."""
    rollout = {k: plan["rollout"][k] for k in ("gpus", "tp", "pp", "ep", "cp")}
    train = {
        k: plan["train"][k]
        for k in ("gpus", "tp", "pp", "cp", "ep", "etp", "zero", "recompute", "virtual_stages")
    }
    out = {
        "placement": plan["placement"],
        "execution": plan["execution"],
        "rollout": rollout,
        "train": train,
    }
    if plan["execution"] != "sync":
        out["max_staleness"] = plan["max_staleness"]
    return out


def plan_row(setup: Setup, catalog: Any, judges: Any = None, launch_check: Any = None) -> list[Any]:
    """One atlas row: the setup, then its top plan (or the reason none fits); `judges` are
    the catalog's compiled rules and constraints (rules.recommend.judges_of), where a caller
    searches many setups; `launch_check` is recommend's (rules.recommend.LaunchCheck) for the
    setup's algorithm."""
    from rlmguide.rules.recommend import NoFeasiblePlan, recommend, recommender_for
    from rlmguide.rules.scenario import parse_scenario, resolve

    model = catalog.records["model"][setup.model]
    workload = setup.workload
    head = [
        setup.model,
        model.moe is not None,
        round(model.params_total / 1e9, 1),
        setup.accelerator,
        setup.gpus,
        setup.gpus // GPUS_PER_NODE,
        setup.algorithm,
        workload["prompts_per_step"],
        workload["samples_per_prompt"],
        COMMON_WORKLOAD["response_tokens"],
    ]
    resolved = resolve(parse_scenario(setup.scenario(), "atlas"), catalog.records)
    try:
        recommender = recommender_for(resolved, catalog, judges, launch_check=launch_check)
        result = recommend(recommender, 1)
    except NoFeasiblePlan as exc:
        return [*head, False, str(exc), *[None] * (len(COLUMNS) - len(head) - 2)]
    plan = result["plans"][0]
    ro, tr = plan["rollout"], plan["train"]
    memory = plan["memory_gib_per_gpu"]
    return [
        *head,
        True,
        None,
        plan["placement"],
        plan["execution"],
        _pool(ro, ("tp", "pp", "dp", "ep")),
        _pool(tr, ("tp", "pp", "cp", "dp", "ep")) + f" · ZeRO {tr['zero']}",
        ro["gpus"],
        ro["tp"],
        tr["gpus"],
        tr["tp"],
        tr["pp"],
        tr["zero"],
        round(plan["step_seconds"], 3),
        round(plan["tokens_per_second"], 1),
        plan["bottleneck"],
        round(memory["rollout"], 2),
        round(memory["train"], 2),
        list(plan["frameworks"]),
        next(iter(plan["launchable_by"]), None),
        list(plan["launchable_by"]),
        list(plan.get("reference_parked_by", [])),
        sorted(plan["launch_refused_by"]),
        result.get("ranked_for", {}).get("framework"),
        result.get("no_launchable_plan"),
        json.dumps(pinned(plan), separators=(",", ":")),
        result["search"]["candidates"],
    ]


def _weight(setup: Setup, moe: bool) -> float:
    """A search's rough cost, to share the setups evenly: it grows with the cluster (more
    layouts and splits, up to the coarse grid above 512 GPUs) and is several times larger for
    a mixture of experts."""
    return (1 + min(setup.gpus, 512) / 64) * (4 if moe else 1)


def _shares(setups: list[Setup], catalog: Any, workers: int) -> list[list[int]]:
    """The setups' indices dealt to `workers` (heaviest first, each to the lightest share)."""
    weights = [_weight(s, catalog.records["model"][s.model].moe is not None) for s in setups]
    shares: list[list[int]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for i in sorted(range(len(setups)), key=lambda i: -weights[i]):
        lightest = loads.index(min(loads))
        shares[lightest].append(i)
        loads[lightest] += weights[i]
    return [share for share in shares if share]


def launch_checks(path: str | None, catalog: Any) -> dict[str, Any]:
    """Per algorithm of the grid, recommend's launch check as the function `path` names
    ("module:function", called with the catalog and the algorithm) makes it; none without.

    The check is export's (export.writer.launch_check) and rules may not import export
    (DESIGN.md's dependency direction): the application layer that builds the atlas names it
    (rlmguide.knowledge), and it is imported here by that name, which, unlike a function, the
    worker processes can also be handed (as JSON)."""
    if path is None:
        return {}
    module, _, name = path.partition(":")
    factory = getattr(importlib.import_module(module), name)
    return {a: factory(catalog, a) for a in ALGORITHMS if a in catalog.records.get("algorithm", {})}


def compute(
    roots: Sequence[Any], workers: int | None = None, launch_check: str | None = None
) -> list[list[Any]]:
    """Every row of the grid, searched on up to `workers` processes (default: the cores),
    with the launch check `launch_check` names (see `launch_checks`).

    Processes, since the search is numpy and Python in about equal parts and threads would
    share one interpreter lock. Each is a fresh `python -m rules.atlas` fed its setups as
    JSON, not a multiprocessing child: those re-run the caller's main script, which fails
    (or runs twice) for a script read from standard input or without a main guard.
    """
    import subprocess
    import sys

    from rlmguide.kb.load import load_catalog
    from rlmguide.rules.recommend import judges_of

    catalog = load_catalog(roots, READ_KINDS)
    setups = grid(catalog.records)
    workers = min(workers or os.cpu_count() or 1, len(setups))
    if workers <= 1:
        judges = judges_of(catalog)
        checks = launch_checks(launch_check, catalog)
        return [plan_row(s, catalog, judges, checks.get(s.algorithm)) for s in setups]
    shares = _shares(setups, catalog, workers)
    # The workers import what this process imported: its path first (a checkout run by
    # site/hooks.py, or pytest's root), then any the caller set.
    path = os.pathsep.join(filter(None, [*sys.path, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    jobs = []
    for share in shares:
        job = {
            "roots": [[str(r), k] for r, k in roots],
            "setups": [vars(setups[i]) for i in share],
            "launch_check": launch_check,
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "rlmguide.rules.atlas"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(job).encode())
        process.stdin.close()
        jobs.append(process)
    rows: dict[int, list[Any]] = {}
    for share, process in zip(shares, jobs, strict=True):
        assert process.stdout is not None
        output = process.stdout.read()
        if process.wait() != 0:
            raise RuntimeError(f"an atlas worker failed (exit {process.returncode})")
        rows.update(zip(share, json.loads(output), strict=True))
    return [rows[i] for i in range(len(setups))]


def _work() -> None:
    """A worker: the rows of the setups given as JSON on standard input, as JSON out."""
    import sys

    from rlmguide.kb.load import load_catalog
    from rlmguide.rules.recommend import judges_of

    job = json.load(sys.stdin)
    catalog = load_catalog([(Path(r), k) for r, k in job["roots"]], READ_KINDS)
    judges = judges_of(catalog)
    checks = launch_checks(job["launch_check"], catalog)
    setups = [Setup(**s) for s in job["setups"]]
    rows = [plan_row(s, catalog, judges, checks.get(s.algorithm)) for s in setups]
    sys.stdout.write(json.dumps(rows))


def code_files(launch_check: str | None = None) -> list[Path]:
    """The code the rows are computed by: CODE_GLOBS, and the package of the launch check's
    module (located, not imported: this runs on the warm path)."""
    files = [path for pattern in CODE_GLOBS for path in sorted(REPO.glob(pattern))]
    if launch_check is not None:
        package = launch_check.partition(":")[0].rpartition(".")[0]
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, launch_check
        for folder in spec.submodule_search_locations:
            files += sorted(Path(folder).glob("*.py"))
    return files


def code_digest(launch_check: str | None = None) -> str:
    """A digest of the code the rows are computed by (`code_files`, this grid included): part
    of every cache name that holds atlas rows.

    Remembered per the files' sizes and modification times (as `kb.paths.fast_content_hash`
    does for records): reading 300 KB of code took 20-60 ms of every warm `rlmguide sql`.
    """
    from rlmguide.kb.cache import DIGEST, CacheError, read_name, write_atomic
    from rlmguide.kb.paths import cache_dir

    files = code_files(launch_check)
    signature = hashlib.blake2b(digest_size=12)
    for path in files:
        info = path.stat()
        signature.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    memo = cache_dir() / "signatures" / f"code-{signature.hexdigest()}"
    with contextlib.suppress(CacheError):
        return read_name(memo, DIGEST)
    digest = hashlib.blake2b(digest_size=12)
    for path in files:
        digest.update(path.relative_to(REPO).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    with contextlib.suppress(OSError):  # a read-only cache only costs reading the code again
        write_atomic(memo, digest.hexdigest().encode("ascii"))
    return digest.hexdigest()


def input_digest(roots: Sequence[Any], launch_check: str | None = None) -> str:
    """A digest of what the rows depend on: the records of the kinds read and the code."""
    from rlmguide.kb.paths import PLURALS, record_bytes, record_files

    folders = {PLURALS[kind] for kind in READ_KINDS}
    digest = hashlib.blake2b(digest_size=12)
    digest.update(code_digest(launch_check).encode())
    for name, path in record_files(roots):
        if name.split("/")[0] in folders:
            digest.update(name.encode() + b"\0" + record_bytes(path) + b"\0")
    return digest.hexdigest()


def atlas_rows(roots: Sequence[Any], launch_check: str | None = None) -> list[list[Any]]:
    """The atlas for the records under `roots`, with the launch check `launch_check` names,
    from the cache when its inputs are unchanged.

    The cache file is sealed with a checksum and read as JSON data only; a damaged one is
    reported and recomputed, and a read-only cache only costs the computation.
    """
    from rlmguide.kb.cache import CacheError, CacheMissing, read_sealed, warn, write_sealed
    from rlmguide.kb.paths import cache_dir

    path = cache_dir() / "atlas" / f"atlas-{input_digest(roots, launch_check)}.json"
    try:
        rows = json.loads(read_sealed(path))
        if isinstance(rows, list) and all(
            isinstance(r, list) and len(r) == len(COLUMNS) for r in rows
        ):
            return rows
        warn(f"ignoring cache file {path}: not atlas rows; recomputing the atlas")
    except CacheMissing:
        pass
    except (CacheError, ValueError) as exc:
        warn(f"ignoring cache file {path}: {exc}; recomputing the atlas")
    rows = compute(roots, launch_check=launch_check)
    with contextlib.suppress(OSError):  # a read-only cache: the next build computes it again
        write_sealed(path, json.dumps(rows, separators=(",", ":")).encode())
    return rows


@dataclass(frozen=True)
class Atlas:
    """The atlas as a table of the knowledge base (a `kb.derived.Derivation`), its plans
    judged by the launch check `launch_check` names (see `launch_checks`; none: claims and
    constraints alone)."""

    launch_check: str | None = None

    def code_digest(self) -> str:
        return code_digest(self.launch_check)

    def tables(self, roots: Sequence[Any]) -> list[Any]:
        from rlmguide.kb.derived import Table

        return [Table(TABLE, DOC, COLUMNS, atlas_rows(roots, self.launch_check))]


if __name__ == "__main__":
    _work()
