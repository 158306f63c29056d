"""Site pages computed by the cost core: the calibration table and the plots.

They take seconds to compute (each is a search), so the pages are cached by the content of
the records and of the cost and rules code; a rebuild with nothing changed reuses them.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from pathlib import Path
from typing import Any

from kb.load import Catalog
from kb.paths import cache_dir, fast_content_hash
from rlmguide.pages import CALIBRATION_PAGE

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
PLOT_EXAMPLES = (
    "grpo-qwen2.5-7b-8xh100.yaml",
    "grpo-qwen2.5-32b-64xh100.yaml",
    "ppo-llama-3.1-70b-1024xh100.yaml",
)
SWEEP_NODES = (1, 2, 4, 8, 16)
SWEEP_BASE = "grpo-qwen2.5-32b-64xh100.yaml"


def _code_digest() -> str:
    digest = hashlib.blake2b(digest_size=12)
    for folder in ("cost", "rules"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".yaml"):
                digest.update(path.read_bytes())
    for path in sorted(EXAMPLES.glob("*.yaml")):
        digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def cost_pages(catalog: Catalog, roots: Any) -> dict[str, str]:
    key = f"{fast_content_hash(roots)}-{_code_digest()}"
    memo = cache_dir() / f"cost-pages-{key}.json"
    if memo.exists():
        return json.loads(memo.read_text(encoding="utf-8"))
    pages = {
        CALIBRATION_PAGE: calibration_page(catalog),
        "recommendation.md": recommendation_page(catalog),
        **plot_pages(catalog),
    }
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(json.dumps(pages), encoding="utf-8")
    return pages


def calibration_page(catalog: Catalog) -> str:
    from rules.fidelity import calibration, median_abs_log_error

    comparisons = calibration(catalog.records)
    scored = [c for c in comparisons if c.ratio]
    beyond = sum(1 for c in scored if max(c.ratio, 1 / c.ratio) > 3)
    lines = [
        "# Calibration: the cost core against published measurements",
        "",
        "Each published measurement with a recorded setting is predicted by the cost core: "
        "the setting fixes what the publication reports, the rest of the plan is searched, "
        "and the fastest plan's figure is compared with the reported one; a published "
        "deployment with a step time is costed as written. Guidelines are not "
        "applied and memory is not enforced here, since the publication shows the run "
        "happened.",
        "",
        f"**{len(scored)} of {len(comparisons)}** cases predicted; median absolute error "
        f"**{median_abs_log_error(scored):.2f}x**; cases beyond 3x: **{beyond}**. A ratio "
        "above 1 means the model is pessimistic.",
        "",
        "| result | metric | reported | predicted | predicted / reported | note |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for c in comparisons:
        r = c.result
        predicted = f"{c.predicted:,.1f}" if c.predicted is not None else "unknown"
        ratio = f"{c.ratio:.2f}" if c.ratio else "unknown"
        note = c.problem or (
            f"memory model says +{c.overflow_gib:.0f} GiB per GPU" if c.overflow_gib > 0 else ""
        )
        note = note.replace("|", "\\|")
        page = f"{r.id}.md" if r.kind == "result" else f"../deployments/{r.id}.md"
        lines.append(
            f"| [{r.id}]({page}) | {r.metric} | {r.value:,.1f} {r.unit} | {predicted} | "
            f"{ratio} | {note} |"
        )
    return "\n".join([*lines, *_constants_section()]) + "\n"


def _constants_section() -> list[str]:
    """The achieved fractions of peak with their sources, and the constants fitted to the
    table above, so a reader sees which numbers are read and which are tuned."""
    from cost.efficiency import DEFAULTS
    from cost.overheads import DEFAULT_OVERHEADS, FITTED

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
    ]
    return lines


def recommendation_page(catalog: Catalog) -> str:
    """`rlmguide recommend` on the bundled one-node example, as its Markdown report."""
    import contextlib

    from rlmguide.report import print_report
    from rules.scenario import read_scenario

    name = PLOT_EXAMPLES[0]
    result = _search(catalog, read_scenario(EXAMPLES / name), top=3)
    out = io.StringIO()
    if result:
        with contextlib.redirect_stdout(out):
            print_report(result, "markdown")
    scenario = (EXAMPLES / name).read_text(encoding="utf-8")
    return "\n".join(
        [
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
            out.getvalue() or "No feasible plan.",
            "",
            "Every guideline links to its page under [Guidelines](rules/index.md); the stage "
            "table gives the Brent bounds max(W/p, D) <= T <= W/p + D of each stage.",
            "",
        ]
    )


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    out = io.StringIO()
    fig.savefig(out, format="svg")
    plt.close(fig)
    return out.getvalue()


def _search(catalog: Catalog, scenario: Any, top: int = 50) -> dict[str, Any] | None:
    from rules.recommend import NoFeasiblePlan, recommend, recommender_for
    from rules.scenario import resolve

    try:
        return recommend(recommender_for(resolve(scenario, catalog.records), catalog), top)
    except NoFeasiblePlan:
        return None


def plot_pages(catalog: Catalog) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kb.schema import Scenario
    from rlmguide.timeline import COLOURS, draw_axes
    from rules.scenario import read_scenario

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
    ax.set_xlabel("GPUs (H100)")
    ax.set_ylabel("seconds per RL step (best plan)")
    ax.set_title("Qwen2.5-32B GRPO: step time by cluster size, placement and execution")
    ax.legend(fontsize="small")
    fig.tight_layout()
    sweep = _svg(fig)

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
    ax.legend(fontsize="small", ncols=5, loc="lower right")
    fig.tight_layout()
    stages = _svg(fig)

    small = results[PLOT_EXAMPLES[0]]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    if small:
        draw_axes(ax, small["plans"])
    fig.tight_layout()
    timeline = _svg(fig)
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
