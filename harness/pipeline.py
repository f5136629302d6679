"""The `pipeline` role of a workload process (docs/CLIENTS.md): a consume-transform-produce process,
the exactly-once pipeline users build on transactions.

Each pipeline process is a member of one consumer group reading the transactional topics
(read_committed) and a transactional producer writing `chaos-pipe-out`. Per batch it polled, in one
transaction: one output write per input record, its value `<process>:<sequence>/<input value>`
(docs/HISTORY_FORMAT.md), then the batch's input offsets (`send_offsets_to_transaction`, with the
group's metadata, so a member fenced out of its generation cannot commit them: KIP-447), then commit
or abort (an abort drawn as for the transactional producers: after its records are acknowledged,
or early). A batch not committed is processed again: the consumer's position is rewound to the
group's committed offsets, which the client does not do by itself after an abort (KAFKA-17582);
when it cannot be rewound the consumer leaves and joins again, starting from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from contract.events import offsets
from contract.history import RunClock
from harness.process_protocol import EventSink
from harness.recorder import Recorder
from harness.transactional_producer import (
    TransactionalProducer,
    TransactionalSpec,
    TransactionSpec,
    draw_ending,
)

PIPELINE_GROUP = "kchaos-pipe"
PIPELINE_OUTPUT = "chaos-pipe-out"
POLL_TIMEOUT_S = 0.2
# A member stalled longer than this leaves the group (its heartbeats go on from the client's own
# thread, so the session alone would never expire): its partitions move, and it wakes a zombie.
PIPELINE_CONSUMER_CONFIG: dict[str, Any] = {
    "group.id": PIPELINE_GROUP,
    "isolation.level": "read_committed",
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "earliest",
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 1000,
    "max.poll.interval.ms": 8000,
    "fetch.wait.max.ms": 100,
}


class _Rejoin(Exception):
    """The consumer's position could not be rewound: leave the group and join again."""


@dataclass(frozen=True, kw_only=True)
class PipelineSpec(TransactionalSpec):
    """A `pipeline` process: reads `inputs` in group PIPELINE_GROUP, writes `output`."""

    role: ClassVar[str] = "pipeline"
    inputs: list[str]
    output: str
    consumer_config: dict[str, Any]
    """Its consumer's settings (PIPELINE_CONSUMER_CONFIG goes over them)."""


class Pipeline(TransactionalProducer):
    """Reads `inputs` in group PIPELINE_GROUP and writes one output per input record to `output`,
    transactionally with the input offsets, until stopped."""

    def __init__(
        self,
        process: str,
        transactional_id: str,
        inputs: Sequence[str],
        output: str,
        partitions: int,
        transactions: TransactionSpec,
        client_config: Mapping[str, Any],
        consumer_config: Mapping[str, Any],
        writer: EventSink,
        steps: EventSink,
        clock: RunClock,
        seed: int,
    ) -> None:
        super().__init__(
            process,
            transactional_id,
            [output],
            partitions,
            transactions,
            client_config,
            writer,
            steps,
            clock,
            seed,
        )
        self._recorders = {
            output: Recorder(process, output, self.retries, writer, clock, transactional=True, derived=True)
        }
        self.inputs, self.output = list(inputs), output
        self._consumer_config = {**consumer_config, **PIPELINE_CONSUMER_CONFIG}
        self._sequence = 0
        self._txn = 0

    def run(self) -> None:
        producer: Producer | None = self._started()
        while producer is not None and not self._stop.is_set():
            consumer = Consumer(self._consumer_config)
            try:
                consumer.subscribe(self.inputs)
                producer = self._pipe(consumer, producer)
            except _Rejoin:
                producer = self._producer  # the client goes on; the consumer starts over
            finally:
                consumer.close()

    def _pipe(self, consumer: Consumer, producer: Producer) -> Producer | None:
        """Process batches until stopped (or the client is given up and none replaces it)."""
        while not self._stop.is_set():
            batch = [
                m for m in consumer.consume(self.spec.records[1], timeout=POLL_TIMEOUT_S) if m.error() is None
            ]
            if not batch:
                continue
            ending, txn = draw_ending(self._rng, self.spec), self._txn
            try:
                producer.begin_transaction()
            except KafkaException:
                replaced = self._replaced()
                self._rewind(consumer)
                if replaced is None:
                    return None
                producer = replaced
                continue
            self._step("begin", txn, None)
            positions: dict[tuple[str, int], int] = {}
            for message in batch:
                value = message.value()
                text = value.decode(errors="replace").split("|", 1)[0] if value is not None else ""
                partition = int(message.partition() or 0) % self.partitions
                self._send(producer, self._sequence, self.output, partition, txn, f"/{text}")
                self._sequence += 1
                positions[(str(message.topic()), int(message.partition() or 0))] = (
                    int(message.offset() or 0) + 1
                )
                producer.poll(0)
            self._while_frozen()
            sent = self._call(
                "offsets",
                txn,
                partial(
                    producer.send_offsets_to_transaction,
                    [TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())],
                    consumer.consumer_group_metadata(),
                    self.spec.call_timeout_ms / 1000,
                ),
                group=PIPELINE_GROUP,
                offsets=offsets(positions),
            )
            outcome = self._finish(producer, txn, ending, failed=sent != "ok")
            self._txn += 1
            if outcome == "fatal":
                replaced = self._replaced()
                if replaced is None:
                    return None
                producer = replaced
            if outcome != "committed" and self.spec.rewind_on_abort:
                self._rewind(consumer)
        return producer

    def _rewind(self, consumer: Consumer) -> None:
        """Seek every assigned partition back to the group's committed offset (its beginning when
        none is committed): the batch not committed is to be processed again."""
        try:
            assigned = consumer.assignment()
            timeout_s = self.spec.call_timeout_ms / 1000
            committed = consumer.committed(assigned, timeout=timeout_s) if assigned else []
        except KafkaException as exc:
            raise _Rejoin from exc
        # A partition whose commit could not be read would be sought back to its beginning.
        if any(position.error is not None for position in committed):
            raise _Rejoin
        try:
            for position in committed:
                offset = position.offset if position.offset >= 0 else OFFSET_BEGINNING
                consumer.seek(TopicPartition(position.topic, position.partition, offset))
        except KafkaException as exc:
            raise _Rejoin from exc
