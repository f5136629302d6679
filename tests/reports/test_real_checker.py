"""The report of a run checked by the real checker (PySpark): a full history in, result.json from
`kchaos check`, then the report, verified against that result.json and faults.jsonl."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from report_runs import S, cluster_samples, write_jsonl
from reportpage import parse

from contract.anomaly_kinds import COUNT_KEYS, KINDS, TOPIC_CASES, TRANSACTION_KIND_COUNTS, WRITE_COUNTS
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
        "groups": [{"name": "g-alo", "topics": ["chaos-acks-1"], "commit": "after-process", "members": 1}],
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
    samples = cluster_samples(30)
    for sample in samples:  # the offsets topic, sampled for the groups' coordinators: kafka-3 leads all 5
        offsets = [
            {"topic": "__consumer_offsets", "partition": p, "leader": 3, "leader_epoch": 0, "isr": [3]}
            for p in range(5)
        ]
        sample["partitions"] += offsets
    write_jsonl(root / "history/cluster.jsonl", samples)
    write_jsonl(root / "history/consumes.jsonl", consumes())


def consumes() -> list[dict[str, Any]]:
    """An at-least-once member that polls partition 0 to offset 9 and commits 12 there: 10 and 11
    are skipped, and 4 polled again after 9 is a redelivery and a poll that went back."""
    member = {"process": "g-alo-0", "group": "g-alo"}
    at = {"topic": "chaos-acks-1", "partition": 0}
    events: list[dict[str, Any]] = [
        {"type": "start", "time_ns": S, **member},
        {"type": "assign", "time_ns": 2 * S, **member, "generation": 1, "partitions": [at]},
    ]
    for i, offset in enumerate([*range(10), 4]):
        events.append(
            {"type": "poll", "time_ns": 3 * S + i, **member, "generation": 1, **at, "offset": offset}
        )
    for phase in ("invoke", "ok"):
        offsets = [{**at, "offset": 12}]
        events.append(
            {
                "type": "commit",
                "time_ns": 4 * S,
                **member,
                "generation": 1,
                "phase": phase,
                "commit_id": 1,
                "offsets": offsets,
            }
        )
    return events


def test_report_of_a_really_checked_run(tmp_path: Path) -> None:
    check = pytest.importorskip("checkers.check", reason="the PySpark checker is not available")
    run_dir = tmp_path / "20261121-010000-real-check"
    history(run_dir)
    check.check_run(run_dir, "local[1]")
    result = json.loads((run_dir / "check/result.json").read_text())
    page = parse(write_report(run_dir).read_text())

    assert page.find("html")[0].attrs["data-valid"] == str(result["valid"]).lower()
    cells = [
        (c.attrs["data-id"], c.attrs["data-where"], c.attrs["data-verdict"])
        for c in page.find("details", "verdict-cell", data_family="topic")
    ]
    assert sorted(cells) == sorted((g["id"], g["topic"], g["verdict"]) for g in result["guarantees"])
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
    before_groups = page.elements[: page.elements.index(page.find("section", id="consumer-groups")[0])]
    scores = {c.attrs["data-count"] for c in before_groups if c.tag == "td" and "data-count" in c.attrs}
    judged = {g["id"] for g in result["guarantees"]}
    assert scores == {*WRITE_COUNTS, *(k.count for k in KINDS if k.per_acks and k.guarantee in judged)}
    assert not scores & TRANSACTION_KIND_COUNTS  # a run without transactions: no transaction columns
    heal = ("heal_recovery_ms", "heal_recovery_lower_bound")
    assert set(result["acks"]["all"]) == {*COUNT_KEYS, *TOPIC_CASES, *heal}


def test_the_consumer_section_shows_each_groups_counts_verdicts_and_examples(tmp_path: Path) -> None:
    check = pytest.importorskip("checkers.check", reason="the PySpark checker is not available")
    run_dir = tmp_path / "20261121-010000-real-check"
    history(run_dir)
    check.check_run(run_dir, "local[1]")
    group = json.loads((run_dir / "check/result.json").read_text())["groups"]["g-alo"]
    assert (group["polled"], group["skipped"], group["redelivered"]) == (11, 2, 1)
    # A row per second; committed 12 on partition 0 at 4 s, never on 1: by the end both logs hold 60.
    assert [row["t_s"] for row in group["series"]] == list(range(len(group["series"])))
    assert group["series"][-1]["lag"] == (60 - 12) + 60
    assert group["series"][0]["lag"] == 4 and group["series"][3]["polled"] == 11  # 4 writes in 0 s
    page = parse(write_report(run_dir).read_text())
    assert len(page.find("tr", "group-score", data_group="g-alo")) == 1
    # Its member's last event is at 4 s, before kafka-1's heal at 24 s, and the partition it reads
    # acknowledged writes after that, the last invoked at 29.75 s: not read again by then, a lower bound.
    assert group["recovery"] == [
        {
            "fault": "kill",
            "start_ns": 19 * S,
            "healed_ns": 24 * S,
            "resumed_ns": None,
            "heal_recovery_ms": 5750.001,
            "heal_recovery_lower_bound": True,
        }
    ]
    score = page.elements[page.elements.index(page.find("tr", "group-score", data_group="g-alo")[0]) :]
    healed = next(c for c in score if c.tag == "td" and "data-heal-recovery" in c.attrs)
    assert healed.attrs["data-heal-recovery"] == "5750.001" and "bad" in healed.classes
    assert healed.text == ["5750 ms or more"]
    (per_fault,) = page.find("table", "group-recovery", data_group="g-alo")
    rows = page.elements[page.elements.index(per_fault) :]
    cells = [" ".join(c.text) for c in rows if c.tag == "td"][:4]
    assert cells == ["kill", "0:19", "0:24", "not by the workload's end or the next fault, 5750 ms later"], (
        cells
    )
    summary = json.loads((run_dir / "report/summary.json").read_text())["groups"]["g-alo"]
    assert (summary["heal_recovery_ms"], summary["heal_recovery_lower_bound"]) == (5750.001, True)
    section = page.find("section", id="consumer-groups")[0]
    shown = {
        c.attrs["data-count"]: int(c.attrs["data-value"])
        for c in page.elements[page.elements.index(section) :]
        if c.tag == "td" and "data-count" in c.attrs
    }
    assert shown == {k: group[k] for k in shown} and set(shown) >= {"polled", "skipped", "redelivered"}
    verdicts = {
        c.attrs["data-id"]: c.attrs["data-verdict"]
        for c in page.find("details", "verdict-cell", data_family="group", data_where="g-alo")
    }
    assert verdicts == {g["id"]: g["verdict"] for g in group["guarantees"]}
    assert verdicts["no-consumer-skips"] == "violated"
    kinds = {
        d.attrs["data-kind"]: int(d.attrs["data-count"])
        for d in page.find("details", "group-anomaly", data_group="g-alo")
    }
    assert kinds == {"consumer-skip": 2, "redelivery": 1, "nonmonotonic-poll": 1}  # 9, then 4 again
    assert len(page.find("path", data_group="g-alo")) == 2  # its lines: processed per second, commit lag
    assert len(page.find("g", "rebalance", data_group="g-alo", data_t_s="2")) == 1  # assigned at 2 s
    lanes = [lane.attrs["data-lane"] for lane in page.find("g", "lane")]
    assert "g-alo coordinator" in lanes and not [n for n in lanes if n.startswith("__consumer_offsets")]
    skip = group["anomalies"]["consumer-skip"]["examples"][0]
    assert skip["coordinator"] == 3 and skip["committed_by"] == "g-alo-0"
    junit = ET.parse(run_dir / "report/junit.xml").getroot()
    case = junit.find(".//testcase[@name='no-consumer-skips[g-alo]']")
    assert case is not None and case.get("classname") == "kchaos.real-check.group-g-alo"
    failure = case.find("failure")
    assert failure is not None and "2 consumer-skip in the run" in (failure.text or "")
    assert junit.find(".//testcase[@name='no-redeliveries[g-alo]']/skipped") is not None  # not promised
    assert page.find("html")[0].attrs["data-valid"] == "false"
