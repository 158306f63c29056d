"""The survey's formulas as data: every function of the survey model names the formula it
evaluates, so the site states Tables 3-9 from the code that computes them, not from a copy.

A function marked `@states(...)` adds one `Formula` to `FORMULAS` (several marks when one
function evaluates several rows of a table); the text is the survey's formula in its symbols.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


@dataclass(frozen=True, slots=True)
class Formula:
    table: str
    """Where the survey states it (the group the site lists it under): `Table 3`, `§3.7.1`."""
    name: str
    symbol: str
    text: str
    """The formula in the survey's symbols (S, T, B, K, L, d, d_ff, h, V, P_d, ...)."""
    derived: str
    """Where the appendix derives it (`B.1.3`), the locator a citation carries."""
    note: str
    function: str
    """The function that evaluates it, `module.name`."""


FORMULAS: list[Formula] = []


def states(
    table: str, name: str, symbol: str, text: str, derived: str, note: str = ""
) -> Callable[[F], F]:
    """Mark a function as evaluating one formula of the survey."""

    def mark(function: F) -> F:
        where = f"{function.__module__}.{function.__qualname__}"  # type: ignore[attr-defined]
        FORMULAS.append(Formula(table, name, symbol, text, derived, note, where))
        return function

    return mark
