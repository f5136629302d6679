"""A producer process that records what its client was told: invoke, then ok / fail / info.

Each process is one thread with one librdkafka producer. Delivery callbacks run inside `poll()`
on that same thread, so a process's completions are written after its invokes and in the order
the client reported them. Events are appended in one write(2) per loop turn (an invoke, and the
completions its poll() delivered); when writing as fast as possible, turns are gathered until
WRITE_BATCH events or WRITE_DELAY_NS old, so a history line still reaches the file at most about a
millisecond after it happened, without a system call per write.
Values are `<process>:<sequence>`, unique in the run.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

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


@dataclass
class ProcessCounts:
    """Live counters of one producer process (read by the progress display)."""

    attempted: int = 0
    acked: int = 0
    failed: int = 0
    indeterminate: int = 0
    # Recent ack latencies only, for the live display; the checker computes the real statistics.
    latencies_ns: deque[int] = field(default_factory=lambda: deque(maxlen=10000))

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
        self._writer, self._clock = writer, clock
        self._interval_s = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
        # Padding goes after a "|" that no value contains, so readers can recover the value.
        self._padding = "|" + "x" * (message_size - 1) if message_size > 0 else ""
        self._max_writes = max_writes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{process}", daemon=True)
        self.counts = ProcessCounts()
        self.error: BaseException | None = None
        # Kept until `close()`: librdkafka calls an acks=0 write delivered once it is handed to the
        # socket, and destroying the client right after flush() can drop that tail unsent.
        self._producer: Producer | None = None
        # Events not yet in the history: one loop turn's, or a batch of turns' when saturating.
        self._pending: list[dict[str, Any]] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sending; pending writes still complete (bounded by message.timeout.ms)."""
        self._stop.set()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _event(self, kind: str, value: str, partition: int, time_ns: int, **extra: Any) -> None:
        self._pending.append(
            {
                "type": kind,
                "time_ns": time_ns,
                "process": self.process,
                "topic": self.topic,
                "partition": partition,
                **extra,
                "value": value,
            }
        )

    def _write_pending(self) -> None:
        """Append the pending events (invokes, the completions poll() delivered) in one write, in order."""
        if self._pending:
            self._writer.write_many(self._pending)
            self._pending.clear()

    def _run(self) -> None:
        try:
            self._produce_loop()
        except BaseException as exc:  # surfaced by the workload, which owns the thread
            self.error = exc
        finally:
            self._write_pending()

    def close(self) -> None:
        """Release the client (after the final read, so acks=0 writes had time to arrive)."""
        self._producer = None

    def _produce_loop(self) -> None:
        producer = self._producer = Producer(self.config)
        sequence = 0
        next_send = time.monotonic()
        while not self._stop.is_set() and (self._max_writes is None or sequence < self._max_writes):
            if self._interval_s:
                delay = next_send - time.monotonic()
                if delay > 0:
                    producer.poll(min(delay, 0.1))
                    self._write_pending()
                    continue
                next_send += self._interval_s
            value = f"{self.process}:{sequence}"
            partition = sequence % self.partitions
            sequence += 1
            invoked_ns = self._send(producer, value, partition)
            producer.poll(0)
            pending = self._pending
            if len(pending) >= WRITE_BATCH or invoked_ns - pending[0]["time_ns"] >= WRITE_DELAY_NS:
                self._write_pending()
        self._write_pending()
        # Every invoked write gets its completion: flush until the queue drains
        # (message.timeout.ms bounds how long that can take).
        deadline = time.monotonic() + int(self.config["message.timeout.ms"]) / 1000 + 10
        while len(producer) and time.monotonic() < deadline:
            producer.flush(1.0)
            self._write_pending()

    def _send(self, producer: Producer, value: str, partition: int) -> int:
        """Produce one write, recording its invoke (and its completion, when poll() delivers it)."""
        invoked_ns = self._clock.now_ns()
        self._event("invoke", value, partition, invoked_ns)
        self.counts.attempted += 1
        payload = (value + self._padding).encode()

        def delivered(err: KafkaError | None, msg: Message) -> None:
            now_ns = self._clock.now_ns()
            if err is None:
                offset = msg.offset()
                self._event(
                    "ok",
                    value,
                    partition,  # written where it was sent: partitions are chosen explicitly
                    now_ns,
                    offset=offset if offset is not None and offset >= 0 else None,
                )
                self.counts.acked += 1
                self.counts.latencies_ns.append(now_ns - invoked_ns)
            else:
                self._complete_with_error(value, partition, err)

        while True:
            try:
                producer.produce(self.topic, value=payload, partition=partition, on_delivery=delivered)
                return invoked_ns
            except BufferError:  # local queue full: let deliveries drain, then try the same write again
                producer.poll(0.1)
            except KafkaException as exc:  # refused synchronously: never sent
                self._complete_with_error(value, partition, exc.args[0])
                return invoked_ns

    def _complete_with_error(self, value: str, partition: int, err: KafkaError) -> None:
        kind = classify(err.code(), self.retries)
        self._event(kind, value, partition, self._clock.now_ns(), offset=None, error=error_name(err))
        if kind == "fail":
            self.counts.failed += 1
        else:
            self.counts.indeterminate += 1
