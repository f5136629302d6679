"""The few Kafka protocol requests the harness sends itself: Metadata v8, DescribeQuorum v0,
DescribeTopicPartitions v0 and FindCoordinator v1.

librdkafka hides what KRaft state needs (a partition's leader epoch, its Eligible Leader Replicas,
the active controller and its epoch) and which broker coordinates a transactional.id, so the harness
asks the brokers directly, over one short-lived socket per request. The wire format is Kafka's
(kafka.apache.org/protocol): big-endian integers, int16-length strings and int32-length arrays in
the classic versions; unsigned-varint-length ("compact") strings and arrays and tagged-field
sections in the flexible ones (KIP-482). Only what these requests use is here.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from contract.errors import ClusterError

METADATA, FIND_COORDINATOR, DESCRIBE_QUORUM, DESCRIBE_TOPIC_PARTITIONS = 3, 10, 55, 75
TRANSACTION_KEY = 1
"""FindCoordinator's key type of a transactional.id (0: a consumer group)."""
COORDINATOR_NOT_AVAILABLE = 15
"""FindCoordinator's error while the coordinator's partition has no leader, or its topic is being made."""
PARTITION_LIMIT = 2000
"""Partitions one DescribeTopicPartitions answer holds at most (the broker's default)."""
METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log: one partition, replicated by the controller quorum."""
CLIENT_ID = "kchaos"
T = TypeVar("T")


@dataclass(frozen=True)
class PartitionMetadata:
    topic: str
    partition: int
    error_code: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Metadata:
    brokers: tuple[int, ...]
    """The brokers registered and unfenced, as the answering broker knows them."""
    controller: int
    """The broker's controller: in KRaft a random live broker (KIP-590), not the quorum's leader."""
    topics: dict[str, int]
    """Each topic's error code (0, or 3 when it does not exist)."""
    partitions: tuple[PartitionMetadata, ...]


@dataclass(frozen=True)
class EligibleLeaders:
    """A partition's Eligible Leader Replicas (KIP-966) as DescribeTopicPartitions gives them: None
    where the broker has none to give (ELR not enabled)."""

    topic: str
    partition: int
    leader_epoch: int
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None


@dataclass(frozen=True)
class Quorum:
    error_code: int
    leader: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[tuple[int, int], ...]
    """(node id, log end offset) of each voter."""
    observers: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Coordinator:
    """A FindCoordinator answer: the coordinating broker, or an error code (and the broker's message)."""

    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int

    def error(self) -> str:
        """The error as text: its name and the broker's message (empty when there is none)."""
        if not self.error_code:
            return ""
        name = (
            "COORDINATOR_NOT_AVAILABLE"
            if self.error_code == COORDINATOR_NOT_AVAILABLE
            else f"error code {self.error_code}"
        )
        return f"{name}: {self.error_message}" if self.error_message else name


class Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int8(self, value: int) -> Writer:
        self.parts.append(struct.pack(">b", value))
        return self

    def int16(self, value: int) -> Writer:
        self.parts.append(struct.pack(">h", value))
        return self

    def int32(self, value: int) -> Writer:
        self.parts.append(struct.pack(">i", value))
        return self

    def uvarint(self, value: int) -> Writer:
        out = bytearray()
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        self.parts.append(bytes(out))
        return self

    def string(self, text: str) -> Writer:
        data = text.encode()
        self.int16(len(data))
        self.parts.append(data)
        return self

    def compact_string(self, text: str) -> Writer:
        data = text.encode()
        self.uvarint(len(data) + 1)
        self.parts.append(data)
        return self

    def no_tags(self) -> Writer:
        return self.uvarint(0)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    """Reads a response body; any read past its end is a ClusterError (a truncated or foreign answer)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def _take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise ClusterError(
                f"a Kafka response ended early (byte {self.at} of {len(self.data)}, wanted {size})"
            )
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def skip(self, size: int) -> None:
        self._take(size)

    def int8(self) -> int:
        return int(struct.unpack(">b", self._take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ClusterError("a Kafka response holds a varint longer than 5 bytes")

    def string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._take(size).decode(errors="replace")

    def compact_string(self) -> str | None:
        size = self.uvarint() - 1
        return None if size < 0 else self._take(size).decode(errors="replace")

    def array(self, item: Callable[[], T]) -> list[T]:
        count = self.int32()
        return [item() for _ in range(max(count, 0))]

    def compact_array(self, item: Callable[[], T]) -> list[T]:
        return self.nullable_compact_array(item) or []

    def nullable_compact_array(self, item: Callable[[], T]) -> list[T] | None:
        count = self.uvarint() - 1
        return None if count < 0 else [item() for _ in range(count)]

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def request(api_key: int, version: int, body: bytes, *, flexible: bool, correlation_id: int = 1) -> bytes:
    """One size-prefixed request: header v1 (classic) or v2 (flexible), then `body`."""
    header = Writer().int16(api_key).int16(version).int32(correlation_id).string(CLIENT_ID)
    if flexible:
        header.no_tags()
    payload = header.bytes() + body
    return struct.pack(">i", len(payload)) + payload


def exchange(address: tuple[str, int], message: bytes, timeout_s: float, *, flexible: bool) -> Reader:
    """Send `message` and read one response (its header consumed); ClusterError on any failure."""
    try:
        with socket.create_connection(address, timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(message)
            size = struct.unpack(">i", _receive(sock, 4))[0]
            reader = Reader(_receive(sock, size))
    except (OSError, struct.error) as exc:
        raise ClusterError(f"no answer from {address[0]}:{address[1]} ({exc})") from None
    reader.int32()  # correlation id: one request per connection
    if flexible:
        reader.skip_tags()
    return reader


def _receive(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise OSError("connection closed mid-response")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def metadata_request(topics: list[str] | None) -> bytes:
    """Metadata v8 (Kafka 2.3+, still served by 4.x): `topics` None asks for every topic."""
    body = Writer()
    if topics is None:
        body.int32(-1)
    else:
        body.int32(len(topics))
        for topic in topics:
            body.string(topic)
    body.int8(0).int8(0).int8(0)  # no auto-creation, no authorized operations
    return request(METADATA, 8, body.bytes(), flexible=False)


def parse_metadata(reader: Reader) -> Metadata:
    reader.int32()  # throttle time

    def broker() -> int:
        node = reader.int32()
        reader.string()
        reader.int32()
        reader.string()  # rack
        return node

    brokers = reader.array(broker)
    reader.string()  # cluster id
    controller = reader.int32()
    topics: dict[str, int] = {}
    partitions: list[PartitionMetadata] = []

    def topic() -> None:
        error, name = reader.int16(), reader.string() or ""
        reader.int8()  # internal
        topics[name] = error

        def partition() -> PartitionMetadata:
            error_code, index, leader, epoch = reader.int16(), reader.int32(), reader.int32(), reader.int32()
            replicas, isr = tuple(reader.array(reader.int32)), tuple(reader.array(reader.int32))
            reader.array(reader.int32)  # offline replicas
            return PartitionMetadata(name, index, error_code, leader, epoch, replicas, isr)

        partitions.extend(reader.array(partition))
        reader.int32()  # authorized operations

    reader.array(topic)
    return Metadata(tuple(sorted(brokers)), controller, topics, tuple(partitions))


def describe_quorum_request() -> bytes:
    """DescribeQuorum v0 (KIP-595) of the metadata log; a broker forwards it to the active controller."""
    body = Writer().uvarint(2).compact_string(METADATA_TOPIC)
    body.uvarint(2).int32(0).no_tags()  # partition 0
    body.no_tags().no_tags()
    return request(DESCRIBE_QUORUM, 0, body.bytes(), flexible=True)


def parse_describe_quorum(reader: Reader) -> Quorum:
    top_error = reader.int16()
    found: list[Quorum] = []

    def replica() -> tuple[int, int]:
        node, end = reader.int32(), reader.int64()
        reader.skip_tags()
        return node, end

    def partition() -> None:
        reader.int32()  # index
        error, leader, epoch, high_watermark = reader.int16(), reader.int32(), reader.int32(), reader.int64()
        voters, observers = reader.compact_array(replica), reader.compact_array(replica)
        reader.skip_tags()
        found.append(Quorum(error, leader, epoch, high_watermark, tuple(voters), tuple(observers)))

    def topic() -> None:
        reader.compact_string()
        reader.compact_array(partition)
        reader.skip_tags()

    reader.compact_array(topic)
    reader.skip_tags()
    if top_error or not found:
        return Quorum(top_error or -1, -1, -1, -1, (), ())
    return found[0]


def describe_topic_partitions_request(topics: list[str]) -> bytes:
    """DescribeTopicPartitions v0 (KIP-966, Kafka 3.8+) of `topics` from their first partition."""
    body = Writer().uvarint(len(topics) + 1)
    for topic in topics:
        body.compact_string(topic).no_tags()
    body.int32(PARTITION_LIMIT).int8(-1).no_tags()  # no cursor: a null struct
    return request(DESCRIBE_TOPIC_PARTITIONS, 0, body.bytes(), flexible=True)


def parse_describe_topic_partitions(reader: Reader) -> list[EligibleLeaders]:
    reader.int32()  # throttle time
    found: list[EligibleLeaders] = []

    def topic() -> None:
        reader.int16()  # error code: a topic in error has no partitions
        name = reader.compact_string() or ""
        reader.skip(16)  # topic id
        reader.int8()  # internal

        def partition() -> None:
            reader.int16()
            index, _leader, epoch = reader.int32(), reader.int32(), reader.int32()
            reader.compact_array(reader.int32)  # replicas
            reader.compact_array(reader.int32)  # ISR
            elr = reader.nullable_compact_array(reader.int32)
            last_known = reader.nullable_compact_array(reader.int32)
            reader.compact_array(reader.int32)  # offline replicas
            reader.skip_tags()
            found.append(
                EligibleLeaders(
                    name,
                    index,
                    epoch,
                    None if elr is None else tuple(elr),
                    None if last_known is None else tuple(last_known),
                )
            )

        reader.compact_array(partition)
        reader.int32()  # authorized operations
        reader.skip_tags()

    reader.compact_array(topic)
    if reader.int8() >= 0:  # a cursor: more partitions than PARTITION_LIMIT (not asked for here)
        reader.compact_string()
        reader.int32()
        reader.skip_tags()
    reader.skip_tags()
    return found


def find_coordinator_request(key: str, key_type: int) -> bytes:
    """FindCoordinator v1 (Kafka 0.11+, still served by 4.x) of one `key` of `key_type` (0 a group,
    TRANSACTION_KEY a transactional.id)."""
    body = Writer().string(key).int8(key_type)
    return request(FIND_COORDINATOR, 1, body.bytes(), flexible=False)


def parse_find_coordinator(reader: Reader) -> Coordinator:
    reader.int32()  # throttle time
    error_code, error_message = reader.int16(), reader.string()
    node_id, host, port = reader.int32(), reader.string() or "", reader.int32()
    return Coordinator(error_code, error_message, node_id, host, port)


def find_coordinator(
    addresses: Sequence[tuple[str, int]], key: str, key_type: int, timeout_s: float
) -> Coordinator:
    """FindCoordinator asked of each broker address in turn until one answers (one down or paused is
    passed over); an answer with an error code is an answer. ClusterError naming every failure when
    none answers."""
    message = find_coordinator_request(key, key_type)
    failures = []
    for address in addresses:
        try:
            return parse_find_coordinator(exchange(address, message, timeout_s, flexible=False))
        except ClusterError as exc:
            failures.append(str(exc))
    raise ClusterError(f"no broker answered FindCoordinator: {'; '.join(failures) or 'no broker to ask'}")
