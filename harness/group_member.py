"""The `member` role of a workload process (docs/CLIENTS.md): one consumer-group member.

It subscribes, polls, processes (recording a `poll` event is the processing) and commits by its
group's commit mode, and writes its consumes.jsonl events (HISTORY_FORMAT.md) as `consumes` lines
to stdout; the conductor (`harness.groups`) appends them to the history as they arrive. `stop`
asks for a clean stop: a last commit, close (LeaveGroup), a `stop` event.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from contract import events
from harness.process_protocol import EventSink, ProcessSpec

log = logging.getLogger("kchaos")

BATCH = 100  # records per consume(): one commit per batch
POLL_TIMEOUT_S = 0.2  # how soon a stop request is seen when nothing arrives

# Commit errors after which the coordinator surely did not store the offsets: the request was refused
# (the member is not in the group's current generation, or under KIP-848 its member epoch is not the
# current one; the group is rebalancing; the broker is not the coordinator) or never sent. Any other
# error (a timeout, a lost connection) leaves it unknown.
_NOT_STORED = {
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.STALE_MEMBER_EPOCH,
    KafkaError.FENCED_MEMBER_EPOCH,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.OFFSET_METADATA_TOO_LARGE,
    KafkaError.INVALID_COMMIT_OFFSET_SIZE,
    KafkaError._WAIT_COORD,
    KafkaError._STATE,
    KafkaError._NO_OFFSET,
}

_GROUP_METADATA_MAGIC = b"CGMDv2:"


def commit_outcome(code: int | None) -> str:
    """`ok`, `fail` (surely not stored) or `info` (unknown) for a commit that ended with `code`."""
    if code is None or code == KafkaError.NO_ERROR:
        return "ok"
    return "fail" if code in _NOT_STORED else "info"


def generation_of(group_metadata: bytes) -> int | None:
    """The group generation in librdkafka's serialized consumer group metadata (`CGMDv2:` and the
    generation id as a native int32, then group and member ids), or None in another layout."""
    if not group_metadata.startswith(_GROUP_METADATA_MAGIC) or len(group_metadata) < 11:
        return None
    (generation,) = struct.unpack("=i", group_metadata[7:11])
    return generation if generation >= 0 else None


@dataclass(frozen=True, kw_only=True)
class MemberSpec(ProcessSpec):
    """A `member` process of consumer group `group` (`harness.groups.GroupSpec`)."""

    role: ClassVar[str] = "member"
    group: str
    topics: list[str]
    commit: str  # after-process, before-process or auto
    commit_async: bool
    processing_ms: float = 0.0  # how long processing one record takes
    commit_interval_s: float = 0.0  # after-process: commit at most this often (0: after each batch)


def _record(message: Message) -> tuple[str, int, int, str | None]:
    """(topic, partition, offset, value) of a record (a message without an error)."""
    topic, partition, offset, value = message.topic(), message.partition(), message.offset(), message.value()
    assert topic is not None and partition is not None and offset is not None
    return topic, partition, offset, value.decode(errors="replace").split("|", 1)[0] if value else None


def _positions(partitions: list[TopicPartition]) -> list[dict[str, Any]]:
    return events.positions((p.topic, p.partition) for p in partitions)


class Member:
    """The poll loop of one member; its events go to `consumes`."""

    def __init__(self, spec: MemberSpec, config: dict[str, Any], consumes: EventSink) -> None:
        """`config`: the client's settings (the spec's, with a logger)."""
        self.spec, self._consumes = spec, consumes
        self.stopping = threading.Event()
        self._commit_id = 0
        self._processed: dict[tuple[str, int], int] = {}  # next offset to consume, per partition
        self._committed: dict[tuple[str, int], int] = {}
        self._pending: list[tuple[int, dict[tuple[str, int], int]]] = []  # async commits awaiting a reply
        self._last_commit_s = time.monotonic()
        config = {
            **config,
            "group.id": spec.group,
            "enable.auto.commit": spec.commit == "auto",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "on_commit": self._on_commit,
        }
        self.consumer = Consumer(config)

    def _event(self, kind: str, **fields: Any) -> None:
        now_ns = time.monotonic_ns() - self.spec.origin_ns
        self._consumes.write(events.member_event(kind, now_ns, self.spec.process, self.spec.group, **fields))

    def _generation(self) -> int | None:
        return generation_of(self.consumer.consumer_group_metadata())

    def stop(self) -> None:
        """`run` returns after a last commit and close."""
        self.stopping.set()

    def run(self) -> None:
        self._event("start")
        self.consumer.subscribe(self.spec.topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
        while not self.stopping.is_set():
            records = [m for m in self.consumer.consume(BATCH, timeout=POLL_TIMEOUT_S) if not m.error()]
            if records:
                self._handle(records)
        if self.spec.commit == "after-process":
            self._commit_processed()
        self.consumer.close()
        self._event("stop", reason="closed")

    def _handle(self, messages: list[Message]) -> None:
        records = [_record(m) for m in messages]
        batch_next = {(topic, partition): offset + 1 for topic, partition, offset, _ in records}  # ascending
        # At most once: a batch whose commit is not known stored is never processed, but read again
        # (a commit not known stored costs a second read of the batch, not the batch).
        if self.spec.commit == "before-process" and self._commit(batch_next, asynchronous=False) != "ok":
            self._rewind(records)
            return
        generation = self._generation()
        for topic, partition, offset, value in records:
            if self.spec.processing_ms:
                time.sleep(self.spec.processing_ms / 1000)
            self._event(
                "poll", generation=generation, topic=topic, partition=partition, offset=offset, value=value
            )
            self._processed[(topic, partition)] = offset + 1
        due = time.monotonic() - self._last_commit_s >= self.spec.commit_interval_s
        if self.spec.commit == "after-process" and due:
            self._commit_processed(asynchronous=self.spec.commit_async)

    def _commit_processed(self, asynchronous: bool = False) -> None:
        """Commit what was processed and not yet committed (after a batch, before a revoke, and at a
        clean stop)."""
        due = {tp: o for tp, o in self._processed.items() if self._committed.get(tp) != o}
        if due:
            self._commit(due, asynchronous)

    def _commit(self, offsets: dict[tuple[str, int], int], asynchronous: bool) -> str | None:
        self._last_commit_s = time.monotonic()
        self._commit_id += 1
        commit_id = self._commit_id
        listed = events.offsets(offsets)
        generation = self._generation()
        self._event("commit", generation=generation, phase="invoke", commit_id=commit_id, offsets=listed)
        partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        if asynchronous:
            self._pending.append((commit_id, offsets))
            try:
                self.consumer.commit(offsets=partitions, asynchronous=True)
            except KafkaException as exc:
                self._pending.pop()
                self._outcome(commit_id, generation, listed, exc.args[0])
            return None
        try:
            result = self.consumer.commit(offsets=partitions, asynchronous=False)
        except KafkaException as exc:
            return self._outcome(commit_id, generation, listed, exc.args[0])
        errors = [p.error for p in result or [] if p.error is not None]
        return self._outcome(commit_id, generation, listed, errors[0] if errors else None)

    def _outcome(
        self,
        commit_id: int,
        generation: int | None,
        listed: list[dict[str, Any]],
        error: KafkaError | None,
    ) -> str:
        outcome = commit_outcome(error.code() if error is not None else None)
        fields: dict[str, Any] = {"error": f"{error.name()}: {error.str()}"} if error is not None else {}
        self._event(
            "commit", generation=generation, phase=outcome, commit_id=commit_id, offsets=listed, **fields
        )
        if outcome == "ok":
            self._committed.update({(o["topic"], o["partition"]): o["offset"] for o in listed})
        return outcome

    def _on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's report of an asynchronous or automatic commit (served inside consume())."""
        # A partition with nothing to commit is reported at OFFSET_INVALID (-1001): not committed.
        offsets = {(p.topic, p.partition): p.offset for p in partitions if p.offset >= 0}
        if self.spec.commit == "auto":
            if not offsets or (error is not None and error.code() == KafkaError._NO_OFFSET):
                return  # nothing new to commit: no commit was sent
            # Auto-commits are only seen when they complete: the invoke is recorded then.
            self._commit_id += 1
            listed = events.offsets(offsets)
            generation = self._generation()
            self._event(
                "commit", generation=generation, phase="invoke", commit_id=self._commit_id, offsets=listed
            )
            self._outcome(self._commit_id, generation, listed, error)
            return
        for index, (commit_id, sent) in enumerate(self._pending):
            if sent == offsets:
                del self._pending[index]
                listed = events.offsets(sent)
                self._outcome(commit_id, self._generation(), listed, error)
                return

    def _rewind(self, records: list[tuple[str, int, int, str | None]]) -> None:
        """Seek each partition of `records` the member still owns back to the batch's first offset
        there (`records` ascend by offset). A partition it lost is its next owner's, from the commit."""
        owned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        first: dict[tuple[str, int], int] = {}
        for topic, partition, offset, _ in records:
            first.setdefault((topic, partition), offset)
        for (topic, partition), offset in first.items():
            if (topic, partition) in owned:
                try:
                    self.consumer.seek(TopicPartition(topic, partition, offset))
                except KafkaException as exc:  # revoked meanwhile: nothing to read again
                    log.info(
                        "%s: no rewind of %s/%d to %d: %s", self.spec.process, topic, partition, offset, exc
                    )

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._event(
            "assign",
            generation=self._generation(),
            partitions=events.positions((p.topic, p.partition) for p in partitions),
        )

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The rebalance listener of an at-least-once consumer: commit what was processed while the
        # partitions are still ours, so their next owner starts after it.
        if self.spec.commit == "after-process":
            self._commit_processed()
        self._event(
            "revoke",
            generation=self._generation(),
            partitions=events.positions((p.topic, p.partition) for p in partitions),
        )
        gone = {(p.topic, p.partition) for p in partitions}
        for tp in gone:
            self._processed.pop(tp, None)
            self._committed.pop(tp, None)
