"""Read record files into validated models, collecting every problem instead of stopping."""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pydantic
import yaml
from pydantic import ValidationError
from rlmguide.kb.files import UnreadableFile, decode, read_regular
from rlmguide.kb.paths import (
    PLURALS,
    RecordRoot,
    cache_dir,
    digest_of,
    fast_content_hash,
    record_files,
    unreadable,
)
from rlmguide.kb.schema import KINDS, Record

KIND_OF_FOLDER = {plural: kind for kind, plural in PLURALS.items()}
KEEP_CATALOGS = 12
"""Cached catalogs kept (one per set of kinds read, per record content): about 1 MB each."""


# libyaml's parser when PyYAML has it: six times faster than the pure-Python one on the records
# (loading them was most of a site build); the resolvers below are Python-side in both.
_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RecordLoader(_SafeBase):  # type: ignore[valid-type,misc]
    """YAML 1.2 booleans: only true/false, so `support: yes` stays the text "yes"; and a key
    given twice in one mapping is an error (PyYAML keeps the last silently: a second `claims:`
    once dropped 48 claims of a framework without a word)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"duplicate key {key_node.value!r} (first on line {seen[key] + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


RecordLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in _SafeBase.yaml_implicit_resolvers.items()
}
RecordLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


MAX_YAML_DEPTH = 64
"""Nesting a YAML document may have (records nest 6 levels; deeper input is an attack on the
recursive readers below: PyYAML's constructor, pydantic, JSON)."""
MAX_YAML_VALUES = 1_000_000
"""Values a document may hold, an alias counted each time it is used: "billion laughs" YAML
(aliases of aliases) is a few lines that hold 10**9 values."""


def parse_yaml(text: str, loader: type = RecordLoader) -> object:
    """The document, or a one-line `yaml.YAMLError`: also for what PyYAML reports otherwise
    (RecursionError on deep nesting, ValueError on an integer past 4,300 digits) and for
    documents past `MAX_YAML_DEPTH` levels or `MAX_YAML_VALUES` values."""
    try:
        data = yaml.load(text, Loader=loader)  # callers pass safe loaders only
    except RecursionError:
        raise yaml.YAMLError(
            f"nests deeper than the {MAX_YAML_DEPTH} levels a file may have"
        ) from None
    except ValueError as exc:  # int("9" * 5000): Python's limit on integer text
        reason = str(exc).split(";")[0].split(":")[0].strip()
        raise yaml.YAMLError(f"a value this reader refuses ({reason})") from None
    _check_size(data)
    return data


def _check_size(data: object) -> None:
    """Walk the document without recursion, counting values and levels."""
    stack: list[tuple[object, int]] = [(data, 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > MAX_YAML_VALUES:
            raise yaml.YAMLError(
                f"holds more than {MAX_YAML_VALUES:,} values (aliases of aliases?)"
            )
        if depth > MAX_YAML_DEPTH:
            raise yaml.YAMLError(f"nests deeper than the {MAX_YAML_DEPTH} levels a file may have")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((v, depth + 1) for v in node)


def yaml_problem(exc: yaml.YAMLError) -> tuple[str, str]:
    """(`line N` or "", the reason in one line) of a YAML error, for one-line messages."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark else ""
    reason = getattr(exc, "problem", None) or str(exc)
    return where, reason.strip().splitlines()[0] if reason.strip() else type(exc).__name__


@dataclass(frozen=True)
class Problem:
    """One finding: which file, where inside it, and what is wrong."""

    file: str
    path: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}: " if self.path else f"{self.file}: "
        return where + self.message


@dataclass
class Catalog:
    """Every loaded record by kind and id, with the file each came from."""

    records: dict[str, dict[str, Record]] = field(
        default_factory=lambda: {kind: {} for kind in KINDS}
    )
    files: dict[tuple[str, str], str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    broken: set[tuple[str, str]] = field(default_factory=set)
    """(kind, file stem) of files that failed to load: references to them are not errors too."""
    digest: str = ""
    """`kb.paths.digest_of` the record files as they were read for this catalog."""

    def of(self, kind: str) -> dict[str, Record]:
        return self.records[kind]

    def file_of(self, record: Record) -> str:
        return self.files[(record.kind, record.id)]

    def all(self) -> Iterable[Record]:
        for by_id in self.records.values():
            yield from by_id.values()


def format_location(loc: tuple[int | str, ...]) -> str:
    """Pydantic's location tuple as a field path: ('claims', 3, 'source') -> claims[3].source."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not text:
            text = part
        elif not part.startswith(("function-", "lax-or", "union[", "constrained-", "tagged-")):
            text += f".{part}"
    return text


def describe(error: dict) -> str:
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown field"
    elif error["type"] == "missing":
        message = "required field is missing"
    return message.removeprefix("Value error, ")


def load_catalog(roots: Iterable[RecordRoot], kinds: Iterable[str] | None = None) -> Catalog:
    """Every record under `roots` (or only those of `kinds`, for callers that need a few).

    The validated catalog is kept in the cache, named by a digest of the record files, the
    schema, this loader and pydantic's version, so a warm start parses no YAML; any edit of
    a record or of the code that reads it names another file. The cached copy is JSON that is
    checksummed and validated again on every read (see `kb.catalog_cache`).
    """
    from rlmguide.kb.cache import CacheError, CacheMissing, prune, warn, write_sealed
    from rlmguide.kb.catalog_cache import from_json, to_json

    roots = list(roots)
    wanted = sorted(set(kinds)) if kinds is not None else None
    digest = fast_content_hash(roots)
    cached = _cache_file(roots, wanted, digest)
    try:
        return from_json(cached, digest)
    except CacheMissing:
        pass
    except CacheError as exc:
        warn(f"ignoring cache file {cached}: {exc}; reading the records again")
    catalog = _parse_catalog(roots, wanted)
    # Cache only what was parsed from the bytes the name stands for: a record edited since
    # the digest was taken must not be remembered under the old content's name.
    if catalog.digest == digest:
        with contextlib.suppress(OSError):  # a read-only cache only costs the parse
            write_sealed(cached, to_json(catalog))
        prune(cached.parent, "*.json", KEEP_CATALOGS, cached)
    return catalog


def _code_digest() -> bytes:
    """The source of this loader and of every schema module, as this process imported them:
    hashed once, at import, so a process that keeps running while the code on disk changes
    (a `git pull` under a notebook) names its caches by the code it validates with, and a
    later process with other schema code never reads a catalog the old one parsed."""
    from rlmguide.kb import schema

    digest = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=16)
    for module in sorted(Path(schema.__file__).parent.glob("*.py")):
        digest.update(module.name.encode() + b"\0" + module.read_bytes())
    return digest.digest()


CODE_DIGEST = _code_digest()


def _cache_file(roots: list[RecordRoot], kinds: list[str] | None, content: str) -> Path:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(content.encode())
    digest.update(repr((kinds, [(str(r), k) for r, k in roots])).encode())
    digest.update(CODE_DIGEST)
    digest.update(pydantic.VERSION.encode())
    return cache_dir() / "catalogs" / f"{digest.hexdigest()}.json"


def _parse_catalog(roots: list[RecordRoot], kinds: list[str] | None) -> Catalog:
    """Parse the record files, each read once: the catalog's digest is of the bytes parsed."""
    catalog = Catalog()
    wanted = set(kinds) if kinds is not None else None
    hashed: list[tuple[str, bytes]] = []
    owners: dict[str, tuple[str, str]] = {}
    for name, path in record_files(roots):
        try:
            raw = read_regular(path)
        except (OSError, ValueError) as exc:
            raw, error = unreadable(exc), exc
        else:
            error = None
        hashed.append((name, raw))
        kind = KIND_OF_FOLDER.get(name.split("/")[0])
        if wanted is not None and kind not in wanted:
            continue
        if kind is None:
            folders = ", ".join(sorted(KIND_OF_FOLDER))
            catalog.problems.append(Problem(name, "", f"unknown kind folder; use one of {folders}"))
            continue
        if error is not None:
            reason = error.strerror if isinstance(error, OSError) else str(error)
            catalog.problems.append(Problem(name, "", f"cannot read: {reason}"))
            catalog.broken.add((kind, path.stem))
            continue
        try:
            data = parse_yaml(decode(raw))
        except UnreadableFile as exc:
            catalog.problems.append(Problem(name, "", str(exc)))
            catalog.broken.add((kind, path.stem))
            continue
        except yaml.YAMLError as exc:
            where, reason = yaml_problem(exc)
            catalog.problems.append(Problem(name, where, f"malformed YAML: {reason}"))
            catalog.broken.add((kind, path.stem))
            continue
        except RecursionError:
            catalog.problems.append(Problem(name, "", "nested too deeply"))
            catalog.broken.add((kind, path.stem))
            continue
        if not isinstance(data, dict):
            catalog.problems.append(Problem(name, "", "a record must be a YAML mapping"))
            continue
        try:
            record = KINDS[kind].model_validate(data)
        except ValidationError as exc:
            catalog.problems.extend(
                Problem(name, format_location(error["loc"]), describe(error))
                for error in exc.errors()
            )
            catalog.broken.add((kind, path.stem))
            continue
        if record.id != path.stem:
            catalog.problems.append(
                Problem(name, "id", f"id {record.id!r} differs from the file name {path.stem!r}")
            )
            continue
        if record.id in catalog.records[kind]:
            first = catalog.files[(kind, record.id)]
            catalog.problems.append(Problem(name, "id", f"duplicate {kind} id (first in {first})"))
            continue
        if record.id in owners:
            other_kind, other = owners[record.id]
            # one id, two kinds: `show` finds one, and the features view doubles matrix rows
            catalog.problems.append(
                Problem(
                    name,
                    "id",
                    f"id {record.id!r} is already a {other_kind} ({other}); ids are "
                    "unique across kinds",
                )
            )
            continue
        owners[record.id] = (kind, name)
        catalog.records[kind][record.id] = record
        catalog.files[(kind, record.id)] = name
    catalog.digest = digest_of(hashed)
    return catalog
