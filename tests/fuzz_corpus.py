"""A deterministic corpus of mutated scenarios: every field of the small example made hostile.

Shared by tests/test_fuzz.py (run in-process on every test run) and bench/fuzz_report.py (each
case as its own process, reporting the worst time and memory of any single command).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).parent.parent
BASE_FILE = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
CORPUS_SIZE = 320
SEED = 19

HOSTILE: list[Any] = [
    0,
    -1,
    1,
    3,
    7,
    0.5,
    2**31,
    2**53 + 1,
    2**64,
    10**30,
    1e-320,
    5e-324,
    1e308,
    1.7976931348623157e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    "x",
    "",
    "[/]",
    "[bold]markup[/bold]",
    "1e3",
    "ᐅ" * 3,
    None,
    True,
    [],
    [1, 2],
    {},
    {"nested": {"deeper": [1]}},
]
"""Values a careless or hostile user writes: signs, powers of two past int64 and the exact
float limit, denormals, the infinities, NaN, text (markup among it), the wrong shapes."""


@dataclass(frozen=True)
class Case:
    name: str
    text: bytes
    """The scenario file's bytes (some mutations are below YAML: bytes, truncation)."""


def base() -> dict[str, Any]:
    return yaml.safe_load(BASE_FILE.read_text())


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(node, dict):
        for key, child in node.items():
            yield (*prefix, key)
            yield from _paths(child, (*prefix, key))


EXTRA_PATHS = [
    ("plan", "placement"),
    ("plan", "execution"),
    ("plan", "max_staleness"),
    ("plan", "rollout", "tp"),
    ("plan", "train", "tp"),
    ("plan", "train", "pp"),
    ("plan", "train", "ep"),
    ("plan", "train", "zero"),
    ("plan", "train", "lora_rank"),
    ("cluster", "scale_out_gbps_per_gpu"),
    ("cluster", "scale_up_domain_gpus"),
    ("cluster", "host_memory_gib_per_node"),
    ("efficiency", "decode_hbm"),
    ("efficiency", "train_compute"),
    ("models", "context_tokens"),
]


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value


def _dump(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode("utf-8")


def cases() -> list[Case]:
    """`CORPUS_SIZE` cases, the same on every run: one value swapped, a field dropped or added,
    bytes flipped, the file cut short, keys repeated."""
    rng = random.Random(SEED)
    scenario = base()
    paths = [*_paths(scenario), *EXTRA_PATHS]
    found: list[Case] = []
    for path in paths:  # every path with every hostile value would be 1,000+; sample them
        for value in rng.sample(HOSTILE, 8):
            mutated = copy.deepcopy(scenario)
            _set(mutated, path, value)
            found.append(Case(f"{'.'.join(path)}={value!r}"[:80], _dump(mutated)))
    text = _dump(scenario)
    while len(found) < CORPUS_SIZE:
        kind = rng.choice(["drop", "unknown", "flip", "cut", "repeat", "pair"])
        mutated = copy.deepcopy(scenario)
        if kind == "drop":
            path = rng.choice(paths[: len(list(_paths(scenario)))])
            node = mutated
            for part in path[:-1]:
                node = node[part]
            node.pop(path[-1], None)
            found.append(Case(f"drop {'.'.join(path)}", _dump(mutated)))
        elif kind == "unknown":
            path = rng.choice(paths)
            _set(mutated, (*path[:-1], "colour"), "red")
            found.append(Case(f"unknown field beside {'.'.join(path)}", _dump(mutated)))
        elif kind == "flip":
            at = rng.randrange(len(text))
            flipped = text[:at] + bytes([rng.randrange(256)]) + text[at + 1 :]
            found.append(Case(f"byte {at} replaced", flipped))
        elif kind == "cut":
            at = rng.randrange(len(text))
            found.append(Case(f"cut at byte {at}", text[:at]))
        elif kind == "repeat":
            line = rng.choice(text.splitlines(keepends=True))
            found.append(Case(f"line repeated: {line.strip()[:40]!r}", text + line))
        else:
            for path in rng.sample(paths, 2):
                _set(mutated, path, rng.choice(HOSTILE))
            found.append(Case(f"two values swapped ({len(found)})", _dump(mutated)))
    return found[:CORPUS_SIZE] if len(found) >= CORPUS_SIZE else found


REPRODUCERS: dict[str, list[str]] = {
    "non-utf8 scenario": ["recommend", "{non_utf8}"],
    "gpus-per-node overflow": ["recommend", str(BASE_FILE), "--gpus-per-node", "9007199254740993"],
    "nodes 100000": ["recommend", str(BASE_FILE), "--nodes", "100000"],
    "infinity field": ["recommend", str(BASE_FILE), "--set", "cluster.scale_out_gbps_per_gpu=.inf"],
    "denormal efficiency": ["recommend", str(BASE_FILE), "--set", "efficiency.decode_hbm=5e-324"],
    "uuid json": ["sql", "SELECT uuid() AS u", "--format", "json"],
    "blob json": ["sql", "SELECT '\\xAA'::BLOB AS b", "--format", "json"],
    "interval json": ["sql", "SELECT INTERVAL 3 DAY AS i", "--format", "json"],
    "time json": ["sql", "SELECT TIME '12:00:00' AS t", "--format", "json"],
    "nan json": ["sql", "SELECT 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS i", "--format", "json"],
    "update extensions": ["sql", "UPDATE EXTENSIONS"],
    "markup value": ["sql", "SELECT 'a [/] b' AS x"],
    "duplicate columns": ["sql", "SELECT 1 AS a, 2 AS a", "--format", "json"],
    "recursive cte": [
        "sql",
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t",
        "--timeout",
        "2",
    ],
    "range 1e13": ["sql", "SELECT count(*) FROM range(10000000000000::BIGINT)", "--timeout", "2"],
}
"""The issue's reproducers as command lines (`{non_utf8}` is a file the caller writes)."""
