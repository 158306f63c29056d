"""How many of the models the frameworks' own launch files name have a model record.

Reads each framework's launch files (shell scripts and YAML configs under `examples/`,
`recipe(s)/` and `scripts/`, slime's per-model flag files aside) at the commit the knowledge
base pins for it (the newest mapping's commit, else the version its claims were read at) from a
git snapshot given on the command line; it fetches nothing. A model is named where a model key
(`actor_rollout_ref.model.path=`, `--pretrain`, `--hf-checkpoint`, `model_name:`, `pretrain:`,
`MODEL_PATH=`, ...) takes a value whose path has a component of a known model family; one launch
file naming one model (its slug, as `review` reduces it) is one pair. A pair is covered when
`review` would match that name to a record (by id, name or alias), and costable when that record
has an architecture the cost model costs today (no `costing_gap`).

Run: python bench/model_coverage.py verl=/work/.mirror/volcengine+verl/repo \\
         openrlhf=PATH nemo-rl=PATH slime=PATH areal=PATH roll=PATH skyrl=PATH [--missing]
`FRAMEWORK=PATH@COMMIT` reads another commit. `--missing` lists the names without a record,
with the frameworks and files naming them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from rlmguide.kb.load import load_catalog
from rlmguide.kb.model_names import match_model, model_slug
from rlmguide.kb.paths import DEFAULT_ROOTS

LAUNCH = re.compile(r"^(?:[\w.-]+/)?(?:examples|recipes?|scripts)/.*\.(?:sh|ya?ml)$")
NOT_LAUNCH = re.compile(r"(^|/)(tests?|scripts/models)/")
"""Test fixtures and slime's per-model architecture flags (sourced by launches, not launches)."""

ASSIGNED = re.compile(r"([A-Za-z_][\w.-]*)\s*(?:=|:[ \t])\s*[\"']?([^\s\"'\\]+)")
FLAG = re.compile(r"--([A-Za-z][\w.-]*)[ \t]+[\"']?([^\s\"'\\-][^\s\"'\\]*)")
MODEL_KEY = re.compile(
    r"(^|[._-])(model|pretrain|hf[_-]checkpoint|ref[_-]load|path|model_name_or_path|teacher)$"
    r"|model_(path|name|dir|id)$|^(hf_)?model$",
    re.IGNORECASE,
)
NOT_MODEL_KEY = re.compile(
    r"(?i)ckpt|checkpoint_dir|save|output|export|log|dir$|data|run_name|project|experiment"
)
"""Keys whose value is where a run writes (its name often spells the model's)."""
FAMILY = re.compile(
    r"(?i)(qwen|llama|deepseek|kimi|glm|minimax|moonlight|gpt-oss|gemma|mistral|mixtral|mimo|"
    r"seed-oss|nemotron|phi-\d|internlm|skywork|tulu|olmo|granite)"
)
COMPONENT = re.compile(r"[^/${}:=,\[\]()]+")
FILE = re.compile(r"\.(parquet|jsonl?|ya?ml|jinja2?|sh|py|txt|log)/?$")
"""A value naming a file (a config, a dataset, a chat template) names no model."""
FORMAT_SUFFIX = re.compile(r"(?i)[_-](torch[_-]dist|slime|mcore|hf)$")
"""A converted checkpoint of the same model (slime's `Qwen3-4B_torch_dist`)."""

MAPPED = ("verl", "openrlhf", "nemo-rl", "slime", "skyrl", "areal")


def pinned_commit(framework: str, catalog) -> str:
    """The commit the knowledge base read the framework at: its newest mapping's, else the
    `-g<hash>` of the version most of its claims pin."""
    mappings = [m for m in catalog.of("mapping").values() if m.framework == framework]  # type: ignore[attr-defined]
    if mappings:
        return max(mappings, key=lambda m: m.committed).commit  # type: ignore[attr-defined]
    claims = catalog.of("framework")[framework].claims  # type: ignore[attr-defined]
    versions = Counter(c.version for c in claims)
    for version, _ in versions.most_common():
        if version and (found := re.search(r"-g([0-9a-f]{7,40})$", version)):
            return found.group(1)
    raise SystemExit(f"{framework}: no pinned commit in the knowledge base")


def git(snapshot: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(snapshot), *args],
        check=True, capture_output=True, text=True, errors="replace",
    ).stdout  # fmt: skip


def launch_files(snapshot: Path, commit: str) -> dict[str, str]:
    names = git(snapshot, "ls-tree", "-r", "--name-only", commit).splitlines()
    chosen = [n for n in names if LAUNCH.match(n) and not NOT_LAUNCH.search(n)]
    batch = "".join(f"{commit}:{n}\n" for n in chosen)
    out = subprocess.run(
        ["git", "--git-dir", str(snapshot), "cat-file", "--batch"],
        input=batch.encode(), check=True, capture_output=True,
    ).stdout  # fmt: skip
    texts: dict[str, str] = {}
    at = 0
    for name in chosen:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        texts[name] = out[header_end + 1 : header_end + 1 + size].decode(errors="replace")
        at = header_end + 1 + size + 1
    return texts


def named_models(text: str) -> set[str]:
    """The slugs of the models a launch file's model keys name."""
    found: set[str] = set()
    for line in text.splitlines():
        line = line.split(" #", 1)[0]
        if line.lstrip().startswith("#"):
            continue
        for key, value in (*ASSIGNED.findall(line), *FLAG.findall(line)):
            if not MODEL_KEY.search(key) or NOT_MODEL_KEY.search(key) or FILE.search(value):
                continue
            for part in COMPONENT.findall(value):
                part = FORMAT_SUFFIX.sub("", part.strip(" -"))
                if FAMILY.search(part) and re.search(r"\d", part) and not FILE.search(part):
                    found.add(model_slug(part))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshots", nargs="+", metavar="FRAMEWORK=PATH[@COMMIT]")
    parser.add_argument("--missing", action="store_true", help="list names without a record")
    args = parser.parse_args()
    catalog = load_catalog(DEFAULT_ROOTS)
    models = catalog.of("model")
    missing: dict[str, set[str]] = defaultdict(set)
    totals = Counter()
    print(f"{'framework':10} {'commit':12} {'files':>6} {'pairs':>6} {'covered':>8} {'share':>7}"
          f" {'costable':>9} {'models':>7} {'with record':>12}")  # fmt: skip
    for spec in args.snapshots:
        framework, _, where = spec.partition("=")
        path, _, commit = where.partition("@")
        if framework not in catalog.of("framework") or not path:
            sys.exit(f"{spec!r}: give FRAMEWORK=PATH with a framework id of the knowledge base")
        commit = commit or pinned_commit(framework, catalog)
        pairs = {
            (name, slug)
            for name, text in launch_files(Path(path), commit).items()
            for slug in named_models(text)
        }
        files = len({name for name, _ in pairs})
        matched = {p: match_model(p[1], models) for p in pairs}
        covered = {p for p, model in matched.items() if model}
        costable = {p for p in covered if models[matched[p]].costable}  # type: ignore[attr-defined]
        distinct = {slug for _, slug in pairs}
        known = {slug for _, slug in covered}
        for name, slug in pairs - covered:
            missing[slug].add(f"{framework}:{name}")
        share = 100 * len(covered) / len(pairs) if pairs else 0.0
        print(f"{framework:10} {commit[:12]:12} {files:6} {len(pairs):6} {len(covered):8}"
              f" {share:6.1f}% {len(costable):9} {len(distinct):7} {len(known):12}")  # fmt: skip
        totals.update(files=files, pairs=len(pairs), covered=len(covered), costable=len(costable))
    share = 100 * totals["covered"] / totals["pairs"] if totals["pairs"] else 0.0
    print(f"{'all':10} {'':12} {totals['files']:6} {totals['pairs']:6} {totals['covered']:8}"
          f" {share:6.1f}% {totals['costable']:9}")  # fmt: skip
    if args.missing:
        print("\nnamed without a record (frameworks, launch files):")
        ranked = sorted(missing.items(), key=lambda kv: (-len({w.split(":")[0] for w in kv[1]}),
                                                         -len(kv[1]), kv[0]))  # fmt: skip
        for slug, where in ranked:
            frameworks = sorted({w.split(":")[0] for w in where})
            print(f"  {slug}: {len(where)} files in {', '.join(frameworks)}")


if __name__ == "__main__":
    main()
