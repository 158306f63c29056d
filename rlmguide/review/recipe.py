"""A NeMo-RL YAML recipe as NeMo-RL loads it: its `defaults:` chain (paths relative to each
file) merged parent first, the child's values winning and lists replaced whole, then OmegaConf
`${a.b}` interpolations resolved against the merged tree. `${oc.env:NAME,default}` takes its
default (the environment is never read: a review reads the file as written, and a value only
the environment gives stays as text, as `${oc.env:NAME}` does). The arithmetic resolvers NeMo-RL
registers (add, mul, div, max: nemo_rl/utils/config.py L198-L204 at 7ea279ab) are applied where
both arguments read as numbers: its base config sizes the packed micro-batches with them
(`${mul:${policy.max_total_sequence_length}, ${policy.train_micro_batch_size}}`); other
resolvers are left as text.

ROLL's configs are composed by Hydra (examples/start_agentic_pipeline.py L21 at 8eb27cc2), and
their `defaults:` entries name a config without its `.yaml` and with the package it lands in
(`../config/traj_envs@_here_`, in 35 of its example configs): such an entry is read as Hydra
reads it, the file beside the name with `.yaml`, its keys at this level for `_here_` and under
the dotted package otherwise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from rlmguide.kb.load import parse_yaml, yaml_problem
from rlmguide.review.budget import Budget
from rlmguide.review.config import scalar

REFERENCE = re.compile(r"\$\{(\.*[A-Za-z_][\w.]*)\}")
ENV_DEFAULT = re.compile(r"\$\{oc\.env:[A-Za-z_]\w*,\s*(?:'([^']*)'|\"([^\"]*)\"|([^}'\"]*))\}")
ARITHMETIC = re.compile(r"\$\{(add|mul|div|max):\s*([^,{}]+?)\s*,\s*([^,{}]+?)\s*\}")
OPERATIONS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": max,
}
"""NeMo-RL's resolvers, as it registers them (lambdas over the arguments OmegaConf parses)."""


def _number(text: str) -> int | float | None:
    """The resolver argument as a number, read as the overrides' literals are (None where it
    is not one: a boolean, null or text)."""
    value = scalar(text)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _arithmetic(value: str) -> Any:
    """A value that is one arithmetic resolver call over two numbers, computed; else as is
    (a division by zero too: NeMo-RL would stop on it, and review reads the text)."""
    call = ARITHMETIC.fullmatch(value)
    if call is None:
        return value
    a, b = _number(call.group(2)), _number(call.group(3))
    if a is None or b is None or (call.group(1) == "div" and b == 0):
        return value
    return OPERATIONS[call.group(1)](a, b)


class RecipeError(ValueError):
    """A recipe whose defaults chain cannot be followed or whose interpolation loops."""


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_recipe(path: Path, budget: Budget) -> dict[str, Any]:
    """One recipe file's mapping, its problems in one line naming the file (never quoting
    it: a `defaults:` entry may name any file on the machine)."""
    try:
        data = parse_yaml(budget.read(path), yaml.SafeLoader) or {}
    except OSError as exc:
        raise RecipeError(f"{path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        where, reason = yaml_problem(exc)
        shown = ", ".join(filter(None, (where, reason)))
        raise RecipeError(f"{path.name}: not YAML ({shown})") from None
    except ValueError as exc:  # not a regular text file, too large (kb.files, budget)
        raise RecipeError(str(exc)) from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path.name}: a recipe is a mapping of keys, not {type(data).__name__}")
    return data


def load_chain(
    path: Path, seen: tuple[Path, ...] = (), budget: Budget | None = None
) -> dict[str, Any]:
    """The file merged over its defaults, recursively."""
    budget = budget or Budget()
    path = path.resolve()
    if path in seen:
        raise RecipeError(f"{path.name}: its defaults chain comes back to itself")
    budget.nested(len(seen), "`defaults:` chains")
    data = read_recipe(path, budget)
    parents = data.pop("defaults", None) or []
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise RecipeError(f"{path.name}: `defaults:` is a file name or a list of them")
    merged: dict[str, Any] = {}
    for parent in parents:
        name, hydra, package = parent.partition("@")
        target = path.parent / name
        if hydra and not target.suffix:
            target = target.with_name(f"{target.name}.yaml")
        tree = load_chain(target, (*seen, path), budget)
        if package.startswith("_") and package != "_here_":
            # _global_ and _group_ place a config by where its parent sits in Hydra's tree,
            # which a chain of files does not track
            raise RecipeError(f"{path.name}: the `defaults:` package {package} is not read")
        if package and package != "_here_":
            for part in reversed(package.split(".")):
                tree = {part: tree}
        merged = _merge(merged, tree)
    return _merge(merged, data)


def flatten(tree: dict[str, Any], prefix: str = "", budget: Budget | None = None) -> dict[str, Any]:
    """Dotted leaf keys (`policy.megatron_cfg.enabled`)."""
    budget = budget or Budget()
    out: dict[str, Any] = {}
    for key, value in tree.items():
        budget.expansion()
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= flatten(value, dotted + ".", budget)
        else:
            out[dotted] = value
    return out


def absolute(target: str, key: str) -> str:
    """The key an interpolation in `key` names: OmegaConf's relative `${.x}` is a sibling of
    `key`, each further leading dot one level up (`${..x}` beside `key`'s parent)."""
    dots = len(target) - len(target.lstrip("."))
    if not dots:
        return target
    parents = key.split(".")[:-1]
    up = len(parents) - (dots - 1)
    if up < 0:
        raise RecipeError(f"{key}: the interpolation ${{{target}}} climbs above the config's root")
    return ".".join([*parents[:up], target[dots:]])


def resolve(flat: dict[str, Any], budget: Budget | None = None) -> dict[str, Any]:
    """Interpolations replaced: a value that is one `${a.b}` takes the target's value (and
    type); one embedded in text is substituted as text."""
    budget = budget or Budget()
    resolved = dict(flat)

    def value_of(key: str, trail: tuple[str, ...]) -> Any:
        budget.expansion()
        if key in trail:
            raise RecipeError(f"interpolation loop: {' -> '.join((*trail, key))}")
        budget.nested(len(trail), "interpolations")
        value = resolved.get(key)
        if isinstance(value, str) and "${oc.env:" in value:
            value = ENV_DEFAULT.sub(lambda m: next(g for g in m.groups() if g is not None), value)
            resolved[key] = value
        if not isinstance(value, str) or "${" not in value:
            return value
        whole = REFERENCE.fullmatch(value)
        if whole:
            got = value_of(absolute(whole.group(1), key), (*trail, key))
        else:
            got = REFERENCE.sub(
                lambda m: str(value_of(absolute(m.group(1), key), (*trail, key))), value
            )
            budget.value(len(got), f"the interpolation of {key}")
            got = _arithmetic(got)
        resolved[key] = got
        return got

    for key in flat:
        value_of(key, ())
    return resolved


def recipe_config(path: Path, budget: Budget | None = None) -> tuple[dict[str, Any], set[str]]:
    """The recipe's keys after its defaults and interpolations, and the keys the file itself
    sets (the rest come from the chain)."""
    budget = budget or Budget()
    own = read_recipe(path, budget)
    own.pop("defaults", None)
    merged = load_chain(path, budget=budget)
    return resolve(flatten(merged, budget=budget), budget), set(flatten(own, budget=budget))


def document_config(text: str, budget: Budget | None = None) -> dict[str, Any]:
    """A whole YAML config given as text (an exported ROLL launch), its keys dotted and its
    interpolations resolved; a document that is no mapping reads as no keys."""
    budget = budget or Budget()
    data = parse_yaml(text, yaml.SafeLoader) or {}
    if not isinstance(data, dict):
        return {}
    return resolve(flatten(data, budget=budget), budget)
