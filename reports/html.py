"""The run report: one self-contained HTML page (styles, script and charts inlined).

The page carries `data-*` attributes on verdicts, counts, fault windows and anomaly groups so that
tests (and other tools) can check it against result.json and faults.jsonl without scraping text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from contract.anomaly_kinds import (
    ANOMALY_COUNTS,
    COUNT_HELP,
    COUNT_KEYS,
    EXAMPLE_EVIDENCE,
    EXAMPLE_FIRST,
    GROUP_BY_ID,
    GROUP_KINDS,
    KIND_IDS,
    RATE_BASE,
    kind,
)
from contract.checked_run import (
    NOT_EXERCISED,
    NS,
    TRANSACTION_OUTCOME_COUNTS,
    Anomalies,
    GroupResult,
    Run,
    TransactionCounts,
    Verdict,
)
from contract.events import ERROR_CLASSES, FaultWindow
from reports import applicable_counts, explain, svg, timeline
from reports.group_timeline import group_chart, lag_chart
from reports.guarantee_matrix import controls, guarantee_matrix

RATE_BASE_WORDS = {"attempted": "attempted write", "acked": "acknowledged write", "failed": "failed write"}
"""The per-acks-mode counts a scorecard rate is out of, in words (a rate out of any other is not shown)."""
LINE_FIELDS = frozenset({"client_log", "truncations", "replicas"})
"""Example fields whose items are lines of text, shown one per line."""


def _asset(name: str) -> Markup:
    text = resources.files("reports").joinpath("templates", name).read_text(encoding="utf-8")
    return Markup(text)  # our own static file, not run data


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(css=_asset("report.css"), js=_asset("report.js"), clock=svg.clock)
    env.filters["num"] = lambda v: f"{v:,}" if isinstance(v, int) else v
    env.filters["pct"] = _pct
    return env


def _pct(value: float | None) -> str:
    if value is None:
        return ""
    return "0%" if value == 0 else f"{value * 100:.3g}%" if value >= 0.0001 else "<0.01%"


def unclean_election(run: Run) -> str:
    value = run.info.broker_config.get("unclean.leader.election.enable")
    if value is not None:
        return value
    nums = [int(n) for n in re.findall(r"\d+", run.info.kafka_version)[:2]]
    if len(nums) < 2:
        return "version default"
    return f"{'true' if tuple(nums) < (0, 11) else 'false'} (default for Kafka {run.info.kafka_version})"


def config_rows(run: Run) -> list[tuple[str, str]]:
    info = run.info
    rows = [
        ("Kafka version", info.kafka_version),
        *(
            (label, value)
            for label, value in (("Kafka source", info.kafka_source), ("Java", info.java))
            if value
        ),
        *((("metadata", info.metadata),) if info.metadata else ()),
        ("brokers", "" if info.brokers is None else str(info.brokers)),
        *((("disk", "lossy: drops what was not fsynced at a power loss"),) if info.disk == "lossy" else ()),
        *((f"killed at the stop bound: {process}", why) for process, why in info.killed),
        ("min.insync.replicas", info.broker_config.get("min.insync.replicas", "1 (default)")),
        ("unclean.leader.election.enable", unclean_election(run)),
        ("seed", str(info.seed)),
        ("started at", info.started_at),
        (
            "duration",
            svg.clock(run.end_ns / NS)
            + ("" if info.duration_s is None else f" (planned {info.duration_s:g} s)"),
        ),
    ]
    rows += [
        (f"broker {k}", v)
        for k, v in sorted(info.broker_config.items())
        if k not in ("min.insync.replicas", "unclean.leader.election.enable")
    ]
    rows += [(f"producer {k}", v) for k, v in sorted(info.producer.items())]
    return rows


@dataclass(frozen=True)
class ScoreRow:
    acks: str
    counts: dict[str, int | None]
    rates: dict[str, float | None]


def _rate(count: int | None, base: int | None) -> float | None:
    return count / base if count is not None and base else None


def scorecard(run: Run) -> list[ScoreRow]:
    rows = []
    for mode in timeline.acks_modes(run):
        counts = run.result.acks.get(mode, dict.fromkeys(COUNT_KEYS, 0))
        rates = {k: _rate(counts.get(k), counts.get(base)) for k, base in RATE_BASE.items()}
        rows.append(ScoreRow(mode, counts, rates))
    return rows


def score_counts(run: Run) -> tuple[str, ...]:
    """The scorecard's columns: the counts that apply to the run (`applicable_counts`)."""
    judged = {g.id for g in run.result.guarantees}
    return applicable_counts.topic_counts(judged, list(run.result.acks.values()))


def group_score_counts(run: Run) -> tuple[str, ...]:
    """The group scorecard's columns: the group counts that apply to the run's groups."""
    groups = run.result.groups
    judged = {g.id for group in groups for g in group.guarantees}
    return applicable_counts.group_counts(judged, [group.counts for group in groups])


def rates_help(shown: tuple[str, ...]) -> str:
    """What the scorecard's rates are out of, in a sentence ("Rates: acked, failed and indeterminate
    per attempted write; ..."), naming only the shown counts with a rate."""
    by_base: dict[str, list[str]] = {}
    for count in shown:
        base = RATE_BASE.get(count)
        if base in RATE_BASE_WORDS:
            by_base.setdefault(base, []).append(count)
    said = [f"{_and(counts)} per {RATE_BASE_WORDS[base]}" for base, counts in by_base.items()]
    return "Rates: " + "; ".join(said) + "." if said else ""


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _item(value: Any) -> str:
    """One item of a list field: a replica's value as `kafka-N: value`."""
    if isinstance(value, dict) and "broker" in value:
        return f"kafka-{value['broker']}: {value.get('value')}"
    return str(value)


def _example_cell(field: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 10**8:
        return f"{value} ({svg.clock(value / NS)})"  # a run-clock time in ns
    if isinstance(value, list):
        return ("\n" if field in LINE_FIELDS else ", ").join(_item(v) for v in value)
    return "" if value is None else str(value)


def anomaly_groups(run: Run) -> list[dict[str, Any]]:
    return _anomaly_tables(run.result.anomalies, KIND_IDS)


def _example_fields(kind_id: str) -> tuple[str, ...]:
    """The kind's own example columns (none for a kind this kafka-chaos does not know)."""
    try:
        return kind(kind_id).example_fields
    except KeyError:
        return ()


def _anomaly_tables(found: tuple[Anomalies, ...], order: tuple[str, ...]) -> list[dict[str, Any]]:
    """One table per kind of `found`: the kinds found first, each then in `order`."""
    groups = []
    for a in found:
        present = {k for e in a.examples for k in e}
        shown = (*EXAMPLE_FIRST, *_example_fields(a.kind), *EXAMPLE_EVIDENCE)
        cols = [f for f in dict.fromkeys(shown) if f in present] + sorted(present - set(shown))
        groups.append(
            {
                "kind": a.kind,
                "title": explain.anomaly_title(a.kind),
                "explanation": explain.anomaly_explanation(a.kind),
                "count": a.count,
                "error": a.error,
                "capped": a.capped,
                "columns": cols,
                "rows": [[_example_cell(c, e.get(c)) for c in cols] for e in a.examples],
            }
        )
    groups.sort(key=lambda g: (g["count"] == 0 and not g["error"], order.index(g["kind"])))
    return groups


def _promised_and_found(group: GroupResult) -> set[str]:
    """The group's counts that found something against a promise of its own (a read_uncommitted
    group polling uncommitted records, or an at-least-once one redelivering, breaks none)."""
    promised = {g.id for g in group.guarantees if g.promised}
    return {k.count for k in GROUP_KINDS if group.counts.get(k.count) and k.guarantee in promised}


def consumer_groups(run: Run) -> list[dict[str, Any]]:
    """The consumer section: per group its scorecard row, guarantees and anomaly tables."""
    return [
        {
            "g": group,
            "mode": group.commit + (" (async)" if group.commit_async else ""),
            "bad": _promised_and_found(group),
            "anomalies": _anomaly_tables(group.anomalies, tuple(GROUP_BY_ID)),
        }
        for group in run.result.groups
    ]


def transaction_sentence(t: TransactionCounts) -> str:
    """A transactional.id's counts in plain words: outcomes, then how those not committed ended."""
    c = t.counts
    said = (
        f"{t.transactional_id} began {c['begun']:,} transaction{'s' * (c['begun'] != 1)}: "
        f"{c['committed']:,} committed, {c['aborted']:,} aborted, {c['unknown']:,} unknown"
    )
    rest = c["begun"] - c["committed"]
    if rest <= 0:
        return said + "."
    fatal, abortable, retriable = (c[f"{k}_errors"] for k in ERROR_CLASSES)
    no_error = rest - fatal - abortable - retriable
    return (
        f"{said}; of the {rest:,} not committed, {fatal:,} ended in a fatal error, {abortable:,} in an "
        f"abortable one and {retriable:,} in a retriable one"
        + (f"; the other {no_error:,} had no failed step" if no_error > 0 else "")
        + "."
    )


def transactions(run: Run) -> list[dict[str, Any]] | None:
    """The transactions section: per transactional.id its counts and its sentence (None: no transactions)."""
    if run.result.transactions is None:
        return None
    return [{"t": t, "sentence": transaction_sentence(t)} for t in run.result.transactions]


def fault_kind(w: FaultWindow) -> str:
    """The fault's name, with its shape where it has one (partition shapes differ in effect)."""
    shape = w.detail.get("shape")
    return f"{w.fault} {shape}" if isinstance(shape, str) else w.fault


def fault_rows(run: Run) -> list[dict[str, Any]]:
    def row(w: FaultWindow) -> dict[str, Any]:
        stop = w.stop_ns if w.stop_ns is not None else run.end_ns
        return {
            "w": w,
            "start": svg.clock(w.start_ns / NS),
            "stop": "never healed" if w.stop_ns is None else svg.clock(w.stop_ns / NS),
            "seconds": f"{(stop - w.start_ns) / NS:.1f}",
            "detail": ", ".join(
                [f"{k}={v}" for k, v in sorted(w.detail.items()) if k not in ("dropped", "disks")]
                + ([f"power lost: {timeline.power_lost(w)}"] if "dropped" in w.detail else [])
                + ([f"disk: {failed}"] if (failed := timeline.disk_failed(w)) else [])
            ),
        }

    return [row(w) for w in run.faults]


def _placed_guarantees(run: Run) -> list[tuple[str, Verdict]]:
    """Every guarantee with where it was judged: its topic, or `group <name>`."""
    topics = [(g.topic, g) for g in run.result.guarantees]
    return topics + [(f"group {group.name}", g) for group in run.result.groups for g in group.guarantees]


def render_report(run: Run) -> str:
    kinds = sorted({(fault_kind(w), w.description or explain.FAULT_FALLBACK) for w in run.faults})
    placed = _placed_guarantees(run)
    shown = score_counts(run)
    context = {
        "run": run,
        "info": run.info,
        "result": run.result,
        "config": config_rows(run),
        "topics": run.info.topics,
        "scorecard": scorecard(run),
        "count_keys": shown,
        "rates_help": rates_help(shown),
        "anomaly_counts": ANOMALY_COUNTS,
        "count_help": COUNT_HELP,
        "guarantee_help": explain.GUARANTEES,
        "verdict_help": explain.VERDICTS,
        "matrix": guarantee_matrix(run),
        "controls": controls(run),
        # What broke, first in the verdict box: each promise that did not hold, where, and whose it was.
        "broke": [(where, g) for where, g in placed if g.broken],
        "not_exercised": [(where, g) for where, g in placed if g.verdict == NOT_EXERCISED],
        "groups": consumer_groups(run),
        "group_counts": group_score_counts(run),
        "transactions": transactions(run),
        "transaction_counts": TRANSACTION_OUTCOME_COUNTS,
        "anomalies": anomaly_groups(run),
        "faults": fault_rows(run),
        "fault_kinds": kinds,
        "charts": {
            "faults": Markup(timeline.fault_strip(run)),
            "throughput": Markup(timeline.throughput_chart(run)),
            "latency": Markup(timeline.latency_chart(run)),
            "cluster": Markup(timeline.cluster_chart(run)),
            "groups": Markup(group_chart(run)),
            "group_lag": Markup(lag_chart(run)),
        },
        "cluster_samples": len(run.cluster),
    }
    return environment().get_template("report.html.j2").render(context)
