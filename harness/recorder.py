"""One producer process's write events (HISTORY_FORMAT.md), each appended to the history as it happens.

A write's `invoke` line is appended before the write is handed to the client, and its completion
(`ok`, `fail` or `info`) when the client reports it: one write(2) per event, so a run cut short
leaves every event that happened before the cut. Lines are filled into byte templates holding the
process's JSON-encoded parts (`WriteLines`; a test holds them equal to `contract.events.write_event`):
one `%` of a few integers per line, no dict and no encoder, as this is most of the recording's
Python per write.
"""

from __future__ import annotations

from functools import partial
from time import monotonic_ns
from typing import Protocol

import orjson
from confluent_kafka import KafkaError, Message

from contract.history import RunClock
from harness.outcomes import classify, error_name
from harness.process_protocol import EventSink


# What the client calls with a write's delivery report (error or None, message or None).
class DeliveryCallback(Protocol):
    """A write's completion: librdkafka's delivery report (`sent`), or the producer's own when the
    client refused the write before queueing it (`sent=False`)."""

    def __call__(self, error: KafkaError | None, message: Message | None, *, sent: bool = True) -> None: ...


class WriteLines:
    """Byte templates of one producer process's write events, its process, topic and value prefix
    encoded once. Fill with `%`: invoke (time_ns, partition, sequence), ok (time_ns, partition,
    offset, sequence), ok_without_offset (time_ns, partition, sequence). A transactional process's
    templates take its transaction after the partition: invoke (time_ns, partition, txn, sequence);
    a pipeline's take the JSON-escaped rest of each value (`/<input value>`) after the sequence."""

    def __init__(
        self, process: str, topic: str, *, transactional: bool = False, derived: bool = False
    ) -> None:
        # '"process":...,"topic":...,' and '"<process>:' (a value's JSON string minus sequence and
        # closing quote), with any '%' in them doubled so the templates keep only their own.
        fields = orjson.dumps({"process": process, "topic": topic})[1:-1].replace(b"%", b"%%") + b","
        value = orjson.dumps(f"{process}:")[:-1].replace(b"%", b"%%")
        head = b',"time_ns":%d,' + fields + b'"partition":%d,' + (b'"txn":%d,' if transactional else b"")
        tail = b'%d%b"}\n' if derived else b'%d"}\n'
        self.invoke = b'{"type":"invoke"' + head + b'"value":' + value + tail
        self.ok = b'{"type":"ok"' + head + b'"offset":%d,"value":' + value + tail
        self.ok_without_offset = b'{"type":"ok"' + head + b'"offset":null,"value":' + value + tail
        self._error = head + b'"offset":null,"error":%b,"value":' + value + tail

    def error(self, kind: str, where: tuple[int, ...], error: str, value: tuple[int | bytes, ...]) -> bytes:
        """A `fail` or `info` line (rare: the error name is encoded here); `where` is (time_ns,
        partition), and the transaction of a transactional process's write; `value` the sequence,
        and the rest of a pipeline's value."""
        return b'{"type":"%b"' % kind.encode() + self._error % (*where, orjson.dumps(error), *value)


class Recorder:
    """Records one producer process's writes (to its history file, or its workload process's stdout).

    Used from the process's own thread only: `invoke` before each write is produced, and the
    callback it returns from the client's poll() (or at once, for a write the client refused)."""

    def __init__(
        self,
        process: str,
        topic: str,
        retries: int,
        writer: EventSink,
        clock: RunClock,
        *,
        transactional: bool = False,
        derived: bool = False,
    ) -> None:
        self._lines = WriteLines(process, topic, transactional=transactional, derived=derived)
        self._retries = retries
        self._append = writer.write_bytes
        self._origin_ns = clock.origin_ns  # times are RunClock's, read without a method call

    def invoke(
        self, sequence: int, partition: int, txn: int | None = None, rest: str | None = None
    ) -> DeliveryCallback:
        """Record the invoke of write `sequence` (in transaction `txn` of a transactional process,
        its value ending in `rest` for a pipeline's); returns the callback that records its
        completion."""
        invoked_ns = monotonic_ns() - self._origin_ns
        # The partition, and the transaction of a transactional write, as the templates take them.
        where = (partition,) if txn is None else (partition, txn)
        value = (sequence,) if rest is None else (sequence, orjson.dumps(rest)[1:-1])
        self._append(self._lines.invoke % (invoked_ns, *where, *value))
        # A partial, not a closure: fewer objects for the cyclic garbage collector to walk with
        # thousands of writes in flight.
        return partial(self._completed, value, where)

    def _completed(
        self,
        value: tuple[int | bytes, ...],
        where: tuple[int, ...],
        error: KafkaError | None,
        message: Message | None,
        *,
        sent: bool = True,
    ) -> None:
        now_ns = monotonic_ns() - self._origin_ns
        if error is None:
            # Written where it was sent (partitions are chosen explicitly). acks=0 is told no
            # offset: None, or -1 from some client versions; either is null.
            offset = message.offset() if message is not None else None
            if offset is not None and offset >= 0:
                self._append(self._lines.ok % (now_ns, *where, offset, *value))
            else:
                self._append(self._lines.ok_without_offset % (now_ns, *where, *value))
            return
        kind = classify(error.code(), self._retries, sent=sent)
        self._append(self._lines.error(kind, (now_ns, *where), error_name(error), value))
