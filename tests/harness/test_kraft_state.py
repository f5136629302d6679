"""The Kafka wire protocol the harness speaks itself (Metadata v8, DescribeQuorum v0,
DescribeTopicPartitions v0, FindCoordinator v1) and the merge of several brokers' answers into one
KRaft cluster state: request bytes and responses built by hand with `struct`, independently of
`harness.kafka_protocol`, and a loopback socket for `exchange`. No Docker."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator

import pytest

from contract.errors import ClusterError
from harness import kafka_protocol, kraft_state
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.kafka_protocol import (
    Coordinator,
    EligibleLeaders,
    Metadata,
    PartitionMetadata,
    Quorum,
    Reader,
    Writer,
    describe_quorum_request,
    describe_topic_partitions_request,
    find_coordinator,
    find_coordinator_request,
    metadata_request,
    parse_describe_quorum,
    parse_describe_topic_partitions,
    parse_find_coordinator,
    parse_metadata,
)
from harness.kraft_state import (
    Endpoint,
    KRaftStateReader,
    merge_brokers,
    merge_partitions,
    with_eligible_leaders,
)

SERVER_TIMEOUT_S = 5.0
"""How long the loopback server waits for a client before its thread ends by itself."""


# Encoders of the test's own, written from the protocol guide rather than with `harness.kafka_protocol`.


def _i8(value: int) -> bytes:
    return struct.pack(">b", value)


def _i16(value: int) -> bytes:
    return struct.pack(">h", value)


def _i32(value: int) -> bytes:
    return struct.pack(">i", value)


def _i64(value: int) -> bytes:
    return struct.pack(">q", value)


def _string(text: str | None) -> bytes:
    if text is None:
        return _i16(-1)
    data = text.encode()
    return _i16(len(data)) + data


def _array(items: list[bytes]) -> bytes:
    return _i32(len(items)) + b"".join(items)


def _int32s(values: list[int]) -> bytes:
    return _array([_i32(v) for v in values])


def _compact_string(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 127  # one varint byte
    return bytes([len(data) + 1]) + data


def _compact_array(items: list[bytes]) -> bytes:
    assert len(items) < 127
    return bytes([len(items) + 1]) + b"".join(items)


NO_TAGS = b"\x00"
ONE_TAG = bytes([1, 5, 3]) + b"xyz"
"""A tagged-field section holding one field (tag 5, three bytes of data) that `skip_tags` must skip."""
TWO_TAGS = bytes([2, 0, 1]) + b"a" + bytes([130, 1, 2]) + b"bc"
"""Two fields, the second with a two-byte varint tag (130)."""


def _classic_header(api_key: int, version: int) -> bytes:
    return _i16(api_key) + _i16(version) + _i32(1) + _i16(6) + b"kchaos"


def _framed(payload: bytes) -> bytes:
    return _i32(len(payload)) + payload


# Requests.


def test_metadata_request_for_named_topics() -> None:
    expected = _framed(
        _classic_header(3, 8)
        + _i32(2)
        + _i16(6)
        + b"orders"
        + _i16(1)
        + b"t"
        + b"\x00\x00\x00"  # no auto-creation, no cluster or topic authorized operations
    )
    assert metadata_request(["orders", "t"]) == expected
    assert expected[:4] == b"\x00\x00\x00\x22"  # 16 header + 4 count + 8 + 3 topic bytes + 3 flags
    assert len(expected) == 4 + 34


def test_metadata_request_for_every_topic_and_for_none() -> None:
    assert metadata_request(None) == _framed(_classic_header(3, 8) + b"\xff\xff\xff\xff" + b"\x00" * 3)
    assert metadata_request(None)[:4] == _i32(23)
    assert metadata_request([]) == _framed(_classic_header(3, 8) + _i32(0) + b"\x00" * 3)


def test_describe_quorum_request() -> None:
    header = _i16(55) + _i16(0) + _i32(1) + _i16(6) + b"kchaos" + NO_TAGS  # v2: client id stays classic
    topic = b"\x13" + b"__cluster_metadata"  # compact string: 18 bytes + 1
    partition = _i32(0) + NO_TAGS
    body = b"\x02" + topic + b"\x02" + partition + NO_TAGS + NO_TAGS  # compact arrays of one
    expected = _framed(header + body)
    assert describe_quorum_request() == expected
    assert len(expected) == 4 + 17 + 28


# Responses.


def _metadata_body() -> bytes:
    brokers = [
        _i32(2) + _string("10.0.0.2") + _i32(9092) + _string(None),
        _i32(1) + _string("10.0.0.1") + _i32(9093) + _string(None),
    ]
    partitions = [
        _i16(0) + _i32(0) + _i32(1) + _i32(4) + _int32s([1, 2]) + _int32s([1, 2]) + _int32s([]),
        _i16(0) + _i32(1) + _i32(2) + _i32(5) + _int32s([2, 1]) + _int32s([2]) + _int32s([1]),
    ]
    topics = [
        _i16(0) + _string("orders") + _i8(0) + _array(partitions) + _i32(-(2**31)),
        _i16(3) + _string("missing") + _i8(0) + _array([]) + _i32(-(2**31)),
    ]
    return (
        _i32(0)  # throttle time
        + _array(brokers)
        + _string("k7Zb3tq1QxOc0vC1l6xQ2w")  # cluster id
        + _i32(2)  # controller
        + _array(topics)
        + _i32(-(2**31))  # cluster authorized operations
    )


def test_parse_metadata() -> None:
    assert parse_metadata(Reader(_metadata_body())) == Metadata(
        brokers=(1, 2),
        controller=2,
        topics={"orders": 0, "missing": 3},
        partitions=(
            PartitionMetadata("orders", 0, 0, 1, 4, (1, 2), (1, 2)),
            PartitionMetadata("orders", 1, 0, 2, 5, (2, 1), (2,)),
        ),
    )


def _replica(node: int, log_end: int, tags: bytes = NO_TAGS) -> bytes:
    return _i32(node) + _i64(log_end) + tags


def _quorum_body(top_error: int = 0) -> bytes:
    voters = [_replica(101, 42), _replica(102, 40, ONE_TAG), _replica(103, 41)]
    partition = (
        _i32(0)  # index
        + _i16(0)
        + _i32(101)  # leader
        + _i32(7)  # leader epoch
        + _i64(42)  # high watermark
        + _compact_array(voters)
        + _compact_array([_replica(201, 30)])
        + ONE_TAG
    )
    topic = _compact_string("__cluster_metadata") + _compact_array([partition]) + NO_TAGS
    return _i16(top_error) + _compact_array([topic]) + TWO_TAGS


QUORUM = Quorum(
    error_code=0,
    leader=101,
    leader_epoch=7,
    high_watermark=42,
    voters=((101, 42), (102, 40), (103, 41)),
    observers=((201, 30),),
)


def test_parse_describe_quorum_skips_tagged_fields() -> None:
    reader = Reader(_quorum_body())
    assert parse_describe_quorum(reader) == QUORUM
    assert reader.at == len(reader.data)  # every tagged field skipped, no byte left or misread


def test_parse_describe_quorum_with_an_error() -> None:
    # NOT_LEADER_OR_FOLLOWER at the top: the partition's own answer is not believed.
    assert parse_describe_quorum(Reader(_quorum_body(top_error=6))) == Quorum(6, -1, -1, -1, (), ())
    # No error but no partition either: still no leader, and an error code that is not 0.
    empty = _i16(0) + _compact_array([]) + NO_TAGS
    assert parse_describe_quorum(Reader(empty)) == Quorum(-1, -1, -1, -1, (), ())


# The reader's primitives.


@pytest.mark.parametrize(
    ("body", "parse"),
    [
        (_metadata_body()[:-30], parse_metadata),  # cut inside the partitions
        (_metadata_body()[:3], parse_metadata),  # cut inside the throttle time
        (_quorum_body()[:-1], parse_describe_quorum),  # the top-level tagged fields cut short
        (_i16(5) + b"abc", Reader.string),  # a string longer than what follows
    ],
)
def test_truncated_responses(body: bytes, parse: Callable[[Reader], object]) -> None:
    with pytest.raises(ClusterError, match="a Kafka response ended early"):
        parse(Reader(body))


def test_reads_past_the_end_name_the_position() -> None:
    reader = Reader(b"\x00\x01\x02")
    assert reader.int16() == 1
    with pytest.raises(ClusterError, match=r"ended early \(byte 2 of 3, wanted 4\)"):
        reader.int32()


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**21, b"\x80\x80\x80\x01"),
    ],
)
def test_uvarint_round_trip(value: int, encoded: bytes) -> None:
    written = Writer().uvarint(value).bytes()
    assert written == encoded
    reader = Reader(written + b"\xee")
    assert reader.uvarint() == value
    assert reader.at == len(encoded)


def test_overlong_uvarint_is_refused() -> None:
    assert Reader(b"\xff\xff\xff\xff\x0f").uvarint() == 2**32 - 1  # five bytes: the longest Kafka writes
    for overlong in (b"\x80" * 5 + b"\x01", b"\x80" * 6 + b"\x01"):  # Kafka refuses a fifth continuation byte
        with pytest.raises(ClusterError, match="varint longer than 5 bytes"):
            Reader(overlong).uvarint()


def test_null_and_compact_strings() -> None:
    reader = Reader(_string(None) + b"\x00" + b"\x01" + b"\x03hi" + _i32(-1) + b"\x00")
    assert reader.string() is None
    assert reader.compact_string() is None
    assert reader.compact_string() == ""
    assert reader.compact_string() == "hi"
    assert reader.array(reader.int32) == []  # a null array
    assert reader.compact_array(reader.int32) == []  # a null compact array
    assert reader.at == len(reader.data)


# Merging several brokers' answers.


def _answer(brokers: tuple[int, ...], *partitions: PartitionMetadata) -> Metadata:
    return Metadata(brokers, brokers[0], {"orders": 0}, partitions)


def _part(
    partition: int, leader: int, epoch: int, isr: tuple[int, ...], topic: str = "orders"
) -> PartitionMetadata:
    return PartitionMetadata(topic, partition, 0, leader, epoch, (1, 2, 3), isr)


def test_merge_partitions_prefers_the_newest_epoch_then_the_majority() -> None:
    stale = _answer(
        (1, 2, 3),
        _part(1, 1, 3, (1, 2, 3)),  # partition 1 as it was before the leader moved
        _part(0, 2, 5, (2, 3)),
        _part(2, 1, 9, (1,)),
        _part(0, 1, 2, (1,), topic="audit"),  # only this broker still knows it
    )
    fresh_a = _answer((2, 3), _part(0, 2, 5, (2, 3)), _part(1, 3, 4, (3, 2)), _part(2, 1, 9, (1, 2)))
    fresh_b = _answer((2, 3), _part(1, 3, 4, (3,)), _part(0, 2, 5, (2, 3, 1)), _part(2, 1, 9, (1, 2)))
    expected = [
        PartitionState("audit", 0, 1, 2, (1,), (1, 2, 3)),
        PartitionState("orders", 0, 2, 5, (2, 3), (1, 2, 3)),  # two answers say (2, 3), one (2, 3, 1)
        PartitionState("orders", 1, 3, 4, (3, 2), (1, 2, 3)),  # epoch 4 beats epoch 3; a 1-1 tie: first
        PartitionState("orders", 2, 1, 9, (1, 2), (1, 2, 3)),  # same epoch everywhere: the majority
    ]
    assert merge_partitions([stale, fresh_a, fresh_b]) == expected
    assert merge_partitions([fresh_b, fresh_a, stale]) == [
        expected[0],
        expected[1],
        PartitionState("orders", 1, 3, 4, (3,), (1, 2, 3)),
        expected[3],
    ]


def test_merge_partitions_stale_majority_loses_to_a_newer_epoch() -> None:
    # Two brokers cut off from the controller still report leader 1 at epoch 3; one knows epoch 4.
    stale = _part(0, 1, 3, (1, 2, 3))
    fresh = _part(0, 2, 4, (2, 3))
    answers = [_answer((1, 2, 3), stale), _answer((1, 2, 3), fresh), _answer((1, 2, 3), stale)]
    assert merge_partitions(answers) == [PartitionState("orders", 0, 2, 4, (2, 3), (1, 2, 3))]
    assert merge_partitions([_answer((1,))]) == []


def test_merge_brokers_takes_the_most_common_tuple() -> None:
    assert merge_brokers([_answer((1, 2, 3)), _answer((1, 2)), _answer((1, 2))]) == (1, 2)
    assert merge_brokers([_answer((1, 2, 3)), _answer((1, 2)), _answer((1, 2, 3))]) == (1, 2, 3)
    assert merge_brokers([_answer((3,)), _answer((1, 2))]) == (3,)  # a tie: the first answer's


# The reader, against nothing and against a loopback server.


def _refused_port() -> int:
    """A loopback port nothing listens on (just released by the OS)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_reader_with_no_reachable_node() -> None:
    port = _refused_port()
    nodes = [Endpoint(1, "127.0.0.1", port), Endpoint(2, "127.0.0.1", port)]
    reader = KRaftStateReader(nodes, [Endpoint(9, "127.0.0.1", port)], timeout_s=0.5)
    with pytest.raises(ClusterError, match="no broker answered") as caught:
        reader.snapshot()
    assert "broker 1: no answer from 127.0.0.1" in str(caught.value)
    assert "broker 2: no answer from 127.0.0.1" in str(caught.value)
    with pytest.raises(ClusterError, match="no broker answered"):
        reader.live_brokers()
    with pytest.raises(ClusterError, match="no node named the active controller") as caught:
        reader.quorum()
    assert "controller 9 in 0.5 s: no answer" in str(caught.value)
    assert "broker 2 in 0.5 s: no answer" in str(caught.value)
    assert "controller 9 in 2 s: no answer" in str(caught.value)  # asked again, with time to answer
    with pytest.raises(ClusterError, match=r"no node named the active controller \(no nodes\)"):
        KRaftStateReader([], []).quorum()


Responder = Callable[[int], bytes]
"""The response payload (correlation id onward) for a request's api key."""


class _Server:
    """A loopback Kafka broker of canned answers: serves `connections` requests, one per connection,
    then its thread ends (or after SERVER_TIMEOUT_S without a client)."""

    def __init__(self, respond: Responder, connections: int) -> None:
        self.respond, self.connections = respond, connections
        self.requests: list[bytes] = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(connections)
        self.listener.settimeout(SERVER_TIMEOUT_S)
        self.port: int = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _read(self, conn: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = conn.recv(size - len(data))
            if not chunk:
                raise OSError("client closed")
            data += chunk
        return data

    def _serve(self) -> None:
        with self.listener:
            for _ in range(self.connections):
                try:
                    conn, _address = self.listener.accept()
                except OSError:
                    return
                with conn:
                    conn.settimeout(SERVER_TIMEOUT_S)
                    try:
                        size = struct.unpack(">i", self._read(conn, 4))[0]
                        payload = self._read(conn, size)
                        self.requests.append(payload)
                        conn.sendall(self.respond(struct.unpack(">h", payload[:2])[0]))
                    except OSError:
                        return


@pytest.fixture
def serve() -> Iterator[Callable[[Responder, int], _Server]]:
    started: list[_Server] = []

    def start(respond: Responder, connections: int = 1) -> _Server:
        server = _Server(respond, connections)
        server.thread.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.thread.join(SERVER_TIMEOUT_S + 1)
        assert not server.thread.is_alive()


def test_exchange_reads_a_flexible_response_header(serve: Callable[[Responder, int], _Server]) -> None:
    server = serve(lambda _key: _framed(_i32(1) + ONE_TAG + _quorum_body()), 1)
    reader = kafka_protocol.exchange(
        ("127.0.0.1", server.port), describe_quorum_request(), 2.0, flexible=True
    )
    assert parse_describe_quorum(reader) == QUORUM
    server.thread.join(SERVER_TIMEOUT_S)
    assert server.requests == [describe_quorum_request()[4:]]


def test_exchange_with_a_response_cut_short(serve: Callable[[Responder, int], _Server]) -> None:
    server = serve(lambda _key: _i32(100) + _i32(1) + b"short", 1)
    with pytest.raises(ClusterError, match=f"no answer from 127.0.0.1:{server.port}.*closed mid-response"):
        kafka_protocol.exchange(("127.0.0.1", server.port), metadata_request(None), 2.0, flexible=False)


def test_snapshot_end_to_end(serve: Callable[[Responder, int], _Server]) -> None:
    def respond(api_key: int) -> bytes:
        if api_key == 3:
            return _framed(_i32(1) + _metadata_body())
        return _framed(_i32(1) + NO_TAGS + _quorum_body())

    server = serve(respond, 2)
    dead = Endpoint(9, "127.0.0.1", _refused_port())
    reader = KRaftStateReader([Endpoint(1, "127.0.0.1", server.port)], [dead], timeout_s=2.0)
    # The dead controller is skipped; the one broker answers Metadata and then forwards DescribeQuorum.
    assert reader.snapshot(["orders", "missing"]) == ClusterSnapshot(
        controller=101,
        controller_epoch=7,
        live_brokers=(1, 2),
        partitions=(
            PartitionState("orders", 0, 1, 4, (1, 2), (1, 2)),
            PartitionState("orders", 1, 2, 5, (2,), (2, 1)),
        ),
    )
    server.thread.join(SERVER_TIMEOUT_S)
    assert [struct.unpack(">h", r[:2])[0] for r in server.requests] == [3, 55]
    assert server.requests[0] == metadata_request(["missing", "orders"])[4:]


def test_the_quorum_of_the_newest_epoch_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    # A controller woken from a pause may still answer as the leader of the epoch it slept in.
    c1, c2, c3 = (Endpoint(100 + i, f"10.0.0.{i}", 9093) for i in (1, 2, 3))
    answers = {
        c1: Quorum(0, 101, 4, 10, (), ()),  # stale: it led epoch 4 before its pause
        c2: Quorum(0, 102, 5, 12, (), ()),
        c3: None,  # unreachable
    }
    reader = KRaftStateReader([Endpoint(1, "10.0.0.11", 9092)], [c1, c2, c3])
    monkeypatch.setattr(kraft_state, "quorum_answer", lambda node, _timeout_s: answers[node] or "timed out")
    assert reader.quorum() == answers[c2]


def test_a_controller_too_slow_for_the_first_rounds_is_asked_again_with_time_to_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # issue 68: one sample of 53 named no controller while a broker was down on a loaded machine.
    controller, broker = Endpoint(101, "10.0.0.1", 9093), Endpoint(1, "10.0.0.11", 9092)
    asked: list[tuple[int, float]] = []

    def describe(node: Endpoint, timeout_s: float) -> Quorum | str:
        asked.append((node.node_id, timeout_s))
        return QUORUM if timeout_s >= 2 and node is controller else f"no answer in {timeout_s:g} s"

    reader = KRaftStateReader([broker], [controller], timeout_s=0.5)
    monkeypatch.setattr(kraft_state, "quorum_answer", describe)
    assert reader.quorum() == QUORUM
    assert asked == [(101, 0.5), (1, 0.5), (101, 2.0)]


def test_a_snapshot_no_node_could_name_the_controller_of_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    controllers = [Endpoint(101, "10.0.0.1", 9093)]
    brokers = [Endpoint(b, f"10.0.0.1{b}", 9092) for b in (1, 2)]
    reader = KRaftStateReader(brokers, controllers)
    monkeypatch.setattr(reader, "_metadata", lambda _topics: [parse_metadata(Reader(_metadata_body()))])
    monkeypatch.setattr(kraft_state, "quorum_answer", lambda node, timeout_s: f"no answer in {timeout_s:g} s")
    snapshot = reader.snapshot(["orders"])
    assert (snapshot.controller, snapshot.controller_epoch, snapshot.live_brokers) == (None, None, (1, 2))
    assert len(snapshot.partitions) == 2  # what the brokers said is kept
    assert snapshot.controller_unknown == (
        "no node named the active controller (controller 101 in 0.5 s: no answer in 0.5 s; "
        "broker 1 in 0.5 s: no answer in 0.5 s; broker 2 in 0.5 s: no answer in 0.5 s; "
        "controller 101 in 2 s: no answer in 2 s)"
    )
    sample = snapshot.to_event(5)
    assert sample["controller"] is None and sample["controller_unknown"] == snapshot.controller_unknown


# DescribeTopicPartitions (KIP-966): Eligible Leader Replicas.


def test_describe_topic_partitions_request() -> None:
    header = _i16(75) + _i16(0) + _i32(1) + _i16(6) + b"kchaos" + NO_TAGS
    topics = b"\x03" + _compact_string("a") + NO_TAGS + _compact_string("orders") + NO_TAGS
    body = topics + _i32(2000) + _i8(-1) + NO_TAGS  # partition limit, a null cursor
    assert describe_topic_partitions_request(["a", "orders"]) == _framed(header + body)


def _null_compact_array() -> bytes:
    return b"\x00"


def _dtp_partition(index: int, epoch: int, elr: list[int] | None, last: list[int] | None) -> bytes:
    def int32s(values: list[int] | None) -> bytes:
        return _null_compact_array() if values is None else _compact_array([_i32(v) for v in values])

    return (
        _i16(0)
        + _i32(index)
        + _i32(1)  # leader
        + _i32(epoch)
        + int32s([1, 2, 3])  # replicas
        + int32s([1])  # ISR
        + int32s(elr)
        + int32s(last)
        + int32s([])  # offline
        + ONE_TAG
    )


def _dtp_body(cursor: bool = False, epochs: tuple[int, int] = (6, 2)) -> bytes:
    partitions = [_dtp_partition(0, epochs[0], [2, 3], []), _dtp_partition(1, epochs[1], None, None)]
    topic = (
        _i16(0)
        + _compact_string("orders")
        + bytes(range(16))  # topic id
        + _i8(0)
        + _compact_array(partitions)
        + _i32(-(2**31))
        + NO_TAGS
    )
    next_cursor = (_i8(1) + _compact_string("orders") + _i32(2) + NO_TAGS) if cursor else _i8(-1)
    return _i32(0) + _compact_array([topic]) + next_cursor + TWO_TAGS


@pytest.mark.parametrize("cursor", [False, True])
def test_parse_describe_topic_partitions(cursor: bool) -> None:
    reader = Reader(_dtp_body(cursor))
    assert parse_describe_topic_partitions(reader) == [
        EligibleLeaders("orders", 0, 6, (2, 3), ()),
        EligibleLeaders("orders", 1, 2, None, None),  # null arrays: ELR not enabled
    ]
    assert reader.at == len(reader.data)


def test_eligible_leaders_are_kept_only_for_the_merged_leader_epoch() -> None:
    merged = [
        PartitionState("orders", 0, 1, 6, (1,), (1, 2, 3)),
        PartitionState("orders", 1, 1, 3, (1,), (1, 2, 3)),  # the answer below is of epoch 2: stale
        PartitionState("orders", 2, 1, 1, (1,), (1, 2, 3)),  # not in the answer
    ]
    eligible = [EligibleLeaders("orders", 0, 6, (2, 3), ()), EligibleLeaders("orders", 1, 2, (2,), (3,))]
    assert with_eligible_leaders(merged, eligible) == [
        PartitionState("orders", 0, 1, 6, (1,), (1, 2, 3), (2, 3), ()),
        merged[1],
        merged[2],
    ]
    assert with_eligible_leaders(merged, eligible)[0].to_event() == {
        "topic": "orders",
        "partition": 0,
        "leader": 1,
        "leader_epoch": 6,
        "isr": [1],
        "elr": [2, 3],
        "last_known_elr": [],
    }
    assert "elr" not in merged[2].to_event()


def test_snapshot_asks_for_eligible_leaders_when_told_to(serve: Callable[[Responder, int], _Server]) -> None:
    def respond(api_key: int) -> bytes:
        if api_key == 3:
            return _framed(_i32(1) + _metadata_body())
        if api_key == 75:
            return _framed(_i32(1) + NO_TAGS + _dtp_body(epochs=(4, 5)))  # the metadata's epochs
        return _framed(_i32(1) + NO_TAGS + _quorum_body())

    server = serve(respond, 3)
    reader = KRaftStateReader([Endpoint(1, "127.0.0.1", server.port)], [], timeout_s=2.0, elr=True)
    snapshot = reader.snapshot(["orders"])
    assert [(p.partition, p.elr, p.last_known_elr) for p in snapshot.partitions] == [
        (0, (2, 3), ()),
        (1, None, None),  # ELR not enabled for it
    ]
    server.thread.join(SERVER_TIMEOUT_S)
    assert [struct.unpack(">h", r[:2])[0] for r in server.requests] == [3, 75, 55]


# FindCoordinator v1: whose transaction coordinator (or group coordinator) a broker names.


def test_find_coordinator_request() -> None:
    key_type = b"\x01"  # a transactional.id
    expected = _framed(_classic_header(10, 1) + _i16(11) + b"kchaos-tx-0" + key_type)
    assert find_coordinator_request("kchaos-tx-0", 1) == expected
    assert len(expected) == 4 + 16 + 13 + 1
    assert find_coordinator_request("g-alo", 0)[-8:] == _i16(5) + b"g-alo" + b"\x00"  # a group
    utf8 = find_coordinator_request("\u00e9", 1)  # the length counts UTF-8 bytes, not characters
    assert utf8[-5:] == _i16(2) + b"\xc3\xa9" + b"\x01"


def _coordinator_body(error: int = 0, message: str | None = None, node: int = 2) -> bytes:
    host = "" if error else f"10.0.0.{node}"
    return (
        _i32(0)
        + _i16(error)
        + _string(message)
        + _i32(node)
        + _string(host)
        + _i32(9092 if node >= 0 else -1)
    )


def test_parse_find_coordinator() -> None:
    reader = Reader(_coordinator_body())
    answer = parse_find_coordinator(reader)
    assert answer == Coordinator(0, None, 2, "10.0.0.2", 9092)
    assert reader.at == len(reader.data) and answer.error() == ""
    busy = parse_find_coordinator(Reader(_coordinator_body(15, "The coordinator is not available.", -1)))
    assert (busy.error_code, busy.node_id, busy.host, busy.port) == (15, -1, "", -1)
    assert busy.error() == "COORDINATOR_NOT_AVAILABLE: The coordinator is not available."
    assert parse_find_coordinator(Reader(_coordinator_body(53, None, -1))).error() == "error code 53"
    with pytest.raises(ClusterError, match="a Kafka response ended early"):
        parse_find_coordinator(Reader(_coordinator_body()[:-2]))  # the port cut short


def test_find_coordinator_asks_the_next_broker_when_one_does_not_answer(
    serve: Callable[[Responder, int], _Server],
) -> None:
    server = serve(lambda _key: _framed(_i32(1) + _coordinator_body(node=3)), 1)
    dead = ("127.0.0.1", _refused_port())
    answer = find_coordinator([dead, ("127.0.0.1", server.port)], "kchaos-tx-0", 1, 2.0)
    assert answer == Coordinator(0, None, 3, "10.0.0.3", 9092)
    server.thread.join(SERVER_TIMEOUT_S)
    assert server.requests == [find_coordinator_request("kchaos-tx-0", 1)[4:]]


def test_find_coordinator_with_no_broker_answering_names_each() -> None:
    port = _refused_port()
    with pytest.raises(ClusterError, match="no broker answered FindCoordinator") as caught:
        find_coordinator([("127.0.0.1", port), ("127.0.0.2", port)], "t", 1, 0.5)
    assert f"no answer from 127.0.0.1:{port}" in str(caught.value)
    assert f"no answer from 127.0.0.2:{port}" in str(caught.value)
    with pytest.raises(ClusterError, match="no broker to ask"):
        find_coordinator([], "t", 1, 0.5)
