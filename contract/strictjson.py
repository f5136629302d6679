"""JSON from files anyone may have edited, read defensively: UTF-8, bounded in size and nesting,
integers that fit 64 bits and floats that are finite (no NaN, no Infinity, no 1e999), and no key
given twice in one object.

Whatever breaks these rules is one HistoryError naming the file and, when known, the line, so that
code reading the values never meets a RecursionError, an OverflowError or a 10,000-digit count.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contract.errors import HistoryError

MAX_DEPTH = 64
"""Nesting of objects and arrays; the history files use five levels at most."""
MAX_LINE_BYTES = 4 * 1024 * 1024
"""A line of a small JSON Lines file (faults.jsonl, cluster.jsonl)."""
MAX_FILE_BYTES = 256 * 1024 * 1024
"""A whole-file JSON object (run.json, result.json: its per-second series grow with the run)."""
_INT64 = 2**63
GIVEN_TWICE = "given twice in one object"


class _Rejected(ValueError):
    """A number the JSON is not allowed to hold (raised from inside the decoder's hooks)."""


class _TooLarge:
    """An integer that does not fit 64 bits, kept in its place until the whole value is decoded, so
    that the error can name the field it is in (the hook that reads a number knows no key)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return f"integer {self.text[:24]}{'…' if len(self.text) > 24 else ''} does not fit 64 bits"


_LONG_DIGITS = re.compile(r"[0-9]{19}")
"""A run of digits as long as the shortest integer beyond 64 bits: only then is a value walked for one."""


def _int(text: str) -> int | _TooLarge:
    # 20 digits and a sign at most: int() of thousands of digits takes its time
    if len(text) > 20 or not -_INT64 <= (value := int(text)) < _INT64:
        return _TooLarge(text)
    return value


def _too_large(value: Any) -> str | None:
    """Where in `value` an integer beyond 64 bits is (`offsets[0].offset`, or "" for the value
    itself) and which, as an error message; None when there is none."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _TooLarge):
            return f"field {where!r}: {item}" if where else str(item)
        if isinstance(item, dict):
            named = [(child, f"{where}.{key}" if where else str(key)) for key, child in item.items()]
            stack.extend(reversed(named))  # the first in the text is named
        elif isinstance(item, list):
            stack.extend(reversed([(child, f"{where}[{i}]") for i, child in enumerate(item)]))
    return None


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected(f"number {text[:24]} is out of range")
    return value


def _constant(name: str) -> float:
    raise _Rejected(f"{name} is not a JSON number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) < len(pairs):  # json keeps the last silently
        keys = [key for key, _ in pairs]
        raise _Rejected(f"key {next(k for k in keys if keys.count(k) > 1)!r} {GIVEN_TWICE}")
    return value


_DECODER = json.JSONDecoder(
    parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_unique
)


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def decode(data: bytes, path: Path, line: int | None = None) -> Any:
    """The JSON value in `data` (a whole file when `line` is None, else that line of it)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = line if line is not None else data.count(b"\n", 0, exc.start) + 1
        raise HistoryError(f"not UTF-8 (byte {data[exc.start]:#04x})", str(path), at) from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        if line is None:  # a whole file: the line of the mistake in it
            raise HistoryError(f"not valid JSON: {exc.msg}", str(path), exc.lineno) from None
        raise HistoryError(f"malformed JSON ({exc.msg})", str(path), line) from None
    except _Rejected as exc:
        raise HistoryError(str(exc), str(path), line) from None
    except RecursionError:  # so deep that the decoder itself gave up
        raise HistoryError(f"nested deeper than {MAX_DEPTH} levels", str(path), line) from None
    # Each level opens with a bracket: a text with few of them needs no walk (most lines of a history).
    if text.count("{") + text.count("[") > MAX_DEPTH and _too_deep(value):
        raise HistoryError(f"nested deeper than {MAX_DEPTH} levels", str(path), line)
    if _LONG_DIGITS.search(text) and (problem := _too_large(value)) is not None:
        raise HistoryError(problem, str(path), line)
    return value


def read_file(path: Path) -> Any:
    """The JSON value of a whole file of at most MAX_FILE_BYTES."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise HistoryError(f"cannot read ({exc.strerror})", str(path)) from None
    if len(data) > MAX_FILE_BYTES:
        raise HistoryError(f"larger than {MAX_FILE_BYTES // 2**20} MiB", str(path))
    return decode(data, path)


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each line of a file, the newline kept: a line without one is the
    last, possibly torn by a crash. A line longer than MAX_LINE_BYTES is a HistoryError."""
    try:
        with path.open("rb") as handle:
            number = 0
            while raw := handle.readline(MAX_LINE_BYTES + 1):
                number += 1
                if len(raw) > MAX_LINE_BYTES:
                    raise HistoryError(f"line longer than {MAX_LINE_BYTES // 2**20} MiB", str(path), number)
                yield number, raw
    except OSError as exc:
        raise HistoryError(f"cannot read ({exc.strerror})", str(path)) from None
