"""A NeMo-RL YAML recipe as NeMo-RL loads it: its `defaults:` chain (paths relative to each
file) merged parent first, the child's values winning and lists replaced whole, then OmegaConf
`${a.b}` interpolations resolved against the merged tree. Custom resolvers (`${mul:...}`) are
left as text: no mapped key uses them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REFERENCE = re.compile(r"\$\{([A-Za-z_][\w.]*)\}")


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


def load_chain(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The file merged over its defaults, recursively."""
    path = path.resolve()
    if path in seen:
        raise RecipeError(f"{path.name}: its defaults chain comes back to itself")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise RecipeError(f"defaults {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path.name}: not YAML ({exc})") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path.name}: not a mapping of keys")
    parents = data.pop("defaults", None) or []
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents:
        merged = _merge(merged, load_chain(path.parent / str(parent), (*seen, path)))
    return _merge(merged, data)


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted leaf keys (`policy.megatron_cfg.enabled`)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= flatten(value, dotted + ".")
        else:
            out[dotted] = value
    return out


def resolve(flat: dict[str, Any]) -> dict[str, Any]:
    """Interpolations replaced: a value that is one `${a.b}` takes the target's value (and
    type); one embedded in text is substituted as text."""
    resolved = dict(flat)

    def value_of(key: str, trail: tuple[str, ...]) -> Any:
        if key in trail:
            raise RecipeError(f"interpolation loop: {' -> '.join((*trail, key))}")
        value = resolved.get(key)
        if not isinstance(value, str) or "${" not in value:
            return value
        whole = REFERENCE.fullmatch(value)
        if whole:
            got = value_of(whole.group(1), (*trail, key))
        else:
            got = REFERENCE.sub(lambda m: str(value_of(m.group(1), (*trail, key))), value)
        resolved[key] = got
        return got

    for key in flat:
        value_of(key, ())
    return resolved


def recipe_config(path: Path) -> tuple[dict[str, Any], set[str]]:
    """The recipe's keys after its defaults and interpolations, and the keys the file itself
    sets (the rest come from the chain)."""
    try:
        own = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path.name}: not YAML ({exc})") from None
    own.pop("defaults", None)
    return resolve(flatten(load_chain(path))), set(flatten(own))
