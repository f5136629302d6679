"""The report of a run checked by the real checker (PySpark): a full history in, result.json from
`kchaos check`, then the report, verified against that result.json and faults.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_runs import S, cluster_samples, write_jsonl
from reportpage import parse

from reports import write_report

pytestmark = pytest.mark.spark
MODES = ("all", "1", "0")


def history(root: Path) -> None:
    """30 s of writes to three topics; broker 1 is killed at 20 s and acks=1 loses two acked writes."""
    topics = [{"name": f"chaos-acks-{m}", "partitions": 2, "replication_factor": 3, "acks": m} for m in MODES]
    run = {
        "format": 1,
        "run_id": root.name,
        "seed": 3,
        "scenario": "real-check",
        "started_at": "2026-11-21T01:00:00Z",
        "duration_s": 30,
        "kafka": {"version": "0.9.0.1"},
        "cluster": {
            "brokers": 3,
            "broker_config": {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
        },
        "topics": topics,
    }
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps(run))
    writes: list[dict[str, Any]] = []
    reads: list[dict[str, Any]] = []
    for m in MODES:
        topic, offsets = f"chaos-acks-{m}", [0, 0]
        for i in range(120):
            p, t = i % 2, i * S // 4 + 1000
            value, proc = f"p-{m}:{i}", f"p-{m}"
            writes.append(
                {
                    "type": "invoke",
                    "time_ns": t,
                    "process": proc,
                    "topic": topic,
                    "partition": p,
                    "value": value,
                }
            )
            lost = m == "1" and i in (81, 83)  # acknowledged at ~20 s, then gone from the log
            offset = offsets[p]
            writes.append(
                {
                    "type": "ok",
                    "time_ns": t + 3_000_000,
                    "process": proc,
                    "topic": topic,
                    "partition": p,
                    "offset": None if m == "0" else offset,
                    "value": value,
                }
            )
            offsets[p] += 1
            if not lost:
                reads.append(
                    {
                        "type": "record",
                        "time_ns": 40 * S,
                        "process": "c-final",
                        "phase": "final",
                        "topic": topic,
                        "partition": p,
                        "offset": offset,
                        "value": value,
                    }
                )
        for p in range(2):
            reads.append(
                {
                    "type": "end",
                    "time_ns": 41 * S,
                    "process": "c-final",
                    "phase": "final",
                    "topic": topic,
                    "partition": p,
                    "log_start": 0,
                    "high_watermark": offsets[p],
                }
            )
    write_jsonl(root / "history/writes.jsonl", writes)
    write_jsonl(root / "history/reads.jsonl", reads)
    write_jsonl(
        root / "history/faults.jsonl",
        [
            {"time_ns": 19 * S, "fault": "kill", "phase": "start", "targets": ["kafka-1"], "detail": {}},
            {"time_ns": 24 * S, "fault": "kill", "phase": "stop", "targets": ["kafka-1"], "detail": {}},
        ],
    )
    write_jsonl(root / "history/cluster.jsonl", cluster_samples(30))


def test_report_of_a_really_checked_run(tmp_path: Path) -> None:
    check = pytest.importorskip("checkers.check", reason="the PySpark checker is not available")
    run_dir = tmp_path / "20261121-010000-real-check"
    history(run_dir)
    check.check_run(run_dir, "local[1]")
    result = json.loads((run_dir / "check/result.json").read_text())
    page = parse(write_report(run_dir).read_text())

    assert page.find("html")[0].attrs["data-valid"] == str(result["valid"]).lower()
    rows = [
        (r.attrs["data-id"], r.attrs["data-topic"], r.attrs["data-verdict"])
        for r in page.find("tr", "guarantee")
    ]
    assert rows == [(g["id"], g["topic"], g["verdict"]) for g in result["guarantees"]]
    groups = {g.attrs["data-kind"]: int(g.attrs["data-count"]) for g in page.find("details", "anomaly-group")}
    assert groups == {k: a["count"] for k, a in result["anomalies"].items()}
    assert result["acks"]["1"]["lost"] == 2
    marked = sum(int(m.attrs["data-count"]) for m in page.find("g", "marker", data_kind="lost"))
    assert marked == sum(r["lost"] for r in result["availability"]["series"]) == 2
    faults = [
        (f.attrs["data-fault"], f.attrs["data-start-ns"], f.attrs["data-stop-ns"])
        for f in page.find("tr", "fault")
    ]
    assert faults == [("kill", str(19 * S), str(24 * S))]
    scores = {c.attrs["data-count"] for c in page.find("td") if "data-count" in c.attrs}
    assert scores == set(result["acks"]["all"])
