"""A framework's arguments as its own parser leaves them: Hydra overrides applied in order
(`key=`, `+key=`, `++key=`, `~key`) and argparse flags (switches, values, several values)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def number_or_text(text: str) -> Any:
    """An int, else a float, else the text as it is."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def scalar(text: str) -> Any:
    """A literal as Hydra (and, for numbers, argparse) reads it."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "null":
        return None
    return number_or_text(text)


def _value(text: str) -> Any:
    """An override's value: quotes taken off, literals typed as Hydra types them."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return scalar(text)


def hydra_config(words: Iterable[str]) -> dict[str, Any]:
    """Overrides applied in order, later ones winning; `--name=value` and `--name value`
    options (verl's `--config-name`, AReaL's `--config`) kept under their name without
    dashes."""
    found: dict[str, Any] = {}
    pending: str | None = None  # an option whose value may be the next word
    for word in words:
        if pending is not None and not word.startswith("--") and "=" not in word:
            found[pending], pending = _value(word), None
            continue
        pending = None
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            found[name] = _value(value) if value else True
            pending = None if sep else name
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
