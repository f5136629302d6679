"""The producer's recording (harness/recorder.py, harness/producer.py) against an in-process fake
client: the exact history lines for every way a write can end, in order, each in the file as soon as
it happened, the counts the conductor makes of them, stopping and pacing. The real client is exercised by
tests/harness/test_workload.py on a real cluster; this pins the formatting and error paths, which a
healthy cluster rarely reaches."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

import harness.producer
from contract.events import write_event
from contract.history import HistoryWriter, RunClock
from harness.outcomes import classify
from harness.producer import AcksProducer, paced_wait_s
from harness.recorder import Recorder, WriteLines
from harness.waiting import wait_until
from harness.workload_process import ProcessCounts, WriteTally

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


class Running:
    """A role run in a thread of this test, as a workload process runs it in its main thread."""

    def __init__(self, role: AcksProducer) -> None:
        self.role = role
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.role.run()
        except BaseException as exc:  # the test asserts there was none
            self.error = exc

    def stop(self) -> None:
        self.role.stop()
        self.join()

    def join(self) -> None:
        self._thread.join(10)
        assert not self._thread.is_alive() and self.error is None


def counted(path: Path) -> ProcessCounts:
    """What the conductor counts of a history file's write lines."""
    tally = WriteTally()
    tally.add(path.read_bytes() if path.exists() else b"")
    return tally.counts()


def stopped_after(
    client: FakeProducer,
    monkeypatch: pytest.MonkeyPatch,
    path: Path,
    condition: Callable[[ProcessCounts], tuple[bool, str]],
    what: str,
) -> ProcessCounts:
    """A producer role on `client`, recording to `path`, run, stopped once `condition` holds of the
    file's counts: it must have ended by itself, without an error. Returns the final counts."""
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    with HistoryWriter(path) as writer:
        running = Running(AcksProducer("p-1-0", "t-1", 2, "1", {"retries": 0}, writer, RunClock()))
        wait_until(lambda: condition(counted(path)), what=what, timeout_s=10, interval_s=0.01)
        running.stop()
    return counted(path)


@pytest.mark.parametrize("process", ["p-all-0", 'odd "name" \\ é %d %%'])
def test_recorder_writes_the_format_s_write_events_for_every_outcome(
    process: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients: list[FakeProducer] = []
    monkeypatch.setattr(
        harness.producer, "Producer", lambda config: clients.append(FakeProducer(config)) or clients[-1]
    )
    path = tmp_path / "writes.jsonl"
    with HistoryWriter(path) as writer:
        producer = AcksProducer(
            process, "t-all", 3, "all", {"retries": 0}, writer, RunClock(), message_size=6, max_writes=10
        )
        producer.run()

    lines = path.read_bytes().splitlines()
    times = [json.loads(line)["time_ns"] for line in lines]
    assert times == sorted(times) and times[0] >= 0

    def head(sequence: int) -> dict[str, Any]:
        return {"process": process, "topic": "t-all", "partition": sequence % 3}

    def invoke(sequence: int) -> dict[str, Any]:
        return {"type": "invoke", **head(sequence), "value": f"{process}:{sequence}"}

    def ok(sequence: int, offset: int | None) -> dict[str, Any]:
        return {"type": "ok", **head(sequence), "offset": offset, "value": f"{process}:{sequence}"}

    def error(kind: str, sequence: int, name: str) -> dict[str, Any]:
        return {
            "type": kind,
            **head(sequence),
            "offset": None,
            "error": name,
            "value": f"{process}:{sequence}",
        }

    expected: list[dict[str, Any]] = []
    for sequence in range(10):
        expected.append(invoke(sequence))
        if sequence == 5:  # refused by produce(): completed at once, never sent
            expected.append(error("fail", sequence, "_UNKNOWN_TOPIC"))
        elif sequence == 7:
            expected.append(error("info", sequence, "_MSG_TIMED_OUT"))
        elif sequence == 8:  # definite with retries=0
            expected.append(error("fail", sequence, "NOT_ENOUGH_REPLICAS"))
        else:  # 2 and 4: no offset told (acks=0): null; 3 was offered again after a full queue
            expected.append(ok(sequence, {2: None, 4: None}.get(sequence, sequence * 10)))
    # Byte for byte: the fields in this order, compact JSON, UTF-8 unescaped, as orjson writes it.
    assert lines == [
        orjson.dumps({"type": event.pop("type"), "time_ns": time_ns, **event})
        for event, time_ns in zip(expected, times, strict=True)
    ]

    counts = counted(path)
    assert (counts.attempted, counts.acked, counts.failed, counts.indeterminate) == (10, 7, 2, 1)
    assert len(counts.latencies_ns) == 7 and all(latency >= 0 for latency in counts.latencies_ns)


def test_recorder_payload_carries_value_and_padding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeProducer({})
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    with HistoryWriter(tmp_path / "writes.jsonl") as writer:
        AcksProducer("p-1-0", "t-1", 2, "1", {}, writer, RunClock(), message_size=5, max_writes=3).run()
    assert client.sent == [
        (0, b"p-1-0:0|xxxx"),
        (1, b"p-1-0:1|xxxx"),
        (0, b"p-1-0:2|xxxx"),
    ]


def test_recorder_propagates_a_bug_in_the_client_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeProducer({})
    client.produce = lambda *args, **kwargs: 1 / 0  # type: ignore[method-assign]
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    with HistoryWriter(tmp_path / "writes.jsonl") as writer:
        producer = AcksProducer("p-1-0", "t-1", 2, "1", {}, writer, RunClock(), max_writes=3)
        with pytest.raises(ZeroDivisionError):  # out of the process's main thread: a failed exit
            producer.run()
    # The invoke was recorded before the call failed, and reached the file.
    assert [json.loads(line)["type"] for line in (tmp_path / "writes.jsonl").read_text().splitlines()] == [
        "invoke"
    ]


def test_each_event_is_in_the_file_as_soon_as_it_happened(tmp_path: Path) -> None:
    path = tmp_path / "writes.jsonl"

    def types() -> list[str]:
        return [json.loads(line)["type"] for line in path.read_text().splitlines()]

    with HistoryWriter(path) as writer:
        recorder = Recorder("p-1-0", "t-1", 0, writer, RunClock())
        first = recorder.invoke(0, 0)
        assert types() == ["invoke"]  # before the write is handed to the client
        second = recorder.invoke(1, 1)
        first(None, FakeMessage(41))
        assert types() == ["invoke", "invoke", "ok"]
        second(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), None)
        assert types() == ["invoke", "invoke", "ok", "fail"]
    counts = counted(path)
    assert (counts.attempted, counts.acked, counts.failed, counts.indeterminate) == (2, 1, 1, 0)


def test_a_stopped_process_completes_every_write_it_invoked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeProducer({})
    client.queue_full_once.clear()
    path = tmp_path / "writes.jsonl"
    counts = stopped_after(client, monkeypatch, path, lambda c: (c.attempted >= 1000, str(c)), "1000 writes")
    assert counts.acked + counts.failed + counts.indeterminate == counts.attempted >= 1000
    recorded = Counter(json.loads(line)["type"] for line in path.read_text().splitlines())
    # 5, 7 and 8 end in errors (see FakeProducer); everything else is ok.
    assert recorded == {"invoke": counts.attempted, "ok": counts.attempted - 3, "fail": 2, "info": 1}


def test_a_paced_process_spaces_its_writes_without_spinning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeProducer({})
    monkeypatch.setattr(harness.producer, "Producer", lambda config: client)
    path = tmp_path / "writes.jsonl"
    with HistoryWriter(path) as writer:
        AcksProducer("p-1-0", "t-1", 2, "1", {}, writer, RunClock(), rate_per_s=2000, max_writes=40).run()
    assert counted(path).attempted == 40
    invoked = [e["time_ns"] for e in map(json.loads, path.read_text().splitlines()) if e["type"] == "invoke"]
    # Write k is not sent before k intervals (0.5 ms) after the loop started, which was after
    # the run clock's origin.
    assert invoked == sorted(invoked) and invoked[-1] >= 39 * 500_000
    # Between writes the loop waits in poll() for at least a millisecond: librdkafka would
    # return at once from a shorter wait, and the loop would spin. After each write: poll(0).
    waits = [t for t in client.poll_timeouts if t > 0]
    assert waits and all(harness.producer.MIN_WAIT_S <= t <= harness.producer.MAX_WAIT_S for t in waits)
    assert client.poll_timeouts.count(0) == 40


@pytest.mark.parametrize(
    ("delay_s", "wait_s"), [(1e-6, 0.001), (0.0009, 0.001), (0.004, 0.004), (0.1, 0.1), (3.0, 0.1)]
)
def test_a_paced_wait_lasts_at_least_a_millisecond_and_at_most_a_tenth_of_a_second(
    delay_s: float, wait_s: float
) -> None:
    assert paced_wait_s(delay_s) == wait_s


@pytest.mark.parametrize("process", ["p-all-0", 'odd "%d" \\ name'])
@pytest.mark.parametrize(("txn", "rest"), [(None, None), (3, None), (3, '/tx-0:5 "%d"')])
def test_the_recorder_s_byte_templates_are_the_history_s_write_events(
    process: str, txn: int | None, rest: str | None
) -> None:
    lines = WriteLines(process, "chaos-acks-all", transactional=txn is not None, derived=rest is not None)
    value = f"{process}:17{rest or ''}"
    expected = [
        write_event("invoke", 5, process, "chaos-acks-all", 1, value, txn=txn),
        write_event("ok", 6, process, "chaos-acks-all", 1, value, offset=41, txn=txn),
        write_event("ok", 7, process, "chaos-acks-all", -1, value, offset=None, txn=txn),
        write_event("fail", 8, process, "chaos-acks-all", 2, value, error="NOT_ENOUGH_REPLICAS", txn=txn),
    ]
    t = () if txn is None else (txn,)
    v = (17,) if rest is None else (17, orjson.dumps(rest)[1:-1])
    filled = [
        lines.invoke % (5, 1, *t, *v),
        lines.ok % (6, 1, *t, 41, *v),
        lines.ok_without_offset % (7, -1, *t, *v),
        lines.error("fail", (8, 2, *t), "NOT_ENOUGH_REPLICAS", v),
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
        running = Running(AcksProducer("p-1-0", "t-1", 2, "1", {"retries": 0}, writer, RunClock()))
        wait_until(
            lambda: (len(full_polls) >= 3, f"{len(full_polls)} polls"), what="a full queue", timeout_s=10
        )
        running.role.stop()
        stopping.append(True)
        running.join()
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
        config = {"retries": 0, "message.timeout.ms": 300}
        AcksProducer("p-1-0", "t-1", 2, "1", config, writer, RunClock(), max_writes=1).run()
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


def test_a_client_stuck_in_a_call_is_served_from_another_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a workload process does on `stack`: its client's queued log lines come out although its
    main thread is in a client call (confluent-kafka hands them over only on poll)."""
    release = threading.Event()

    logged: list[str] = []
    logger = logging.getLogger("test-stuck-client")
    logger.addHandler(CallbackHandler(lambda record: logged.append(record.getMessage())))

    def stuck_in_a_client_call(self: AcksProducer) -> None:
        # A real client that logs (nothing listens on 127.0.0.1:1), then no poll: as in a client
        # call that outlives its own timeout.
        self._producer = Producer({"bootstrap.servers": "127.0.0.1:1", "logger": logger})
        release.wait(30)

    monkeypatch.setattr(AcksProducer, "run", stuck_in_a_client_call)
    with HistoryWriter(tmp_path / "writes.jsonl") as writer:
        producer = AcksProducer("p-all-0", "t-all", 3, "all", {}, writer, RunClock())
        producer.serve_client()  # no client yet: nothing to serve
        running = Running(producer)
        try:
            wait_until(
                lambda: (producer._producer is not None, "no client yet"), what="the client", timeout_s=10
            )
            assert not logged  # librdkafka keeps its lines until a poll
            wait_until(
                lambda: (producer.serve_client() or any("127.0.0.1:1" in m for m in logged), logged),
                what="the stuck client's log lines",
                timeout_s=10,
            )
        finally:
            release.set()
            running.join()


class CallbackHandler(logging.Handler):
    def __init__(self, emit: Callable[[logging.LogRecord], None]) -> None:
        super().__init__()
        self._emit = emit

    def emit(self, record: logging.LogRecord) -> None:
        self._emit(record)
