"""The options of a mixed-accelerator cluster (rules.mixed) as report tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlmguide.formats import print_rows
from rlmguide.runreport import LABELS, _money, _number


def _bill(billing: list[dict[str, Any]]) -> str:
    """Each part's GPUs, price and cost per step: `a100 16 x 2.79 = 1.04 USD`."""
    shown = []
    for part in billing:
        price = "no price" if part["price_per_gpu_hour"] is None else (
            f"{part['price_per_gpu_hour']:g}"
        )  # fmt: skip
        cost = _money(part["cost_per_step"], part["currency"])
        shown.append(f"{part['part']} {part['gpus']} x {price} = {cost}")
    return "; ".join(shown)


def print_mixed(mixed: Mapping[str, Any], fmt: str) -> None:
    """Every option searched (each part alone, each pair of parts), its top plan's time and
    cost, the per-part bill per step, the frontier and the chosen option."""
    t, c = mixed["time_axis"], mixed["cost_axis"]
    rows = []
    for o in mixed["options"]:
        sync = o["weight_sync_between_parts"]
        rows.append(
            (
                o["label"],
                o["gpus"],
                f"{o['placement']}/{o['execution']}"
                + (f", sync {sync['transport']} {sync['gbps_per_gpu']:g} Gb/s" if sync else ""),
                _number(o[t], 4),
                _number(o[c], 5),
                _bill(o["billing"]),
                "yes" if o["on_frontier"] else "",
                "<- chosen" if o["chosen"] else "",
            )
        )
    title = (
        f"mixed cluster: options searched, objective {mixed['objective']}: {mixed['chosen']} "
        f"(the plans above), {mixed['why']}; link between parts {mixed['link_gbps_per_gpu']:g} "
        f"Gb/s per GPU ({mixed['link_origin']})"
    )
    header = ["option", "GPUs", "plan", LABELS[t], LABELS[c], "bill per step by part",
              "frontier", ""]  # fmt: skip
    print_rows(header, rows, fmt, title=title)
    extra = [(x["label"], x["reason"]) for x in mixed["infeasible"]]
    extra += [("note", n) for n in mixed["notes"]]
    if extra:
        print_rows(["option", "why no plan / note"], extra, fmt, title="mixed cluster notes")
