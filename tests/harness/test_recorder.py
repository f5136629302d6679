"""The producer's recording (harness/recorder.py, harness/producer.py) against an in-process fake
client: the exact history lines for every way a write can end, in order, each in the file as soon as
it happened, the counters, stopping and pacing. The real client is exercised by
tests/harness/test_workload.py on a real cluster; this pins the formatting and error paths, which a
healthy cluster rarely reaches."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException

import harness.producer
from harness.contract.events import write_event
from harness.contract.history import HistoryWriter, RunClock
from harness.outcomes import classify
from harness.producer import ProducerProcess, paced_wait_s
from harness.recorder import Recorder, WriteLines
from harness.waiting import wait_until

Callback = Callable[[KafkaError | None, Any], None]


class FakeMessage:
    def __init__(self, offset: int | None) -> None:
        self._offset = offset

    def offset(self) -> int | None:
        return self._offset


class FakeProducer:
    """Accepts writes by sequence number and scripts their fate: queue full once, refused at once,
    delivered with an offset, with none (acks=0), with -1, or failed later. Remembers every poll's
    timeout."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.accepted: list[tuple[int, Callback]] = []  # in flight
        self.sent: list[tuple[int, bytes]] = []  # (partition, value) of every accepted write
        self.queue_full_once = {3}
        self.poll_timeouts: list[float] = []

    def produce(
        self, topic: str, value: bytes, key: bytes | None, partition: int, on_delivery: Callback
    ) -> None:
        sequence = int(value.split(b":")[-1].split(b"|")[0])
        if sequence in self.queue_full_once:
            self.queue_full_once.discard(sequence)
            raise BufferError("Local: Queue full")
        if sequence == 5:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_TOPIC))
        self.accepted.append((sequence, on_delivery))
        self.sent.append((partition, value))

    def poll(self, timeout: float) -> int:
        self.poll_timeouts.append(timeout)
        delivered = self.accepted[:]
        self.accepted.clear()
        for sequence, callback in delivered:
            if sequence == 7:
                callback(KafkaError(KafkaError._MSG_TIMED_OUT), None)
            elif sequence == 8:
                callback(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), None)
            else:
                callback(None, FakeMessage({2: None, 4: -1}.get(sequence, sequence * 10)))
        return len(delivered)

    def flush(self, timeout: float) -> int:
        return self.poll(timeout)

    def __len__(self) -> int:
        return len(self.accepted)


def stopped_after(
    client: FakeProducer,
    monkeypatch: pytest.MonkeyPatch,
    path: Path,
    condition: Callable[[ProducerProcess], tuple[bool, str]],
    what: str,
) -> ProducerProcess:
    """A producer process on `client`, recording to `path`, started, stopped once `condition` holds
    and joined: it must have ended by itself, without an error."""
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    with HistoryWriter(path) as writer:
        producer = ProducerProcess("p-1-0", "t-1", 2, "1", {"retries": 0}, writer, RunClock())
        producer.start()
        wait_until(lambda: condition(producer), what=what, timeout_s=10, interval_s=0.01)
        producer.stop()
        producer.join(10)
    assert not producer.running and producer.error is None
    return producer


@pytest.mark.parametrize("process", ["p-all-0", 'odd "%d" \\ name'])
@pytest.mark.parametrize("txn", [None, 3])
def test_the_recorder_s_byte_templates_are_the_history_s_write_events(process: str, txn: int | None) -> None:
    lines = WriteLines(process, "chaos-acks-all", transactional=txn is not None)
    value = f"{process}:17"
    expected = [
        write_event("invoke", 5, process, "chaos-acks-all", 1, value, txn=txn),
        write_event("ok", 6, process, "chaos-acks-all", 1, value, offset=41, txn=txn),
        write_event("ok", 7, process, "chaos-acks-all", -1, value, offset=None, txn=txn),
        write_event("fail", 8, process, "chaos-acks-all", 2, value, error="NOT_ENOUGH_REPLICAS", txn=txn),
    ]
    t = () if txn is None else (txn,)
    filled = [
        lines.invoke % (5, 1, *t, 17),
        lines.ok % (6, 1, *t, 41, 17),
        lines.ok_without_offset % (7, -1, *t, 17),
        lines.error("fail", (8, 2, *t), "NOT_ENOUGH_REPLICAS", 17),
    ]
    assert filled == [orjson.dumps(event) + b"\n" for event in expected]  # the same bytes, in order


def test_a_write_waiting_on_a_full_queue_is_sent_when_room_comes_even_after_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A write given up on at stop would be a failure the cluster had no part in.
    client = FakeProducer({})
    client.queue_full_once.clear()
    full_polls: list[float] = []
    produce, poll = client.produce, client.poll

    def full_until_stopped(*args: Any) -> None:
        if not stopping:
            raise BufferError("Local: Queue full")
        produce(*args)

    def poll_and_count(timeout: float) -> int:
        if stopping:
            return poll(timeout)
        full_polls.append(timeout)
        return 0

    stopping: list[bool] = []
    client.produce = full_until_stopped  # type: ignore[method-assign]
    client.poll = poll_and_count  # type: ignore[method-assign]
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    path = tmp_path / "writes.jsonl"
    with HistoryWriter(path) as writer:
        producer = ProducerProcess("p-1-0", "t-1", 2, "1", {"retries": 0}, writer, RunClock())
        producer.start()
        wait_until(
            lambda: (len(full_polls) >= 3, f"{len(full_polls)} polls"), what="a full queue", timeout_s=10
        )
        producer.stop()
        stopping.append(True)
        producer.join(10)
    assert not producer.running and producer.error is None
    assert client.sent == [(0, b"p-1-0:0")]
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["type"] for e in events] == ["invoke", "ok"]


def test_a_write_the_queue_never_takes_fails_unsent_once_the_client_had_time_to_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeProducer({})

    def always_full(*args: Any) -> None:
        raise BufferError("Local: Queue full")

    client.produce = always_full  # type: ignore[method-assign]
    monkeypatch.setattr(harness.producer, "DRAIN_MARGIN_S", 0.0)
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    path = tmp_path / "writes.jsonl"
    with HistoryWriter(path) as writer:
        producer = ProducerProcess(
            "p-1-0",
            "t-1",
            2,
            "1",
            {"retries": 0, "message.timeout.ms": 300},
            writer,
            RunClock(),
            max_writes=1,
        )
        producer.start()
        producer.join(10)
    assert not producer.running and producer.error is None
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["type"], e.get("error")) for e in events] == [("invoke", None), ("fail", "_QUEUE_FULL")]
    assert len(client.poll_timeouts) >= 2  # it waited for room before giving up


@pytest.mark.parametrize(
    ("code", "retries", "sent", "completion"),
    [
        # librdkafka gives up on a queued write whose partition its metadata lost, also after an
        # attempt that timed out ("MsgPossiblyPersisted"): such writes were read (docs/FINDINGS.md)
        (KafkaError._UNKNOWN_PARTITION, 3, True, "info"),
        (KafkaError._UNKNOWN_TOPIC, 3, True, "info"),
        (KafkaError._UNKNOWN_PARTITION, 0, True, "fail"),  # no earlier attempt to have appended it
        (KafkaError._UNKNOWN_TOPIC, 3, False, "fail"),  # refused by produce(): never queued
        (KafkaError._MSG_TIMED_OUT, 3, False, "fail"),
        (KafkaError._MSG_TIMED_OUT, 0, True, "info"),
        (KafkaError.MSG_SIZE_TOO_LARGE, 3, True, "fail"),
        (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, 0, True, "info"),
    ],
)
def test_a_write_fails_definitely_only_when_no_attempt_can_have_appended_it(
    code: int, retries: int, sent: bool, completion: str
) -> None:
    assert classify(code, retries, sent=sent) == completion
