"""The Java workload program on a real Kafka 3.9.2 cluster, driven by its protocol (docs/CLIENTS.md):
a `producer` writing acks=all, a `transactional-producer` committing and aborting and a read_committed
`member` reading both, each started with its spec and stopped with `stop`; then their lines, laid out
as a run directory, pass the contract's readers and checks, and the events make sense."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from checkers import frames
from checkers.io.arrow_parse import parquet_of
from contract import strictjson
from contract.events import write_event
from contract.history import CLIENT, CONSUMES, RUN_JSON, TRANSACTIONS, WRITES
from contract.history_readers import (
    iter_client_lines,
    iter_consume_lines,
    iter_transaction_lines,
    load_run_json,
)
from harness.cluster import ClusterSpec, KafkaCluster
from harness.images import KafkaImage
from harness.java_client import JavaClient, build
from harness.waiting import wait_until

pytestmark = pytest.mark.docker

ClusterFactory = Callable[..., KafkaCluster]  # the `cluster_factory` fixture of tests/conftest.py

RELEASE = "3.9.2"
ACKS_ALL = "chaos-acks-all"
TXN_TOPICS = ["chaos-txn-0", "chaos-txn-1"]
PIPE_BUF = 4096
STACK_END = b"-- end of stacks --\n"
TAG_FILES = {"writes": WRITES, "transactions": TRANSACTIONS, "consumes": CONSUMES, "client": CLIENT}
TRANSACTIONS_SPEC = {
    "records": [1, 5],
    "abort_rate": 0.4,
    "early_abort_rate": 0.5,
    "transaction_timeout_ms": 10_000,
    "call_timeout_ms": 10_000,
    "hold_ms": 0,
}


@pytest.fixture(scope="module")
def kafka_image() -> KafkaImage:
    """Kafka 3.9.2 (transactions; the default client release's broker), whatever the suite's release."""
    return ClusterSpec(kafka=RELEASE).resolve_image()


@pytest.fixture(scope="module")
def java_client() -> JavaClient:
    """The program for the default kafka-clients release (from the cache once built)."""
    return build()


class JavaProcess:
    """One workload process of the program: its stdout lines collected by tag as they arrive."""

    def __init__(self, client: JavaClient, spec: dict[str, Any], log: Path) -> None:
        self.name, self.log = str(spec["process"]), log
        self.lines: dict[str, list[bytes]] = defaultdict(list)
        self.longest = 0
        self._lock = threading.Lock()
        with log.open("wb") as stderr:
            self.child = subprocess.Popen(
                [*client.command, json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            tag, _, event = line.partition(b" ")
            with self._lock:
                self.longest = max(self.longest, len(line))
                self.lines[tag.decode()].append(event)

    def events(self, tag: str) -> list[dict[str, Any]]:
        with self._lock:
            return [orjson.loads(line) for line in self.lines[tag]]

    def send(self, command: str) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(command.encode() + b"\n")
        self.child.stdin.flush()

    def stop(self, timeout_s: float = 60) -> int:
        """A clean stop: its exit status, once every line it wrote is collected."""
        self.send("stop")
        code = self.child.wait(timeout_s)
        self._reader.join(10)
        return code


def _count(process: JavaProcess, tag: str, **fields: Any) -> int:
    return sum(all(e.get(k) == v for k, v in fields.items()) for e in process.events(tag))


@pytest.fixture
def processes() -> Iterator[list[JavaProcess]]:
    """The processes a test starts: any still running at its end is killed."""
    started: list[JavaProcess] = []
    yield started
    for process in started:
        if process.child.poll() is None:
            process.child.kill()
            process.child.wait()


def _run_json() -> dict[str, Any]:
    topic = {"partitions": 3, "replication_factor": 3, "acks": "all", "config": {}}
    transactional = {**topic, "transactions": {"records": [1, 5], "abort_rate": 0.4}}
    return {
        "format": 1,
        "run_id": "20261205-000000-java-client-0000",
        "seed": 7,
        "topics": [{"name": ACKS_ALL, **topic}, *({"name": t, **transactional} for t in TXN_TOPICS)],
        "groups": [
            {
                "name": "g-rc",
                "topics": [ACKS_ALL, *TXN_TOPICS],
                "commit": "after-process",
                "members": 1,
                "config": {"isolation.level": "read_committed"},
            }
        ],
    }


def test_java_processes_write_histories_that_pass_the_contract(
    cluster_factory: ClusterFactory, java_client: JavaClient, processes: list[JavaProcess], tmp_path: Path
) -> None:
    cluster = cluster_factory(brokers=3, broker_config={"min.insync.replicas": 2})
    for topic in (ACKS_ALL, *TXN_TOPICS):
        cluster.create_topic(topic, partitions=3, replication_factor=3)
    common = {"origin_ns": time.monotonic_ns()}
    config = {"bootstrap.servers": cluster.bootstrap_servers}

    def start(spec: dict[str, Any]) -> JavaProcess:
        process = JavaProcess(java_client, {**common, **spec}, tmp_path / f"{spec['process']}.log")
        processes.append(process)
        return process

    member = start(
        {
            "role": "member",
            "process": "g-rc-0",
            "config": {**config, "isolation.level": "read_committed"},
            "group": "g-rc",
            "topics": [ACKS_ALL, *TXN_TOPICS],
            "commit": "after-process",
            "commit_async": False,
        }
    )
    producer = start(
        {
            "role": "producer",
            "process": "p-all-0",
            "config": {**config, "enable.idempotence": True, "linger.ms": 5},
            "topic": ACKS_ALL,
            "partitions": 3,
            "acks": "all",
            "rate_per_s": 200,
        }
    )
    tx = start(
        {
            "role": "transactional-producer",
            "process": "tx-0",
            "config": config,
            "transactional_id": "kchaos-tx-0",
            "topics": TXN_TOPICS,
            "partitions": 3,
            "seed": 7,
            "transactions": TRANSACTIONS_SPEC,
            "rate_per_s": 100,
        }
    )

    def acked() -> tuple[bool, str]:
        n = _count(producer, "writes", type="ok")
        return n >= 200, f"{n} acknowledged writes"

    wait_until(acked, what="the Java producer's acknowledged writes", timeout_s=120)
    producer.send("stack")  # answered from the commands thread while the producer works
    wait_until(
        lambda: (STACK_END in producer.log.read_bytes(), "no end of stacks in its log yet"),
        what="the producer's stacks",
        timeout_s=30,
    )
    assert producer.stop() == 0, producer.log.read_text()[-3000:]

    def ended() -> tuple[bool, str]:
        commits = _count(tx, "transactions", type="commit", phase="ok")
        aborts = {
            r: _count(tx, "transactions", type="abort", phase="ok", reason=r)
            for r in ("drawn", "drawn-early")
        }
        return commits >= 5 and min(aborts.values()) >= 1, f"{commits} commits, aborts by reason {aborts}"

    wait_until(ended, what="committed and aborted transactions", timeout_s=120)
    assert tx.stop() == 0, tx.log.read_text()[-3000:]

    # Everything committed is read by the read_committed member; then it stops.
    outcomes = _outcomes(tx.events("transactions"))
    invoked = [w for w in tx.events("writes") if w["type"] == "invoke"]
    committed = {w["value"] for w in invoked if outcomes.get(w["txn"]) == "commit"}
    aborted = {w["value"] for w in invoked if outcomes.get(w["txn"]) == "abort"}
    acknowledged = {w["value"] for w in producer.events("writes") if w["type"] == "ok"}

    def read_all() -> tuple[bool, str]:
        polled = {e["value"] for e in member.events("consumes") if e["type"] == "poll"}
        missing = (committed | acknowledged) - polled
        return not missing, f"{len(missing)} committed or acknowledged values not polled yet"

    wait_until(read_all, what="the member's polls of every committed record", timeout_s=120)
    assert member.stop() == 0, member.log.read_text()[-3000:]

    # The lines, laid out as a run directory, pass the readers and checks the checker applies.
    root = tmp_path / "run"
    (root / "history").mkdir(parents=True)
    (root / RUN_JSON).write_text(json.dumps(_run_json()))
    for tag, name in TAG_FILES.items():
        (root / name).write_bytes(b"".join(line for p in processes for line in p.lines[tag]))
    run = load_run_json(root)
    consumes = [event for _, event in iter_consume_lines(root, run)]
    steps = [event for _, event in iter_transaction_lines(root, run)]
    client_lines = list(iter_client_lines(root))
    writes = _checked_writes(root / WRITES)
    assert parquet_of(root / WRITES, frames.WRITE_SCHEMA, tmp_path / "writes.parquet").taken
    assert all(p.longest <= PIPE_BUF for p in processes)
    print(
        f"\nJava processes' events: {len(writes)} writes, {len(steps)} transaction steps, "
        f"{len(consumes)} consumes, {len(client_lines)} client lines; "
        f"{len(committed)} committed and {len(aborted)} aborted transactional writes"
    )

    # The events make sense: every write completed once; acks=all idempotent writes acknowledged in order.
    by_value: dict[str, list[str]] = defaultdict(list)
    for write in writes:
        by_value[write["value"]].append(write["type"])
    assert all(types[0] == "invoke" and len(types) == 2 for types in by_value.values())
    plain = [w for w in producer.events("writes") if w["type"] != "invoke"]
    assert {w["type"] for w in plain} == {"ok"}
    for partition in range(3):
        offsets = [w["offset"] for w in plain if w["partition"] == partition]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # Each transaction began, and ended committed or aborted; a committed one's writes all acknowledged;
    # an early abort's writes still queued failed, never sent.
    begins = [
        s["txn"] for s in tx.events("transactions") if s["type"] == "begin"
    ]  # the reader checks, not yields them
    assert begins == sorted(outcomes) == list(range(len(outcomes)))
    assert set(outcomes.values()) == {"commit", "abort"}
    tx_completions = {w["value"]: w for w in tx.events("writes") if w["type"] != "invoke"}
    assert all(tx_completions[v]["type"] == "ok" for v in committed)
    assert {w.get("error") for w in tx_completions.values() if w["type"] != "ok"} <= {
        "TransactionAbortedException"
    }
    # read_committed: nothing aborted was polled; what was processed was committed.
    polled = [e["value"] for e in consumes if e["type"] == "poll"]
    assert not aborted & set(polled)
    commits = [e for e in consumes if e["type"] == "commit"]
    assert commits and {e["phase"] for e in commits} == {"invoke", "ok"}
    assert consumes[0]["type"] == "start" and (consumes[-1]["type"], consumes[-1]["reason"]) == (
        "stop",
        "closed",
    )
    assert any(c["facility"] == "TransactionManager" for _, c in client_lines)  # the client's own log


def _outcomes(steps: list[dict[str, Any]]) -> dict[int, str]:
    """Per transaction, `commit` or `abort`: the step that ended ok."""
    return {s["txn"]: s["type"] for s in steps if s["type"] in ("commit", "abort") and s["phase"] == "ok"}


def _checked_writes(path: Path) -> list[dict[str, Any]]:
    """writes.jsonl's events, each read strictly and equal, byte for byte, to the line the harness's
    own constructor makes of its fields (`contract.events.write_event`): the same fields, order, types."""
    events = []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        event = strictjson.decode(raw, path, number)
        rebuilt = write_event(
            event["type"],
            event["time_ns"],
            event["process"],
            event["topic"],
            event["partition"],
            event["value"],
            offset=event.get("offset"),
            error=event.get("error"),
            txn=event.get("txn"),
        )
        assert orjson.dumps(rebuilt) == raw, (number, raw)
        events.append(event)
    return events


def test_a_bad_spec_and_the_end_of_stdin(java_client: JavaClient, tmp_path: Path) -> None:
    spec = {"role": "member", "process": "g-0", "origin_ns": 0, "config": {}, "group": "g", "topics": ["t"]}
    done = subprocess.run(
        [*java_client.command, json.dumps({**spec, "commit": "sometimes"})], capture_output=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == b""
    assert b"field 'commit': expected after-process, before-process or auto, got sometimes" in done.stderr
    done = subprocess.run(
        [*java_client.command, json.dumps({**spec, "commit": "auto", "commit_async": False, "colour": 1})],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2 and b"unknown field 'colour'" in done.stderr
    # The conductor gone (stdin at its end): the process exits at once, whatever its client does.
    orphan = {**spec, "commit": "auto", "commit_async": False, "config": {"bootstrap.servers": "127.0.0.1:1"}}
    done = subprocess.run(
        [*java_client.command, json.dumps(orphan)], stdin=subprocess.DEVNULL, capture_output=True, timeout=60
    )
    assert done.returncode == 3, done.stderr[-2000:]
