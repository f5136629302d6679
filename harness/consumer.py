"""Readers that record every consumed record: live (while faults run) and final (after healing).

Both assign partitions directly (no consumer group), so a broker fault never stalls them in a
rebalance. The final read goes from each partition's log start offset to its high watermark and
then writes one `end` event; a partition it cannot finish in time gets none, and the run says so.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from contract.events import read_end, read_record
from contract.history import HistoryWriter, RunClock

WATERMARK_ROUND_S = 1.0  # longer than a follower's fetch wait (replica.fetch.wait.max.ms, 500 ms)

_CONSUMER_CONFIG: dict[str, Any] = {
    "group.id": "kchaos-reader",  # required by librdkafka, unused: partitions are assigned directly
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "earliest",
    "fetch.wait.max.ms": 100,
}


def _record(writer: HistoryWriter, clock: RunClock, process: str, phase: str, msg: Any) -> None:
    value = msg.value()
    text = value.decode(errors="replace").split("|", 1)[0] if value is not None else None
    writer.write(
        read_record(clock.now_ns(), process, phase, msg.topic(), msg.partition(), msg.offset(), text)
    )


class LiveConsumer:
    """Reads every partition of `topics` from the beginning in a thread until stopped."""

    def __init__(
        self,
        process: str,
        partitions: Mapping[str, int],
        client_config: Mapping[str, Any],
        writer: HistoryWriter,
        clock: RunClock,
    ) -> None:
        self.process = process
        self._partitions = partitions
        self._config = {**_CONSUMER_CONFIG, **client_config}
        self._writer, self._clock = writer, clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"consumer-{process}", daemon=True)
        self.read = 0
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            consumer = Consumer(self._config)
            consumer.assign(
                [
                    TopicPartition(t, p, OFFSET_BEGINNING)
                    for t, count in self._partitions.items()
                    for p in range(count)
                ]
            )
            try:
                while not self._stop.is_set():
                    for msg in consumer.consume(500, timeout=0.2):
                        if msg.error() is None:
                            _record(self._writer, self._clock, self.process, "live", msg)
                            self.read += 1
            finally:
                consumer.close()
        except BaseException as exc:
            self.error = exc


@dataclass(frozen=True)
class FinalReadResult:
    complete: list[tuple[str, int]]
    incomplete: list[tuple[str, int]]
    records: int
    why: dict[tuple[str, int], str] = field(default_factory=dict)
    """For each incomplete partition, the state the read last saw of it (run.json says it)."""


def final_read(
    partitions: Mapping[str, int],
    client_config: Mapping[str, Any],
    writer: HistoryWriter,
    clock: RunClock,
    timeout_s: float = 60.0,
    process: str = "c-final-0",
) -> FinalReadResult:
    """Read every partition from log start to high watermark; write `end` for each one finished
    (read_committed when `client_config` says so: its ends say it too)."""
    config = {**_CONSUMER_CONFIG, **client_config}
    isolation = "read_committed" if config.get("isolation.level") == "read_committed" else None
    consumer = Consumer(config)
    deadline = time.monotonic() + timeout_s
    targets: dict[tuple[str, int], tuple[int, int]]
    pending: list[tuple[str, int]] = [(t, p) for t, count in sorted(partitions.items()) for p in range(count)]
    why: dict[tuple[str, int], str] = {}
    reached: dict[tuple[str, int], int] = {}
    records = 0
    try:
        # Watermarks first, read until two rounds agree: the high watermark trails the last writes
        # until followers have fetched them. A partition whose leader cannot answer stays unread.
        previous: dict[tuple[str, int], tuple[int, int]] | None = None
        while True:
            targets = {}
            for key in pending:
                try:
                    targets[key] = consumer.get_watermark_offsets(
                        TopicPartition(*key), timeout=5, cached=False
                    )
                except KafkaException as exc:  # leader election in progress: asked again next round
                    why[key] = f"its watermarks could not be read: {exc.args[0] if exc.args else exc}"
                    # librdkafka asks the leader its metadata names, which a broker's stale cache can
                    # keep naming after a failover (brokers learnt a new leader 12-20 s after
                    # ZooKeeper in one CI run): ask for the topic's metadata again before next round.
                    with contextlib.suppress(KafkaException):
                        consumer.list_topics(key[0], timeout=5)
            settled = targets == previous and len(targets) == len(pending)
            for key, watermarks in targets.items():
                was = (previous or {}).get(key)
                why[key] = (
                    f"nothing was read of offsets [{watermarks[0]}, {watermarks[1]})"
                    if settled
                    else f"its watermarks did not settle: {list(was or [])}, then {list(watermarks)}"
                )
            if settled or time.monotonic() >= deadline:
                break
            previous = targets
            time.sleep(WATERMARK_ROUND_S)
        done: set[tuple[str, int]] = set()
        for key, (low, high) in targets.items():
            if high <= low:
                _end(writer, clock, process, key, low, high, isolation)
                done.add(key)
        consumer.assign(
            [TopicPartition(t, p, targets[(t, p)][0]) for (t, p) in targets if (t, p) not in done]
        )
        while len(done) < len(targets) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error() is not None:
                    continue
                key = (str(msg.topic()), int(msg.partition() or 0))
                if key in done:
                    continue
                _record(writer, clock, process, "final", msg)
                records += 1
                reached[key] = int(msg.offset() or 0)
            # A read_committed consumer is handed no commit marker and no aborted record, so the
            # last record it gets may sit below the high watermark: its position still passes it.
            reading = [TopicPartition(t, p) for (t, p) in targets if (t, p) not in done]
            for position in consumer.position(reading) if reading else []:
                key = (str(position.topic), int(position.partition))
                low, high = targets[key]
                if max(int(position.offset), reached.get(key, -1) + 1) >= high:
                    _end(writer, clock, process, key, low, high, isolation)
                    done.add(key)
    finally:
        consumer.close()
    incomplete = [k for k in pending if k not in done]
    for key in set(incomplete) & set(reached):  # said once here, not per record read
        low, high = targets[key]
        why[key] = f"the read reached offset {reached[key]} of [{low}, {high})"
    return FinalReadResult(sorted(done), incomplete, records, {k: why.get(k, "not read") for k in incomplete})


def _end(
    writer: HistoryWriter,
    clock: RunClock,
    process: str,
    key: tuple[str, int],
    low: int,
    high: int,
    isolation: str | None,
) -> None:
    writer.write(read_end(clock.now_ns(), process, key[0], key[1], low, high, isolation))


def partition_counts(topics: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {str(t["name"]): int(t["partitions"]) for t in topics}
