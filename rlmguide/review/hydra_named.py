"""The primary config a Hydra launch names with `--config-path` and `--config-name` (verl's
multi-turn examples keep their agent loop settings there, examples/sglang_multiturn/config at
b178a3cd), found and read as Hydra composes it: the file's own keys over the configs of its
`defaults:` list, and the command line's overrides over both.

Hydra takes an absolute `--config-path` as it is and a relative one from the folder of the
Python file that declares `@hydra.main()` (https://hydra.cc/docs/advanced/hydra-command-line-flags/).
A launch usually builds the absolute path from `$(pwd)`, the checkout's root it asks to be run
from; a review does not run that substitution, so the path is also looked for under the launch's
own folder and each folder above it (the checkout the script sits in), and under the working
directory. A `defaults:` entry with no file beside the config is the framework's own config
(Hydra's search path, `hydra.searchpath`): its keys are the mapping's defaults, not read here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlmguide.review.budget import Budget
from rlmguide.review.recipe import (
    REFERENCE,
    RecipeError,
    flatten,
    load_chain,
    read_recipe,
    resolve,
)


@dataclass
class NamedConfig:
    keys: dict[str, Any] = field(default_factory=dict)
    """The config's keys after its defaults, dotted, interpolations within it resolved."""
    found: Path | None = None
    missing: str | None = None
    """Where the config was looked for, when no file was found (one line)."""


def _places(config_path: str, module: str, script: Path) -> list[Path]:
    """The folders the config may be in, first the one Hydra would take as written."""
    path = PurePosixPath(config_path)
    # relative: from the folder of the module's file, in the checkout (verl.trainer.main_ppo)
    home = PurePosixPath(*module.split(".")[:-1])
    tail = path.relative_to("/") if path.is_absolute() else home / path
    roots = [script.parent, *script.parent.parents, Path.cwd()]
    first = [Path(path)] if path.is_absolute() else []
    return first + [root / tail for root in roots]


def _own_keys(data: dict[str, Any], budget: Budget) -> dict[str, Any]:
    """Dotted keys with the interpolations the file can resolve itself; a key whose value
    refers to a key it does not hold is left out (its value is the framework's to give)."""
    flat = flatten(data, budget=budget)
    resolvable = {
        k
        for k, v in flat.items()
        if not isinstance(v, str) or all(r in flat for r in REFERENCE.findall(v))
    }
    return {k: v for k, v in resolve(flat, budget).items() if k in resolvable}


def named_config(
    config: dict[str, Any], module: str, script: Path, budget: Budget
) -> NamedConfig | None:
    """The config `--config-path`/`--config-name` name, or None where the launch names no
    config of its own path (the framework's packaged configs: the mapping's defaults)."""
    config_path, name = config.get("config-path"), config.get("config-name")
    if not isinstance(config_path, str) or not isinstance(name, str):
        return None
    file = name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"
    places = _places(config_path, module, script)
    found = next((p / file for p in places if (p / file).is_file()), None)
    if found is None:
        return NamedConfig(
            missing=f"--config-name {name} at --config-path {config_path or '(empty)'}: "
            f"no {file} there, nor under {script.parent} or a folder above it"
        )
    data = read_recipe(found, budget)
    data.pop("hydra", None)  # Hydra's own settings (the search path), not the job's
    parents = data.pop("defaults", None) or []
    parents = [parents] if isinstance(parents, str) else parents
    if not isinstance(parents, list):
        raise RecipeError(f"{found.name}: `defaults:` is a list of config names")
    if "_self_" not in parents:
        parents = [*parents, "_self_"]  # Hydra 1.1+: the config's own keys win by default
    merged: dict[str, Any] = {}
    for parent in parents:
        if parent == "_self_":
            merged = {**merged, **_own_keys(data, budget)}
        elif isinstance(parent, str) and (beside := found.parent / f"{parent}.yaml").is_file():
            merged = {**merged, **_own_keys(load_chain(beside, budget=budget), budget)}
        # else: a config group option or a config on the search path: the framework's
    return NamedConfig(keys=merged, found=found)
