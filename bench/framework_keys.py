"""The keys a framework's own parser accepts at a mapping's pinned commit, written as the key
lists `rlmguide review` checks a launch's keys against (rlmguide/review/keys/<mapping>.txt).

verl (Hydra): every leaf key of the trainer configs main_ppo composes, as verl generates them
(verl/trainer/config/_generated_ppo_trainer.yaml and _generated_ppo_megatron_trainer.yaml); an
override of a key they do not hold, without `+`, stops Hydra's composition (the config is in
struct mode). OpenRLHF (argparse): every option train_ppo_ray.py's parser declares, the
per-model optimiser options its loop builds with f-strings included; parse_args() exits on an
option it does not know.

Run: python bench/framework_keys.py [--snapshots DIR]
Snapshots: `fetch` verl-project/verl and OpenRLHF/OpenRLHF; --snapshots is the folder holding
owner+name/repo (default /work/.mirror). Nothing is executed: the files are read with
`git show COMMIT:PATH` and the Python source is parsed, not imported.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path
from typing import Any

import yaml

ENTRY_POINT = "# entry point: "
"""The header line naming the module whose parser the keys are of (rlmguide.review reads it)."""
OUT = Path(__file__).resolve().parent.parent / "rlmguide" / "review" / "keys"

VERL_CONFIGS = (
    "verl/trainer/config/_generated_ppo_trainer.yaml",
    "verl/trainer/config/_generated_ppo_megatron_trainer.yaml",
)
OPENRLHF_CLI = "openrlhf/cli/train_ppo_ray.py"

# mapping id -> (repository snapshot, commit, kind, files read, the entry point they configure)
SOURCES: dict[str, tuple[str, str, str, tuple[str, ...], str]] = {
    "verl-0.8.0": (
        "verl-project+verl",
        "7aed6b230776f963fa09509c10d9c3a767d1102c",
        "hydra",
        VERL_CONFIGS,
        "verl.trainer.main_ppo",
    ),
    "verl-0.7.0-125-gb178a3cd5": (
        "verl-project+verl",
        "b178a3cd56f58b2d502255daba591e92833930a7",
        "hydra",
        VERL_CONFIGS,
        "verl.trainer.main_ppo",
    ),
    "openrlhf-0.11.0": (
        "OpenRLHF+OpenRLHF",
        "3c3be6234e0cb353e76bb8019947db9dfe99fca7",
        "argparse",
        (OPENRLHF_CLI,),
        "openrlhf.cli.train_ppo_ray",
    ),
    "openrlhf-0.8.9.post1-5-gc250c21a": (
        "OpenRLHF+OpenRLHF",
        "c250c21a72176720e11aaf4fedcd6cf853d3df8b",
        "argparse",
        (OPENRLHF_CLI,),
        "openrlhf.cli.train_ppo_ray",
    ),
}


def _show(snapshots: Path, repo: str, commit: str, path: str) -> str:
    git = ["git", "--git-dir", str(snapshots / repo / "repo"), "show", f"{commit}:{path}"]
    return subprocess.run(git, check=True, capture_output=True, text=True).stdout


def leaf_keys(node: Any, prefix: str = "") -> set[str]:
    """Dotted paths of a YAML mapping's leaves (an empty mapping is a leaf: its own key)."""
    if not isinstance(node, dict) or not node:
        return {prefix} if prefix else set()
    found: set[str] = set()
    for key, value in node.items():
        found |= leaf_keys(value, f"{prefix}.{key}" if prefix else str(key))
    return found


def _strings(node: ast.expr, names: dict[str, str]) -> str | None:
    """A literal or an f-string over loop variables bound in `names`; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                if value.value.id not in names:
                    return None
                parts.append(names[value.value.id])
            else:
                return None
        return "".join(parts)
    return None


def options(source: str) -> set[str]:
    """The option strings of every add_argument call, f-strings expanded over the literal
    tuples their `for` loops run over."""
    found: set[str] = set()

    def visit(node: ast.AST, names: dict[str, str]) -> None:
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Tuple | ast.List)
            and all(isinstance(e, ast.Constant) for e in node.iter.elts)
        ):
            for element in node.iter.elts:
                bound = {**names, node.target.id: str(element.value)}  # type: ignore[attr-defined]
                for child in node.body:
                    visit(child, bound)
            return
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            for arg in node.args:
                text = _strings(arg, names)
                if text is not None and text.startswith("-"):
                    found.add(text.lstrip("-"))
        for child in ast.iter_child_nodes(node):
            visit(child, names)

    visit(ast.parse(source), {})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for mapping, (repo, commit, kind, files, module) in SOURCES.items():
        keys: set[str] = set()
        for path in files:
            text = _show(args.snapshots, repo, commit, path)
            keys |= leaf_keys(yaml.safe_load(text)) if kind == "hydra" else options(text)
        owner, _, name = repo.partition("+")
        header = [
            f"# {'Leaf keys' if kind == 'hydra' else 'Options'} of {', '.join(files)}",
            f"# in {owner}/{name} at commit {commit} (checked 2026-12-06),",
            "# written by bench/framework_keys.py; one key a line, sorted.",
            f"{ENTRY_POINT}{module}",
        ]
        (OUT / f"{mapping}.txt").write_text("\n".join([*header, *sorted(keys)]) + "\n")
        print(f"{mapping}: {len(keys)} keys")


if __name__ == "__main__":
    main()
