"""A launch script's command, as bash would run it: assignments, arrays, `${VAR:-default}`,
`$((arithmetic))`, quoting, comments and line continuations.

Only what launch scripts use is interpreted: straight-line assignments (plain, `export`,
arrays) and the one command that starts the framework. Command substitution (`$(pwd)`) and
control flow are not run: a substitution expands to nothing and the variable it set is
reported as unknown if the launch uses it.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rlmguide.review.budget import Budget, Exhausted

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
SEPARATORS = {";", "&&", "||", "|", "&"}
PLAIN = re.compile(r"[^ \t\n'\"\\$;&|(){}#]*")
WORD_ENDS = ("", " ", "\t", "\n", ";", "&", "|", "(", ")")
"""What may follow a `{` or `}` that stands alone as a word (bash's reserved word)."""
REDIRECTION = re.compile(r"\d*(?:&>>?|>>?&?|<&?)")
"""An unquoted word that opens with a redirection (`2>&1`, `>log`, `&>/dev/null`, `2>`): the
shell's, never an argument of the command."""
"""A run of characters the lexer takes as they are (read at once, not one by one)."""
OPEN_OR_CLOSE = re.compile(r"\$\{|\}")
OWN_FOLDER = re.compile(r"dirname\b.*(BASH_SOURCE|\$0\b|\$\{0\})", re.S)
"""`$(dirname "${BASH_SOURCE[0]}")` and `$(cd -- "$(dirname -- "$0")" && pwd)`: the folder of
the file being read."""
SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
WRAPPERS = frozenset({"exec", "nohup", "env", "time", "command", "stdbuf"})
"""Commands that run the next word as the command (a script run by its path after them)."""
OPENERS = {"for": "done", "while": "done", "until": "done", "select": "done", "case": "esac"}
"""Loops and case blocks: not run (a launch script's plan is in its straight-line part)."""


class ShellError(ValueError):
    """A script this reader cannot follow (unbalanced quotes, bad arithmetic)."""


@dataclass
class Part:
    text: str
    quote: str  # "" unquoted, '"' double-quoted, "'" single-quoted


@dataclass
class Word:
    parts: list[Part] = field(default_factory=list)
    array: list[Word] | None = None  # NAME=( ... ): the words inside the parentheses

    @property
    def raw(self) -> str:
        return "".join(p.text for p in self.parts)


def _balanced(text: str, i: int, open_: str, close: str) -> int:
    """The index just past the `close` that matches the `open_` at text[i]."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        elif c in "'\"" and open_ != "{":
            end = text.find(c, i + 1)
            if end < 0:
                raise ShellError("unbalanced quote")
            i = end
        i += 1
    raise ShellError(f"unbalanced {open_!r}")


def _dollar(text: str, i: int) -> int:
    """The end of the `$...` expansion starting at text[i]."""
    nxt = text[i + 1 : i + 2]
    if nxt == "(":
        return _balanced(text, i + 1, "(", ")")
    if nxt == "{":
        return _balanced(text, i + 1, "{", "}")
    match = NAME.match(text, i + 1)
    if match:
        return match.end()
    return i + 2 if nxt and (nxt.isdigit() or nxt in "@*#?$!-") else i + 1


def lex(text: str, budget: Budget | None = None) -> list[list[Word]]:
    """The script as statements of words (quotes kept per part for expansion)."""
    return [words for words, _ in lex_statements(text, budget)]


def lex_statements(text: str, budget: Budget | None = None) -> list[tuple[list[Word], str]]:
    """The statements with the separator that ends each (newline, `;`, `&&`, `||`, `|`, `&`,
    or "" at the end): `&&` and `||` chain the next statement on this one's status."""
    text = text.replace("\\\r\n", "").replace("\\\n", "")
    statements: list[tuple[list[Word], str]] = []
    current: list[Word] = []
    stack: list[tuple[list[Word], Word]] = []  # open array assignments
    word: Word | None = None
    pieces: list[list[str]] = []  # the text of each part of `word`, joined when it ends
    i = 0

    def settled() -> Word | None:
        # `+=` on a part's text would copy the word at every piece: quadratic in its length
        if word is not None:
            for part, texts in zip(word.parts, pieces, strict=True):
                part.text = "".join(texts)
                texts[:] = [part.text]
        return word

    def ends_with(*suffixes: str) -> bool:
        last = next((t for texts in reversed(pieces) for t in reversed(texts) if t), "")
        return last.endswith(suffixes)

    def flush() -> None:
        nonlocal word
        if settled() is not None and word.parts:  # type: ignore[union-attr]
            current.append(word)  # type: ignore[arg-type]
        word = None
        pieces.clear()

    def add(t: str, quote: str) -> None:
        nonlocal word
        if word is None:
            word = Word()
        if word.parts and word.parts[-1].quote == quote:
            pieces[-1].append(t)
        else:
            word.parts.append(Part(t, quote))
            pieces.append([t])

    steps = 0
    while i < len(text):
        c = text[i]
        steps += 1
        if budget is not None and steps % 65536 == 0:
            budget.clock()
        if c in " \t":
            flush()
            i += 1
        elif c == "\n":
            flush()
            if not stack and current:
                statements.append((current, "\n"))
                current = []
            i += 1
        elif c == "#" and word is None:
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ShellError("unbalanced single quote")
            add(text[i + 1 : end], "'")
            i = end + 1
        elif c == '"':
            j, chunk = i + 1, []
            while j < len(text) and text[j] != '"':
                if text[j] == "\\" and text[j + 1 : j + 2] in ('"', "\\", "$", "`"):
                    chunk.append(text[j : j + 2])
                    j += 2
                elif text[j] == "$":
                    end = _dollar(text, j)
                    chunk.append(text[j:end])
                    j = end
                else:
                    chunk.append(text[j])
                    j += 1
            if j >= len(text):
                raise ShellError("unbalanced double quote")
            add("".join(chunk), '"')
            i = j + 1
        elif c == "\\":
            if i + 1 < len(text):  # bash drops a backslash that ends the script
                add(text[i + 1], "'")
            i += 2
        elif c == "$":
            end = _dollar(text, i)
            add(text[i:end], "")
            i = end
        elif c == "(" and word is not None and ends_with("=") and not word.parts[-1].quote:
            stack.append((current, settled()))  # type: ignore[arg-type]
            current, word = [], None
            pieces.clear()
            i += 1
        elif c == ")" and stack:
            flush()
            outer, owner = stack.pop()
            owner.array = current
            current, word = outer, None
            current.append(owner)
            i += 1
        elif c == "&" and (text[i + 1 : i + 2] == ">" or (word and ends_with(">", "<"))):
            add(c, "")  # a redirection (`2>&1`, `&>/dev/null`), not a separator
            i += 1
        elif c in "{}" and (word is not None or text[i + 1 : i + 2] not in WORD_ENDS):
            # bash takes { and } as reserved words only standing alone; inside a word they are
            # its text (Hydra's `key={a:b}`, SkyRL's gpt-oss example)
            add(c, "")
            i += 1
        elif c in ";&|(){}":
            flush()
            two = text[i : i + 2]
            token = two if two in SEPARATORS else c
            if not stack and token in SEPARATORS and current:
                statements.append((current, token))
                current = []
            elif token not in SEPARATORS:
                current.append(Word([Part(token, "'")]))
            i += len(token)
        else:
            end = PLAIN.match(text, i).end()  # type: ignore[union-attr]
            add(text[i : max(end, i + 1)], "")
            i = max(end, i + 1)
    if stack:
        raise ShellError("unbalanced '(' in an array assignment")
    flush()
    if current:
        statements.append((current, ""))
    return statements


def _wrap(value: int) -> int:
    """Bash's arithmetic is 64-bit signed (intmax_t): results wrap, so `$((9**9**9))` is a
    number, not a computation of 369 million digits."""
    return (value + 2**63) % 2**64 - 2**63


def _power(a: int, b: int) -> int:
    if b < 0:
        raise ShellError("exponent less than 0")
    return pow(a, b, 2**64)


def _depth(text: str) -> int:
    """How deep `${` expansions nest in `text`."""
    depth = deepest = 0
    for match in OPEN_OR_CLOSE.finditer(text):
        depth = depth + 1 if match.group() == "${" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def _quotient(a: int, b: int) -> int:
    """Integer division as bash does it: toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: _quotient,
    ast.Mod: lambda a, b: a - b * _quotient(a, b),
    ast.Pow: _power,
}
NUMBER = re.compile(r"\b0[xX][0-9a-fA-F]+\b|\b0[0-9]+\b")


def _literals(text: str, expr: str) -> str:
    """Bash's integer literals in decimal: 010 is 8, 0x10 is 16; 08 is an error."""

    def decimal(m: re.Match[str]) -> str:
        token = m.group()
        try:
            return str(int(token, 16 if token[1] in "xX" else 8))
        except ValueError:
            raise ShellError(f"$(({expr})): {token} is not a number in base 8") from None

    return NUMBER.sub(decimal, text)


@dataclass
class Shell:
    """Variables as the script sets them; `unknown` names those only a command could set."""

    variables: dict[str, str | list[str]] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    """Names a child process sees (`export`, `declare -x`, the starting environment)."""
    unknown: set[str] = field(default_factory=set)
    used_unknown: set[str] = field(default_factory=set)
    appended: set[str] = field(default_factory=set)
    """Hydra keys the command adds with `+` (set by review.parse_launch)."""
    here: Path | None = None
    """The folder of the file being read: what `$(dirname "${BASH_SOURCE[0]}")` gives."""
    unsourced: list[str] = field(default_factory=list)
    """Files a `source` named that could not be read."""
    files: list[tuple[Path, str]] = field(default_factory=list)
    """The files read (the script, what it sources or runs) and their text, in reading order."""
    substituted: bool = False
    """A command substitution was met (and not run) since the flag was last cleared."""
    budget: Budget = field(default_factory=Budget)
    nesting: int = 0
    """`${NAME:-default}` defaults being expanded inside one another."""

    def value(self, name: str) -> str:
        if name in self.unknown:
            self.used_unknown.add(name)
        found = self.variables.get(name, "")
        return " ".join(found) if isinstance(found, list) else found

    def arithmetic(self, expr: str, depth: int = 0) -> str:
        """`$((expr))`: integers as bash reads them (a leading 0 is octal, 0x hex), bare names
        read as variables whose text is itself an expression (empty is 0), division and
        remainder truncating toward zero."""
        text = _literals(self.expand_text(expr), expr).replace("/", "//")
        try:
            tree = ast.parse(text.strip() or "0", mode="eval").body
            return str(_wrap(self._evaluate(tree, expr, depth)))
        except SyntaxError:
            raise ShellError(f"cannot read $(({expr[:40]}))") from None
        except RecursionError:  # a chain of thousands of operators
            raise ShellError(f"$(({expr[:40]}...)) is too long to read") from None

    def _evaluate(self, node: ast.expr, expr: str, depth: int = 0) -> int:
        self.budget.expansion()
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return _wrap(node.value)
        if isinstance(node, ast.Name):
            raw = self.value(node.id).strip()
            if depth > 8:
                raise ShellError(f"$(({expr})): {node.id} refers to itself")
            return int(self.arithmetic(raw, depth + 1)) if raw else 0
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left = self._evaluate(node.left, expr, depth)
            right = self._evaluate(node.right, expr, depth)
            if isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0:
                raise ShellError(f"$(({expr})): division by 0")
            return _wrap(int(_OPS[type(node.op)](left, right)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = self._evaluate(node.operand, expr, depth)
            return -inner if isinstance(node.op, ast.USub) else inner
        raise ShellError(f"cannot read $(({expr}))")

    def parameter(self, body: str) -> str | list[str]:
        """`${...}`: NAME, NAME:-default, NAME-default, NAME:=default, NAME[@]."""
        match = NAME.match(body)
        if match is None:
            return ""
        name, rest = match.group(), body[match.end() :]
        if rest in ("[@]", "[*]"):
            found = self.variables.get(name, [])
            return found if isinstance(found, list) else [found]
        current = self.value(name)
        for op in (":-", ":=", "-", "="):
            if rest.startswith(op):
                unset = current == "" if op.startswith(":") else name not in self.variables
                if not unset:
                    return current
                if self.nesting == 0:  # all the levels at once: each costs a lexing of the rest
                    self.budget.nested(_depth(rest), "${...} defaults")
                self.nesting += 1
                try:
                    words = [
                        f
                        for st in lex(rest[len(op) :], self.budget)
                        for w in st
                        for f in self.expand(w)
                    ]
                finally:
                    self.nesting -= 1
                default = " ".join(words)
                if "=" in op:
                    self.variables[name] = default
                return default
        return current

    def expand_text(self, text: str) -> str:
        """Expansion inside double quotes (or arithmetic): one string."""
        out = self._expand(text)
        return " ".join(out) if isinstance(out, list) else out

    def _expand(self, text: str) -> str | list[str]:
        pieces: list[str] = []
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                pieces.append(text[i + 1])
                i += 2
                continue
            if c != "$":
                pieces.append(c)
                i += 1
                continue
            end = _dollar(text, i)
            token = text[i:end]
            self.budget.expansion()
            if token.startswith("$(("):
                pieces.append(self.arithmetic(token[3:-2]))
            elif token.startswith("$("):
                if self.here is not None and OWN_FOLDER.search(token):
                    pieces.append(str(self.here))  # the script's own folder
                else:
                    self.substituted = True  # command substitution is not run
            elif token.startswith("${"):
                got = self.parameter(token[2:-1])
                if isinstance(got, list) and token == text:
                    return got
                pieces.append(" ".join(got) if isinstance(got, list) else got)
            elif token in ("$@", "$*") or token[1:].isdigit():
                pass  # the script's own arguments: none when read
            elif len(token) > 1 and NAME.fullmatch(token[1:]):
                pieces.append(self.value(token[1:]))
            else:
                pieces.append(token)
            i = end
        joined = "".join(pieces)
        self.budget.value(len(joined), f"the expansion of {text[:40]!r}")
        return joined

    def expand(self, word: Word) -> list[str]:
        """A word's fields: unquoted expansions split on blanks, quoted ones kept whole."""
        if word.raw in ("$@", "$*"):
            return []  # the script's own arguments: none when read
        fields: list[str] = []
        current: str | None = None
        for part in word.parts:
            if part.quote == "'":
                current = (current or "") + part.text
                continue
            got = self._expand(part.text)
            if part.quote == '"' and isinstance(got, list) and len(word.parts) == 1:
                fields.extend(got)  # "${NAME[@]}": one field per element, none when empty
                continue
            if part.quote == '"':
                current = (current or "") + (" ".join(got) if isinstance(got, list) else got)
                continue
            chunks = got if isinstance(got, list) else got.split()
            if not chunks:
                continue
            if got and not isinstance(got, list) and got[0] not in " \t\n" and current is not None:
                chunks = [current + chunks[0], *chunks[1:]]
            elif current is not None:
                fields.append(current)
            fields.extend(chunks[:-1])
            current = chunks[-1]
            if not isinstance(got, list) and got[-1] in " \t\n":
                fields.append(current)
                current = None
        if current is not None:
            fields.append(current)
        return fields

    def assign(self, word: Word) -> str | None:
        """Run `NAME=value` (or `NAME=(...)`, `NAME+=...`): the name, or None if `word` is no
        assignment."""
        first = word.parts[0] if word.parts else None
        match = ASSIGNMENT.match(first.text) if first is not None and not first.quote else None
        if match is None:
            return None
        name, append = match.group(1), match.group(2)
        if word.array is not None:
            values = [f for w in word.array for f in self.expand(w)]
            held = self.variables.get(name) if append else None
            if isinstance(held, list):
                held.extend(values)  # in place: a script's many `+=(...)` stay linear
            else:
                # `NAME+=(...)` appends; a string NAME held becomes the array's first element
                self.variables[name] = ([] if held is None else [held]) + values
            return name
        rest = [Part(first.text[match.end() :], ""), *word.parts[1:]]  # type: ignore[union-attr]
        self.substituted = False
        value = "".join(
            p.text if p.quote == "'" else self.expand_text(p.text) for p in rest if p.text
        )
        if self.substituted:
            self.unknown.add(name)
        else:
            self.unknown.discard(name)
        value = self.value(name) + value if append else value
        self.budget.value(len(value), f"the value of {name}")
        self.variables[name] = value
        return name


def command_arguments(
    text: str,
    module: str,
    environment: Mapping[str, str] | None = None,
    path: Path | None = None,
    budget: Budget | None = None,
) -> tuple[list[str], Shell]:
    """The expanded arguments after `python3 -m MODULE` (or `python MODULE.py`) in a
    script run with `environment` (nothing else is set), with the shell state at that point.
    `path` is the script's file: `source` reads files relative to it, and the BASH_SOURCE
    idiom gives its folder."""
    environment = dict(environment or {})
    shell = Shell(environment, set(environment), budget=budget or Budget())
    found = _Runner(shell, module).run(text, path)
    if found is None:
        raise ShellError(f"no `{module}` command in the script")
    return found, shell


@dataclass
class _Block:
    """An open `if`: whether the statements around it run, whether a branch was taken,
    whether the current branch runs."""

    outer: bool
    taken: bool = False
    running: bool = False


@dataclass
class _Runner:
    shell: Shell
    module: str
    depth: int = 0

    def run(self, text: str, path: Path | None) -> list[str] | None:
        """Run the statements of one file; the launch's arguments once the module is met."""
        saved, self.shell.here = self.shell.here, (path.parent if path else self.shell.here)
        if path is not None:
            self.shell.files.append((path, text))
        try:
            lexed = self.shell.budget.lexed
            if text not in lexed:
                lexed[text] = lex_statements(text, self.shell.budget)
            return self._statements(lexed[text])
        finally:
            self.shell.here = saved

    def _statements(self, statements: list[tuple[list[Word], str]]) -> list[str] | None:
        blocks: list[_Block] = []
        skipped = 0  # open loops and case blocks
        chain, status = "", True
        queue = list(statements)
        i = 0
        while i < len(queue):
            words, sep = queue[i]
            head = words[0].raw
            running = skipped == 0 and all(b.running for b in blocks)
            i += 1
            self.shell.budget.clock()
            if head in OPENERS:
                skipped += 1
                continue
            if head in ("done", "esac"):
                skipped = max(0, skipped - 1)
                continue
            if skipped:
                continue
            if head in ("if", "elif"):
                condition = [(words[1:], sep)]
                while i < len(queue) and queue[i][0][0].raw != "then":
                    condition.append(queue[i])
                    i += 1
                if i == len(queue):
                    raise ShellError(f"`{head}` without `then`")
                if head == "if":
                    blocks.append(_Block(outer=running))
                    self.shell.budget.nested(len(blocks), "`if` blocks")
                block = blocks[-1] if blocks else None
                if block is None:
                    raise ShellError("`elif` outside an `if`")
                block.running = block.outer and not block.taken and self._condition(condition)
                block.taken = block.taken or block.running
                queue[i] = (queue[i][0][1:], queue[i][1])  # what follows `then`
                if not queue[i][0]:
                    i += 1
                continue
            if head == "else":
                if not blocks:
                    raise ShellError("`else` outside an `if`")
                block = blocks[-1]
                block.running, block.taken = block.outer and not block.taken, True
                if words[1:]:  # what follows `else`, read next (in place: an insert is O(n))
                    i -= 1
                    queue[i] = (words[1:], sep)
                continue
            if head == "fi":
                if blocks:
                    blocks.pop()
                chain, status = sep, True
                continue
            if not running:
                continue
            if (chain == "&&" and not status) or (chain == "||" and status):
                chain = sep  # skipped: the status stays the one that decided
                continue
            found, status = self._statement(words)
            if found is not None:
                return found
            chain = sep
        return None

    def _statement(self, statement: list[Word]) -> tuple[list[str] | None, bool]:
        """Run one statement: (the launch's arguments if it is the launch, its status)."""
        shell = self.shell
        head = statement[0].raw
        if head in ("export", "local", "declare", "readonly"):
            flags = statement[1].raw if len(statement) > 1 else ""
            exports = head == "export" or (flags.startswith("-") and "x" in flags)
            for w in statement[1:]:
                name = shell.assign(w) or (w.raw if NAME.fullmatch(w.raw) else None)
                if exports and name:
                    shell.exported.add(name)
            return None, True
        prefix: list[str] = []  # `A=1 cmd`: what the command's process sees besides the exports
        for w in statement:
            if (name := shell.assign(w)) is None:
                break
            prefix.append(name)
        else:
            return None, True
        words = [f for w in _arguments(statement[len(prefix) :]) for f in shell.expand(w)]
        if head in ("source", ".") and len(words) > 1:
            # an unset variable names the file by the words written (${MODEL_ARGS_SCRIPT})
            return self._source(words[1] or statement[1].raw), True
        if head in ("[", "[[", "test", "!", "true", "false"):
            return None, self._test(statement)
        for i, w in enumerate(words):
            if w == self.module or w.removesuffix(".py").replace("/", ".") == self.module:
                return words[i + 1 :], True
            if "." not in self.module and w.endswith(".py") and _at_a_root(w, self.module):
                return words[i + 1 :], True  # a top-level script by path (/root/slime/train.py)
        return self._child(words, prefix), True

    def _child(self, words: list[str], prefix: list[str]) -> list[str] | None:
        """A launch one process down: `bash -c "..."` (or sh, anywhere in the command, as
        after `srun ...`), `bash FILE` and a script run by its path (after `exec`, `nohup`,
        `env`, `time`). The child sees the exported variables and the command's own
        assignments, as a new process does; nothing of it comes back but what it launches."""
        command = next((i for i, w in enumerate(words) if Path(w).name in SHELLS), None)
        text: str | None = None
        name: str | None = None
        if command is not None:
            rest = words[command + 1 :]
            options = 0
            while options < len(rest) and rest[options].startswith("-") and rest[options] != "--":
                options += 1
            given = rest[:options]
            operands = rest[options + (rest[options : options + 1] == ["--"]) :]
            if any(not o.startswith("--") and "c" in o[1:] for o in given):
                text = operands[0] if operands else None
            elif operands:
                name = operands[0]
        else:
            first = next((w for w in words if w not in WRAPPERS and not w.startswith("-")), "")
            name = first if first.endswith(".sh") else None
        if text is None and name is None:
            return None
        if self.depth >= 8:
            raise ShellError(f"`{' '.join(words)[:60]}` nests too deeply")
        parent = self.shell
        visible = parent.exported | set(prefix)
        child = Shell(
            {k: v for k, v in parent.variables.items() if k in visible},
            set(visible),
            parent.unknown & visible,
            here=parent.here,
            budget=parent.budget,
        )
        runner = _Runner(child, self.module, self.depth + 1)
        try:
            if text is not None:
                return runner.run(text, None)
            path = self._find(name)  # type: ignore[arg-type]
            try:
                script = None if path is None else self.shell.budget.read(path)
            except (OSError, ValueError) as exc:
                if isinstance(exc, Exhausted):
                    raise
                script = None
            if script is None:
                parent.unsourced.append(name)  # type: ignore[arg-type]
                return None
            return runner.run(script, path)
        finally:
            parent.used_unknown |= child.used_unknown
            parent.unsourced.extend(child.unsourced)
            parent.files.extend(child.files)

    def _find(self, name: str) -> Path | None:
        """A file named in the script: absolute, or relative to the script's folder or a
        folder above it (where a script is run from its repository's root)."""
        here = self.shell.here
        if Path(name).is_absolute() or here is None:
            candidates = [Path(name)]
        else:
            candidates = [folder / name for folder in (here, *here.parents)]
        return next((c for c in candidates if c.is_file()), None)

    def _source(self, name: str) -> list[str] | None:
        """`source FILE`: relative names from the script's folder (or a folder above it, where
        a script is run from its repository's root)."""
        if self.depth >= 8:
            raise ShellError(f"`source {name}` nests too deeply")
        candidate = self._find(name)
        if candidate is not None:
            try:
                text = self.shell.budget.read(candidate)
            except (OSError, ValueError) as exc:
                if isinstance(exc, Exhausted):
                    raise
            else:
                return _Runner(self.shell, self.module, self.depth + 1).run(text, candidate)
        self.shell.unsourced.append(name)
        return None

    def _condition(self, pieces: list[tuple[list[Word], str]]) -> bool:
        """An `if` condition: tests chained by `&&` and `||`, left to right as bash does; a
        command is not run and is taken as failed."""
        status: bool | None = None
        chain = ""
        for words, sep in pieces:
            if not words:
                continue
            if status is None or (chain == "&&" and status) or (chain == "||" and not status):
                status = self._test(words)
            chain = sep
        return bool(status)

    def _test(self, words: list[Word]) -> bool:
        head = words[0].raw
        if head == "!":
            return not self._test(words[1:]) if words[1:] else False
        if head in ("true", ":"):
            return True
        if head not in ("[", "[[", "test"):
            return False  # a command: not run
        args = [f for w in words[1:] for f in self.shell.expand(w)]
        if head != "test" and args and args[-1] in ("]", "]]"):
            args = args[:-1]
        return _truth(args, glob=head == "[[")


def _at_a_root(word: str, module: str) -> bool:
    """Whether `word` can name the top-level script `module`.py of a checkout: bare, absolute
    (/root/slime/train.py, or ${REPO_ROOT}/train.py with the root unknown) or up from the
    script's folder; a relative path down into folders (AReaL's examples/tau2/train.py) names
    another file than the checkout's root one."""
    path = Path(word)
    if path.stem != module:
        return False
    return path.is_absolute() or all(part == ".." for part in path.parts[:-1])


def _arguments(words: list[Word]) -> list[Word]:
    """The command's words without its redirections: `2>&1` and `>log` carry their target, a
    bare `>` or `2>` takes the next word."""
    kept: list[Word] = []
    target = False
    for w in words:
        opens = REDIRECTION.match(w.raw) if w.parts and not w.parts[0].quote else None
        if target or opens:
            target = not target and opens is not None and opens.end() == len(w.raw)
            continue
        kept.append(w)
    return kept


def _number(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


COMPARE = {
    "-eq": operator.eq,
    "-ne": operator.ne,
    "-lt": operator.lt,
    "-le": operator.le,
    "-gt": operator.gt,
    "-ge": operator.ge,
}


def _truth(args: list[str], glob: bool = False) -> bool:
    """`[ ... ]` over expanded arguments: string and integer comparisons, -z/-n, file tests
    (against this machine's files: sourced helpers next to the script)."""
    if args and args[0] == "!":
        return not _truth(args[1:], glob)
    if not args:
        return False
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, value = args
        if op == "-z":
            return value == ""
        if op == "-n":
            return value != ""
        if op in ("-f", "-e", "-d", "-r", "-s"):
            target = Path(value)
            return target.is_dir() if op == "-d" else target.is_file() or target.is_dir()
        return False
    left, op, right = args[0], args[1], args[2]
    if op in ("=", "=="):
        return fnmatch.fnmatchcase(left, right) if glob else left == right
    if op == "!=":
        return not (fnmatch.fnmatchcase(left, right) if glob else left == right)
    if op in COMPARE:
        a, b = _number(left), _number(right)
        return a is not None and b is not None and COMPARE[op](a, b)
    return False
