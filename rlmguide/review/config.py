"""A framework's arguments as its own parser leaves them: Hydra overrides applied in order
(`key=`, `+key=`, `++key=`, `~key`), argparse flags (switches, values, several values), and a
model path matched to a model record."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


def scalar(text: str) -> Any:
    """A literal as Hydra (and, for numbers, argparse) reads it."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "null":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _value(text: str) -> Any:
    """An override's value: quotes taken off, literals typed as Hydra types them."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return scalar(text)


def hydra_config(words: Iterable[str]) -> dict[str, Any]:
    """Overrides applied in order, later ones winning; `--name=value` options (verl's
    `--config-name`) kept under their name without dashes."""
    found: dict[str, Any] = {}
    for word in words:
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            found[name] = _value(value) if value else True
            continue
        if word.startswith("~"):
            found.pop(word[1:].partition("=")[0], None)
            continue
        key, sep, value = word.partition("=")
        if not sep:
            raise ValueError(f"{word!r} is not a key=value override")
        found[key.lstrip("+")] = _value(value)
    return found


def argparse_config(words: list[str]) -> dict[str, Any]:
    """`--flag value`, `--flag` (a switch) and `--flag v1 v2` (a list), later flags winning."""
    found: dict[str, Any] = {}
    key: str | None = None
    for word in words:
        if word.startswith("--") and len(word) > 2:
            name, sep, value = word[2:].partition("=")
            found[name] = scalar(value) if sep else True
            key = None if sep else name
        elif key is not None:
            current = found[key]
            found[key] = (
                scalar(word)
                if current is True
                else [*(current if isinstance(current, list) else [current]), scalar(word)]
            )
        else:
            raise ValueError(f"{word!r} is not a --flag or its value")
    return found


_VARIANT = re.compile(r"[-_.](instruct|base|chat|it|hf|fp8|bf16|awq|gptq)$")


def match_model(path: str, models: Mapping[str, Any]) -> str | None:
    """The model record a Hugging Face id or local path names: its last component, without
    an organisation prefix or a variant suffix (-Instruct, -Base, ...), equal to a record's id
    or name, or starting with one at a `-` boundary (DeepSeek-V3-0324 is deepseek-v3)."""
    slug = path.rstrip("/").rsplit("/", 1)[-1].lower().replace("_", "-")
    slug = slug.removeprefix("meta-")
    while _VARIANT.search(slug):
        slug = _VARIANT.sub("", slug)
    names = {
        m: {m, str(getattr(r, "name", m)).lower().replace(" ", "-")} for m, r in models.items()
    }
    best: tuple[int, str] | None = None
    for model_id, spellings in names.items():
        for name in spellings:
            fits = slug == name or slug.startswith(name + "-")
            if fits and (best is None or len(name) > best[0]):
                best = (len(name), model_id)
    return best[1] if best else None
