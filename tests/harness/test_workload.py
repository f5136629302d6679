"""The workload's history on a real cluster: every write recorded, read back, and a readable prefix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from contract.history import READS, WRITES, HistoryWriter, RunClock, RunDir
from harness import docker_env
from harness.clients import client_config
from harness.cluster import KafkaCluster
from harness.outcomes import classify
from harness.producer import AcksProducer
from harness.waiting import wait_until
from harness.workload import Workload, WorkloadSpec

pytestmark = pytest.mark.docker

EVENT_FIELDS = {
    "invoke": {"type", "time_ns", "process", "topic", "partition", "value"},
    "ok": {"type", "time_ns", "process", "topic", "partition", "offset", "value"},
    "fail": {"type", "time_ns", "process", "topic", "partition", "offset", "value", "error"},
    "info": {"type", "time_ns", "process", "topic", "partition", "offset", "value", "error"},
    "record": {"type", "time_ns", "process", "phase", "topic", "partition", "offset", "value"},
    "end": {"type", "time_ns", "process", "phase", "topic", "partition", "log_start", "high_watermark"},
}


def events(path: Path) -> list[dict[str, object]]:
    lines = path.read_text().splitlines()
    parsed = [json.loads(line) for line in lines]
    for event in parsed:
        assert set(event) == EVENT_FIELDS[str(event["type"])], event
        assert isinstance(event["time_ns"], int) and event["time_ns"] >= 0
    return parsed


def test_without_faults_every_write_is_ok_and_read_back_once_at_its_offset(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    rundir = RunDir(tmp_path / "run")
    workload = Workload(cluster, WorkloadSpec(rate_per_s=300), rundir, RunClock())
    workload.create_topics()
    workload.start()
    wait_until(
        lambda: (workload.counts()["all"].acked >= 1500, str(workload.counts()["all"])),
        what="1500 acked acks=all writes",
        timeout_s=60,
    )
    workload.stop()
    final = workload.final_read(timeout_s=60)
    workload.close()
    assert final.incomplete == [] and len(final.complete) == 9

    writes = events(rundir.path(WRITES))
    invoked = [e["value"] for e in writes if e["type"] == "invoke"]
    oks = {e["value"]: e for e in writes if e["type"] == "ok"}
    assert len(invoked) == len(set(invoked)) > 4000
    assert Counter(e["type"] for e in writes) == {"invoke": len(invoked), "ok": len(invoked)}
    final_reads = [e for e in events(rundir.path(READS)) if e["type"] == "record" and e["phase"] == "final"]
    positions = Counter(e["value"] for e in final_reads)
    assert set(positions) == set(oks) and set(positions.values()) == {1}
    for read in final_reads:
        ok = oks[read["value"]]
        assert (read["topic"], read["partition"]) == (ok["topic"], ok["partition"])
        if ok["topic"] != "chaos-acks-0":  # acks=0 gives no offset
            assert read["offset"] == ok["offset"], (read, ok)
        else:
            assert ok["offset"] is None


def test_a_write_to_a_missing_topic_is_completed_per_the_error_table(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    path = tmp_path / "writes.jsonl"
    config = client_config(cluster.bootstrap_servers, cluster.kafka_version, **{"message.timeout.ms": 5000})
    with HistoryWriter(path) as writer:
        producer = AcksProducer(
            "p-all-0", "no-such-topic", 1, "all", config, writer, RunClock(), max_writes=5
        )
        producer.run()  # the role in this process: it returns once every write completed
    recorded = events(path)
    invokes = [e for e in recorded if e["type"] == "invoke"]
    completions = [e for e in recorded if e["type"] != "invoke"]
    assert len(invokes) == 5 and len(completions) == 5
    for completion in completions:
        assert completion["type"] in ("fail", "info") and completion["offset"] is None
        # The classification is exactly the documented table's, given the error recorded.
        from confluent_kafka import KafkaError

        code = getattr(KafkaError, str(completion["error"]))
        assert completion["type"] == classify(code, retries=3), completion


def test_sigkill_of_the_harness_leaves_a_readable_prefix_and_cleanup_removes_the_cluster(
    tmp_path: Path,
) -> None:
    out = tmp_path / "runs"
    process = subprocess.Popen(
        [sys.executable, "-m", "kchaos.cli", "workload", "--duration", "120", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:

        def writing() -> tuple[bool, str]:
            files = list(out.glob(f"*/{WRITES}"))
            lines = files[0].read_text().count("\n") if files else 0
            return lines > 2000, f"{lines} lines in {files}"

        wait_until(writing, what="2000 history lines", timeout_s=120, interval_s=0.2)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
    run = next(out.glob("*/"))
    text = run.joinpath(WRITES).read_text()
    assert text.endswith("\n")
    parsed = events(run / WRITES)
    assert len(parsed) > 2000
    assert json.loads(run.joinpath("run.json").read_text())["run_id"] == run.name
    assert docker_env.client().containers.list(
        all=True, filters={"label": f"{docker_env.RUN_LABEL}={run.name}"}
    )
    removed = docker_env.remove_labelled(run.name)
    assert len(removed.containers) == 4 and len(removed.networks) == 1
