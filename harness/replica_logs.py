"""Reading what a replica holds from a broker's log directory: segment files and checkpoints.

Pure functions over bytes and text (unit-tested on handmade segments); `harness.forensics` feeds them
the files of each broker's data directory. Kafka 0.8-0.10 log segments hold message sets: for each
message its offset (int64), size (int32), then crc (int32), magic (int8), attributes (int8), a
timestamp (int64, magic 1 only), key and value (int32 length, -1 for null, then the bytes).
Compressed wrapper messages and the record batches of Kafka 0.11+ (magic 2) are counted as
unreadable, not guessed at.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

_HEAD = struct.Struct(">qi")  # offset, message size
_MESSAGE = struct.Struct(">iBB")  # crc, magic, attributes
_LENGTH = struct.Struct(">i")
_TIMESTAMP_BYTES = 8
SEGMENT_NAME = re.compile(r"(?P<base>[0-9]{20})\.log")
PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]+)")
CHECKPOINTS = {
    "replication-offset-checkpoint": "high_watermark",
    "recovery-point-offset-checkpoint": "recovery_point",
}
"""Checkpoint file in a log directory -> what its offset of each partition is."""


@dataclass
class SegmentContents:
    """The messages of one or more segments of a partition, in offset order."""

    offsets: list[int] = field(default_factory=list)
    values: list[str | None] = field(default_factory=list)
    unreadable: int = 0
    """Messages skipped: compressed wrappers, an unknown magic, or a value that is not UTF-8."""
    torn_bytes: int = 0
    """Bytes at a segment's end that do not make a whole message (a write cut short by a crash)."""

    @property
    def log_end_offset(self) -> int | None:
        return self.offsets[-1] + 1 if self.offsets else None


def messages(data: bytes | memoryview) -> Iterator[tuple[int, int, int]]:
    """(offset, first byte, byte after it) of each whole message of one segment file, in file order;
    it stops at preallocated zeros or a torn last message."""
    view = memoryview(data)
    position, end = 0, len(view)
    while position + _HEAD.size <= end:
        offset, size = _HEAD.unpack_from(view, position)
        after = position + _HEAD.size + size
        if size < _MESSAGE.size + 2 * _LENGTH.size or after > end:
            return
        yield offset, position, after
        position = after


def read_segment(data: bytes | memoryview, into: SegmentContents) -> None:
    """Append the messages of one segment file (`data`) to `into`."""
    view = memoryview(data)
    position = 0
    for offset, start, after in messages(view):
        position = after
        body = start + _HEAD.size
        _crc, magic, attributes = _MESSAGE.unpack_from(view, body)
        at = body + _MESSAGE.size + (_TIMESTAMP_BYTES if magic == 1 else 0)
        if magic > 1 or attributes & 0x07:
            into.unreadable += 1
            continue
        (key_length,) = _LENGTH.unpack_from(view, at)
        at += _LENGTH.size + max(key_length, 0)
        (value_length,) = _LENGTH.unpack_from(view, at)
        at += _LENGTH.size
        value: str | None = None
        if value_length >= 0:
            try:
                value = bytes(view[at : at + value_length]).decode()
            except UnicodeDecodeError:
                into.unreadable += 1
                continue
        into.offsets.append(offset)
        into.values.append(value)
    if position < len(view) and any(view[position:]):
        into.torn_bytes += len(view) - position


def read_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """A `replication-offset-checkpoint` or `recovery-point-offset-checkpoint` file: version 0, a
    count, then `topic partition offset` lines; an empty file holds none. Raises ValueError on
    anything else."""
    lines = text.splitlines()
    if not text.strip():
        return {}  # not written yet (a broker writes its checkpoints every minute or so)
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError(f"expected version 0 and a count, got {lines[:2]!r}")
    count = int(lines[1])
    entries: dict[tuple[str, int], int] = {}
    for line in lines[2 : 2 + count]:
        topic, partition, offset = line.split()
        entries[(topic, int(partition))] = int(offset)
    if len(entries) != count:
        raise ValueError(f"expected {count} entries, got {len(entries)}")
    return entries


def segment_order(names: list[str]) -> list[str]:
    """The `.log` segment file names among `names`, by base offset."""
    return sorted((n for n in names if SEGMENT_NAME.fullmatch(n)), key=lambda n: int(n[:20]))
