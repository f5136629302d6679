"""The index page over many runs: runs grouped by scenario, trends across nights, links to reports.

`write_index(RUNS_DIR)` looks at each sub-directory holding a run.json, renders the report of any
checked run whose report is missing or older than its result.json, and writes RUNS_DIR/index.html.
A run that cannot be read is listed with its error instead of stopping the page.

A directory of runs is data that travels: a run's name only ever becomes text and a relative link
(`report_link`), and a symbolic link among the runs is listed, not followed, so the index never reads
or writes outside RUNS_DIR.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from contract.anomaly_kinds import KINDS, trend_metrics
from contract.checked_run import load_info, load_result
from contract.errors import HarnessError, InputError
from contract.expectation_outcomes import read_expectations
from contract.history import REPORT, RESULT, RUN_JSON, WRITES, linked_below, write_atomic
from reports import applicable_counts, svg
from reports.html import environment
from reports.summary import build_summary
from reports.timeline import ACKS_ORDER
from reports.write import write_report

TREND_METRICS = trend_metrics("topic")
GUARANTEE_OF = {kind.count: kind.guarantee for kind in KINDS}
"""The guarantee each topic count decides: its trend is charted where some run judged it (lost
committed records only for scenarios with transactional topics)."""
GROUP_TREND_METRICS = trend_metrics("group")
GROUP_COLOURS = 8
"""How many group colours report.css has (`g0`...`g7`)."""
TW, TH, TL, TB = 262, 120, 40, 18  # trend chart width, height, left and bottom margins


@dataclass
class RunEntry:
    name: str
    status: str  # pass | fail | not-checked | error
    scenario: str = "unreadable"
    started_at: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    report: str | None = None  # link relative to the index page


def report_link(run_name: str) -> str:
    """The link from the index page to a run's report: a relative path of percent-encoded segments.

    `./` first, and every `:` of the name encoded, so no run name can be read as a scheme
    (`javascript:`) or a host (`//`); names that are not UTF-8 keep their bytes.
    """
    parts = (run_name, *REPORT.split("/"))
    return "./" + "/".join(quote(part, safe="", errors="surrogateescape") for part in parts)


def _entry(run_dir: Path) -> RunEntry | None:
    """The index entry of one directory entry of RUNS_DIR, or None when it is not a run."""
    name = run_dir.name
    try:
        if not (run_dir / RUN_JSON).exists() and not (run_dir / WRITES).parent.is_dir():
            return None  # not a run; one with history/ and no run.json is listed with its error
        if run_dir.is_symlink():
            return RunEntry(name, "error", error=f"{run_dir}: a symbolic link, not followed by the index")
        info = load_info(run_dir)
    except (HarnessError, OSError) as exc:  # OSError: is_file or stat of a directory we may not read
        return RunEntry(name, "error", error=str(exc))
    entry = RunEntry(name, "not-checked", info.scenario, info.started_at)
    try:
        if not (run_dir / RESULT).is_file():
            return entry
        result, expectations = load_result(run_dir), read_expectations(run_dir)
        report = run_dir / REPORT
        if (
            linked_below(run_dir, REPORT)  # write_report refuses it, with the reason the index shows
            or not report.is_file()
            or report.stat().st_mtime < (run_dir / RESULT).stat().st_mtime
        ):
            write_report(run_dir)
    except (HarnessError, OSError) as exc:
        entry.status, entry.error = "error", str(exc)
        return entry
    entry.summary = build_summary(info, result, expectations)
    entry.status = "pass" if entry.summary["passed"] else "fail"
    entry.report = report_link(run_dir.name)
    return entry


Line = tuple[str, str, Callable[[dict[str, Any]], float | None], Callable[[dict[str, Any]], str]]
"""A trend's line: its CSS class, its name in the tips, its value in a run's summary (None: none) and
what qualifies that value in the tip ("" when nothing does)."""


def _trend(title: str, runs: list[RunEntry], lines: list[Line]) -> Markup:
    """A small chart of one metric across the scenario's checked runs, one line each of `lines`."""
    checked = [r for r in runs if r.summary]
    series = {(css, name, said): [value(r.summary) for r in checked] for css, name, value, said in lines}
    vmax = max((v for vs in series.values() for v in vs if v is not None), default=0.0)
    top = svg.nice_step(vmax, 1) if vmax > 0 else 1.0
    n = max(len(checked) - 1, 1)

    def xy(i: int, v: float | None) -> tuple[float, float | None]:
        return TL + (TW - TL - 8) * i / n, None if v is None else 18 + (TH - TB - 18) * (1 - v / top)

    out = [
        f'<svg class="trend" viewBox="0 0 {TW} {TH}" width="{TW}" height="{TH}"{svg.attrs(aria_label=title)}>'
    ]
    out.append(svg.label(TL, 12, title, "legend"))
    for tick in (0.0, top):
        y = xy(0, tick)[1]
        out.append(f'<line class="grid" x1="{TL}" x2="{TW - 8}" y1="{y}" y2="{y}"/>')
        out.append(
            f'<text class="tick" x="{TL - 4}" y="{y}" dy="4" text-anchor="end">{svg.fmt_num(tick)}</text>'
        )
    for (css, name, said), values in series.items():
        out.append(svg.path((xy(i, v) for i, v in enumerate(values)), f"line {css}"))
        for i, v in enumerate(values):
            if v is not None:
                x, y = xy(i, v)
                run = checked[i]
                tip = f"{run.name} ({run.started_at}): {name} {title} {svg.fmt_num(v)}{said(run.summary)}"
                out.append(
                    f'<circle class="{css}" cx="{svg.fmt(x)}" cy="{svg.fmt(y or 0)}" r="3"'
                    f"{svg.attrs(data_tip=tip)}><title>{svg.esc(tip)}</title></circle>"
                )
    return Markup("".join(out) + "</svg>")


def _acks_lines(
    runs: list[RunEntry],
    value: Callable[[dict[str, Any], str], float | None],
    said: Callable[[dict[str, Any], str], str] = lambda summary, mode: "",
) -> list[Line]:
    """A line per acks mode the scenario's checked runs wrote under."""
    modes = [m for m in ACKS_ORDER if any(_wrote(r.summary, m) for r in runs if r.summary)]

    def line(mode: str) -> Line:
        return f"acks-{mode}", f"acks={mode}", lambda s: value(s, mode), lambda s: said(s, mode)

    return [line(m) for m in modes]


def _group_lines(
    runs: list[RunEntry],
    value: Callable[[dict[str, Any], str], float | None],
    said: Callable[[dict[str, Any], str], str] = lambda summary, group: "",
) -> list[Line]:
    """A line per consumer group of the scenario's checked runs (the report's colours, by order)."""
    names = sorted({g for r in runs if r.summary for g in r.summary.get("groups", {})})

    def line(i: int, name: str) -> Line:
        return f"g{i % GROUP_COLOURS}", f"group {name}", lambda s: value(s, name), lambda s: said(s, name)

    return [line(i, name) for i, name in enumerate(names)]


def _group_count(metric: str) -> Callable[[dict[str, Any], str], float | None]:
    def count(summary: dict[str, Any], group: str) -> float | None:
        counts = summary.get("groups", {}).get(group)
        return None if counts is None else float(counts[metric])

    return count


def _group_heal_recovery_s(summary: dict[str, Any], group: str) -> float | None:
    return _seconds(summary.get("groups", {}).get(group, {}).get("heal_recovery_ms"))


def _group_or_more(summary: dict[str, Any], group: str) -> str:
    """A lower bound's tip: some partition was not read again by the workload's end or the next fault."""
    lower = summary.get("groups", {}).get(group, {}).get("heal_recovery_lower_bound")
    return " or more (not reached by the workload's end or the next fault)" if lower else ""


def _wrote(summary: dict[str, Any], mode: str) -> bool:
    """Whether the run wrote under acks mode `mode` (result.json counts every mode, 0 when unused)."""
    return bool(summary["acks"].get(mode, {}).get("attempted"))


def _count(metric: str) -> Callable[[dict[str, Any], str], float | None]:
    return lambda s, m: float(s["acks"][m][metric]) if _wrote(s, m) else None


def _p99(summary: dict[str, Any], mode: str) -> float | None:
    value = summary["p99_ack_latency_ms"].get(mode)
    return None if value is None else float(value)


def _heal_recovery_s(summary: dict[str, Any], mode: str) -> float | None:
    return _seconds(summary.get("heal_recovery_ms", {}).get(mode))


def _seconds(ms: Any) -> float | None:
    return None if ms is None else float(ms) / 1000


def _or_more(summary: dict[str, Any], mode: str) -> str:
    """A lower bound's tip: some partition took no write again by the writes' end or the next fault."""
    return (
        " or more (not reached by the writes' end or the next fault)"
        if summary.get("heal_recovery_lower_bound", {}).get(mode)
        else ""
    )


def _trends(runs: list[RunEntry]) -> list[Markup]:
    """A scenario's trends: the writes' per acks mode, of each count whose guarantee some run judged
    (and their recovery after heals, for scenarios with any), then its consumer groups', if it ran
    any (and theirs)."""
    judged = {g["id"] for r in runs if r.summary for g in r.summary["guarantees"]}
    trends = [
        _trend(title, runs, _acks_lines(runs, _count(metric)))
        for metric, title in TREND_METRICS
        if GUARANTEE_OF[metric] in judged
    ]
    trends.append(_trend("p99 ack latency (ms)", runs, _acks_lines(runs, _p99)))
    if any(r.summary.get("heal_recovery_ms") for r in runs if r.summary):
        title = "longest time after a heal until every partition took writes (s)"
        trends.append(_trend(title, runs, _acks_lines(runs, _heal_recovery_s, _or_more)))
    groups = [g for r in runs if r.summary for g in r.summary.get("groups", {}).values()]
    if groups:
        trends += [
            _trend(title, runs, _group_lines(runs, _group_count(metric)))
            for metric, title in GROUP_TREND_METRICS
        ]
    if any(g.get("heal_recovery_ms") is not None for g in groups):
        title = "longest time after a heal until the group read every partition again (s)"
        trends.append(_trend(title, runs, _group_lines(runs, _group_heal_recovery_s, _group_or_more)))
    return trends


VERDICT_ORDER = ("violated", "unknown", "not-exercised", "held", "not-promised")
"""A run's verdict on a guarantee is the worst of its topics' and groups', in this order."""


@dataclass
class ReleaseCell:
    """One guarantee on one Kafka release: how many runs judged it each way, and those runs."""

    counts: dict[str, int] = field(default_factory=dict)
    runs: list[tuple[RunEntry, str]] = field(default_factory=list)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("-")[0].split(".") if part.isdigit())


def _run_verdicts(summary: dict[str, Any]) -> dict[str, str]:
    """Each guarantee of a run, topics' and groups' alike, with its worst verdict."""
    rows = [
        *summary.get("guarantees", []),
        *(g for group in summary.get("groups", {}).values() for g in group["guarantees"]),
    ]
    worst: dict[str, str] = {}
    for row in rows:
        verdict = row["verdict"] if row["verdict"] in VERDICT_ORDER else "unknown"
        known = worst.get(row["id"])
        if known is None or VERDICT_ORDER.index(verdict) < VERDICT_ORDER.index(known):
            worst[row["id"]] = verdict
    return worst


def release_table(runs: list[RunEntry]) -> dict[str, Any] | None:
    """A scenario's guarantees by Kafka release (rows: guarantees; columns: releases), when its checked
    runs span more than one release; None otherwise."""
    checked = [r for r in runs if r.summary]
    versions = sorted({str(r.summary["kafka_version"]) for r in checked}, key=_version_key)
    if len(versions) < 2:
        return None
    cells: dict[str, dict[str, ReleaseCell]] = {}
    for run in checked:
        for gid, verdict in _run_verdicts(run.summary).items():
            cell = cells.setdefault(gid, {}).setdefault(str(run.summary["kafka_version"]), ReleaseCell())
            cell.counts[verdict] = cell.counts.get(verdict, 0) + 1
            cell.runs.append((run, verdict))
    return {"versions": versions, "rows": cells, "verdicts": VERDICT_ORDER}


def run_columns(runs: list[RunEntry]) -> dict[str, Any]:
    """What a scenario's table of runs shows, of what applies to its runs: a column per acks mode
    they wrote under, in it the charted counts (`TREND_METRICS`) that apply (`applicable_counts`),
    and the groups' column when they ran consumer groups."""
    summaries = [r.summary for r in runs if r.summary]
    judged = {g["id"] for s in summaries for g in s["guarantees"]}
    counted = [c for s in summaries for c in s["acks"].values()]
    shown = set(applicable_counts.topic_counts(judged, counted))
    return {
        "modes": [m for m in ACKS_ORDER if any(_wrote(s, m) for s in summaries)],
        "counts": [metric for metric, _ in TREND_METRICS if metric in shown],
        "groups": any(s.get("groups") for s in summaries),
    }


def mode_cell(summary: dict[str, Any], mode: str, counts: list[str]) -> dict[str, Any] | None:
    """A run's counts of one acks mode in its row, "3 / 1 / 0", and whether one found something (or
    is unknown, its checker having failed); None when the run did not write under the mode."""
    if not summary or not _wrote(summary, mode):
        return None
    values = [summary["acks"][mode].get(k, 0) for k in counts]
    text = " / ".join("?" if v is None else f"{v:,}" for v in values)
    return {"text": text, "bad": any(v != 0 for v in values)}


def render_index(runs_dir: Path, entries: list[RunEntry]) -> str:
    groups: dict[str, list[RunEntry]] = defaultdict(list)
    for e in sorted(entries, key=lambda e: (e.started_at, e.name)):
        groups[e.scenario].append(e)
    scenarios = []
    for name in sorted(groups):
        runs = groups[name]
        trends = _trends(runs) if any(r.summary for r in runs) else []
        scenarios.append(
            {
                "name": name,
                "runs": runs,
                "trends": trends,
                "releases": release_table(runs),
                "columns": run_columns(runs),
            }
        )
    return (
        environment()
        .get_template("index.html.j2")
        .render(
            runs_dir=runs_dir.name or str(runs_dir),
            scenarios=scenarios,
            mode_cell=mode_cell,
            total=len(entries),
            failing=sum(e.status == "fail" for e in entries),
            unreadable=sum(e.status == "error" for e in entries),
        )
    )


def write_index(runs_dir: Path) -> Path:
    """Write RUNS_DIR/index.html over every run directory directly inside RUNS_DIR."""
    if not runs_dir.is_dir():
        raise InputError(f"{runs_dir}: not a directory of runs")
    if (runs_dir / RUN_JSON).exists():
        raise InputError(f"{runs_dir}: a run directory, not a directory of runs (`kchaos report {runs_dir}`)")
    try:
        children = sorted(runs_dir.iterdir())
    except OSError as exc:
        raise InputError(f"{runs_dir}: cannot list the directory of runs: {exc.strerror}") from None
    entries = [entry for child in children if (entry := _entry(child)) is not None]
    return write_atomic(runs_dir, "index.html", render_index(runs_dir, entries))
