"""Aborted transactions leave their records in the log (issue 68), on a real cluster: the built-in
`txn-coordinator-failover` on Kafka 3.9.2, 40 s. Most aborted transactions' records are appended
(write `ok`) before the abort; the read_uncommitted group polls some of them, while the
read_committed group, the live reader and the final read return none. Read from the history files."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from kchaos.pytest_plugin import ChaosRun
from kchaos.scenario import load_scenario

pytestmark = [pytest.mark.docker, pytest.mark.spark]


def _lines(root: Path, name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (root / "history" / name).read_text().splitlines()]


def test_aborted_records_are_in_the_log_and_only_read_uncommitted_readers_see_them(
    chaos_run: ChaosRun,
) -> None:
    scenario = load_scenario("txn-coordinator-failover")
    experiment = scenario.experiment
    on_3_9 = dataclasses.replace(experiment, cluster=dataclasses.replace(experiment.cluster, kafka="3.9.2"))
    outcome = chaos_run(dataclasses.replace(scenario, experiment=on_3_9), duration_s=40, report=False)
    root = outcome.rundir.root

    steps = _lines(root, "transactions.jsonl")
    aborted = {(s["process"], s["txn"]) for s in steps if s["type"] == "abort" and s["phase"] == "ok"}
    reasons = Counter(str(s["reason"]) for s in steps if s["type"] == "abort" and s["phase"] == "ok")
    assert aborted and set(reasons) <= {"drawn", "drawn-early", "failure"}, reasons
    assert reasons["drawn"] > reasons["drawn-early"], reasons  # a tenth of the drawn aborts are early

    writes = [w for w in _lines(root, "writes.jsonl") if (w["process"], w.get("txn")) in aborted]
    invoked = {w["value"] for w in writes if w["type"] == "invoke"}
    appended = {w["value"] for w in writes if w["type"] == "ok"}
    assert len(appended) > len(invoked) / 2, (
        len(appended),
        len(invoked),
        Counter(str(w["type"]) for w in writes),
    )

    polled: dict[str, set[object]] = {"g-rc": set(), "g-ru": set()}
    for event in _lines(root, "consumes.jsonl"):
        if event["type"] == "poll":
            polled[str(event["group"])].add(event["value"])
    assert polled["g-ru"] & appended, "the read_uncommitted group polled no aborted record"
    assert not polled["g-rc"] & appended
    reads = {r["value"] for r in _lines(root, "reads.jsonl") if r["type"] == "record"}
    assert not reads & appended  # the live reader and the final read: read_committed
    finals = [r for r in _lines(root, "reads.jsonl") if r["type"] == "end"]
    assert finals and all(r.get("isolation") == "read_committed" for r in finals)

    run = json.loads((root / "run.json").read_text())
    txn_topics = [t for t in run["topics"] if "transactions" in t]
    assert txn_topics and all(t["transactions"]["early_abort_rate"] == 0.1 for t in txn_topics)
    assert run["workload"]["killed"] == []
