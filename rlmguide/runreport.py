"""Run totals, the cluster-size frontier and a mixed cluster's options as report tables, and the
frontier as a plot."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlmguide.formats import print_rows

LABELS = {
    "run_days": "run days",
    "step_seconds": "step seconds",
    "run_cost": "run cost",
    "cost_per_step": "cost per step",
    "run_gpu_hours": "run GPU-hours",
    "gpu_hours_per_step": "GPU-hours per step",
}


def _money(value: float | None, currency: str | None) -> str:
    return "-" if value is None else f"{value:,.2f} {currency}"


def _number(value: float | None, digits: int = 3) -> str:
    """`digits` significant figures, without exponents for the large numbers of a run."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 10 ** (digits - 1) else f"{value:.{digits}g}"


def print_run(result: Mapping[str, Any], fmt: str) -> None:
    """Plan 1's per-step and run totals, with where the price and each term come from."""
    run, best = result["run"], result["plans"][0]
    price = run["price"]
    rows = [
        ("GPUs billed", str(run["gpus_billed"])),
        ("GPU-hours per step", _number(best["gpu_hours_per_step"], 4)),
        ("cost per step", _money(best["cost_per_step"], best["currency"])),
        ("price per GPU-hour", "none known: set cluster.price_per_gpu_hour" if price is None
         else f"{price['per_gpu_hour']:g} {price['currency']} ({price['origin']})"),
        ("energy per step", f"{_number(best['energy_kwh_per_step'])} kWh"),
    ]  # fmt: skip
    if run["steps"]:
        rows += [
            ("run", f"{run['steps']:,} steps, {best['run_days']:.2f} days, "
                    f"{best['run_gpu_hours']:,.0f} GPU-hours"),
            ("run cost", _money(best["run_cost"], best["currency"])),
            ("run energy", f"{_number(best['energy_kwh'])} kWh "
                           f"(x PUE {run['terms']['pue']['value']:g})"),
        ]  # fmt: skip
        rows += [
            (f"  {name} s", f"{seconds:,.0f}")
            for name, seconds in best["run_seconds_terms"].items()
            if name != "expected_failures"
        ]
        rows += [
            (f"  term {name}", f"{term['value']:g} ({term['origin']})")
            for name, term in run["terms"].items()
        ]
    else:
        rows.append(("run", "set workload.steps (or trained_samples / trained_tokens) for totals"))
    print_rows(["", "plan 1"], rows, fmt, title="cost of plan 1")


def print_sizing(sizing: Mapping[str, Any], fmt: str) -> None:
    """The searched sizes: each one's top plan, on the frontier or not, the chosen one."""
    t, c = sizing["time_axis"], sizing["cost_axis"]
    rows = [
        (
            s["nodes"],
            s["gpus"],
            f"{s['placement']}/{s['execution']}",
            _number(s[t], 4),
            _number(s[c], 5),
            "yes" if s["on_frontier"] else "",
            "<- chosen" if s["chosen"] else "",
        )
        for s in sizing["sizes"]
    ]
    title = (
        f"cluster sizes searched ({sizing['grid']}), objective {sizing['objective']}: "
        f"{sizing['chosen_nodes']} nodes, {sizing['why']}"
    )
    print_rows(
        ["nodes", "GPUs", "plan", LABELS[t], LABELS[c], "frontier", ""], rows, fmt, title=title
    )
    if sizing["infeasible"]:
        print_rows(
            ["nodes", "why no plan"],
            [(s["nodes"], s["reason"]) for s in sizing["infeasible"]],
            fmt,
            title="sizes without a feasible plan",
        )


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


def frontier_figure(sizing: Mapping[str, Any]) -> Any:
    """Time against cost of every searched size, the frontier joined, the chosen one ringed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, c = sizing["time_axis"], sizing["cost_axis"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = sizing["sizes"]
    ax.scatter([s[t] for s in sizes], [s[c] for s in sizes], color="#999999", label="searched")
    front = sizing["frontier"]
    ax.plot([s[t] for s in front], [s[c] for s in front], "o-", color="#4c72b0", label="frontier")
    for s in sizes:
        ax.annotate(f"{s['nodes']}", (s[t], s[c]), textcoords="offset points", xytext=(4, 4),
                    fontsize="small")  # fmt: skip
        if s["chosen"]:
            ax.scatter([s[t]], [s[c]], s=200, facecolors="none", edgecolors="#c44e52",
                       linewidths=2, label=f"chosen ({sizing['objective']})")  # fmt: skip
    currency = next((s["currency"] for s in sizes if s.get("currency")), None)
    ax.set_xlabel(LABELS[t])
    ax.set_ylabel(LABELS[c] + (f" ({currency})" if currency and "cost" in c else ""))
    ax.set_title("Cluster sizes (node counts): time against cost")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def draw_frontier(sizing: Mapping[str, Any], path: Path) -> None:
    """The frontier figure into an SVG or PNG file."""
    from rlmguide.timeline import write_figure

    write_figure(frontier_figure(sizing), path)
