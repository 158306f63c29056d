"""A deterministic corpus of hostile input: every field of the small example made hostile
(`cases`), and issue 30's runs over review scripts, recipes, flags and outputs, each in a
sandbox with stand-ins for the user's files (`runs`).

Shared by tests/test_fuzz.py (in process: the scenarios and a sample of the runs) and
bench/fuzz_report.py (every case as its own process, reporting exit codes, hangs, files changed
and the worst time and memory of any single command).
"""

from __future__ import annotations

import copy
import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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


# --- issue 30: commands over hostile files, flags and outputs, each in a sandbox -------------


@dataclass(frozen=True)
class Fifo:
    """A named pipe nobody writes or reads."""


@dataclass(frozen=True)
class Sparse:
    """A file of `size` bytes that takes no disk."""

    size: int


@dataclass(frozen=True)
class Link:
    """A symbolic link to `target` (`{dir}` is the sandbox)."""

    target: str


FileSpec = bytes | Fifo | Sparse | Link


@dataclass(frozen=True)
class Run:
    """One command in a sandbox folder (`{dir}` in its arguments): the files it is given, the
    environment it adds, and the sandbox paths it may write (its `--out`, `--plot`, ...).
    Everything else in the sandbox, the user's files among it, must be left as it was."""

    name: str
    args: tuple[str, ...]
    files: dict[str, FileSpec] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()


USER_FILES = {"user/notes.txt": b"keep me\n", "user/data/keep.csv": b"a,b\n1,2\n"}
"""What stands for the user's own files in every sandbox."""
EXECUTED = "EXECUTED"
"""The file a command in a reviewed file would create if anything in it were run."""
FIXTURES = REPO / "tests" / "fixtures" / "review"
SCRIPTS = (
    "verl-run_qwen2.5-32b.sh",
    "verl-run_qwen3moe-30b_megatron_96gb.sh",
    "openrlhf-train_ppo_llama_ray.sh",
    "openrlhf-train_reinforce_llama_ray_hybrid_engine.sh",
)
ACCELERATOR = {"verl-run_qwen2.5-32b.sh": "a100-sxm-80gb"}
NEMO = "nemo-rl-5fb5889/examples/configs"
RECIPE = "recipes/llm/performance/grpo-qwen3-235b-16n8g.yaml"

RUN_ANYTHING = [
    "A=$(touch EXECUTED)",
    "touch EXECUTED",
    "`touch EXECUTED`",
    'eval "touch EXECUTED"',
    "source <(echo touch EXECUTED)",
    "exec touch EXECUTED",
    "trap 'touch EXECUTED' EXIT",
    'python3 -c \'open("EXECUTED", "w")\'',
    "cat > EXECUTED <<EOF\nx\nEOF",
    "A=${B:-$(touch EXECUTED)}",
    "[ -f x ] && touch EXECUTED || touch EXECUTED",
    "if touch EXECUTED; then A=1; fi",
    "rm -rf user",
    "A=$(( $(touch EXECUTED) + 1 ))",
]
"""Lines that run something when bash runs them; review must run none of them."""


def _shell_bombs(rng: random.Random) -> list[str]:
    depth = rng.choice([3, 17, 70, 400, 3000])
    terms = rng.choice([10, 1000, 100_000])
    return [
        "A=" + "${X:-" * depth + "x" + "}" * depth,
        "A=$((9**9**9))",
        "A=$((1/0))",
        "A=$((2**64 + 0x" + "f" * rng.choice([4, 40]) + "))",
        "A=$((" + "+".join(["1"] * terms) + "))",
        "A=$((" + "(" * depth + "1" + ")" * depth + "))",
        "A=x\n" + "A=$A$A\n" * rng.choice([5, 25, 40]),
        "".join(f'V{i}="{"+".join([f"V{i + 1}"] * 10)}"\n' for i in range(8)) + "A=$((V0))",
        "if true; then\n" * depth + "A=1\n" + "fi\n" * depth,
        "if true; then A=1",
        "fi\nelse\nelif\nthen",
        'A="unbalanced',
        "A='unbalanced",
        "A=$(",
        "A=${",
        "A=(one two",
        "A=" + "x" * rng.choice([10_000, 900_000]),
        "A=" + "$B" * rng.choice([1000, 400_000]),
        "\x00\x01\x1b[31m",
        "for i in 1 2; do\n" * depth + "done\n" * depth,
    ]


SOURCED = {
    "a FIFO": Fifo(),
    "/dev/zero": Link("/dev/zero"),
    "/proc/self/environ": Link("/proc/self/environ"),
    "2 GB": Sparse(2 * 2**30),
    "a folder": Link("{dir}/user"),
    "itself": b"source env.sh\nsource env.sh\n",
    "a loop": Link("{dir}/env.sh"),
}


NUMBER = re.compile(rb"(?<=[= ])\d+\b")
"""A number a launch gives a key (`key=8` or `--flag 8`)."""


def _hostile_number(rng: random.Random) -> str:
    return rng.choice(
        [
            "1" + "0" * 400,
            "9" * 50_000,
            "1e400",
            "-1",
            "0",
            "nan",
            "inf",
            "-inf",
            "true",
            "[1,2]",
            "''",
            "x",
            "0x10",
            "1.5",
            str(2**63),
            str(2**64),
        ]
    )


def review_runs(rng: random.Random, count: int) -> list[Run]:
    """Real launch scripts with hostile lines, sourced files, values, bytes and flags."""
    runs: list[Run] = []
    while len(runs) < count:
        name = rng.choice(SCRIPTS)
        text = (FIXTURES / name).read_bytes()
        lines = text.splitlines(keepends=True)
        files: dict[str, FileSpec] = {}
        kind = rng.choice(["run", "bomb", "bomb", "source", "number", "bytes", "flags"])
        label = kind
        if kind in ("run", "bomb"):
            snippet = rng.choice(RUN_ANYTHING if kind == "run" else _shell_bombs(rng))
            at = rng.randrange(len(lines) + 1)
            lines.insert(at, snippet.encode("utf-8", "surrogateescape") + b"\n")
            label = f"{kind}: {snippet[:40]!r} at line {at}"
        elif kind == "source":
            what = rng.choice(list(SOURCED))
            files["env.sh"] = SOURCED[what]
            lines.insert(rng.randrange(len(lines) + 1), b"source env.sh\n")
            label = f"source {what}"
        elif kind == "number":
            numbers = [i for i, line in enumerate(lines) if NUMBER.search(line)]
            i = rng.choice(numbers)
            value = _hostile_number(rng).encode()
            lines[i] = NUMBER.sub(value.replace(b"\\", b"\\\\"), lines[i], count=1)
            label = f"value {value[:20]!r} on line {i}"
        elif kind == "bytes":
            joined = b"".join(lines)
            at = rng.randrange(len(joined))
            how = rng.choice(["flip", "cut", "repeat"])
            if how == "flip":
                joined = joined[:at] + bytes([rng.randrange(256)]) + joined[at + 1 :]
            elif how == "cut":
                joined = joined[:at]
            else:
                joined += rng.choice(lines) * rng.choice([2, 200])
            lines = [joined]
            label = f"{how} at byte {at}"
        files["run.sh"] = b"".join(lines)
        flags = ["--accelerator", ACCELERATOR.get(name, "h100-sxm-80gb")]
        if kind == "flags":
            option = rng.choice(
                [
                    "--nodes",
                    "--gpus-per-node",
                    "--prompt-tokens",
                    "--accelerator",
                    "--policy",
                    "--framework",
                    "--format",
                ]
            )
            value = rng.choice([_hostile_number(rng), "h100", "verl", "json", "[/]", "\x1b[2J"])
            flags += [option, value]
            label = f"{option} {value[:20]!r}"
        runs.append(Run(f"review {name}: {label}"[:90], ("review", "{dir}/run.sh", *flags), files))
    return runs


RECIPE_VALUES = [
    ".inf", "-.inf", ".nan", "1" + "0" * 400, "9" * 50_000, "true", "[1, 2]", "{a: 1}", "''",
    "-1", "0", "1e400", "*x", "!!python/object:os.system", "&a [*a]",
]  # fmt: skip


def recipe_runs(rng: random.Random, count: int) -> list[Run]:
    """A NeMo-RL recipe (and its defaults chain) with hostile values, chains and bytes."""
    tree = {
        str(p.relative_to(FIXTURES / NEMO)): p.read_bytes()
        for p in (FIXTURES / NEMO).rglob("*.yaml")
    }
    runs: list[Run] = []
    while len(runs) < count:
        files: dict[str, FileSpec] = {f"configs/{k}": v for k, v in tree.items()}
        recipe = f"configs/{RECIPE}"
        text = tree[RECIPE]
        kind = rng.choice(["value", "defaults", "aliases", "interpolation", "bytes", "shape"])
        if kind == "value":
            lines = text.splitlines(keepends=True)
            i = rng.choice([n for n, line in enumerate(lines) if re.search(rb": \S", line)])
            value = rng.choice(RECIPE_VALUES).encode()
            lines[i] = re.sub(rb": \S.*", b": " + value, lines[i], count=1)
            text, label = b"".join(lines), f"value {value[:20]!r} on line {i}"
        elif kind == "defaults":
            target = rng.choice(["fifo", "zero", "sparse", "missing", "self", "diamond", "chain",
                                 "number", "list-of-maps"])  # fmt: skip
            spec = {
                "fifo": "base.yaml", "zero": "base.yaml", "sparse": "base.yaml",
                "missing": "no-such.yaml", "self": "recipe.yaml", "diamond": "d0.yaml",
                "chain": "c0.yaml", "number": "123", "list-of-maps": "[{a: 1}]",
            }[target]  # fmt: skip
            files["configs/base.yaml"] = {
                "fifo": Fifo(),
                "zero": Link("/dev/zero"),
                "sparse": Sparse(3 * 2**30),
            }.get(target, b"x: 1\n")
            for level in range(30):
                files[f"configs/d{level}.yaml"] = (
                    f"defaults: [d{level + 1}.yaml, d{level + 1}.yaml]\n".encode()
                )
                files[f"configs/c{level}.yaml"] = f"defaults: c{level + 1}.yaml\n".encode()
            files["configs/d30.yaml"] = files["configs/c30.yaml"] = b"x: 1\n"
            recipe = "configs/recipe.yaml"
            text, label = (
                f"defaults: {spec}\n".encode() + text.split(b"\n", 3)[-1],
                f"defaults {target}",
            )
        elif kind == "aliases":
            bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
                f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)
            )
            text, label = text + bomb.encode(), "alias bomb"
        elif kind == "interpolation":
            n = rng.choice([3, 60, 5000])
            how = rng.choice(["double", "chain", "loop"])
            if how == "double":
                extra = "k0: xx\n" + "".join(
                    f'k{i}: "${{k{i - 1}}}${{k{i - 1}}}"\n' for i in range(1, n)
                )
            elif how == "chain":
                extra = "k0: 1\n" + "".join(f'k{i}: "${{k{i - 1}}}"\n' for i in range(1, n))
            else:
                extra = 'k0: "${k1}"\nk1: "${k0}"\n'
            text, label = text + extra.encode(), f"interpolation {how} {n}"
        elif kind == "bytes":
            at = rng.randrange(len(text))
            text = text[:at] + bytes([rng.randrange(256)]) + text[at + 1 :]
            label = f"byte {at} replaced"
        else:
            text = rng.choice([b"- a\n- b\n", b"just text\n", b"", b"[" * 5000, b"\t- x\n"])
            label = f"shape {text[:12]!r}"
        files[recipe] = text
        args = ("review", "{dir}/" + recipe, "--accelerator", "h100-sxm-80gb",
                "--prompt-tokens", "128")  # fmt: skip
        runs.append(Run(f"recipe: {label}"[:90], args, files))
    return runs


SET_PATHS = ["cluster.nodes", "cluster.gpus_per_node", "workload.prompts_per_step",
             "workload.response_tokens", "plan.train.tp", "plan.rollout", "cluster.parts",
             "models.policy", "efficiency.decode_hbm", "cluster", "workload"]  # fmt: skip
SET_VALUES = ["1" + "0" * 400, "9" * 50_000, "1e400", ".nan", "true", "false", "-1", "0",
              "[" * 3000 + "]" * 3000, "{a: {b: {c: 1}}}", "x", "''", "[1, 2]", "&a [*a]",
              "\x1b[2J", "[/]", "null", "2.5"]  # fmt: skip


def flag_runs(rng: random.Random, count: int) -> list[Run]:
    """Commands with hostile flag values: `--set`, the common flags, sql limits, the site
    address, unknown ids and formats."""
    small = str(BASE_FILE)
    makers: list[Callable[[], tuple[str, ...]]] = [
        lambda: (
            rng.choice(["recommend", "estimate"]),
            small,
            "--set",
            f"{rng.choice(SET_PATHS)}={rng.choice(SET_VALUES)}",
        ),
        lambda: (
            "export",
            small,
            "--framework",
            rng.choice(["verl", "slime", "x", "verl\x1b"]),
            "--set",
            f"{rng.choice(SET_PATHS)}={rng.choice(SET_VALUES)}",
        ),
        lambda: (
            "recommend",
            small,
            rng.choice(
                [
                    "--nodes",
                    "--gpus-per-node",
                    "--prompts",
                    "--top",
                    "--max-nodes",
                    "--deadline",
                    "--budget",
                    "--objective",
                    "--policy",
                    "--accelerator",
                    "--placement",
                    "--format",
                ]
            ),
            _hostile_number(rng),
        ),
        lambda: (
            "sql",
            rng.choice(["SELECT 1", "SELECT chr(27) || '[2J'", "SELECT 'a\nb'"]),
            rng.choice(["--timeout", "--max-rows", "--format"]),
            _hostile_number(rng),
        ),
        lambda: ("sql", "SELECT $x AS v", "-p", "x", _hostile_number(rng)),
        lambda: (rng.choice(["show", "list", "compare", "query"]), _hostile_number(rng)),
        lambda: ("recommend", "--deployment", rng.choice(["x", "../../etc/passwd", "\x00"])),
        lambda: (
            rng.choice(["recommend", "estimate", "export", "sql", "review", "nosuch"]),
            "--" + rng.choice(["bogus", "top", "set", "out"]),
        ),
    ]
    runs = [
        Run(f"site address {url[:40]!r}", ("site", "build", "--out", "{dir}/site"),
            env={"RLMGUIDE_SITE_URL": url})
        for url in ['https://x/"><script>alert(1)</script>', "javascript:alert(1)", "https://",
                    "ftp://x/", "https://x/a b", "https://x/\n", "//x/", "https://x:99999999/"]
    ]  # fmt: skip
    while len(runs) < count:
        args = tuple(a.replace("\x00", "") for a in rng.choice(makers)())
        runs.append(Run(" ".join(args)[:90], args))
    return runs


TARGETS = {
    "a FIFO": ("out", Fifo()),
    "/dev/full": ("/dev/full", None),
    "a missing folder": ("missing/deeper/out", None),
    "the user's file": ("user/notes.txt", None),
    "a folder": ("user", None),
    "a link to /dev/full": ("out", Link("/dev/full")),
    "/proc": ("/proc/rlmguide-out", None),
    "a long name": ("x" * 300, None),
    "a new file": ("fresh", None),
}


def output_runs() -> list[Run]:
    """Every command that writes a file, onto every kind of target."""
    small = str(BASE_FILE)
    writers = [
        (("export", small, "--framework", "verl", "--out"), ".sh"),
        (("export", small, "--framework", "verl", "--format", "json", "--out"), ".json"),
        (("recommend", small, "--top", "1", "--plot"), ".svg"),
        (
            (
                "estimate",
                str(REPO / "examples" / "ppo-qwen2.5-7b-shared-critic-fused-16xh100.yaml"),
                "--plot",
            ),
            ".png",
        ),
        (("schema", "--out"), ""),
        (("db", "export", "--parquet"), ""),
    ]
    runs = []
    for command, suffix in writers:
        for what, (target, spec) in TARGETS.items():
            path = target if target.startswith("/") else f"{target}{suffix}"
            files = {path: spec} if spec is not None else {}
            named = "{dir}/" + path if not path.startswith("/") else path
            runs.append(Run(f"{command[0]} {command[-1]} onto {what}", (*command, named),
                            files, outputs=(path,)))  # fmt: skip
    return runs


def runs(limit: int | None = None) -> list[Run]:
    """Issue 30's generated cases, the same on every run: review scripts, recipes, flags and
    outputs (the scenario corpus is `cases()`)."""
    rng = random.Random(30)
    found = [*review_runs(rng, 330), *recipe_runs(rng, 200), *flag_runs(rng, 230), *output_runs()]
    return found[:limit]


def materialise(run: Run, folder: Path) -> None:
    """The sandbox of `run` in `folder`: the user's files and the run's own."""
    for path, content in {**USER_FILES, **run.files}.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Fifo):
            os.mkfifo(target)
        elif isinstance(content, Sparse):
            with target.open("wb") as out:
                out.truncate(content.size)
        elif isinstance(content, Link):
            target.symlink_to(content.target.replace("{dir}", str(folder)))
        else:
            target.write_bytes(content)


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry of the sandbox: a regular file's bytes (its first 1 MiB), else its kind."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = f"link to {os.readlink(path)}"
        elif path.is_file() and path.stat().st_size <= 2**20:
            found[name] = path.read_bytes()
        else:
            found[name] = "folder" if path.is_dir() else f"{path.stat().st_mode:o}"
    return found


def damage(run: Run, before: dict[str, bytes | str], after: dict[str, bytes | str]) -> list[str]:
    """Sandbox entries the run changed, created or removed beyond its outputs (with what an
    output folder holds and the new folders above an output), and any sign that something in
    its input was run."""
    allowed = {o for o in run.outputs if not o.startswith("/")}

    def mine(name: str) -> bool:
        # an output, what it holds (an output folder), or a folder made to hold it (mkdir -p)
        return any(
            name == o
            or name.startswith(f"{o}/")
            or (o.startswith(f"{name}/") and name not in before)
            for o in allowed
        )

    changed = [n for n in before.keys() | after.keys()
               if before.get(n) != after.get(n) and not mine(n)]  # fmt: skip
    if any(Path(n).name == EXECUTED for n in after):
        changed.append(f"{EXECUTED} (something in the input was run)")
    return sorted(changed)


# --- wrong input a user types: each case with the words its one-line error must hold ---------

_SMALL_TEXT = BASE_FILE.read_bytes()
WRONG_INPUT: list[tuple[Run, tuple[str, ...]]] = [
    (Run("scenario: empty file", ("recommend", "{dir}/s.yaml"), {"s.yaml": b""}),
     ("a scenario is a mapping",)),
    (Run("scenario: a folder", ("estimate", "{dir}/user")), ("is a directory",)),
    (Run("scenario: missing", ("export", "{dir}/none.yaml", "--framework", "verl")),
     ("cannot read",)),
    (Run("scenario: unknown GPU", ("recommend", "{dir}/s.yaml"),
         {"s.yaml": _SMALL_TEXT.replace(b"h100-sxm-80gb", b"h100-sxm-80g")}),
     ("cluster.accelerator", "did you mean h100-sxm-80gb")),
    (Run("scenario: unknown model", ("estimate", "{dir}/s.yaml"),
         {"s.yaml": _SMALL_TEXT.replace(b"qwen2.5-7b", b"qwen2.5-7c")}),
     ("models.policy", "did you mean qwen2.5-7b")),
    (Run("scenario: unknown algorithm", ("recommend", "{dir}/s.yaml"),
         {"s.yaml": _SMALL_TEXT.replace(b"algorithm: grpo", b"algorithm: grpoo")}),
     ("workload.algorithm", "did you mean grpo")),
    (Run("--framework unknown", ("recommend", str(BASE_FILE), "--framework", "verll")),
     ("--framework", "did you mean verl")),
    (Run("--set unknown field", ("recommend", str(BASE_FILE), "--set", "cluster.nodez=2")),
     ("cluster.nodez", "did you mean nodes")),
    (Run("--set zero nodes", ("estimate", str(BASE_FILE), "--set", "cluster.nodes=0")),
     ("cluster.nodes",)),
    (Run("--set negative tp", ("recommend", str(BASE_FILE), "--set", "plan.train.tp=-2")),
     ("plan.train.tp",)),
    (Run("--set huge prompts", ("recommend", str(BASE_FILE), "--set",
                                "workload.prompts_per_step=99999999999999999999")),
     ("workload.prompts_per_step", "supported range")),
    (Run("--set isolated EP on a dense model", ("recommend", str(BASE_FILE), "--set",
                                                "plan.train.expert_layout=isolated")),
     ("plan.train.expert_layout", "no experts")),
    (Run("--deployment unknown", ("estimate", "--deployment", "verl-qwen")), ("--deployment",)),
    (Run("review: empty file", ("review", "{dir}/run.sh", "--accelerator", "h100-sxm-80gb"),
         {"run.sh": b""}), ("no launch of a mapped framework",)),
    (Run("review: a folder", ("review", "{dir}/user", "--accelerator", "h100-sxm-80gb")),
     ("is a directory",)),
    (Run("list: unknown kind", ("list", "modelz")), ("unknown kind", "models")),
]  # fmt: skip
"""Input a careless user gives every command: unknown ids (with the closest names), numbers
out of range, empty files and folders instead of files; each error is one line naming the
field or record (tests/test_hostile_input.py runs them in process, bench/fuzz_report.py as
processes)."""
