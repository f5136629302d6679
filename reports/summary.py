"""`report/summary.json`: the run's verdict and headline numbers for CI and the index page.

Small and flat on purpose: a nightly job can read it with `jq` without knowing result.json.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from contract.anomaly_kinds import KIND_IDS
from contract.checked_run import GroupResult, Result, RunInfo, Verdict, passed
from contract.expectation_outcomes import ExpectationOutcome

SUMMARY_FORMAT = 1


def p99_by_acks(result: Result) -> dict[str, float]:
    """Per acks mode, the worst p99 ack latency of the steady-state and under-fault periods."""
    out: dict[str, float] = {}
    for row in result.latency:
        p99 = row.get("p99_ms")
        if isinstance(p99, int | float) and not isinstance(p99, bool):
            acks = str(row.get("acks"))
            out[acks] = max(out.get(acks, 0.0), float(p99))
    return out


def _broken(guarantees: Iterable[Verdict]) -> set[str]:
    return {g.id for g in guarantees if g.broken}


def _verdict(g: Verdict) -> dict[str, Any]:
    return {
        "id": g.id,
        "promised": g.promised,
        "promised_by": g.promised_by,
        "verdict": g.verdict,
        "reason": g.reason,
        # the cases it was judged over; null when result.json does not say
        "exercised": None if g.exercised is None else {"count": g.exercised.count, "what": g.exercised.what},
    }


def _group(group: GroupResult) -> dict[str, Any]:
    """A consumer group: its commit mode, counts, commit outcomes, guarantees, and its longest recovery
    after a heal (null when none was judged) with whether that is a lower bound."""
    return {
        "commit": group.commit,
        **group.counts,
        "commits": group.commits,
        "violated": sorted(_broken(group.guarantees)),
        "guarantees": [_verdict(g) for g in group.guarantees],
        "heal_recovery_ms": group.heal_recovery[0] if group.heal_recovery else None,
        "heal_recovery_lower_bound": bool(group.heal_recovery and group.heal_recovery[1]),
    }


def build_summary(
    info: RunInfo, result: Result, expectations: Sequence[ExpectationOutcome] = ()
) -> dict[str, Any]:
    guarantees = [{**_verdict(g), "topic": g.topic, "acks": g.acks} for g in result.guarantees]
    return {
        "summary_format": SUMMARY_FORMAT,
        "run_id": info.run_id,
        "scenario": info.scenario,
        "seed": info.seed,
        "started_at": info.started_at,
        "kafka_version": info.kafka_version,
        "valid": result.valid,
        "passed": passed(result, expectations),
        "expectations": [
            {"text": e.text, "verdict": e.verdict, "observed": e.observed, "why": e.why} for e in expectations
        ],
        "complete": result.complete,
        "unexpected": result.unexpected,
        # the topics' and the groups' (each group's own under `groups`)
        "violated": sorted(
            _broken([*result.guarantees, *(g for group in result.groups for g in group.guarantees)])
        ),
        "guarantees": guarantees,
        "acks": result.acks,
        "anomalies": {a.kind: a.count for a in result.anomalies if a.kind in KIND_IDS},
        "p99_ack_latency_ms": p99_by_acks(result),
        "heal_recovery_ms": {mode: ms for mode, (ms, _) in result.heal_recovery.items()},
        "heal_recovery_lower_bound": {mode: lower for mode, (_, lower) in result.heal_recovery.items()},
        "groups": {group.name: _group(group) for group in result.groups},
        # per transactional.id, its transactions by outcome and error class; null: no transactions
        "transactions": (
            None
            if result.transactions is None
            else {t.transactional_id: t.counts for t in result.transactions}
        ),
    }
