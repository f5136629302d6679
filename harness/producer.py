"""A producer process that records what its client was told: invoke, then ok / fail / info.

Each process is one thread with one librdkafka producer. Delivery callbacks run inside `poll()`
on that same thread, so a process's completions are written after its invokes and in the order
the client reported them. Values are `<process>:<sequence>`, unique in the run.

The per-write work runs in C (`harness._recorder`, see its header for why): the recorder formats a
write's invoke line, produces it, and its delivery callback formats the completion. Lines gather in
the recorder and go to the history file in one write(2) per WRITE_BATCH events or WRITE_DELAY_NS,
whichever comes first, so a line reaches the file about a millisecond after it happened at most,
without a system call per write; a paced (rate-limited) process writes every turn. Python keeps
the rare and slow parts: pacing, error classification (`harness.outcomes`) and error lines.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import KafkaError, KafkaException, Producer

from harness._recorder import Recorder
from harness.history import HistoryWriter, RunClock
from harness.outcomes import classify, error_name

# Settings that decide durability and ordering; recorded in run.json. Timeouts are short so
# that every write completes (as `info` at worst) well within a chaos run.
DEFAULT_PRODUCER_CONFIG: dict[str, Any] = {
    "retries": 3,
    "max.in.flight.requests.per.connection": 1,
    "request.timeout.ms": 5000,
    "message.timeout.ms": 15000,
    "linger.ms": 5,
    "batch.num.messages": 100,
    "queue.buffering.max.messages": 10000,
}

WRITE_BATCH = 256
WRITE_DELAY_NS = 1_000_000


class WriteLines:
    """Parts of one producer process's history lines (HISTORY_FORMAT.md write events), encoded once.

    The recorder formats invoke and ok lines from `fields` and `value_prefix`; error lines, rare and
    carrying an error name to escape, are formatted here."""

    def __init__(self, process: str, topic: str) -> None:
        encoded = orjson.dumps({"process": process, "topic": topic}).decode()
        self.fields = encoded[1:-1] + ","  # '"process":...,"topic":...,'
        self.value_prefix = orjson.dumps(f"{process}:").decode()[:-1]  # '"<process>:' (value minus sequence)

    def error(self, kind: str, time_ns: int, partition: int, error: str, value: str) -> str:
        return (
            f'{{"type":"{kind}","time_ns":{time_ns},{self.fields}"partition":{partition},'
            f'"offset":null,"error":{orjson.dumps(error).decode()},"value":{value}}}\n'
        )


@dataclass(frozen=True)
class ProcessCounts:
    """A snapshot of one producer process's counters (for the progress display)."""

    attempted: int
    acked: int
    failed: int
    indeterminate: int
    # Recent ack latencies only, for the live display; the checker computes the real statistics.
    latencies_ns: list[int]

    @property
    def completed(self) -> int:
        return self.acked + self.failed + self.indeterminate


class ProducerProcess:
    """Writes unique values to one topic under one acks mode until stopped or `max_writes` reached."""

    def __init__(
        self,
        process: str,
        topic: str,
        partitions: int,
        acks: str,
        client_config: Mapping[str, Any],
        writer: HistoryWriter,
        clock: RunClock,
        rate_per_s: float = 0.0,
        message_size: int = 0,
        max_writes: int | None = None,
    ) -> None:
        self.process, self.topic, self.partitions, self.acks = process, topic, partitions, acks
        self.config = {**DEFAULT_PRODUCER_CONFIG, **client_config, "acks": acks}
        self.retries = int(self.config.get("retries", 0))
        self._clock = clock
        self._interval_s = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
        self._max_writes = max_writes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{process}", daemon=True)
        self.error: BaseException | None = None
        # Kept until `close()`: librdkafka calls an acks=0 write delivered once it is handed to the
        # socket, and destroying the client right after flush() can drop that tail unsent.
        self._producer: Producer | None = None
        self._lines = WriteLines(process, topic)
        self._recorder = Recorder(
            fields=self._lines.fields.encode(),
            value_prefix=self._lines.value_prefix.encode(),
            payload_prefix=f"{process}:".encode(),
            # Padding goes after a "|" that no value contains, so readers can recover the value.
            padding=("|" + "x" * (message_size - 1)).encode() if message_size > 0 else b"",
            topic=topic,
            partitions=partitions,
            clock_start_ns=clock.origin_ns,
            sink=writer.write_bytes,
            on_error=self._error_line,
            batch_events=WRITE_BATCH,
            delay_ns=WRITE_DELAY_NS,
        )

    @property
    def counts(self) -> ProcessCounts:
        r = self._recorder
        return ProcessCounts(r.attempted, r.acked, r.failed, r.indeterminate, r.latencies())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sending; pending writes still complete (bounded by message.timeout.ms)."""
        self._stop.set()
        self._recorder.stop()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._produce_loop()
        except BaseException as exc:  # surfaced by the workload, which owns the thread
            self.error = exc
        finally:
            self._recorder.flush()

    def close(self) -> None:
        """Release the client (after the final read, so acks=0 writes had time to arrive)."""
        self._producer = None

    def _produce_loop(self) -> None:
        producer = self._producer = Producer(self.config)
        recorder = self._recorder
        if self._interval_s:
            self._paced_loop(producer)
        else:  # as fast as possible: the whole loop runs in the recorder
            recorder.run(producer, -1 if self._max_writes is None else self._max_writes)
        recorder.flush()
        # Every invoked write gets its completion: flush until the queue drains
        # (message.timeout.ms bounds how long that can take).
        deadline = time.monotonic() + int(self.config["message.timeout.ms"]) / 1000 + 10
        while len(producer) and time.monotonic() < deadline:
            producer.flush(1.0)
            recorder.flush()

    def _paced_loop(self, producer: Producer) -> None:
        """One write per interval; every line goes to the history file in the turn it happened."""
        recorder = self._recorder
        next_send = time.monotonic()
        while not self._stop.is_set() and (self._max_writes is None or recorder.attempted < self._max_writes):
            delay = next_send - time.monotonic()
            if delay > 0:
                producer.poll(min(delay, 0.1))
            else:
                next_send += self._interval_s
                recorder.turn(producer)
            recorder.flush()

    def _error_line(self, value_json: str, partition: int, error: object) -> tuple[str, bool]:
        """The history line of a failed write, and whether it is definite (`fail`, not `info`).

        Called by the recorder with a delivery report's KafkaError, or with the exception produce()
        raised when it refused the write synchronously (anything else is a bug and propagates)."""
        if isinstance(error, KafkaException):
            error = error.args[0]
        if not isinstance(error, KafkaError):
            raise error if isinstance(error, BaseException) else TypeError(f"not a Kafka error: {error!r}")
        kind = classify(error.code(), self.retries)
        line = self._lines.error(kind, self._clock.now_ns(), partition, error_name(error), value_json)
        return line, kind == "fail"
