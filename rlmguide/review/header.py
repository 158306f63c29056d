"""The scenario an export's header names (rlmguide.export.render.scenario_line), read back by
review: what a launch has no key for (the accelerator, the model record behind a path the user
sets, the mean lengths under the caps), and the launch's keys compared with it, so that an
export reviewed as it was written re-plans its own scenario and a key edited since is named."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rlmguide.export.render import SCENARIO_FIELDS, SCENARIO_LINE

Stated = Mapping[str, int | str]

LINE = re.compile(
    "^" + re.escape(SCENARIO_LINE) + r"((?: [a-z]+\.[a-z_]+=[A-Za-z0-9][A-Za-z0-9_.+-]{0,63})+)"
    r"[ \t]*$",
    re.MULTILINE,
)
NAMES = frozenset({"cluster.accelerator", "models.policy", "workload.algorithm"})
"""The header's fields that are ids; the others are counts."""
ZERO = frozenset({"workload.max_staleness", "plan.max_staleness"})
"""The header's counts that may be 0 (the on-policy stream's lag); the others are positive."""
LIMIT = 10**9
"""The largest count the line holds: a longer number is no line export wrote."""


def stated_scenario(text: str) -> dict[str, int | str] | None:
    """The header's fields, counts as numbers; None without the line, or with a field unknown,
    repeated or not a positive count where one is due (a line export did not write)."""
    found = LINE.search(text)
    if found is None:
        return None
    stated: dict[str, int | str] = {}
    for item in found.group(1).split():
        name, _, value = item.partition("=")
        if name not in SCENARIO_FIELDS or name in stated:
            return None
        if name in NAMES:
            stated[name] = value
        elif value.isdigit() and (int(value) > 0 or name in ZERO) and int(value) < LIMIT:
            stated[name] = int(value)
        else:
            return None
    return stated


FROM_HEADER = "not in the launch: the scenario the export's header names"
"""Why an entry's value was taken from the header: stated by the exporter, not assumed."""


def taken(name: str, value: Any) -> dict[str, Any]:
    """An assumption entry for a value the launch does not give, read from the header."""
    return {"field": name, "value": value, "why": FROM_HEADER, "source": None}


def flag_over(name: str, flag: Any, header: Stated) -> list[dict[str, Any]]:
    """The entry saying a command-line flag was taken over a header stating otherwise."""
    stated = header.get(name)
    if flag is None or stated is None or flag == stated:
        return []
    why = f"given on the command line; the export's header names {stated}: the flag's taken"
    return [{"field": name, "value": flag, "why": why, "source": None}]


def edited(name: str, launch: Any, header: Stated) -> list[dict[str, Any]]:
    """The entry naming a launch key that says otherwise than the header's scenario (a key
    edited after export): the launch's value is what runs, so it is the one reviewed."""
    stated = header.get(name)
    if launch is None or stated is None or launch == stated:
        return []
    why = (
        f"the launch gives {launch}, the scenario in the export's header {stated}: edited "
        "after export, reviewed as the launch runs"
    )
    return [{"field": name, "value": launch, "why": why, "source": None}]


def mean_under(
    name: str, cap: int | None, header: Stated, cap_name: str, assumed: list[dict[str, Any]]
) -> int | None:
    """The header's mean length `name` where the launch's cap is the header's `cap_name`
    (the lengths were stated under that cap): else None, said so where the header has one."""
    mean, stated_cap = header.get(name), header.get(cap_name)
    if not isinstance(mean, int) or not isinstance(stated_cap, int):
        return None
    if cap is None or (cap == stated_cap and mean <= cap):
        assumed.append(taken(name, mean))
        return mean
    why = (
        f"the launch's cap ({cap}) is not the one in the export's header ({stated_cap}): the "
        f"header's mean ({mean}) was stated under another cap and is set aside"
    )
    assumed.append({"field": cap_name, "value": cap, "why": why, "source": None})
    return None


def cluster_holding(header: Stated, total: int) -> tuple[int, int] | None:
    """The header's (nodes, GPUs per node) where they hold the launch's pools (`total` GPUs):
    a launch whose pools were grown since export is placed as before, on nodes of its own."""
    nodes, per_node = header.get("cluster.nodes"), header.get("cluster.gpus_per_node")
    if isinstance(nodes, int) and isinstance(per_node, int) and total <= nodes * per_node:
        return nodes, per_node
    return None
