"""A timeline of one RL step per plan: stages per GPU pool over time, drawn with matplotlib.

Overlap and idle time are what the picture is for: colocated stages follow each other on one
pool, disaggregated pools run side by side (overlapped when execution is not synchronous).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlmguide.cost.plans import ONE_POOL
from rlmguide.sitegen.svgplot import save

COLOURS = {
    "rollout": "#4c72b0",
    "assessment": "#dd8452",
    "training": "#55a868",
    "weight_sync": "#c44e52",
    "switch": "#8172b3",
}


def lanes(plan: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, float, float]]]]:
    """(pool label, [(stage, start, seconds)]) for one plan in steady state."""
    seconds = {s["name"]: s["seconds"] for s in plan["stages"]}
    order = ["rollout", "assessment", "training", "weight_sync", "switch"]
    if plan["placement"] in ONE_POOL:
        t, bars = 0.0, []
        for name in order:
            if seconds.get(name):
                bars.append((name, t, seconds[name]))
                t += seconds[name]
        return [(f"all {plan['train']['gpus']} GPUs", bars)]
    overlapped = plan["execution"] != "sync"
    rollout = [("rollout", 0.0, seconds["rollout"])]
    start = 0.0 if overlapped else seconds["rollout"]
    train_bars, t = [], start
    for name in ("assessment", "training", "weight_sync"):
        if seconds.get(name):
            train_bars.append((name, t, seconds[name]))
            t += seconds[name]
    return [
        (f"rollout pool, {plan['rollout']['gpus']} GPUs", rollout),
        (f"training pool, {plan['train']['gpus']} GPUs", train_bars),
    ]


def draw_axes(ax: Any, plans: Sequence[Mapping[str, Any]]) -> None:
    """Draw the timelines of `plans` (best first) on a matplotlib axes."""
    import matplotlib.pyplot as plt

    rows = [(plan, lane) for plan in plans for lane in lanes(plan)]
    labels = []
    for y, (plan, (label, bars)) in enumerate(rows):
        labels.append(f"#{plan['rank']} {plan['placement']}/{plan['execution']}: {label}")
        for name, start, width in bars:
            ax.barh(y, width, left=start, color=COLOURS.get(name, "grey"), edgecolor="white")
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("seconds within one RL step (steady state)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    # Below the axes, not inside them: inside, the legend covered the last lane's bars.
    ax.legend(
        handles,
        list(COLOURS),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.22),
        fontsize="small",
        ncols=len(COLOURS),
        frameon=False,
    )
    ax.set_title("Stages per GPU pool over one step")


def write_figure(fig: Any, path: Path) -> None:
    """`fig` into the file the user named, as SVG or PNG by its suffix (kb.files guards the
    write: a FIFO, a full disk or a missing folder is one line, never a hang)."""
    import io

    from rlmguide.kb.files import UnwritableFile, write_output

    fmt = path.suffix.lstrip(".").lower() or "svg"
    if fmt not in ("svg", "png"):
        raise UnwritableFile(f"{path}: name an .svg or .png file")
    buffer = io.BytesIO()
    save(fig, buffer, fmt)
    write_output(path, buffer.getvalue())


def draw(plans: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write the timelines of `plans` (best first) to an SVG or PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lanes_count = sum(len(lanes(plan)) for plan in plans)
    fig, ax = plt.subplots(figsize=(10, 0.6 * lanes_count + 1.5))
    draw_axes(ax, plans)
    fig.tight_layout()
    write_figure(fig, path)
