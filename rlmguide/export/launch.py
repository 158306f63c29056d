"""A plan as a framework's launch: which mapping, which entry point, which keys and values.

`build` is the whole exporter over data: it picks the mapping (the newest for the framework
unless a version is asked for), the plan (search.find_plan), the training backend and rollout
engine the framework's constraints allow for it, and computes every key. Refusals are
NotExpressible with the reason; render.py writes the result as a script.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlmguide.export.search import Found, find_plan
from rlmguide.export.writer import Argument, Writer, for_algorithm, pick_mapping
from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Launch
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.rules.recommend import Judges
from rlmguide.rules.scenario import Resolved


@dataclass(frozen=True)
class Exported:
    framework: str
    mapping: MappingRecord
    launch: Launch
    backend: str | None
    engine: str | None
    arguments: list[Argument]
    inputs: dict[str, str]
    """Shell variable -> what the user must set it to."""
    found: Found
    defaults: dict[str, str] = field(default_factory=dict)
    """Shell variable -> the value the script uses when the user sets none (the policy's
    Hugging Face id)."""
    departures: list[str] = field(default_factory=list)
    """How the launch runs otherwise than the algorithm's record (Mapping.departures)."""

    @property
    def plan(self) -> dict[str, Any]:
        return self.found.plan

    def as_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "mapping": self.mapping.id,
            "commit": self.mapping.commit,
            "syntax": self.mapping.syntax,
            "command": self.launch.command,
            "entry_point_file": self.launch.file,
            "training_backend": self.backend,
            "rollout_engine": self.engine,
            "preamble": [*self.mapping.preamble, *self.launch.preamble],
            "fixed": [*self.mapping.fixed, *self.launch.fixed],
            "arguments": [
                {"key": a.key, "value": a.value, "fact": a.fact, "file": a.file}
                for a in self.arguments
            ],
            "inputs": self.inputs,
            "input_defaults": self.defaults,
            "departures": self.departures,
            "plan": self.plan,
            "rank": self.found.rank,
            "passed_over": self.found.result.get("passed_over", []),
            "passed_over_count": self.found.result.get("passed_over_count", 0),
        }


def build(
    resolved: Resolved,
    catalog: Catalog,
    mappings: Mapping[str, MappingRecord],
    framework: str,
    version: str | None = None,
    judges: Judges | None = None,
) -> Exported:
    """`framework`'s launch of the plan find_plan picks (`judges`: see there)."""
    mapping = pick_mapping(mappings, framework, version)
    writer = Writer(
        catalog, {framework: for_algorithm(mapping, resolved.scenario.workload.algorithm)}
    )
    found = find_plan(resolved, catalog, framework, writer, judges)
    w = writer.write(found.recommender, found.row, found.plan, framework)
    return Exported(
        framework,
        writer.mappings[framework],
        w.launch,
        w.backend,
        w.engine,
        w.arguments,
        w.inputs,
        found,
        departures=w.departures,
    )
