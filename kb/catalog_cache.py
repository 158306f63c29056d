"""The validated catalog as a cache file: JSON of the records, validated again when read.

It replaces a pickle, which ran whatever code a file planted in the cache folder named. JSON
can only hold data, and every record read back goes through its pydantic model as a YAML
record does (17 ms for the whole knowledge base, less than unpickling took), so a cache file
can at worst be refused, never obeyed. The file is sealed with a checksum (`kb.cache`) and
names the content digest it was parsed from, which must be the one the caller expects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from rlmguide.kb.cache import CacheError, read_sealed
from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.schema import KINDS

FORMAT = 1


def _dump(record: BaseModel) -> dict[str, Any]:
    # Only the fields the YAML set: readers dump records with exclude_unset (the JSON columns
    # of the store), so a record from the cache must know which fields were given, as parsed.
    return record.model_dump(mode="json", round_trip=True, exclude_unset=True)


def to_json(catalog: Catalog) -> bytes:
    document = {
        "format": FORMAT,
        "digest": catalog.digest,
        "records": {
            kind: [
                {"file": catalog.files[(kind, rid)], "record": _dump(r)} for rid, r in by_id.items()
            ]
            for kind, by_id in catalog.records.items()
        },
        "problems": [[p.file, p.path, p.message, p.severity] for p in catalog.problems],
        "broken": sorted(catalog.broken),
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def from_json(path: Path, digest: str) -> Catalog:
    """The catalog cached at `path` for content `digest`, or `CacheError` saying why not."""
    payload = read_sealed(path)
    try:
        document = json.loads(payload)
        return _catalog(document, digest)
    except CacheError:
        raise
    except (ValueError, TypeError, KeyError, ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CacheError(f"not a valid catalog: {first}") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _catalog(document: Any, digest: str) -> Catalog:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CacheError("written by another version")
    if document.get("digest") != digest:
        raise CacheError("holds other record content than its name says")
    catalog = Catalog(digest=digest)
    for kind, entries in document["records"].items():
        if kind not in KINDS:
            raise TypeError(f"unknown kind {kind!r}")
        for entry in entries:
            record = KINDS[kind].model_validate(entry["record"])
            catalog.records[kind][record.id] = record
            catalog.files[(kind, record.id)] = _text(entry["file"])
    catalog.problems = [Problem(*(_text(v) for v in p)) for p in document["problems"]]
    catalog.broken = {(_text(k), _text(stem)) for k, stem in document["broken"]}
    return catalog
