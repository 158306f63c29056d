"""The known names a mistyped one most likely meant, for every "did you mean" the product prints.

Spelling distance alone misses the commonest slip: a short name for a long id (`h100` for
`h100-sxm-80gb`, `qwen3-8` for `qwen3-8b`), whose ratio is below any useful cutoff. Names that
begin with what was typed, or hold it as whole dash-separated parts, come first; then the
spelling neighbours.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def _holds(known: str, typed: str) -> bool:
    if known.startswith(typed):
        return True
    parts, wanted = known.split("-"), typed.split("-")
    return any(parts[i : i + len(wanted)] == wanted for i in range(len(parts)))


def closest(name: str, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to `n` of `known`, most likely first; [] when nothing is near."""
    names = list(dict.fromkeys(known))
    typed = name.strip().lower()
    held = sorted(
        (k for k in names if typed and k != name and _holds(k.lower(), typed)),
        key=lambda k: (len(k), k),
    )
    near = difflib.get_close_matches(name, names, n=n, cutoff=cutoff)
    return list(dict.fromkeys(held + near))[:n]
