"""One pass over the bytes of a JSON Lines history file before any parser reads it: every line
accounted for, or the file refused with its line.

A history file is UTF-8 text of whole lines, each ending in a newline. What a parser (Python's,
pyarrow's, Spark's) would misread without a word, or choke on for minutes, is found here in one
streaming pass at the speed of the disk: a byte-order mark (HISTORY_FORMAT.md: a history file has
none), NUL bytes inside the file, bytes that are not UTF-8. A *torn tail* is what a run cut short
leaves at the end: a last line without its newline (the harness SIGKILLed in a write), or a run of
NUL bytes (what a file system leaves of blocks it had allocated but not written before a power
loss). It is reported, never skipped silently: a check refuses the file, or with `--prefix` judges
the whole lines before it and says so.

The same pass takes each file's size, line count and SHA-256, which a check's cache keys on and
result.json records, so that a reader of a verdict can tell it judged the whole file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from contract.errors import HistoryError
from contract.history_fields import Fields

BYTE_ORDER_MARK = b"\xef\xbb\xbf"
_CHUNK_BYTES = 16 << 20
MAX_LINE_BYTES = 64 << 20
"""Longer than any history line (a value is at most `limits.MAX_MESSAGE_BYTES`, 10 MiB)."""


@dataclass(frozen=True)
class TornTail:
    """The end of a file that is not whole lines: from byte `offset` (the start of line `line`) to
    the end, `length` bytes, all NUL (`nul`) or a line without its newline."""

    line: int
    offset: int
    length: int
    nul: bool

    def describe(self) -> str:
        if self.nul:
            return f"torn tail: {self.length:,} NUL bytes from line {self.line} on (what a power loss leaves)"
        return f"torn tail: line {self.line} has no newline (a run cut short in a write)"


@dataclass(frozen=True)
class FileScan:
    """What one pass read of a history file: its size, whole lines, SHA-256 and torn tail, if any."""

    path: Path
    bytes: int
    lines: int
    """Whole lines (each ending in a newline), blank ones included."""
    sha256: str
    torn: TornTail | None

    @property
    def whole_bytes(self) -> int:
        """Bytes of the whole lines: the prefix a check judges with `--prefix`."""
        return self.bytes if self.torn is None else self.torn.offset

    def recorded(self) -> dict[str, object]:
        """As result.json's `history_files` holds it (HISTORY_FORMAT.md)."""
        torn = None
        if self.torn is not None:
            torn = {
                "line": self.torn.line,
                "offset": self.torn.offset,
                "bytes": self.torn.length,
                "nul": self.torn.nul,
            }
        return {"bytes": self.bytes, "lines": self.lines, "sha256": self.sha256, "torn_tail": torn}


def scan(path: Path) -> FileScan:
    """Read `path` once; a HistoryError with its line for a byte-order mark, a NUL byte with other
    bytes after it, bytes that are not UTF-8 in a whole line, or a line longer than any history
    line can be. A torn tail is returned, not raised."""
    digest = hashlib.sha256()
    size = lines = 0
    rest = b""  # the bytes after the last newline read so far: a line still going on
    nul_from: int | None = None  # where the NUL bytes start that may be the tail
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                digest.update(chunk)
                if size == 0 and chunk.startswith(BYTE_ORDER_MARK):
                    raise HistoryError(
                        "starts with a UTF-8 byte-order mark (EF BB BF), which no history file has; "
                        "remove those 3 bytes (an editor's 'UTF-8 without BOM')",
                        str(path),
                        1,
                    )
                if nul_from is None and (nul := chunk.find(0)) >= 0:
                    nul_from = size + nul
                start = len(chunk) if nul_from is None else max(nul_from - size, 0)
                if start:
                    whole = rest + chunk[:start]
                    cut = whole.rfind(b"\n") + 1
                    _check_utf8(whole[:cut], path, lines + 1)
                    lines += whole.count(b"\n", 0, cut)
                    rest = whole[cut:]
                    if len(rest) > MAX_LINE_BYTES:
                        raise HistoryError(
                            f"line longer than {MAX_LINE_BYTES >> 20} MiB, which no history line is",
                            str(path),
                            lines + 1,
                        )
                if nul_from is not None and (after := _first_not_nul(chunk[start:])) >= 0:
                    raise _nul_inside(path, lines + 1, size + start + after - nul_from)
                size += len(chunk)
    except OSError as exc:
        raise HistoryError(f"cannot read: {exc.strerror or exc}", str(path)) from None
    torn = None
    if nul_from is not None or rest:
        offset = (size if nul_from is None else nul_from) - len(rest)
        torn = TornTail(lines + 1, offset, size - offset, nul_from is not None)
    return FileScan(path, size, lines, digest.hexdigest(), torn)


def _first_not_nul(data: bytes) -> int:
    """Where the first byte of `data` that is not NUL is, or -1."""
    left = len(data.lstrip(b"\0"))
    return -1 if left == 0 else len(data) - left


def _nul_inside(path: Path, line: int, nul_bytes: int) -> HistoryError:
    return HistoryError(
        f"{nul_bytes:,} NUL byte(s) inside the file, with lines after them (no JSON line holds a NUL "
        "byte: a damaged file, not a torn tail)",
        str(path),
        line,
    )


def _check_utf8(whole_lines: bytes, path: Path, first_line: int) -> None:
    try:
        whole_lines.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + whole_lines.count(b"\n", 0, exc.start)
        raise HistoryError(f"not UTF-8 (byte {whole_lines[exc.start]:#04x})", str(path), line) from None


@dataclass(frozen=True)
class JudgedFile:
    """One file of result.json's `history_files`: what the check read of it and judged."""

    name: str
    bytes: int
    lines: int
    judged_lines: int
    synced_bytes: int | None
    sha256: str
    torn: TornTail | None

    def judged_prefix(self) -> str | None:
        """ "history/writes.jsonl judged up to line 1,234 of 1,235 (torn tail: ...)" for a file
        judged up to its torn tail only (`kchaos check --prefix`); None for a file judged whole."""
        if self.torn is None:
            return None
        lines = f"up to line {self.judged_lines:,} of {self.torn.line:,}"
        return f"{self.name} judged {lines} ({self.torn.describe()})"


def judged_files(history_files: Fields) -> list[JudgedFile]:
    """result.json's `history_files`, each field checked (RESULT_FORMAT.md)."""
    files = []
    for name in history_files.obj:
        recorded = history_files.child(name, required=True)
        torn = None
        if recorded.obj.get("torn_tail") is not None:
            tail = recorded.child("torn_tail")
            torn = TornTail(
                tail.integer("line", 1, required=True) or 1,
                tail.integer("offset", required=True) or 0,
                tail.integer("bytes", required=True) or 0,
                bool(tail.flag("nul", required=True)),
            )
        files.append(
            JudgedFile(
                name,
                recorded.integer("bytes", required=True) or 0,
                recorded.integer("lines", required=True) or 0,
                recorded.integer("judged_lines", required=True) or 0,
                recorded.integer("synced_bytes"),
                recorded.text("sha256", required=True, longest=64) or "",
                torn,
            )
        )
    return files
