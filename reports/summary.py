"""`report/summary.json`: the run's verdict and headline numbers for CI and the index page.

Small and flat on purpose: a nightly job can read it with `jq` without knowing result.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.anomaly_kinds import KIND_IDS
from harness.expectation_outcomes import ExpectationOutcome
from reports.load import Result, RunInfo, passed

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


def build_summary(
    info: RunInfo, result: Result, expectations: Sequence[ExpectationOutcome] = ()
) -> dict[str, Any]:
    guarantees = [
        {
            "id": g.id,
            "topic": g.topic,
            "acks": g.acks,
            "promised": g.promised,
            "promised_by": g.promised_by,
            "verdict": g.verdict,
            "reason": g.reason,
        }
        for g in result.guarantees
    ]
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
        "violated": sorted({g.id for g in result.guarantees if g.promised and g.verdict != "held"}),
        "guarantees": guarantees,
        "acks": result.acks,
        "anomalies": {a.kind: a.count for a in result.anomalies if a.kind in KIND_IDS},
        "p99_ack_latency_ms": p99_by_acks(result),
    }
