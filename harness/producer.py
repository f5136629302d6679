"""The `producer` role of a workload process (docs/CLIENTS.md): one librdkafka producer writing one
topic under one acks mode, recording what its client was told: invoke, then ok / fail / info.

The role runs in the process's main thread (`run`) until `stop`. Delivery callbacks run inside
`poll()` on that same thread, so a process's completions are written after its invokes and in the
order the client reported them. Values are `<process>:<sequence>`, unique in the run. The recording
itself (history lines) is `harness.recorder`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException, Producer

from contract.history import RunClock
from harness.process_protocol import EventSink, ProcessSpec
from harness.recorder import Recorder

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

# At full speed (rate 0) the local queue is always full, and a write's time in it counts towards
# message.timeout.ms: 10000 writes queued for an acks=all pipeline slowed to a few hundred writes a
# second (a loaded machine) timed out before they were sent. 1000 is ten batches.
FULL_SPEED_QUEUE_MESSAGES = 1000

# librdkafka's poll() waits in whole milliseconds: a shorter timeout returns at once, so waiting out
# a sub-millisecond remainder with it would spin. A paced loop waits at least this long and then
# sends the writes that came due meanwhile.
MIN_WAIT_S = 0.001
MAX_WAIT_S = 0.1  # how soon stop() is seen by a paced loop between writes
# Beyond message.timeout.ms, how long the client gets to complete what it holds.
DRAIN_MARGIN_S = 10.0


def paced_wait_s(delay_s: float) -> float:
    """How long a paced loop polls the client for while the next write is `delay_s` away (> 0)."""
    return min(max(delay_s, MIN_WAIT_S), MAX_WAIT_S)


@dataclass(frozen=True, kw_only=True)
class ProducerSpec(ProcessSpec):
    """A `producer` process: writes `topic`'s `partitions` in turn under `acks`."""

    role: ClassVar[str] = "producer"
    topic: str
    partitions: int
    acks: str
    rate_per_s: float = 0.0
    """Writes per second; 0: as fast as the client goes."""
    message_size: int = 0
    max_writes: int | None = None
    """Stop by itself after this many writes (a benchmark's, a test's)."""

    @property
    def keeps_client(self) -> bool:
        """librdkafka calls an acks=0 write done once it is handed to the socket; a client destroyed
        right after may leave that tail unsent (seen: the last 0.5 s of writes to two partitions)."""
        return self.acks == "0"


class AcksProducer:
    """Writes unique values to one topic under one acks mode until stopped or `max_writes` reached."""

    def __init__(
        self,
        process: str,
        topic: str,
        partitions: int,
        acks: str,
        client_config: Mapping[str, Any],
        writer: EventSink,
        clock: RunClock,
        rate_per_s: float = 0.0,
        message_size: int = 0,
        max_writes: int | None = None,
    ) -> None:
        self.process, self.topic, self.partitions, self.acks = process, topic, partitions, acks
        self.config = {**DEFAULT_PRODUCER_CONFIG, **client_config, "acks": acks}
        self.retries = int(self.config.get("retries", 0))
        self._interval_s = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
        # Padding goes after a "|" that no value contains, so readers can recover the value.
        self._padding = "|" + "x" * (message_size - 1) if message_size > 0 else ""
        self._max_writes = max_writes
        self._stop = threading.Event()
        self._producer: Producer | None = None
        self._recorders = {topic: Recorder(process, topic, self.retries, writer, clock)}

    def stop(self) -> None:
        """Stop sending; `run` returns once pending writes completed (bounded by message.timeout.ms)."""
        self._stop.set()

    def serve_client(self) -> None:
        """Serve what the client has queued (log lines, completions) from the calling thread: a
        process stuck in a client call serves nothing itself, and would keep what librdkafka logged
        while it blocks (confluent-kafka hands log lines over only on poll)."""
        if (client := self._producer) is not None:
            client.poll(0)

    def run(self) -> None:
        producer = self._producer = Producer(self.config)
        sequence = 0
        next_send = time.monotonic()
        while not self._stop.is_set() and (self._max_writes is None or sequence < self._max_writes):
            if self._interval_s:
                delay_s = next_send - time.monotonic()
                if delay_s > 0:
                    producer.poll(paced_wait_s(delay_s))
                    continue
                next_send += self._interval_s
            self._send(producer, sequence, self.topic, sequence % self.partitions)
            sequence += 1
            producer.poll(0)
        # Every invoked write gets its completion: flush until the queue drains.
        deadline = self._drain_deadline()
        while len(producer) and time.monotonic() < deadline:
            producer.flush(1.0)

    def _drain_deadline(self) -> float:
        """When everything queued now has surely completed: message.timeout.ms bounds each write."""
        return time.monotonic() + int(self.config["message.timeout.ms"]) / 1000 + DRAIN_MARGIN_S

    def _send(
        self,
        producer: Producer,
        sequence: int,
        topic: str,
        partition: int,
        txn: int | None = None,
        rest: str | None = None,
    ) -> None:
        """Record write `sequence`'s invoke (in transaction `txn`, for a transactional process; its
        value ending in `rest`, for a pipeline) and produce it. A full local queue is drained and the
        same write offered again until it is taken, stopping or not: a write given up on would be a
        failure the cluster had no part in. Room comes as queued writes complete, so only a client
        that stopped completing them makes the write fail, never sent, after `_drain_deadline`."""
        on_delivery = self._recorders[topic].invoke(sequence, partition, txn, rest)
        payload = f"{self.process}:{sequence}{rest or ''}{self._padding}".encode()
        deadline: float | None = None
        while True:
            try:
                producer.produce(topic, payload, None, partition, on_delivery)
                return
            except BufferError:
                deadline = deadline or self._drain_deadline()
                if time.monotonic() >= deadline:
                    on_delivery(KafkaError(KafkaError._QUEUE_FULL), None, sent=False)
                    return
                producer.poll(0.1)
            except KafkaException as exc:  # refused synchronously: never sent, completed at once
                on_delivery(exc.args[0], None, sent=False)
                return
