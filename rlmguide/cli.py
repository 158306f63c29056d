"""The `rlmguide` command: parsing, formatting and errors over the kb, rules and cost packages.

Heavy modules (pydantic, YAML, rich, numpy) are imported inside the commands that need them, so
that a warm `rlmguide sql` costs little more than importing DuckDB.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rlmguide.errors import RlmguideError
from rlmguide.formats import ROW_FORMATS, dumps, print_rows, suggestion
from rlmguide.kb.paths import PLURALS, record_roots

LIST_SQL = {
    "source": "SELECT id, type, year, title FROM sources ORDER BY id",
    "technique": "SELECT id, name, parent, scope FROM techniques ORDER BY scope, parent, id",
    "algorithm": (
        "SELECT id, name, needs_critic, needs_reference, reward, grouped FROM algorithms "
        "ORDER BY id"
    ),
    "component": "SELECT id, name, role FROM components ORDER BY role, id",
    "framework": (
        "SELECT f.id, f.name, f.type, f.organisation, f.licence, count(c.feature) AS claims "
        "FROM frameworks f LEFT JOIN claims c ON c.framework_id = f.id "
        "GROUP BY ALL ORDER BY f.id"
    ),
    "accelerator": (
        "SELECT id, name, memory_gib, hbm_tbytes_per_s, bf16_dense_tflops, fp8_dense_tflops "
        "FROM accelerators ORDER BY id"
    ),
    "model": (
        "SELECT id, name, attention, round(params_total / 1e9, 2) AS params_b, "
        "round(params_active / 1e9, 2) AS active_b, layers, hidden FROM models ORDER BY id"
    ),
    "result": "SELECT id, framework, metric, value, unit FROM results ORDER BY id",
    "rule": "SELECT id, effect, title FROM rules ORDER BY id",
    "constraint": "SELECT id, framework, component, title FROM constraints ORDER BY framework, id",
    "direction": (
        "SELECT id, section, position, coverage, title FROM directions ORDER BY section, position"
    ),
    "deployment": (
        "SELECT id, framework, json_extract_string(scenario, '$.cluster.accelerator') AS "
        "accelerator, json_extract(scenario, '$.cluster.nodes')::INT * "
        "json_extract(scenario, '$.cluster.gpus_per_node')::INT AS gpus, step_seconds "
        "FROM deployments ORDER BY id"
    ),
    "mapping": (
        "SELECT id, framework, syntax, committed, left(commit, 10) AS commit, "
        "json_array_length(entries) AS entries FROM mappings ORDER BY framework, committed DESC"
    ),
}


class Failure(click.ClickException):
    """The request could not be met (exit 1): invalid records, no feasible plan."""

    exit_code = 1


class BadInput(click.ClickException):
    """The input is wrong (exit 2): unknown id, impossible number, malformed file."""

    exit_code = 2


class Interrupted(click.ClickException):
    """Ctrl-C stopped the work (exit 130, as shells report death by SIGINT)."""

    exit_code = 130


class FiniteRange(click.FloatRange):
    """A number in a range, and a number at all: `nan` passes every comparison (so a range
    alone lets it through) and would turn a limit off."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def format_option(choices: tuple[str, ...] = ROW_FORMATS) -> Callable[[Callable], Callable]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default="table",
        show_default=True,
        help="Output format.",
    )


def param_option(func: Callable) -> Callable:
    return click.option(
        "-p",
        "--param",
        "params",
        type=(str, str),
        multiple=True,
        metavar="NAME VALUE",
        help="Named SQL parameter, referenced as $NAME in the query.",
    )(func)


def limit_options(func: Callable) -> Callable:
    """The time and row limits of a user query (see kb.query for how they are enforced)."""
    from rlmguide.kb.limits import DEFAULT_MAX_ROWS, DEFAULT_SECONDS

    func = click.option(
        "--max-rows",
        default=DEFAULT_MAX_ROWS,
        show_default=True,
        type=click.IntRange(1, 1_000_000),
        help="Rows to print at most; the rest are counted and reported on standard error.",
    )(func)
    return click.option(
        "--timeout",
        default=DEFAULT_SECONDS,
        show_default=True,
        type=FiniteRange(0.1, 3600),
        help="Seconds the query may run before it is stopped.",
    )(func)


def _invalid(exc: Any) -> Failure:
    from rlmguide.api import invalid_records

    return Failure(str(invalid_records(exc)))


def database() -> Path:
    from rlmguide.kb.db import CacheUnwritable, InvalidRecords
    from rlmguide.knowledge import database as built

    try:
        return built()
    except InvalidRecords as exc:
        raise _invalid(exc) from None
    except CacheUnwritable as exc:
        raise Failure(f"{exc}; set RLMGUIDE_CACHE_DIR to a writable folder") from None


@functools.cache
def connection() -> Any:
    from rlmguide.kb.db import InvalidRecords
    from rlmguide.knowledge import open_database

    try:
        return open_database()
    except InvalidRecords as exc:
        raise _invalid(exc) from None


def fetch(sql: str, params: dict[str, Any] | list[Any] | None = None) -> tuple[list[str], list]:
    cursor = connection().execute(sql, params)
    return [d[0] for d in cursor.description], cursor.fetchall()


def run_user_sql(
    sql: str, params: tuple[tuple[str, str], ...], fmt: str, timeout: float, max_rows: int
) -> None:
    from rlmguide.kb.limits import Limits
    from rlmguide.kb.query import QueryError, QueryTimeout, run
    from rlmguide.review.config import number_or_text

    # parameters are typed as numbers where they read as one; booleans stay text for SQL
    values = {k: number_or_text(v) for k, v in params}
    try:
        rows = run(connection(), sql, values, Limits(timeout, max_rows))
    except QueryTimeout as exc:
        raise Failure(str(exc)) from None
    except QueryError as exc:
        raise BadInput(str(exc)) from None
    except KeyboardInterrupt:
        raise Interrupted("interrupted; the query was stopped") from None
    print_rows(rows.columns, rows.rows, fmt)
    if rows.more:
        # standard error, so JSON and CSV on standard output stay whole documents
        click.echo(f"{rows.more:,} more rows not shown (raise --max-rows)", err=True)


def kind_of(name: str) -> str:
    """A kind from its singular or plural name."""
    for kind, plural in PLURALS.items():
        if name in (kind, plural):
            return kind
    known = sorted(PLURALS.values())
    raise BadInput(f"unknown kind {name!r}{suggestion(name, known)} (kinds: {', '.join(known)})")


class OneLineUsage(click.UsageError):
    """A usage error in one line, pointing at the command's help (click prints the usage, a
    hint and the error on three or four)."""

    def show(self, file: Any = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "rlmguide"
        click.echo(f"Error: {self.format_message()} (see `{where} --help`)", file=file, err=True)


def _one_line(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        return exc  # the help itself, asked for by giving nothing
    message = " ".join(exc.format_message().split())
    return OneLineUsage(message, exc.ctx)


class InterruptibleGroup(click.Group):
    """Ctrl-C anywhere in a command exits 130 with one line (click's default says "Aborted!"
    and exits 1, which scripts cannot tell from a failed request); usage errors are one line."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted("interrupted") from None
        except RlmguideError as exc:  # the API's refusals (rlmguide.api), with their exit codes
            raise (BadInput if exc.exit_code == 2 else Failure)(str(exc)) from None
        except click.UsageError as exc:
            raise _one_line(exc) from None


@click.group(cls=InterruptibleGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rlmguide")
def cli() -> None:
    """A cited knowledge base and guideline engine for RL post-training of LLMs."""


@cli.command()
@click.argument("query")
@param_option
@format_option()
@limit_options
def sql(
    query: str, params: tuple[tuple[str, str], ...], fmt: str, timeout: float, max_rows: int
) -> None:
    """Run one read-only SQL statement on the knowledge base (QUERY, or - for standard input).

    Example: rlmguide sql "SELECT id, licence FROM frameworks" --format csv
    """
    if query == "-":
        query = _read_stdin()
    run_user_sql(query, params, fmt, timeout, max_rows)


def _read_stdin() -> str:
    """Standard input as UTF-8 text of bounded size (`yes | rlmguide sql -` must not fill RAM)."""
    from rlmguide.kb.files import MAX_FILE_BYTES, UnreadableFile, decode

    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"standard input: more than the {MAX_FILE_BYTES:,} bytes a query may have")
    try:
        return decode(data)
    except UnreadableFile as exc:
        raise BadInput(f"standard input: {exc}") from None


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_all", is_flag=True, help="List the canned queries.")
@param_option
@format_option()
@limit_options
def query(
    name: str | None,
    list_all: bool,
    params: tuple[tuple[str, str], ...],
    fmt: str,
    timeout: float,
    max_rows: int,
) -> None:
    """Run a canned query by NAME (see --list)."""
    from rlmguide.kb.query import canned_queries

    queries = canned_queries()
    if list_all or name is None:
        rows = [(q.name, q.title, q.description) for q in queries.values()]
        print_rows(["name", "title", "description"], rows, fmt)
        return
    if name not in queries:
        raise BadInput(f"unknown query {name!r}{suggestion(name, list(queries))}")
    run_user_sql(queries[name].sql, params, fmt, timeout, max_rows)


@cli.group()
def db() -> None:
    """The built DuckDB file."""


@db.command("path")
def db_path() -> None:
    """Print the path of the database file (build it first if needed)."""
    click.echo(str(database()))


@db.command("export")
@click.option(
    "--parquet",
    "parquet_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write one Parquet file per table and view into.",
)
def db_export(parquet_dir: Path) -> None:
    """Export every table and view to Parquet files."""
    import duckdb

    from rlmguide.kb.export import export

    try:
        parquet_dir.mkdir(parents=True, exist_ok=True)  # before a cold cache's build
        written = export(database(), parquet_dir, ("parquet",))
    except OSError as exc:
        raise Failure(f"--parquet {parquet_dir}: cannot be written ({exc.strerror})") from None
    except duckdb.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Failure(f"--parquet {parquet_dir}: cannot be written ({reason})") from None
    click.echo(f"wrote {len(written)} Parquet files to {parquet_dir}")


@cli.command("list")
@click.argument("kind")
@format_option()
def list_records(kind: str, fmt: str) -> None:
    """List the records of one KIND (frameworks, models, accelerators, ...)."""
    columns, rows = fetch(LIST_SQL[kind_of(kind)])
    print_rows(columns, rows, fmt)


def _find(record_id: str, kind: str | None) -> tuple[str, dict[str, Any]]:
    kinds = [kind_of(kind)] if kind else list(PLURALS)
    for k in kinds:
        columns, rows = fetch(f"SELECT * FROM {PLURALS[k]} WHERE id = ?", [record_id])
        if rows:
            return k, dict(zip(columns, rows[0], strict=True))
    union = " UNION ALL ".join(f"SELECT id FROM {PLURALS[k]}" for k in kinds)
    known = [r[0] for r in fetch(union)[1]]
    what = kind or "record"
    raise BadInput(f"unknown {what} {record_id!r}{suggestion(record_id, known)}")


CLAIM_KEYS = (
    "feature",
    "feature_kind",
    "support",
    "note",
    "source",
    "checked",
    "as_of",
    "stale",
    "version",
)
"""A claim's fields as `show --format json` names them (`stale` is derived: kb.evidence)."""


@cli.command()
@click.argument("record_id", metavar="ID")
@click.option("--kind", help="Look only among records of this kind.")
@format_option(("table", "json", "markdown"))
def show(record_id: str, kind: str | None, fmt: str) -> None:
    """Show one record of any kind, with its sources (and claims, for a framework)."""
    from rlmguide.formats import plain

    found_kind, fields = _find(record_id, kind)
    _, cites = fetch(
        "SELECT s.id, s.title, s.url FROM citations c JOIN sources s ON s.id = c.source_id "
        "WHERE c.record_kind = ? AND c.record_id = ? ORDER BY s.id",
        [found_kind, record_id],
    )
    claims: list = []
    if found_kind == "framework":
        _, claims = fetch(
            "SELECT feature, feature_kind, support, note, source_id, checked, as_of, stale, "
            "version "
            "FROM framework_matrix WHERE framework_id = ? ORDER BY feature_kind, feature",
            [record_id],
        )
    for key in ("scenario",):
        if isinstance(fields.get(key), str):
            fields[key] = json.loads(fields[key])
    if fmt == "json":
        document = {
            "kind": found_kind,
            **{k: plain(v) for k, v in fields.items()},
            "sources": [dict(zip(("id", "title", "url"), c, strict=True)) for c in cites],
        }
        if found_kind == "framework":
            keys = CLAIM_KEYS
            document["claims"] = [
                {k: plain(v) for k, v in zip(keys, c, strict=True)} for c in claims
            ]
        click.echo(dumps(document))
        return
    if found_kind == "constraint" and not fields.get("versions"):
        fields["versions"] = "every version (no scope)"
    pairs = [(k, v) for k, v in fields.items() if v is not None]
    print_rows(["field", "value"], pairs, fmt, title=f"{found_kind} {record_id}")
    if claims:
        print_rows(
            [
                "feature",
                "kind",
                "support",
                "note",
                "source",
                "checked",
                "as of",
                "stale",
                "version",
            ],
            claims,
            fmt,
            title="claims",
        )
    if cites:
        print_rows(["source", "title", "url"], cites, fmt, title="sources")


@cli.command()
@click.argument("ids", nargs=-1, required=True, metavar="ID ID...")
@format_option(("table", "json", "markdown"))
@click.option(
    "--preset",
    type=click.Choice(["table11"]),
    default=None,
    help="Show only a preset column set: table11 is the survey's Table 11 (DP, Z1-Z3, TP, CP, "
    "EP, PP, AC Share, Disagg., Stage Fusion, Hybrid, Async), each cell the best claim among "
    "the features that mean the column.",
)
def compare(ids: tuple[str, ...], fmt: str, preset: str | None) -> None:
    """Compare frameworks side by side: every feature claimed by any, each cell with its source."""
    from rlmguide.formats import plain

    known = [r[0] for r in fetch("SELECT id FROM frameworks")[1]]
    for fid in ids:
        if fid not in known:
            raise BadInput(f"unknown framework {fid!r}{suggestion(fid, known)}")
    marks = ", ".join("?" for _ in ids)
    _, rows = fetch(
        "SELECT feature, feature_kind, framework_id, support, source_id, note, checked, as_of, "
        "stale "
        f"FROM framework_matrix WHERE framework_id IN ({marks}) ORDER BY feature_kind, feature",
        list(ids),
    )
    features: dict[str, dict[str, Any]] = {}
    for feature, feature_kind, fid, support, source, note, checked, as_of, stale in rows:
        entry = features.setdefault(
            feature, {"feature": feature, "kind": feature_kind, "cells": dict.fromkeys(ids)}
        )
        entry["cells"][fid] = {
            "support": support,
            "source": source,
            "note": note,
            "checked": plain(checked),
            "as_of": plain(as_of),
            "stale": stale,
        }
    _, found = fetch(
        "SELECT id, availability_status, availability_part, availability_source, "
        f"availability_version, availability_as_of FROM frameworks WHERE id IN ({marks})",
        list(ids),
    )
    availability = {
        row[0]: dict(
            zip(("status", "part", "source", "version", "as_of"), map(plain, row[1:]), strict=True)
        )
        for row in found
    }
    if preset is not None:
        _compare_preset(ids, features, preset, fmt)
        return
    if fmt == "json":
        click.echo(
            dumps(
                {
                    "frameworks": list(ids),
                    "availability": availability,
                    "features": list(features.values()),
                }
            )
        )
        return

    def available(fid: str) -> str:
        a = availability[fid]
        part = f": {a['part']}" if a["part"] else ""
        return f"{a['status']}{part} ({a['source']}, as of {a['as_of'] or 'unknown'})"

    table = [("availability", "what a user can run", *(available(i) for i in ids))]
    table += [
        (f["feature"], f["kind"], *(_show_cell(f["cells"][i]) for i in ids))
        for f in features.values()
    ]
    title = "claims: support (source, date of the evidence, stale when over a year old)"
    print_rows(["feature", "kind", *ids], table, fmt, title=title)


def _show_cell(c: dict[str, Any] | None) -> str:
    if c is None:
        return "unknown"
    flag = ", stale" if c["stale"] else ""
    return f"{c['support']} ({c['source']}, as of {c['as_of'] or 'unknown'}{flag})"


def _compare_preset(
    ids: tuple[str, ...], features: dict[str, dict[str, Any]], preset: str, fmt: str
) -> None:
    """The frameworks under a preset column set (kb.survey_columns): per column and framework,
    the best claim among the column's features, with the feature it came from."""
    from rlmguide.kb.survey_columns import PRESETS, best_feature

    columns = []
    for column in PRESETS[preset]:
        cells: dict[str, Any] = {}
        for fid in ids:
            supports = {
                f: e["cells"][fid]["support"] for f, e in features.items() if e["cells"][fid]
            }
            best = best_feature(column, supports)
            cells[fid] = None if best is None else {"feature": best, **features[best]["cells"][fid]}
        columns.append(
            {"column": column.label, "group": column.group, "features": list(column.features),
             "cells": cells}
        )  # fmt: skip
    if fmt == "json":
        click.echo(dumps({"frameworks": list(ids), "preset": preset, "columns": columns}))
        return

    def shown(column: dict[str, Any], cell: dict[str, Any] | None) -> str:
        # Which feature a cell comes from, where several mean the column.
        via = f"{cell['feature']}: " if cell and len(column["features"]) > 1 else ""
        return via + _show_cell(cell)

    table = [(c["column"], c["group"], *(shown(c, c["cells"][i]) for i in ids)) for c in columns]
    title = "the survey's Table 11 columns (arXiv:2608.27046, §6.2): best claim per column"
    print_rows(["column", "group", *ids], table, fmt, title=title)


SCENARIO_FLAGS = {
    "accelerator": "cluster.accelerator",
    "nodes": "cluster.nodes",
    "gpus_per_node": "cluster.gpus_per_node",
    "policy": "models.policy",
    "reward": "models.reward",
    "algorithm": "workload.algorithm",
    "prompts": "workload.prompts_per_step",
    "samples": "workload.samples_per_prompt",
    "prompt_tokens": "workload.prompt_tokens",
    "max_prompt_tokens": "workload.max_prompt_tokens",
    "response_tokens": "workload.response_tokens",
    "max_response_tokens": "workload.max_response_tokens",
    "placement": "plan.placement",
    "execution": "plan.execution",
}


def scenario_options(func: Callable) -> Callable:
    """The scenario file (or a published deployment) plus flags for its common fields and
    `--set PATH=VALUE` for any."""
    for flag, path in reversed(SCENARIO_FLAGS.items()):
        func = click.option(f"--{flag.replace('_', '-')}", flag, help=f"Set {path}.")(func)
    func = click.option(
        "--set",
        "assignments",
        multiple=True,
        metavar="PATH=VALUE",
        help="Set any scenario field by its dotted path, e.g. plan.train.tp=4.",
    )(func)
    func = click.option(
        "--deployment",
        "deployment",
        metavar="ID",
        help="Start from a published deployment record instead of a scenario file.",
    )(func)
    return click.argument(
        "scenario_file", required=False, type=click.Path(dir_okay=False, path_type=Path)
    )(func)


def load_scenario(
    path: Path | None,
    flags: dict[str, Any],
    assignments: tuple[str, ...],
    deployment: str | None = None,
    keep_plan: bool = True,
) -> Any:
    """The scenario file, a deployment's scenario (or an empty one) with the flags and `--set`
    applied (each value read as YAML: `4`, `[1, 2]`, `fp8`), as an `api.Scenario`."""
    from rlmguide.api import Scenario
    from rlmguide.rules.scenario import InputError, parse_assignment, read_mapping

    if path is not None and deployment is not None:
        raise BadInput("give a scenario file or --deployment, not both")
    pairs = [(SCENARIO_FLAGS[k], v) for k, v in flags.items() if v is not None]
    for text in assignments:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise BadInput(f"--set {text!r}: expected PATH=VALUE, e.g. plan.train.tp=4")
        pairs.append((key.strip(), value.strip()))
    try:
        data = read_mapping(path) if path is not None else {}
        changes = [
            (".".join(parts), value)
            for parts, value in (parse_assignment(dotted, text) for dotted, text in pairs)
        ]
    except InputError as exc:
        raise BadInput(str(exc)) from None
    if deployment is not None:
        return Scenario.from_deployment(deployment, keep_plan, changes)
    return Scenario.from_dict(data, changes, str(path) if path else "scenario")


def _progress(message: str) -> Any:
    """A spinner on standard error while a search runs, only for a person at a terminal:
    never on standard output, in JSON or in a pipe."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(message)


def emit_plans(found: Any, fmt: str, plot: Path | None) -> None:
    """An API result of plans (`results.Recommendation`) as the chosen format, and its plot."""
    from rlmguide.kb.files import UnwritableFile
    from rlmguide.report import print_report

    result = found.model_dump(mode="json")
    try:
        if plot is not None and "sizing" in result:
            from rlmguide.runreport import draw_frontier

            draw_frontier(result["sizing"], plot)
        elif plot is not None:
            from rlmguide.timeline import draw

            draw(result["plans"], plot)
    except UnwritableFile as exc:
        raise Failure(f"--plot {exc}") from None
    if fmt == "json":
        click.echo(dumps(result))
    else:
        print_report(result, fmt)


SURVEY_OPTION = click.option(
    "--survey",
    is_flag=True,
    help="Also give the survey's idealised work, depth and memory per stage, per model and by "
    "Table 9 configuration (arXiv:2608.27046), beside the calibrated seconds, for every plan.",
)

PLOT_OPTION = click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw a timeline of one step per plan into FILE.svg or FILE.png (with a size "
    "search, the time-cost frontier of the sizes).",
)


def sizing_options(func: Callable) -> Callable:
    """Search node counts too: the objective, the largest size, a deadline and a budget."""
    func = click.option(
        "--budget",
        type=FiniteRange(min=0, min_open=True),
        help="Largest run cost (in the price's currency); needs a price.",
    )(func)
    func = click.option(
        "--deadline",
        type=FiniteRange(min=0, min_open=True),
        metavar="DAYS",
        help="Longest run in days; needs workload.steps (or a sample or token budget).",
    )(func)
    func = click.option(
        "--max-nodes",
        type=click.IntRange(1, 8192),
        help="Search node counts 1..N too (all up to 16, then powers of two and N).",
    )(func)
    return click.option(
        "--objective",
        type=click.Choice(["time", "cost"]),
        help="With a size search, pick the fastest size (time) or the cheapest (cost); "
        "default time.",
    )(func)


@cli.command()
@scenario_options
@click.option(
    "--top",
    default=3,
    show_default=True,
    type=click.IntRange(1, 100),
    help="How many plans to show.",
)
@click.option(
    "--framework",
    "framework",
    metavar="ID",
    help="Only plans this framework can run; says which of its constraints removed how many.",
)
@click.option(
    "--emit",
    metavar="ID",
    help="Print the top plan this framework can run as its launch script (see `export`).",
)
@click.option(
    "--include-research",
    "include_research",
    is_flag=True,
    help="Rank the plans research systems run too (partial code, a paper, a closed system); "
    "by default only plans a released framework runs are ranked and the others are what-ifs.",
)
@click.option(
    "--what-if",
    "what_if",
    is_flag=True,
    help="Also show what Table 9's configurations no framework in the KB runs (shared "
    "actor-critic, stage fusion) would gain over the best runnable plan; never a plan to launch.",
)
@format_option(("table", "json", "markdown"))
@PLOT_OPTION
@sizing_options
@SURVEY_OPTION
def recommend(
    scenario_file: Path | None,
    assignments: tuple[str, ...],
    deployment: str | None,
    top: int,
    framework: str | None,
    emit: str | None,
    include_research: bool,
    what_if: bool,
    fmt: str,
    plot: Path | None,
    objective: str | None,
    max_nodes: int | None,
    deadline: float | None,
    budget: float | None,
    survey: bool,
    **flags: Any,
) -> None:
    """Recommend placements, parallelism and execution modes for a scenario, best first.

    With --deployment ID, plan the cluster, models and workload of a published deployment.

    With --objective time|cost, --max-nodes N, --deadline DAYS or --budget AMOUNT, node
    counts are searched too and the time-cost frontier of the sizes is shown.

    Example: rlmguide recommend examples/grpo-qwen2.5-7b-8xh100.yaml --top 3
    """
    from rlmguide import api

    scenario = load_scenario(scenario_file, flags, assignments, deployment, keep_plan=False)
    if emit is not None:
        if scenario.cluster.parts is not None:
            raise BadInput(
                "--emit: a launch script runs on one accelerator; export the part a plan uses "
                "(give its cluster.accelerator, nodes and gpus_per_node)"
            )
        if framework not in (None, emit):
            raise BadInput(f"--emit {emit} and --framework {framework} name different frameworks")
        with _progress("searching plans"):
            click.echo(api.export(scenario, emit).script)
        return
    with _progress("searching plans"):
        found = api.recommend(scenario, top=top, framework=framework, what_if=what_if,
                              include_research=include_research, objective=objective,
                              max_nodes=max_nodes, deadline=deadline, budget=budget,
                              survey=survey)  # fmt: skip
    emit_plans(found, fmt, plot)


@cli.command("export")
@scenario_options
@click.option("--framework", "framework", required=True, metavar="ID", help="verl, openrlhf, ...")
@click.option(
    "--framework-version",
    "version",
    metavar="VERSION",
    help="The mapping to use, by id or commit (default: the newest for the framework).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the script (executable; ROLL's: its YAML config) to FILE, not standard output.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("script", "json")),
    default="script",
    show_default=True,
    help="A bash script, or the keys, values and plan as JSON.",
)
def export(
    scenario_file: Path | None,
    assignments: tuple[str, ...],
    deployment: str | None,
    framework: str,
    version: str | None,
    out: Path | None,
    fmt: str,
    **flags: Any,
) -> None:
    """Write a plan as a framework's launch: the scenario's plan where it fixes one, else the
    best plan the framework can run. Refuses (exit 1) what the framework cannot express.

    Example: rlmguide export examples/grpo-qwen2.5-7b-8xh100.yaml --framework verl
    """
    from rlmguide import api
    from rlmguide.kb.files import UnwritableFile, write_output

    scenario = load_scenario(scenario_file, flags, assignments, deployment)
    with _progress("searching plans"):
        launch = api.export(scenario, framework, version=version)
    text = dumps(launch.model_dump(mode="json")) if fmt == "json" else launch.script
    if out is None:
        click.echo(text, nl=fmt == "json")
        return
    data = (text + ("\n" if fmt == "json" else "")).encode()
    # a ROLL launch is the YAML config its entry point reads, not a script to run
    runnable = fmt == "script" and launch.model_dump().get("syntax") != "yaml"
    try:
        write_output(out, data, executable=runnable)
    except UnwritableFile as exc:
        raise Failure(f"--out {exc}") from None


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--framework", "framework", metavar="ID", help="Read the file as this framework's.")
@click.option(
    "--policy",
    metavar="ID",
    help="The policy's model record, if the path names none (an export's header does).",
)
@click.option(
    "--accelerator",
    metavar="ID",
    help="The accelerator id (a launch never says; an export's header does).",
)
@click.option("--nodes", type=click.IntRange(1), help="Nodes (default: the file's pools).")
@click.option("--gpus-per-node", "gpus_per_node", type=click.IntRange(1), help="GPUs per node.")
@click.option(
    "--prompt-tokens",
    "prompt_tokens",
    type=click.IntRange(1),
    help="Mean prompt length, in place of the one review assumes: the file's prompt cap, or "
    "where it bounds only prompt + response (NeMo-RL) or no prompt at all (slime without "
    "--rollout-max-context-len) a typical one.",
)
@format_option(("table", "json", "markdown"))
def review(
    config: Path,
    framework: str | None,
    policy: str | None,
    accelerator: str | None,
    nodes: int | None,
    gpus_per_node: int | None,
    prompt_tokens: int | None,
    fmt: str,
) -> None:
    """Read a launch script (verl Hydra overrides, OpenRLHF train_ppo_ray flags, a slime
    train.py script with the model flags it sources, SkyRL and AReaL launches), a NeMo-RL YAML
    recipe or a ROLL YAML config as the framework would, cost its plan and compare it with the
    best plan the same framework can run.

    Example: rlmguide review run_qwen3moe-30b_megatron_96gb.sh --accelerator h20-96gb
    """
    from rlmguide import api
    from rlmguide.review.show import print_review

    with _progress("reading and searching plans"):
        found = api.review(config, framework=framework, policy=policy, accelerator=accelerator,
                           nodes=nodes, gpus_per_node=gpus_per_node,
                           prompt_tokens=prompt_tokens)  # fmt: skip
    result = found.model_dump(mode="json")
    if fmt == "json":
        click.echo(dumps(result))
    else:
        print_review(result, fmt)


@cli.command()
@scenario_options
@format_option(("table", "json", "markdown"))
@PLOT_OPTION
@SURVEY_OPTION
@click.option(
    "--framework",
    "framework",
    metavar="ID",
    help="Cost the plan as this framework runs it (its gradient buffers, frozen models, engine).",
)
def estimate(
    scenario_file: Path | None,
    assignments: tuple[str, ...],
    deployment: str | None,
    fmt: str,
    plot: Path | None,
    survey: bool,
    framework: str | None,
    **flags: Any,
) -> None:
    """Cost exactly the plan the scenario fixes (placement, execution and both layouts).

    With --deployment ID, cost a published deployment as written (`--set` tries a variation).
    --framework ID costs the plan as that framework runs it: its gradient buffers, where it
    keeps frozen models, its engine's default concurrency. A plan that does not fit is still
    broken down, then reported as a failure (exit 1).
    """
    from rlmguide import api

    scenario = load_scenario(scenario_file, flags, assignments, deployment)
    found = api.estimate(scenario, survey=survey, framework=framework)
    emit_plans(found, fmt, plot)
    if found.shortfall is not None:
        raise Failure(f"the plan does not fit: {found.shortfall}")


@cli.group()
def site() -> None:
    """The static documentation site generated from the knowledge base."""


@site.command("build")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: build/site).",
)
def site_build(out: Path | None) -> None:
    """Build the site in strict mode: any warning or broken link fails the build."""
    from rlmguide.sitegen import sitebuild

    try:
        target = sitebuild.build(out) if out else sitebuild.build()
    except (sitebuild.OutputFolderError, sitebuild.SiteUrlError) as exc:
        raise BadInput(str(exc)) from None
    except Exception as exc:  # mkdocs reports strict-mode warnings as an Abort
        raise Failure(f"site build failed: {exc}") from None
    click.echo(f"site written to {target}")


@site.command("serve")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="Port on 127.0.0.1.",
)
def site_serve(port: int) -> None:
    """Serve the site locally with live rebuilds (127.0.0.1 only)."""
    from rlmguide.sitegen import sitebuild

    try:
        sitebuild.serve(port)
    except sitebuild.SiteUrlError as exc:
        raise BadInput(str(exc)) from None


@cli.command("survey-map")
@format_option(("table", "json", "markdown", "csv"))
@click.option("--all", "every", is_flag=True, help="List every row, not only the unmet ones.")
def survey_map_command(fmt: str, every: bool) -> None:
    """The survey map's computed status: rows per status, and each row whose checks fail."""
    from rlmguide.kb.load import load_catalog
    from rlmguide.sitegen.survey_checks import status_of
    from rlmguide.sitegen.survey_pages import findings, map_summary, survey_map

    found = findings(load_catalog(record_roots()), connection())
    statuses = {rid: status_of(f) for rid, f in found.items()}
    rows = [
        (item.part, item.id, item.title, statuses[item.id],
         "; ".join(f.detail for f in found[item.id] if not f.passed))
        for item in survey_map()
        if every or statuses[item.id] != "present"
    ]  # fmt: skip
    summary = map_summary(statuses)
    if fmt == "json":
        keys = ("part", "id", "title", "status", "failing")
        listed = [dict(zip(keys, r, strict=True)) for r in rows]
        click.echo(dumps({"counts": summary, "rows": listed}))
        return
    for name, counted in summary.items():
        click.echo(f"{name}: " + ", ".join(f"{n} {s}" for s, n in counted.items()))
    print_rows(["part", "id", "title", "status", "failing checks"], rows, fmt)


@cli.command()
def validate() -> None:
    """Check every record: schema, references, citations, taxonomy; exit 1 on any error."""
    from rlmguide.cost.efficiency import default_sources
    from rlmguide.export.mapping import mapping_problems
    from rlmguide.export.startup import compile_checks
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.validate import validate as check
    from rlmguide.rules.engine import compile_rules
    from rlmguide.rules.frameworks import compile_constraints

    catalog = load_catalog(record_roots())
    problems = check(catalog, default_sources()) + compile_rules(catalog)[1]
    problems += compile_constraints(catalog)[1] + compile_checks(catalog)[1]
    problems += mapping_problems(catalog)
    errors = [p for p in problems if p.severity == "error"]
    for problem in problems:
        click.echo(f"{problem.severity}: {problem}")
    counts = ", ".join(f"{len(catalog.of(k))} {PLURALS[k]}" for k in PLURALS)
    warnings = len(problems) - len(errors)
    summary = f"{counts}: {len(errors)} error(s), {warnings} warning(s)"
    if errors:
        raise Failure(summary)
    click.echo(summary)


@cli.command()
@click.argument("kind", required=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write one <kind>.schema.json per kind into this folder.",
)
def schema(kind: str | None, out: Path | None) -> None:
    """Print the JSON schema of a record KIND (or of `scenario`), for editors and validators."""
    from rlmguide.kb.schema import KINDS, Scenario

    models: dict[str, Any] = {**KINDS, "scenario": Scenario}
    if kind is not None and kind != "scenario":
        kind = kind_of(kind)
    chosen = {kind: models[kind]} if kind else models
    if out is not None:
        from rlmguide.kb.files import UnwritableFile, write_output

        try:
            out.mkdir(parents=True, exist_ok=True)
            for name, model in chosen.items():
                text = json.dumps(_json_schema(name, model), indent=2) + "\n"
                write_output(out / f"{name}.schema.json", text.encode())
        except OSError as exc:
            raise Failure(f"--out {out}: cannot be written ({exc.strerror})") from None
        except UnwritableFile as exc:
            raise Failure(f"--out {exc}") from None
        click.echo(f"wrote {len(chosen)} schema file(s) to {out}")
        return
    document = {n: _json_schema(n, m) for n, m in chosen.items()}
    click.echo(json.dumps(document[kind] if kind else document, indent=2))


def _json_schema(name: str, model: Any) -> dict[str, Any]:
    """A kind's JSON schema; the scenario's carries the supported ranges of its numbers."""
    from rlmguide.kb.schema.bounds import annotate

    document: dict[str, Any] = model.model_json_schema()
    return annotate(document) if name == "scenario" else document


def main() -> None:
    """Console entry point: click's own errors keep their exit codes; anything else is one line."""
    for arg in sys.argv[1:]:
        # Bytes that are not UTF-8 arrive as lone surrogates, which no library below accepts.
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            click.echo(f"Error: argument {shown!r} is not UTF-8 text", err=True)
            sys.exit(2)
    try:
        cli.main(prog_name="rlmguide")
    except Exception as exc:  # the last line of defence: never show a traceback to users
        if os.environ.get("RLMGUIDE_DEBUG"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        click.echo(
            f"rlmguide: internal error (a bug, not your input): {type(exc).__name__}: {first}\n"
            "Please report it with the command you ran and the traceback that "
            "RLMGUIDE_DEBUG=1 prints.",
            err=True,
        )
        sys.exit(1)
