"""Reading what a replica holds from a broker's log directory: segment files and checkpoints.

Pure functions over bytes and text (unit-tested on handmade segments); `harness.forensics` feeds them
the files of each broker's data directory. A segment is a sequence of entries, each an offset
(int64) and a size (int32) followed by `size` bytes whose fifth byte is the magic (the format); a
segment can mix formats after an upgrade.

- Magic 0 and 1 (Kafka 0.8-0.10): one message per entry: crc (int32), magic (int8), attributes
  (int8), a timestamp (int64, magic 1 only), key and value (int32 length, -1 for null, then the
  bytes). A compressed wrapper message counts as one unreadable, not guessed at.
- Magic 2 (Kafka 0.11+, message format v2): one record batch per entry, the offset being its base
  offset: partition leader epoch (int32), magic (int8), crc (uint32), attributes (int16: bits 0-2
  the compression codec, bit 5 a control batch), last offset delta (int32), base and max timestamp
  (int64), producer id (int64), producer epoch (int16), base sequence (int32), a record count
  (int32), then the records (gzip-compressed, or not, after the count). Each record: its length,
  attributes (int8), timestamp delta, offset delta, key length and key, value length and value, a
  header count and headers (each a key and a value with their lengths); every integer after the
  attributes a zigzag varint (Kafka's DefaultRecordBatch and DefaultRecord). A control batch (a
  transaction's commit or abort marker) holds no value and is skipped; records of aborted
  transactions are read like any other (every replica holds them). Batches compressed otherwise
  than gzip, and batches whose records do not fill them exactly, count their records as unreadable.

No CRC is checked, for either format: a torn write is the end of a segment (`torn_bytes`).
"""

from __future__ import annotations

import gzip
import re
import struct
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

_HEAD = struct.Struct(">qi")  # offset (a batch's base offset), size of what follows
_MAGIC_AT = _HEAD.size + 4  # after a message's crc, or a batch's partition leader epoch
_MESSAGE = struct.Struct(">iBB")  # crc, magic, attributes
_LENGTH = struct.Struct(">i")
_TIMESTAMP_BYTES = 8
_BATCH = struct.Struct(">qiibIhiqqqhii")
"""A record batch's header: base offset, size, partition leader epoch, magic, crc, attributes, last
offset delta, base and max timestamp, producer id and epoch, base sequence, record count."""
_CODEC_MASK = 0x07
_CONTROL = 0x20
_GZIP = 1
CODECS = {2: "snappy", 3: "lz4", 4: "zstd"}
"""Compression codecs of a batch's attributes that are not read -> their names."""
SEGMENT_NAME = re.compile(r"(?P<base>[0-9]{20})\.log")
PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]+)")
CHECKPOINTS = {
    "replication-offset-checkpoint": "high_watermark",
    "recovery-point-offset-checkpoint": "recovery_point",
}
"""Checkpoint file in a log directory -> what its offset of each partition is."""


@dataclass
class SegmentContents:
    """The records of one or more segments of a partition, in offset order."""

    offsets: list[int] = field(default_factory=list)
    values: list[str | None] = field(default_factory=list)
    unreadable: int = 0
    """Records skipped: in compressed wrappers or batches not read, malformed batches, an unknown
    magic, or a value that is not UTF-8."""
    why_unreadable: Counter[str] = field(default_factory=Counter)
    """How many of `unreadable` for each reason."""
    producer_epochs: dict[int, set[int]] = field(default_factory=dict)
    """The producer epochs of the record batches of each producer id (idempotent and transactional
    producers only; control batches left out)."""
    torn_bytes: int = 0
    """Bytes at a segment's end that do not make a whole entry (a write cut short by a crash)."""

    @property
    def log_end_offset(self) -> int | None:
        return self.offsets[-1] + 1 if self.offsets else None

    def skip(self, records: int, why: str) -> None:
        """Count `records` as unreadable, for the reason `why`."""
        self.unreadable += records
        self.why_unreadable[why] += records


class _Malformed(ValueError):
    """Records that do not fill their batch exactly."""


def entries(data: bytes | memoryview) -> Iterator[tuple[int, int, int]]:
    """(offset, first byte, byte after it) of each whole entry (message or record batch) of one
    segment file, in file order; it stops at preallocated zeros or a torn last entry."""
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
    """Append the records of one segment file (`data`) to `into`."""
    view = memoryview(data)
    position = 0
    for offset, start, after in entries(view):
        position = after
        magic = view[start + _MAGIC_AT]
        if magic in (0, 1):
            _read_message(view, offset, start, into)
        elif magic == 2:
            _read_batch(view[start:after], into)
        else:
            into.skip(1, f"in entries of magic {magic}")
    if position < len(view) and any(view[position:]):
        into.torn_bytes += len(view) - position


def _read_message(view: memoryview, offset: int, start: int, into: SegmentContents) -> None:
    body = start + _HEAD.size
    _crc, magic, attributes = _MESSAGE.unpack_from(view, body)
    if attributes & _CODEC_MASK:
        into.skip(1, "in compressed wrapper messages (magic 0 or 1, one each)")
        return
    at = body + _MESSAGE.size + (_TIMESTAMP_BYTES if magic == 1 else 0)
    (key_length,) = _LENGTH.unpack_from(view, at)
    at += _LENGTH.size + max(key_length, 0)
    (value_length,) = _LENGTH.unpack_from(view, at)
    at += _LENGTH.size
    raw = None if value_length < 0 else bytes(view[at : at + value_length])
    _append(into, offset, raw)


def _read_batch(batch: memoryview, into: SegmentContents) -> None:
    """Append the records of one record batch (`batch`, its bytes from its base offset on)."""
    if len(batch) < _BATCH.size:
        into.skip(1, "in malformed batches")
        return
    header = _BATCH.unpack_from(batch)
    base_offset, attributes, producer_id, producer_epoch, count = (
        header[0],
        header[5],
        header[9],
        header[10],
        header[12],
    )
    if attributes & _CONTROL:
        return  # a transaction marker: no value
    if producer_id >= 0:
        into.producer_epochs.setdefault(producer_id, set()).add(producer_epoch)
    codec = attributes & _CODEC_MASK
    records: bytes | memoryview = batch[_BATCH.size :]
    try:
        if codec == _GZIP:
            records = gzip.decompress(records)
        elif codec:
            into.skip(count, f"in {CODECS.get(codec, f'codec-{codec}')}-compressed batches")
            return
        read = _records(records, base_offset, count)
    except (_Malformed, OSError, EOFError, zlib.error):
        into.skip(max(count, 1), "in malformed batches")
        return
    for offset, raw in read:
        _append(into, offset, raw)


def _records(data: bytes | memoryview, base_offset: int, count: int) -> list[tuple[int, bytes | None]]:
    """(offset, value) of each of the `count` records of a batch's (uncompressed) `data`, which they
    must fill exactly."""
    read: list[tuple[int, bytes | None]] = []
    at = 0
    for _ in range(count):
        length, at = _varint(data, at)
        end = at + length
        at += 1  # the record's attributes
        _timestamp_delta, at = _varint(data, at)
        offset_delta, at = _varint(data, at)
        _key, at = _bytes(data, at)
        value, at = _bytes(data, at)
        headers, at = _varint(data, at)
        for _ in range(headers):
            _name, at = _bytes(data, at)
            _header_value, at = _bytes(data, at)
        if at != end:
            raise _Malformed(f"a record of {length} bytes held {at - end + length}")
        read.append((base_offset + offset_delta, value))
    if at != len(data):
        raise _Malformed(f"{len(data) - at} bytes after the last of {count} records")
    return read


def _varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    """The zigzag varint (or varlong) at `at`, and the position after it."""
    raw, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Malformed("a varint past the batch's end, or longer than 10 bytes")
        byte = data[at]
        raw |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), at
        shift += 7


def _bytes(data: bytes | memoryview, at: int) -> tuple[bytes | None, int]:
    """The bytes at `at` after their varint length (-1: null), and the position after them."""
    length, at = _varint(data, at)
    if length < 0:
        return None, at
    if at + length > len(data):
        raise _Malformed(f"{length} bytes past the batch's end")
    return bytes(data[at : at + length]), at + length


def _append(into: SegmentContents, offset: int, raw: bytes | None) -> None:
    try:
        value = None if raw is None else raw.decode()
    except UnicodeDecodeError:
        into.skip(1, "not UTF-8")
        return
    into.offsets.append(offset)
    into.values.append(value)


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
    marks: dict[tuple[str, int], int] = {}
    for line in lines[2 : 2 + count]:
        topic, partition, offset = line.split()
        marks[(topic, int(partition))] = int(offset)
    if len(marks) != count:
        raise ValueError(f"expected {count} entries, got {len(marks)}")
    return marks


def segment_order(names: list[str]) -> list[str]:
    """The `.log` segment file names among `names`, by base offset."""
    return sorted((n for n in names if SEGMENT_NAME.fullmatch(n)), key=lambda n: int(n[:20]))
