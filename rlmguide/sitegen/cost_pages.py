"""Site pages computed by the cost core: the calibration table and the plots.

They take seconds to compute (each is a search), so the pages are cached by the content of
the records and of the cost and rules code; a rebuild with nothing changed reuses them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import posixpath
from pathlib import Path
from typing import Any

from rlmguide.kb.cache import CacheError, read_sealed, write_sealed
from rlmguide.kb.load import Catalog
from rlmguide.kb.paths import PLURALS, cache_dir, fast_content_hash
from rlmguide.sitegen.mdtext import (
    UNKNOWN,
    anchor,
    document,
    front_matter,
    href,
    html,
    html_code,
    number,
    table,
)
from rlmguide.sitegen.pages import CALIBRATION_PAGE
from rlmguide.sitegen.svgplot import svg

PACKAGE = Path(__file__).resolve().parent.parent
REPO = PACKAGE.parent
EXAMPLES = REPO / "examples"
PLOT_EXAMPLES = (
    "grpo-qwen2.5-7b-8xh100.yaml",
    "grpo-qwen2.5-32b-64xh100.yaml",
    "ppo-llama-3.1-70b-1024xh100.yaml",
)
SWEEP_NODES = (1, 2, 4, 8, 16)
SWEEP_BASE = "grpo-qwen2.5-32b-64xh100.yaml"
PAGE_MODULES = (
    "sitegen/cost_pages.py", "timeline.py", "sitegen/svgplot.py", "report.py", "sitegen/mdtext.py",
    "runreport.py",
)  # fmt: skip
"""The modules whose code shapes these pages: a change to any of them recomputes the pages."""
CALIBRATION_PLOT = "results/calibration.svg"


def _code_digest() -> str:
    digest = hashlib.blake2b(digest_size=12)
    for folder in ("cost", "rules"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".yaml"):
                digest.update(path.read_bytes())
    for path in sorted(EXAMPLES.glob("*.yaml")):
        digest.update(path.read_bytes())
    for module in PAGE_MODULES:
        digest.update((PACKAGE / module).read_bytes())
    return digest.hexdigest()


def cost_pages(catalog: Catalog, roots: Any) -> dict[str, str]:
    key = f"{fast_content_hash(roots)}-{_code_digest()}"
    memo = cache_dir() / f"cost-pages-{key}.json"
    try:
        # Checksummed like every cache file: a truncated or altered memo is recomputed.
        cached = json.loads(read_sealed(memo))
        if isinstance(cached, dict) and all(isinstance(v, str) for v in cached.values()):
            return cached
    except (CacheError, ValueError):
        pass
    sizing = _sizing(catalog)
    pages = {
        **calibration_pages(catalog),
        "recommendation.md": recommendation_page(catalog, sizing),
        **({FRONTIER_PLOT: frontier_svg(sizing)} if sizing else {}),
        **plot_pages(catalog),
    }
    with contextlib.suppress(OSError):  # an unwritable cache only costs the next build time
        write_sealed(memo, json.dumps(pages).encode("utf-8"))
    return pages


def calibration_pages(catalog: Catalog) -> dict[str, str]:
    """The calibration table and its predicted-vs-reported scatter plot."""
    from rlmguide.cost.band import MEMORY_BAND, STEP_BAND
    from rlmguide.rules.fidelity import calibration, median_abs_log_error

    comparisons = calibration(catalog.records)
    scored = [c for c in comparisons if c.ratio]
    beyond = sum(1 for c in scored if max(c.ratio, 1 / c.ratio) > 3)
    text = document(
        "# Calibration: the cost core against published measurements",
        "Each published measurement with a recorded setting is predicted by the cost core: "
        "the setting fixes what the publication reports, the rest of the plan is searched, "
        "and the top-ranked plan's figure is compared with the reported one; a published "
        "deployment with a step time is costed as written. Guidelines are not "
        "applied and memory is not enforced here, since the publication shows the run "
        "happened.",
        f"**{len(scored)} of {len(comparisons)}** cases predicted; median absolute error "
        f"**{median_abs_log_error(scored):.2f}x** at the default constants; cases beyond 3x: "
        f"**{beyond}**. A ratio above 1 means the model is pessimistic. Click a heading to "
        "sort by it.",
        "The figure that counts is out of sample: `bench/fidelity.py` predicts each "
        "publication with the fitted constants chosen on all the others (leave-one-source-"
        "out, also leave-one-framework-out) and prints it by source, execution mode and "
        "framework, with every published ordering. The 10th to 90th percentile of reported "
        f"/ predicted over those held-out RL step times is the band every plan carries: "
        f"**{STEP_BAND[0]:.2f}-{STEP_BAND[1]:.2f}** times the prediction (the *Likely* "
        "column); memory figures carry "
        f"**{MEMORY_BAND[0]:.2f}-{MEMORY_BAND[1]:.2f}**, a rollout pool's on what stays beside "
        "the engine (the engine's share is the memory fraction the plan writes, reserved "
        "exactly).",
        f"![Predicted against reported, log scales]({posixpath.basename(CALIBRATION_PLOT)})",
        calibration_table(comparisons),
        "\n".join(_constants_section()),
    )
    return {CALIBRATION_PAGE: text, CALIBRATION_PLOT: calibration_plot(scored)}


def calibration_table(comparisons: list[Any]) -> str:
    """One row per case; both figures carry the result's unit, so the columns sort as numbers
    (tables.js reads a leading number followed by a unit)."""
    rows = []
    for c in comparisons:
        r = c.result
        unit = html(r.unit)
        note = c.problem or (
            f"memory model says +{c.overflow_gib:.0f} GiB per GPU" if c.overflow_gib > 0 else ""
        )
        rows.append(
            [
                anchor(href(CALIBRATION_PAGE, f"{r.kind}s/{r.id}.md"), html(r.id)),
                html_code(r.metric),
                f"{number(r.value)} {unit}",
                f"{number(c.predicted)} {unit}" if c.predicted is not None else UNKNOWN,
                _likely(c.predicted, unit),
                f"{c.ratio:.2f}" if c.ratio else UNKNOWN,
                html(note) or "&nbsp;",
            ]
        )
    headers = [
        "Result",
        "Metric",
        "Reported",
        "Predicted",
        "Likely",
        "Predicted / reported",
        "Note",
    ]
    return table(headers, rows)


def _likely(predicted: float | None, unit: str) -> str:
    """The band around a predicted figure (cost.band), in its unit."""
    from rlmguide.cost.band import step_band

    if predicted is None:
        return UNKNOWN
    low, high = step_band(predicted)
    return f"{number(low)}-{number(high)} {unit}"


def calibration_plot(scored: list[Any]) -> str:
    """Predicted against reported on log axes, with the diagonal and the 2x and 3x bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    by_metric: dict[str, list[Any]] = {}
    for c in scored:
        by_metric.setdefault(c.result.metric, []).append(c)
    values = [v for c in scored for v in (c.result.value, c.predicted)]
    low, high = min(values) / 1.5, max(values) * 1.5
    line = [low, high]
    ax.plot(line, line, color="black", linewidth=1, label="predicted = reported")
    for factor, style in ((2, "--"), (3, ":")):
        for scale in (factor, 1 / factor):
            ax.plot(
                line,
                [v * scale for v in line],
                color="grey",
                linewidth=0.8,
                linestyle=style,
                label=f"within {factor}x" if scale > 1 else None,
            )
    for metric, cases in sorted(by_metric.items()):
        ax.scatter(
            [c.result.value for c in cases],
            [c.predicted for c in cases],
            label=metric.replace("_", " "),
            s=28,
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    plain_numbers = FuncFormatter(lambda v, _: f"{v:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain_numbers)
    ax.set_xlabel("reported (s)")
    ax.set_ylabel("predicted by the cost core (s)")
    ax.set_title("Calibration: predicted against reported")
    ax.legend(fontsize="small", loc="upper left")
    ax.set_aspect("equal")
    fig.tight_layout()
    return svg(fig)


def _constants_section() -> list[str]:
    """The achieved fractions of peak with their sources, and the constants fitted to the
    table above, so a reader sees which numbers are read and which are tuned."""
    from rlmguide.cost.efficiency import DEFAULTS
    from rlmguide.cost.overheads import DEFAULT_OVERHEADS, FITTED, OWN_FRAMEWORK_CONSTANTS

    lines = [
        "",
        "## The model's constants",
        "",
        "Achieved fractions of peak, each from a publication (a scenario's `efficiency` block "
        "overrides any of them):",
        "",
        "| factor | default | basis | sources |",
        "| --- | ---: | --- | --- |",
    ]
    for name, default in DEFAULTS.items():
        cited = ", ".join(f"[{s}](../sources/{s}.md)" for s in default.sources)
        lines.append(f"| `{name}` | {default.value:.2f} | {default.basis} | {cited} |")
    lines += [
        "",
        "Fitted to the table above rather than read from a publication:",
        "",
        "| constant | value |",
        "| --- | ---: |",
        *(f"| `{name}` | {getattr(DEFAULT_OVERHEADS, name):g} s |" for name in FITTED),
        "",
        "Set by a framework for its own launches, read from its code (the table's published "
        "runs of that framework, and `recommend --framework`, use them):",
        "",
        "| constant | framework | on an 80 GiB GPU | default |",
        "| --- | --- | ---: | ---: |",
    ]
    for name, own in OWN_FRAMEWORK_CONSTANTS.items():
        for framework, value in own.items():
            lines.append(
                f"| `{name}` | {framework} | {_shown(name, value(80.0, ''))} | "
                f"{_shown(name, getattr(DEFAULT_OVERHEADS, name))} |"
            )
    return lines


def _shown(name: str, value: float) -> str:
    return f"{value / 2**30:.2f} GiB" if name.endswith("_bytes") else f"{value:g}"


def recommendation_page(catalog: Catalog, sizing: dict[str, Any] | None) -> str:
    """`rlmguide recommend` on the bundled one-node example, as its Markdown report, then
    the size search over its node counts (`sizing`) and the cost per trained token."""
    import contextlib

    from rlmguide.report import print_report
    from rlmguide.rules.scenario import read_scenario

    name = PLOT_EXAMPLES[0]
    result = _search(catalog, read_scenario(EXAMPLES / name), top=3)
    out = io.StringIO()
    if result:
        with contextlib.redirect_stdout(out):
            print_report(result, "markdown", timing=False)
    scenario = (EXAMPLES / name).read_text(encoding="utf-8")
    return "\n".join(
        [
            # The report's tables are wide; the table of contents would squeeze them.
            front_matter(["toc"]),
            "",
            "# A worked recommendation",
            "",
            f"The scenario `examples/{name}`:",
            "",
            "```yaml",
            scenario.rstrip(),
            "```",
            "",
            f"`rlmguide recommend examples/{name} --format markdown` prints:",
            "",
            linked_ids(out.getvalue(), catalog) or "No feasible plan.",
            "",
            "Every guideline links to its page under [Guidelines](rules/index.md); the stage "
            "table gives the Brent bounds max(W/p, D) <= T <= W/p + D of each stage.",
            "",
            *sizing_section(sizing),
            *token_cost_section(catalog),
        ]
    )


FRONTIER_PLOT = "recommendation-frontier.svg"
SIZING_STEPS = 500
SIZING_MAX_NODES = 8
TOKEN_COST_EXAMPLES = PLOT_EXAMPLES[:2]


def _sizing(catalog: Catalog) -> dict[str, Any] | None:
    """`recommend --objective cost --max-nodes 8` on the one-node example for a 500-step run."""
    from rlmguide.rules.scenario import read_scenario, resolve
    from rlmguide.rules.sizing import Objective, SizingError, recommend_sizes

    scenario = read_scenario(EXAMPLES / PLOT_EXAMPLES[0])
    workload = scenario.workload.model_copy(update={"steps": SIZING_STEPS})
    resolved = resolve(scenario.model_copy(update={"workload": workload}), catalog.records)
    try:
        result = recommend_sizes(resolved, catalog, SIZING_MAX_NODES, Objective("cost"), 1)
    except SizingError:
        return None
    return result["sizing"]


def sizing_section(sizing: dict[str, Any] | None) -> list[str]:
    from rlmguide.runreport import print_sizing

    if sizing is None:
        return []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_sizing(sizing, "markdown")
    return [
        "## How many nodes?",
        "",
        f"The same scenario as a {SIZING_STEPS}-step run, with the node count searched too: "
        f"`rlmguide recommend examples/{PLOT_EXAMPLES[0]} --set workload.steps={SIZING_STEPS} "
        f"--objective cost --max-nodes {SIZING_MAX_NODES} --plot frontier.svg`. The frontier "
        "holds the sizes no other size beats on both run days and run cost; the price is the "
        "accelerator record's public on-demand price, and the run terms (start-up, "
        "checkpoints, failures) take their defaults.",
        "",
        out.getvalue(),
        f"![Run days against run cost per node count]({FRONTIER_PLOT})",
        "",
    ]


def frontier_svg(sizing: dict[str, Any]) -> str:
    from rlmguide.runreport import frontier_figure

    return svg(frontier_figure(sizing))


def token_cost_section(catalog: Catalog) -> list[str]:
    """Cost per million trained tokens of the top plan, per priced accelerator and setup."""
    from rlmguide.rules.scenario import read_scenario

    rows = []
    for accelerator in sorted(catalog.of("accelerator").values(), key=lambda a: a.id):
        price = getattr(accelerator, "price", None)
        if price is None:
            continue
        cells = [html(accelerator.name), f"{price.per_gpu_hour:g} {price.currency}"]
        for name in TOKEN_COST_EXAMPLES:
            base = read_scenario(EXAMPLES / name)
            cluster = base.cluster.model_copy(update={"accelerator": accelerator.id})
            result = _search(catalog, base.model_copy(update={"cluster": cluster}), top=1)
            if result is None:
                cells.append("no feasible plan")
                continue
            plan = result["plans"][0]
            tokens = plan["tokens_per_second"] * plan["step_seconds"]
            cells.append(f"{plan['cost_per_step'] / tokens * 1e6:.2f} {plan['currency']}")
        rows.append(cells)
    unpriced = sorted(a.id for a in catalog.of("accelerator").values() if not a.price)  # type: ignore[attr-defined]
    setups = [name.removesuffix(".yaml") for name in TOKEN_COST_EXAMPLES]
    return [
        "## Cost per million trained tokens",
        "",
        "The top plan of two bundled setups (the example scenario with its accelerator "
        "swapped, nodes and GPUs per node kept) on each accelerator with a public on-demand "
        "price in the knowledge base (its page names the offering and the date): the price "
        "of a GPU-hour "
        "times the cluster's GPUs and the step time, over the prompt and response tokens "
        "trained in the step. Steady state only: start-up, checkpoints and restarts come on "
        "top in a run's totals. Parts without a public price are left out: "
        f"{', '.join(unpriced)}.",
        "",
        table(["accelerator", "price per GPU-hour", *(html_code(s) for s in setups)], rows),
        "",
    ]


LINKED_KINDS = ("rule", "source", "framework")
"""Record kinds whose ids the report prints in table cells, alone or as comma lists."""


def linked_ids(report: str, catalog: Catalog) -> str:
    """The Markdown report with every record id in a table cell linked to its page (the CLI
    prints bare ids; this page sits at the site's root, so links start at the kind's folder).
    """
    kind_of = {rid: kind for kind in LINKED_KINDS for rid in catalog.of(kind)}

    def link_cell(text: str) -> str:
        ids = [part.strip() for part in text.split(",")]
        if not ids or not all(i in kind_of for i in ids):
            return text
        return " " + ", ".join(f"[{i}]({PLURALS[kind_of[i]]}/{i}.md)" for i in ids) + " "

    lines = []
    for line in report.splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            cells = line.split("|")
            line = "|".join([cells[0], *(link_cell(c) for c in cells[1:-1]), cells[-1]])
        lines.append(line)
    return "\n".join(lines) + ("\n" if report.endswith("\n") else "")


def _search(catalog: Catalog, scenario: Any, top: int = 50) -> dict[str, Any] | None:
    from rlmguide.rules.recommend import NoFeasiblePlan, recommend, recommender_for
    from rlmguide.rules.scenario import resolve

    try:
        return recommend(recommender_for(resolve(scenario, catalog.records), catalog), top)
    except NoFeasiblePlan:
        return None


def plot_pages(catalog: Catalog) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullLocator

    from rlmguide.kb.schema import Scenario
    from rlmguide.rules.scenario import read_scenario
    from rlmguide.timeline import COLOURS, draw_axes

    base = read_scenario(EXAMPLES / SWEEP_BASE)
    best: dict[tuple[str, str], list[float]] = {}
    for nodes in SWEEP_NODES:
        data = base.model_dump(exclude_unset=True)
        data["cluster"]["nodes"] = nodes
        result = _search(catalog, Scenario.model_validate(data), top=500)
        for plan in result["plans"] if result else []:
            key = (plan["placement"], plan["execution"])
            series = best.setdefault(key, [math.nan] * len(SWEEP_NODES))
            i = SWEEP_NODES.index(nodes)
            if math.isnan(series[i]) or plan["step_seconds"] < series[i]:
                series[i] = plan["step_seconds"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    gpus = [n * base.cluster.gpus_per_node for n in SWEEP_NODES]
    for (placement, execution), series in sorted(best.items()):
        ax.plot(gpus, series, marker="o", label=f"{placement} / {execution}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # GPU counts as numbers (8, 16, ...), not as powers of two.
    ax.set_xticks(gpus, [str(g) for g in gpus])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    ax.set_xlabel("GPUs (H100)")
    ax.set_ylabel("seconds per RL step (best plan)")
    ax.set_title("Qwen2.5-32B GRPO: step time by cluster size, placement and execution")
    ax.legend(fontsize="small")
    fig.tight_layout()
    sweep = svg(fig)

    results = {
        name: _search(catalog, read_scenario(EXAMPLES / name), top=3) for name in PLOT_EXAMPLES
    }
    fig, ax = plt.subplots(figsize=(8, 3.5))
    labels = []
    for y, (name, result) in enumerate(results.items()):
        if not result:
            continue
        plan = result["plans"][0]
        left = 0.0
        for stage in plan["stages"]:
            ax.barh(
                y,
                stage["seconds"],
                left=left,
                color=COLOURS.get(stage["name"], "grey"),
                label=stage["name"] if y == 0 else None,
            )
            left += stage["seconds"]
        labels.append(name.removesuffix(".yaml"))
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("seconds per stage, best plan (summed; overlapped stages count fully)")
    # Below the axes: inside, the legend covered the bars of the last example.
    ax.legend(
        fontsize="small", ncols=5, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False
    )
    fig.tight_layout()
    stages = svg(fig)

    small = results[PLOT_EXAMPLES[0]]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    if small:
        draw_axes(ax, small["plans"])
    fig.tight_layout()
    timeline = svg(fig)
    index = "\n".join(
        [
            "# Plots from the cost core",
            "",
            "Computed when the site is built, from the bundled example scenarios in `examples/`.",
            "",
            "## Step time by cluster size",
            "",
            "The best plan of each placement and execution mode for "
            f"`{SWEEP_BASE}` on {', '.join(str(g) for g in gpus)} GPUs.",
            "",
            "![Step time by cluster size, per placement and execution mode](step-time.svg)",
            "",
            "## Stage breakdown of the recommended plans",
            "",
            "![Stage breakdown of the best plan of each example](stages.svg)",
            "",
            "## One step of the top plans on one node",
            "",
            "Stages per GPU pool over one steady-state step; overlap and idle time are visible.",
            "",
            "![Timeline of one step of the top plans](timeline.svg)",
            "",
        ]
    )
    return {
        "plots/index.md": index,
        "plots/step-time.svg": sweep,
        "plots/stages.svg": stages,
        "plots/timeline.svg": timeline,
    }
