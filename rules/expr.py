"""The condition language of rules: Python-like boolean expressions over named facts.

    cluster.gpus <= 8 and model.params_b < 14
    plan.train.tp <= cluster.gpus_per_node or plan.placement in ('disaggregated',)

Conditions are parsed with `ast` and only an allow-listed subset of nodes is accepted (never
`eval`). Names are checked against the declared facts, and types (number, bool, text, and the
allowed values of text facts) are checked when a rule loads. Evaluation works on scalars and
on numpy arrays alike, so one call judges a whole table of candidate plans.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from rlmguide.kb.closest import closest

FactType = Literal["number", "bool", "text"]


@dataclass(frozen=True)
class Fact:
    """A named value a condition may use, with its type and, for text, its allowed values."""

    name: str
    type: FactType
    description: str
    values: tuple[str, ...] = ()


class ConditionError(ValueError):
    """A condition that cannot be parsed, names an unknown fact or mixes types."""


COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {"min": np.minimum, "max": np.maximum}
LITERALS = {"true": True, "false": False}


def dotted(node: ast.AST) -> str | None:
    """`plan.train.tp` from its Attribute/Name chain, or None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


MAX_CONDITION_CHARS = 4_000
MAX_CONDITION_DEPTH = 100
"""Checking and evaluating recurse over the tree: far below Python's recursion limit, far
above any condition a person writes (the shipped ones nest fewer than 10 levels)."""


def _depth(tree: ast.AST) -> int:
    """The depth of the syntax tree, found without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


class Condition:
    """A parsed, type-checked condition; `evaluate` returns a boolean array (or scalar)."""

    def __init__(self, text: str, facts: Mapping[str, Fact]) -> None:
        self.text = text
        self._facts = facts
        self.names: set[str] = set()
        if len(text) > MAX_CONDITION_CHARS:
            raise ConditionError(
                f"condition of {len(text):,} characters; at most {MAX_CONDITION_CHARS:,} are read"
            )
        try:
            self._tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as exc:
            raise ConditionError(
                f"cannot parse {text[:80]!r}: {exc.msg} at column {exc.offset}"
            ) from None
        except (RecursionError, MemoryError):  # CPython's parser gives up on deep nesting
            raise ConditionError(f"{text[:80]!r}... is nested too deeply") from None
        if _depth(self._tree) > MAX_CONDITION_DEPTH:
            raise ConditionError(
                f"{text[:80]!r} is nested more than {MAX_CONDITION_DEPTH} levels deep"
            )
        if self._type(self._tree) != "bool":
            raise ConditionError(f"{text!r} is not a true/false condition")

    def _fail(self, node: ast.AST, message: str) -> ConditionError:
        return ConditionError(f"{message} (in {self.text!r}, column {node.col_offset + 1})")

    def _type(self, node: ast.AST) -> FactType:
        """The type of `node`, raising on anything outside the language."""
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                if self._type(value) != "bool":
                    raise self._fail(value, "`and`/`or` join conditions, not values")
            return "bool"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            if self._type(node.operand) != "bool":
                raise self._fail(node, "`not` applies to a condition")
            return "bool"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._number(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
            self._number(node.left)
            return self._number(node.right)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name not in FUNCTIONS or node.keywords or len(node.args) < 2:
                raise self._fail(node, "only min(a, b, ...) and max(a, b, ...) may be called")
            for arg in node.args:
                self._number(arg)
            return "number"
        if isinstance(node, ast.Constant) and not isinstance(node.value, bytes | complex):
            if isinstance(node.value, bool):
                return "bool"
            if isinstance(node.value, int | float):
                return "number"
            if isinstance(node.value, str):
                return "text"
        if (name := dotted(node)) is not None:
            if name in LITERALS:
                return "bool"
            if name not in self._facts:
                close = closest(name, self._facts)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise self._fail(node, f"unknown fact {name!r}{hint}")
            self.names.add(name)
            return self._facts[name].type
        raise self._fail(node, f"{type(node).__name__} is not allowed in a condition")

    def _number(self, node: ast.AST) -> FactType:
        if self._type(node) != "number":
            raise self._fail(node, "arithmetic needs numbers")
        return "number"

    def _compare(self, node: ast.Compare) -> FactType:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn):
                if not isinstance(right, ast.Tuple | ast.List) or not right.elts:
                    raise self._fail(right, "`in` needs a literal list like ('a', 'b')")
                for element in right.elts:
                    self._same_type(left, element)
            elif type(op) in COMPARE:
                kind = self._same_type(left, right)
                if kind == "text" and not isinstance(op, ast.Eq | ast.NotEq):
                    raise self._fail(node, "text compares only with == and !=")
            else:
                raise self._fail(node, f"{type(op).__name__} is not allowed")
            left = right
        return "bool"

    def _same_type(self, left: ast.AST, right: ast.AST) -> FactType:
        kinds = self._type(left), self._type(right)
        if kinds[0] != kinds[1]:
            raise self._fail(right, f"compares {kinds[0]} with {kinds[1]}")
        for fact_node, other in ((left, right), (right, left)):
            name = dotted(fact_node)
            fact = self._facts.get(name or "")
            constant = other.value if isinstance(other, ast.Constant) else None
            if fact and fact.values and constant is not None and constant not in fact.values:
                allowed = ", ".join(repr(v) for v in fact.values)
                raise self._fail(other, f"{name} is never {constant!r}; it is one of {allowed}")
        return kinds[0]

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The condition's value for `env` (fact name -> scalar or array of one length)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._eval(self._tree, env)

    def _eval(self, node: ast.AST, env: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v, env) for v in node.values]
            join = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            result = values[0]
            for value in values[1:]:
                result = join(result, value)
            return result
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, env)
            return np.logical_not(value) if isinstance(node.op, ast.Not) else -value
        if isinstance(node, ast.BinOp):
            return ARITHMETIC[type(node.op)](
                self._eval(node.left, env), self._eval(node.right, env)
            )
        if isinstance(node, ast.Compare):
            result: Any = True
            left = self._eval(node.left, env)
            left_name = dotted(node.left)  # the fact on the left of this comparison, if any
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, ast.In | ast.NotIn):
                    options = [self._eval(e, env) for e in right_node.elts]  # type: ignore[attr-defined]
                    hit = np.isin(left, options)
                    step = hit if isinstance(op, ast.In) else np.logical_not(hit)
                    right = None
                else:
                    right = self._eval(right_node, env)
                    equality = isinstance(op, ast.Eq | ast.NotEq)
                    if equality and isinstance(right, str) and left_name in env:
                        step = _equals(left_name, right, env)  # type: ignore[arg-type]
                        step = step if isinstance(op, ast.Eq) else np.logical_not(step)
                    else:
                        step = COMPARE[type(op)](left, right)
                result = np.logical_and(result, step)
                left, left_name = right, dotted(right_node)
            return result
        if isinstance(node, ast.Call):
            args = [self._eval(a, env) for a in node.args]
            func = FUNCTIONS[node.func.id]  # type: ignore[attr-defined]
            value = args[0]
            for arg in args[1:]:
                value = func(value, arg)
            return value
        if isinstance(node, ast.Constant):
            return node.value
        name = dotted(node)
        if name in LITERALS:
            return LITERALS[name]
        return env[name]


def _equals(name: str, value: str, env: Mapping[str, Any]) -> Any:
    """Where a text fact equals `value`, kept in the env (as `_eq.<name>=<value>`): every
    framework's constraints compare the same placement and execution columns of millions of
    plans against the same few names."""
    key = f"_eq.{name}={value}"
    cached = env.get(key)
    if cached is None:
        cached = np.asarray(env[name]) == value
        if isinstance(env, dict):
            env[key] = cached
    return cached
