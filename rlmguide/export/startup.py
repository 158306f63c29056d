"""A launch's own values and the start-up checks that read them.

A plan fixes degrees, pools and batches; a launch also writes values the plan implies but
does not name: layers per pipeline stage where the degree does not divide the layers, the
run's length, whether training packs sequences. They are `launch.*` facts: export computes
them from the plan (`computed`) or takes them from what it writes (a mapping's `reads`), and
review reads them back from a launch. Constraint records with `checks: launch` are the
frameworks' start-up asserts over them (Megatron's pipeline split, NeMo-RL's packing under
context parallelism): export refuses a launch that would trip one, naming the record, and
review reports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from rlmguide.kb.load import Catalog, Problem
from rlmguide.kb.schema import Constraint
from rlmguide.kb.schema import Mapping as MappingRecord
from rlmguide.rules.engine import compile_kind
from rlmguide.rules.expr import Fact
from rlmguide.rules.facts import FACTS
from rlmguide.rules.frameworks import CompiledConstraint

LAUNCH_FACTS = {
    f.name: f
    for f in (
        Fact(
            "launch.pp_first_layers",
            "number",
            "decoder layers of the first pipeline stage where the pipeline degree does not "
            "divide the layers (Megatron's num_layers_in_first_pipeline_stage); 0: even stages",
        ),
        Fact(
            "launch.pp_last_layers",
            "number",
            "decoder layers of the last pipeline stage where the degree does not divide the "
            "layers (num_layers_in_last_pipeline_stage); 0: even stages",
        ),
        Fact(
            "launch.run_steps",
            "number",
            "RL steps the launch runs: the scenario's run length; 0 where it gives none",
        ),
        Fact(
            "launch.dataset_epochs",
            "number",
            "passes over the prompt dataset the launch bounds the run by; 0: not set",
        ),
        Fact(
            "launch.sequence_packing",
            "bool",
            "training packs several sequences into one micro-batch by tokens",
        ),
        Fact(
            "launch.normalized_advantages",
            "bool",
            "advantages are normalised over the batch (slime's --normalize-advantages)",
        ),
    )
}
"""The facts a launch adds to the plan's."""

ABSENT = {
    "launch.pp_first_layers": 0,
    "launch.pp_last_layers": 0,
    "launch.run_steps": 0,
    "launch.dataset_epochs": 0,
    "launch.sequence_packing": False,
    "launch.normalized_advantages": False,
}
"""What a launch that writes no key for a launch fact runs with (a mapping's `reads` and
`config_defaults` give the framework's own default where it differs)."""


def pipeline_split(layers: int, pp: int) -> tuple[int, int]:
    """(first, last) stage layers for `pp` stages over `layers` where pp does not divide
    them, with every middle stage at the same count and no stage above ceil(layers / pp),
    the stage the cost model costs; (0, 0) where the stages are even. The first stage takes
    the larger half of what the middle stages leave: the last also holds the output layer
    and the loss. None where no such split exists (more stages than the layers can fill)."""
    if pp <= 1 or layers % pp == 0:
        return 0, 0
    fullest = math.ceil(layers / pp)
    for middle in range(fullest, 0, -1):
        rest = layers - (pp - 2) * middle
        if 2 <= rest <= 2 * fullest:
            return math.ceil(rest / 2), rest // 2
    raise ValueError(f"{layers} layers cannot fill {pp} pipeline stages")


def computed(plan: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The launch facts export derives from the plan it writes."""
    pp = int(facts.get("plan.train.pp", 1))
    try:
        first, last = pipeline_split(int(facts["model.layers"]), pp)
    except ValueError:
        first, last = -1, -1  # no split: the pipeline check names the record
    return {
        "launch.pp_first_layers": first,
        "launch.pp_last_layers": last,
        "launch.run_steps": int(plan.get("run_steps") or 0),
    }


def read(mapping: MappingRecord, config: Mapping[str, Any]) -> dict[str, Any]:
    """The launch facts a launch's keys set directly (a mapping's `reads`): the key's value,
    else the framework's default for it."""
    out = {}
    for fact, key in mapping.reads.items():
        value = config.get(key, mapping.config_defaults.get(key))
        if value is not None:
            out[fact] = _truth(value) if LAUNCH_FACTS[fact].type == "bool" else value
    return out


def _truth(value: Any) -> bool:
    return value.lower() == "true" if isinstance(value, str) else bool(value)


def compile_checks(catalog: Catalog) -> tuple[list[CompiledConstraint], list[Problem]]:
    """The start-up check records (`checks: launch`), over plan and launch facts."""
    return compile_kind(
        catalog, "constraint", CompiledConstraint, {**FACTS, **LAUNCH_FACTS}, checks="launch"
    )


def binding(
    checks: Iterable[CompiledConstraint],
    framework: str,
    backend: str | None,
    engine: str | None,
) -> list[CompiledConstraint]:
    """The checks that bind a run of `framework` on (backend, engine)."""
    return [
        c
        for c in checks
        if c.record.framework in (None, framework)
        and c.record.component in (None, backend, engine)
        and (c.record.framework is not None or c.record.component is not None)
    ]


def tripped(checks: Iterable[CompiledConstraint], facts: Mapping[str, Any]) -> list[Constraint]:
    """The checks a launch with `facts` fails; a check naming a fact the launch lacks is
    not judged (review may not have read it)."""
    out = []
    for c in checks:
        if not c.names <= facts.keys():
            continue
        if not bool(c.holds(facts, 1)[0]):
            out.append(c.record)
    return out


def refusal(record: Constraint) -> str:
    """One line naming a start-up check and where its code is."""
    where = f"{record.file} {record.lines}" if record.lines else record.file
    return f"{record.title} (constraint {record.id}: {where} at {record.commit[:12]})"
