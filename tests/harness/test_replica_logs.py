"""Reading replicas from handmade log segments and checkpoint files (no Docker)."""

from __future__ import annotations

import struct

import pytest

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


def test_values_offsets_and_what_cannot_be_read() -> None:
    contents = SegmentContents()
    segment = (
        message(0, b"p1:0")
        + message(1, b"p1:1", magic=1, key=b"k")
        + message(2, None)  # a null value
        + message(3, b"zipped", attributes=1)  # a gzip wrapper: counted, not guessed at
        + message(4, b"\xff\xfe")  # not UTF-8
        + message(5, b"p2:0", magic=2)  # a record batch of Kafka 0.11+
        + message(6, b"p1:2")
    )
    read_segment(segment, contents)
    assert contents.offsets == [0, 1, 2, 6] and contents.values == ["p1:0", "p1:1", None, "p1:2"]
    assert contents.unreadable == 3 and contents.torn_bytes == 0 and contents.log_end_offset == 7


def test_a_torn_last_message_and_preallocated_zeros() -> None:
    whole, torn = message(10, b"p1:10"), message(11, b"p1:11")
    contents = SegmentContents()
    read_segment(whole + torn[:-2], contents)
    assert contents.offsets == [10] and contents.torn_bytes == len(torn) - 2
    zeros = SegmentContents()
    read_segment(whole + bytes(64), zeros)
    assert zeros.offsets == [10] and zeros.torn_bytes == 0
    assert SegmentContents().log_end_offset is None


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
