"""Read a launch back: the arguments of a verl Hydra command or an OpenRLHF command line, as
the framework's parser would see them (later values win, as Hydra applies repeated keys).

This reads the scripts `export` writes (one command, literal values, `${VAR}` left as text);
it is the start of `review`, which will need a real shell parser for experts' scripts.
"""

from __future__ import annotations

import shlex
from typing import Any


def command_words(text: str, module: str) -> list[str]:
    """The words after `python3 -m MODULE` in a script (line continuations joined)."""
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        if line.lstrip().startswith("#"):
            continue
        tokens = shlex.split(line, posix=True)
        if module in tokens:
            return tokens[tokens.index(module) + 1 :]
    raise ValueError(f"no `{module}` command in the script")


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


def hydra_overrides(words: list[str]) -> dict[str, Any]:
    """`key=value` overrides (a leading `+` adds a key); the script's own `--options` (verl's
    `--config-name`, NeMo-RL's `--config`) are left out."""
    found: dict[str, Any] = {}
    for word in words:
        if word.startswith("--"):
            continue
        key, sep, value = word.partition("=")
        if not sep:
            raise ValueError(f"{word!r} is not a key=value override")
        found[key.lstrip("+")] = scalar(value)
    return found


def argparse_flags(words: list[str]) -> dict[str, Any]:
    """`--flag value` pairs; a flag followed by another flag (or nothing) is a switch."""
    found: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            raise ValueError(f"{word!r} is not a --flag")
        key = word[2:]
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            found[key] = scalar(words[i + 1])
            i += 2
        else:
            found[key] = True
            i += 1
    return found
