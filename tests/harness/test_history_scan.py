"""The byte-level pass over a history file: sizes, lines and digest, torn tails reported, damage
refused with its line, whatever the file's size."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from contract import history_scan
from contract.errors import HistoryError
from contract.history_scan import FileScan, TornTail, scan

LINES = b'{"a": 1}\n{"b": "\xc3\xa9"}\n{"c": 3}\n'


def _scan(tmp_path: Path, data: bytes) -> FileScan:
    path = tmp_path / "h.jsonl"
    path.write_bytes(data)
    return scan(path)


def _refused(tmp_path: Path, data: bytes) -> HistoryError:
    with pytest.raises(HistoryError) as caught:
        _scan(tmp_path, data)
    return caught.value


def test_whole_lines_are_counted_with_size_and_digest(tmp_path: Path) -> None:
    found = _scan(tmp_path, LINES)
    assert (found.bytes, found.lines, found.torn, found.whole_bytes) == (len(LINES), 3, None, len(LINES))
    assert found.sha256 == hashlib.sha256(LINES).hexdigest()


def test_an_empty_file_has_no_lines_and_no_tail(tmp_path: Path) -> None:
    assert (_scan(tmp_path, b"").lines, _scan(tmp_path, b"").torn) == (0, None)


def test_a_last_line_without_newline_is_a_torn_tail(tmp_path: Path) -> None:
    found = _scan(tmp_path, LINES + b'{"d": ')
    assert found.lines == 3
    assert found.torn == TornTail(line=4, offset=len(LINES), length=6, nul=False)
    assert found.whole_bytes == len(LINES)
    assert "line 4 has no newline" in found.torn.describe()


def test_nul_bytes_to_the_end_are_a_torn_tail_from_their_line(tmp_path: Path) -> None:
    found = _scan(tmp_path, LINES + b'{"d"' + b"\0" * 5000)
    assert found.torn == TornTail(line=4, offset=len(LINES), length=4 + 5000, nul=True)
    assert found.lines == 3


def test_a_nul_tail_across_chunks_is_a_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_scan, "_CHUNK_BYTES", 7)
    found = _scan(tmp_path, LINES + b"\0" * 50)
    assert found.torn == TornTail(line=4, offset=len(LINES), length=50, nul=True)
    assert found.sha256 == hashlib.sha256(LINES + b"\0" * 50).hexdigest()


@pytest.mark.parametrize("chunk", [3, 7, 1 << 20])
def test_nul_bytes_with_lines_after_them_are_refused_at_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(history_scan, "_CHUNK_BYTES", chunk)
    error = _refused(tmp_path, LINES + b'{"d":\0\0\0 4}\n{"e": 5}\n')
    assert error.line == 4
    assert "3 NUL byte(s) inside the file" in str(error)


def test_a_byte_order_mark_is_refused_at_line_1(tmp_path: Path) -> None:
    error = _refused(tmp_path, history_scan.BYTE_ORDER_MARK + LINES)
    assert error.line == 1 and "byte-order mark" in str(error)


@pytest.mark.parametrize("chunk", [5, 1 << 20])
def test_bytes_that_are_not_utf8_are_refused_at_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(history_scan, "_CHUNK_BYTES", chunk)
    error = _refused(tmp_path, LINES + b'{"d": "\xff"}\n')
    assert (error.line, "not UTF-8 (byte 0xff)" in str(error)) == (4, True)


def test_a_multibyte_character_cut_by_a_chunk_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_scan, "_CHUNK_BYTES", 16)  # cuts "é" of line 2 in two
    assert _scan(tmp_path, LINES).lines == 3


def test_a_line_longer_than_any_history_line_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_scan, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(history_scan, "_CHUNK_BYTES", 64)
    error = _refused(tmp_path, LINES + b"x" * 500)
    assert error.line == 4 and "longer than" in str(error)


def test_a_large_file_of_nul_bytes_is_one_torn_tail(tmp_path: Path) -> None:
    # What a file system may leave of a history after a power loss: 1 GiB of NUL bytes, sparse.
    path = tmp_path / "writes.jsonl"
    with path.open("wb") as handle:
        handle.truncate(1 << 30)
    found = scan(path)  # in chunks: never the whole "line" in memory
    assert found.torn == TornTail(line=1, offset=0, length=1 << 30, nul=True)
