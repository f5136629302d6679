"""Reading replicas from handmade log segments and checkpoint files (no Docker)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pytest

from contract.errors import HistoryError
from contract.events import replica_state
from contract.history_fields import check_replica_line
from harness.forensics import value_runs
from harness.replica_logs import SegmentContents, read_checkpoint, read_segment, segment_order


def message(
    offset: int, value: bytes | None, *, magic: int = 0, attributes: int = 0, key: bytes = b""
) -> bytes:
    body = struct.pack(">iBB", 0, magic, attributes)
    if magic == 1:
        body += struct.pack(">q", 1_700_000_000_000)
    body += struct.pack(">i", len(key)) + key if key else struct.pack(">i", -1)
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">qi", offset, len(body)) + body


def varint(value: int) -> bytes:
    """Kafka's zigzag varint (ByteUtils.writeVarint / writeVarlong)."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    return bytes([*out, raw])


def sized(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record(
    offset_delta: int,
    value: bytes | None,
    *,
    key: bytes | None = None,
    headers: tuple[tuple[bytes, bytes | None], ...] = (),
    timestamp_delta: int = 0,
) -> bytes:
    body = b"\x00" + varint(timestamp_delta) + varint(offset_delta) + sized(key) + sized(value)
    body += varint(len(headers)) + b"".join(sized(name) + sized(v) for name, v in headers)
    return varint(len(body)) + body


def batch(
    base_offset: int,
    records: list[bytes],
    *,
    attributes: int = 0,
    compress: bool = False,
    producer: tuple[int, int] = (7, 0),
) -> bytes:
    """A record batch (magic 2) of `records` by `producer` (id, epoch); the CRC is left 0 (not checked)."""
    payload = b"".join(records)
    if compress:
        payload = gzip.compress(payload)
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        len(records) - 1,
        1_700_000_000_000,
        1_700_000_000_000,
        *producer,
        0,
        len(records),
    )
    after_length = struct.pack(">ibI", 3, 2, 0) + after_crc + payload
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def test_values_offsets_and_what_cannot_be_read() -> None:
    contents = SegmentContents()
    segment = (
        message(0, b"p1:0")
        + message(1, b"p1:1", magic=1, key=b"k")
        + message(2, None)  # a null value
        + message(3, b"zipped", attributes=1)  # a gzip wrapper: counted, not guessed at
        + message(4, b"\xff\xfe")  # not UTF-8
        + message(5, b"p2:0", magic=3)  # a format that does not exist (yet)
        + message(6, b"p1:2")
    )
    read_segment(segment, contents)
    assert contents.offsets == [0, 1, 2, 6] and contents.values == ["p1:0", "p1:1", None, "p1:2"]
    assert contents.unreadable == 3 and contents.torn_bytes == 0 and contents.log_end_offset == 7
    assert contents.why_unreadable == {
        "in compressed wrapper messages (magic 0 or 1, one each)": 1,
        "not UTF-8": 1,
        "in entries of magic 3": 1,
    }


def test_a_torn_last_message_and_preallocated_zeros() -> None:
    whole, torn = message(10, b"p1:10"), message(11, b"p1:11")
    contents = SegmentContents()
    read_segment(whole + torn[:-2], contents)
    assert contents.offsets == [10] and contents.torn_bytes == len(torn) - 2
    zeros = SegmentContents()
    read_segment(whole + bytes(64), zeros)
    assert zeros.offsets == [10] and zeros.torn_bytes == 0
    assert SegmentContents().log_end_offset is None


def test_a_record_batch_of_several_records() -> None:
    contents = SegmentContents()
    big = b"p-all-0:" + b"x" * 300  # lengths of two varint bytes
    records = [
        record(0, b"p-all-0:0"),
        record(1, b"p-all-1:0", key=b"k", timestamp_delta=-5),
        record(2, None, headers=((b"h", b"v"), (b"n", None))),
        record(3, big, timestamp_delta=1 << 40),
    ]
    read_segment(batch(120, records), contents)
    assert contents.offsets == [120, 121, 122, 123]
    assert contents.values == ["p-all-0:0", "p-all-1:0", None, big.decode()]
    assert contents.unreadable == 0 and contents.torn_bytes == 0 and contents.log_end_offset == 124


def test_control_batches_are_skipped_and_aborted_records_read() -> None:
    transactional, control = 0x10, 0x30
    abort_marker = record(
        0, b"\x00\x00\x00\x00\x00\x00", key=b"\x00\x00\x00\x00"
    )  # version 0, type 0 (abort)
    segment = (
        batch(0, [record(0, b"t-0:0"), record(1, b"t-0:1")], attributes=transactional)  # then aborted
        + batch(2, [abort_marker], attributes=control)
        + batch(3, [record(0, b"t-0:2")], attributes=transactional)
        + batch(4, [abort_marker], attributes=control)
    )
    contents = SegmentContents()
    read_segment(segment, contents)
    assert contents.offsets == [0, 1, 3] and contents.values == ["t-0:0", "t-0:1", "t-0:2"]
    assert contents.unreadable == 0 and contents.log_end_offset == 4  # not past the last marker


def test_each_producer_ids_epochs_are_counted_from_its_record_batches(tmp_path: Path) -> None:
    transactional, control = 0x10, 0x30
    segment = b"".join(
        [
            batch(0, [record(0, b"t-0:0")], attributes=transactional, producer=(7, 0)),
            batch(1, [record(0, b"t-0:1")], attributes=transactional, producer=(7, 0)),
            batch(2, [record(0, b"m")], attributes=control, producer=(7, 5)),  # a marker: left out
            batch(3, [record(0, b"t-0:2")], attributes=transactional, producer=(7, 1)),  # bumped (KIP-890)
            batch(4, [record(0, b"t-1:0")], attributes=transactional, producer=(9, 3)),
            batch(5, [record(0, b"p-1:0")], producer=(-1, -1)),  # a plain producer has no id
        ]
    )
    contents = SegmentContents()
    read_segment(segment, contents)
    assert contents.producer_epochs == {7: {0, 1}, 9: {3}}
    line = replica_state(1, "t", 0, contents, None, None)
    assert line["producer_epochs"] == {"7": 2, "9": 1}
    check_replica_line(line, tmp_path / "replicas.jsonl", 1)
    with pytest.raises(HistoryError, match=r"producer_epochs.*expected a producer id"):
        check_replica_line(line | {"producer_epochs": {"x": 1}}, tmp_path / "replicas.jsonl", 1)
    assert "producer_epochs" not in replica_state(1, "t", 0, SegmentContents(), None, None)


def test_a_torn_last_batch() -> None:
    whole = batch(0, [record(0, b"p:0"), record(1, b"p:1")])
    torn = batch(2, [record(0, b"p:2"), record(1, b"p:3")])
    contents = SegmentContents()
    read_segment(whole + torn[:-3], contents)
    assert contents.offsets == [0, 1] and contents.torn_bytes == len(torn) - 3 and contents.unreadable == 0


def test_a_segment_mixing_message_sets_and_record_batches() -> None:
    # A log written by 0.10, then by a broker writing message format v2 after an upgrade.
    segment = (
        message(0, b"v0:0")
        + message(1, b"v1:1", magic=1, key=b"k")
        + batch(2, [record(0, b"v2:2"), record(1, b"v2:3")])
        + message(4, b"v1:4", magic=1)
    )
    contents = SegmentContents()
    read_segment(segment, contents)
    assert contents.offsets == [0, 1, 2, 3, 4]
    assert contents.values == ["v0:0", "v1:1", "v2:2", "v2:3", "v1:4"]


def test_compressed_and_malformed_batches() -> None:
    gzipped = batch(0, [record(0, b"z:0"), record(1, b"z:1")], attributes=1, compress=True)
    lz4 = batch(2, [record(0, b"l:2"), record(1, b"l:3"), record(2, b"l:4")], attributes=3)
    short = batch(5, [record(0, b"s:5"), record(1, b"s:6")])
    short = short[:57] + struct.pack(">i", 3) + short[61:]  # says 3 records, holds 2
    garbage = batch(7, [record(0, b"g:7")])
    garbage = garbage[:-1] + b"\xff"  # the last record's header count runs past the batch
    bad_text = batch(8, [record(0, b"\xff\xfe"), record(1, b"u:9")])
    contents = SegmentContents()
    read_segment(gzipped + lz4 + short + garbage + bad_text, contents)
    assert contents.offsets == [0, 1, 9] and contents.values == ["z:0", "z:1", "u:9"]
    assert contents.unreadable == 3 + 3 + 1 + 1
    assert contents.why_unreadable == {
        "in lz4-compressed batches": 3,
        "in malformed batches": 4,
        "not UTF-8": 1,
    }


def test_checkpoints_and_segment_order() -> None:
    text = "0\n3\nchaos-acks-all 0 120\nchaos-acks-all 1 7\n__consumer_offsets 3 0\n"
    assert read_checkpoint(text) == {
        ("chaos-acks-all", 0): 120,
        ("chaos-acks-all", 1): 7,
        ("__consumer_offsets", 3): 0,
    }
    assert read_checkpoint("") == {}
    for bad in ("1\n0\n", "0\n2\nt 0 1\n", "0\n"):
        with pytest.raises(ValueError, match="expected"):
            read_checkpoint(bad)
    names = ["00000000000000001000.log", "00000000000000000000.index", "00000000000000000000.log", "x.log"]
    assert segment_order(names) == ["00000000000000000000.log", "00000000000000001000.log"]


def test_values_go_out_in_runs_of_consecutive_offsets() -> None:
    contents = SegmentContents(offsets=[0, 1, 2, 5, 6], values=["a", "b", "c", "d", "e"])
    assert list(value_runs(contents)) == [(0, ["a", "b", "c"]), (5, ["d", "e"])]


def test_a_line_of_values_stays_under_a_mebibyte() -> None:
    big = "x" * 300_000
    contents = SegmentContents(offsets=[0, 1, 2, 3, 4], values=[big] * 5)
    assert [(offset, len(values)) for offset, values in value_runs(contents)] == [(0, 4), (4, 1)]
