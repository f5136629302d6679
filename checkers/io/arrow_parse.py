"""History files parsed by pyarrow into Parquet, for Spark to read: writes.jsonl and reads.jsonl, and
the side files (consumes.jsonl, replicas.jsonl, cluster.jsonl; `cache.SIDE_FILES`).

Spark's JSON parser is most of a small history's conversion (170,000 events, warm: 2.6-2.8 s to
parse and validate both files, against 1.1-1.3 s from Parquet; pyarrow parses and writes them in
0.15 s). pyarrow is stricter than Spark: a file it takes whole, one JSON object per line, Spark
parses to the same rows. Anything else (a bad or torn line, a blank one, CRLF line ends, a value of
another type, bytes that are not UTF-8) leaves the file to Spark's JSON parser, which keeps a bad
line's own fields and lets `bad_lines` name it, as before. What Spark's parser would take without
a word is found here instead, by a pass over a file pyarrow did not take: a key given twice in one
object (Spark keeps the last), text after the object on a line (Spark keeps the object and drops the
rest, a second object too), an array for a line (Spark makes a row of each element), and a number,
boolean, object or array where a string belongs (Spark keeps its text). Such a line is returned,
not raised: the check names it, or a line before it that Spark's parser finds bad.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pa_parquet
from pyspark.sql import types as T

from contract import strictjson
from contract.errors import HistoryError
from contract.limits import brief

_ARROW_TYPES: dict[T.DataType, pa.DataType] = {
    T.StringType(): pa.string(),
    T.IntegerType(): pa.int32(),
    T.LongType(): pa.int64(),
}
_BLOCK_BYTES = 16 << 20
"""How much JSON pyarrow parses at a time: the memory of the conversion stays bounded."""
_CHUNK_BYTES = 16 << 20
_DECODER = json.JSONDecoder()
_BRACE_THEN_TEXT = re.compile(rb"\}[ \t\r]*[^ \t\r\n]")
"""A `}` with more than white space after it on its line: any text after an object starts so."""
_ARRAY = re.compile(rb"[ \t\r]*\[")
_ARRAY_LINE = re.compile(rb"\n[ \t\r]*\[")
"""A line that is an array, but the first (`^` in multi-line mode takes ten times as long)."""
_ESCAPE = re.compile(rb"\\u")
"""An escaped character, which a key or a lone surrogate may hide in."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""What json makes of `\\ud800` to `\\udfff` escaped alone (a pair is one character)."""


@dataclass(frozen=True)
class Parsed:
    """`parquet_of`'s outcome: whether pyarrow `taken` the file whole; if not, `misread`, the first
    line found that Spark's parser would take without a word for other rows than it holds (None:
    Spark's parser judges the file as ever)."""

    taken: bool
    misread: HistoryError | None = None


def parquet_of(jsonl: Path, schema: T.StructType, parquet: Path, plain: Collection[str] = ()) -> Parsed:
    """Write `jsonl`'s events as the Parquet file `parquet`, with `schema`'s columns (fields of
    `jsonl` outside it are ignored, as Spark does), if pyarrow parses every line to one object of
    that schema; else nothing is written. The columns in `plain`, whose values rarely repeat, are
    stored without a dictionary."""
    arrow_schema = pa.schema([(field.name, _arrow_type(field.dataType)) for field in schema.fields])
    options = pa_json.ParseOptions(explicit_schema=arrow_schema, unexpected_field_behavior="ignore")
    rows = 0
    try:
        reader = pa_json.open_json(
            jsonl, read_options=pa_json.ReadOptions(block_size=_BLOCK_BYTES), parse_options=options
        )
        # Compressed, and dictionaries for repeating values only: as fast to write as neither, and
        # reads.jsonl's is kept as the read records table (10M events: 41 MB, not 324 MB).
        dictionary = [f.name for f in schema.fields if f.name not in plain and f.dataType in _ARROW_TYPES]
        with pa_parquet.ParquetWriter(
            parquet, arrow_schema, compression="snappy", use_dictionary=dictionary
        ) as out:
            for batch in reader:
                batch.validate(full=True)  # pyarrow's parser keeps bytes that are not UTF-8 as they are
                rows += batch.num_rows
                out.write_batch(batch)
    except (pa.ArrowException, ValueError, OSError) as exc:  # ArrowInvalid is a ValueError; Spark says why
        parquet.unlink(missing_ok=True)
        # Spark's parser would keep the last of a key given twice
        return Parsed(False, _first_misread(jsonl, schema, key_twice="specified twice" in str(exc)))
    if rows != _object_lines(jsonl):  # None, or two objects on one line
        parquet.unlink()
        return Parsed(False, _first_misread(jsonl, schema, key_twice=False))
    return Parsed(True)


def _first_misread(path: Path, schema: T.StructType, *, key_twice: bool) -> HistoryError | None:
    """The first line the passes that apply find; the slow one for a key given twice only when
    pyarrow saw one."""
    found = [_found(_name_a_misread_line, path, schema)]
    if key_twice:
        found.append(_found(_name_a_key_given_twice, path))
    # each names its line; one without would be the least exact, so it sorts last
    lines = (exc for exc in found if exc is not None)
    return min(lines, key=lambda exc: exc.line if exc.line is not None else math.inf, default=None)


def _found(scan: Callable[..., None], *args: Any) -> HistoryError | None:
    """The HistoryError a pass that raises the first it finds raised, if any."""
    try:
        scan(*args)
    except HistoryError as exc:
        return exc
    return None


def _name_a_key_given_twice(path: Path) -> None:
    """Raise a HistoryError naming the first line with a key given twice: a pass through Python."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            _key_given_twice(raw, path, number)


def _key_given_twice(raw: bytes, path: Path, number: int) -> None:
    try:
        strictjson.decode(raw, path, number)
    except HistoryError as exc:
        if strictjson.GIVEN_TWICE in str(exc):
            raise
        # Malformed in another way: Spark's parser names such a line.


def _name_a_misread_line(path: Path, schema: T.StructType) -> None:
    """Raise a HistoryError naming the first line that Spark's parser would take without a word for
    other rows than it holds: an array (a row per element), text after the object (dropped, a second
    object too), a number, boolean, object or array for a string column (its text), or an escaped
    lone surrogate in one (a '?'). Regular expressions over whole chunks pick the few lines worth
    decoding (1 GB in about 10 s)."""
    strings = [f.name for f in schema.fields if f.dataType == T.StringType()]
    patterns = [_ARRAY_LINE, _BRACE_THEN_TEXT, _ESCAPE]
    if strings:
        keys = b"|".join(re.escape(name.encode()) for name in strings)
        patterns.append(re.compile(rb'"(?:' + keys + rb')"[ \t\r]*:[ \t\r]*[^" \t\r\nn]'))
    number = 1
    for chunk in _whole_lines(path):
        done = 0
        # a match's last byte is on its line (an array's first is the newline before it)
        starts = {chunk.rfind(b"\n", 0, m.end() - 1) + 1 for p in patterns for m in p.finditer(chunk)}
        if _ARRAY.match(chunk):
            starts.add(0)
        for start in sorted(starts):
            number += chunk.count(b"\n", done, start)
            done = start
            end = chunk.find(b"\n", start)
            _misread(chunk[start : None if end < 0 else end], strings, path, number)
        number += chunk.count(b"\n", done)


def _whole_lines(path: Path) -> Iterator[bytes]:
    """`path` in chunks of whole lines (the last may have no newline)."""
    rest = b""
    with contextlib.suppress(OSError), path.open("rb") as handle:  # Spark's read says why
        while chunk := handle.read(_CHUNK_BYTES):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                rest += chunk
                continue
            yield rest + chunk[:cut]
            rest = chunk[cut:]
    if rest:
        yield rest


def _misread(raw: bytes, strings: list[str], path: Path, number: int) -> None:
    if raw.lstrip(b" \t\r")[:1] == b"[":
        raise HistoryError("expected a JSON object, got an array", str(path), number)
    text = raw.decode("utf-8", "replace").strip()
    try:
        event, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return  # malformed, or nested too deeply for Python: Spark's parser names such a line
    if (rest := text[end:].strip()) and rest[0] == "{":
        raise HistoryError(
            f"more than one JSON object on one line ({brief(rest)} after the first)", str(path), number
        )
    if rest:
        raise HistoryError(f"text after the JSON object ({brief(rest)})", str(path), number)
    for name in strings if isinstance(event, dict) else ():
        field = event.get(name)
        if field is not None and not isinstance(field, str):
            raise HistoryError(
                f"field '{name}' must be a string, got {json.dumps(field)[:60]}", str(path), number
            )
        if field is not None and _LONE_SURROGATE.search(field):  # Spark's parser makes each a '?'
            raise HistoryError(
                f"field '{name}' holds an escaped lone surrogate, no character", str(path), number
            )


def _arrow_type(spark_type: T.DataType) -> pa.DataType:
    if isinstance(spark_type, T.ArrayType):
        return pa.list_(_arrow_type(spark_type.elementType))
    if isinstance(spark_type, T.StructType):
        return pa.struct([(field.name, _arrow_type(field.dataType)) for field in spark_type.fields])
    return _ARROW_TYPES[spark_type]


def _object_lines(path: Path) -> int | None:
    """How many lines `path` has, if each starts with `{` and ends with `}` and a newline (as
    kafka-chaos writes them: no blank line, no space or CR around); else None.

    No object can go on past such a line: after a `}` inside an object, JSON goes on with `,`, `}`
    or `]`, never with the `{` that every next line starts with. So when pyarrow parsed as many
    objects as there are lines, each line was one object. (A check never sees a last line with no
    newline: `checkers.io.scanned` refuses or cuts off a torn tail.)
    """
    newlines = joined = 0
    first = tail = b""
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                first = first or chunk[:1]
                window = tail + chunk  # a `}\n{` across two chunks is counted once
                newlines += chunk.count(b"\n")
                joined += window.count(b"}\n{")
                tail = window[-2:]
    except OSError:
        return None
    if first != b"{" or tail != b"}\n" or joined != newlines - 1:
        return None
    return newlines
