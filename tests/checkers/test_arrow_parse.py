"""pyarrow's pre-parse of the history files: taken only when Spark would parse the same rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from checkers import frames
from checkers.io import arrow_parse
from checkers.io.arrow_parse import Parsed, parquet_of
from checkers.io.sources import READS_SOURCE, uri

WRITE = b'{"type":"invoke","time_ns":5,"process":"p-1","topic":"t","partition":0,"value":"p-1:0"}'


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(WRITE[:40] + b"\n" + WRITE[40:] + b"\n", id="one object across two lines"),
        pytest.param(WRITE + b"\n\n" + WRITE + b"\n", id="a blank line"),
        pytest.param(WRITE + b"\r\n", id="a CRLF line end"),
        pytest.param(b" " + WRITE + b"\n", id="a space before an object"),
        pytest.param(WRITE + b"\n" + WRITE[:30], id="a torn last line"),
        pytest.param(WRITE + b"\n" + WRITE, id="a last line with no newline"),
        pytest.param(WRITE.replace(b'"time_ns":5', b'"time_ns":"5"') + b"\n", id="a string for a number"),
        pytest.param(WRITE.replace(b'"partition":0', b'"partition":0.0') + b"\n", id="a float for an int"),
        pytest.param(
            WRITE.replace(b'"partition":0', b'"partition":4294967296') + b"\n", id="an int out of range"
        ),
        pytest.param(WRITE.replace(b"p-1:0", b"p-1:\xff") + b"\n", id="bytes that are not UTF-8"),
        pytest.param(b"", id="an empty file"),
        pytest.param(
            WRITE.replace(b"p-1:0", b"p-1:\\ud83d\\ude00") + b"\r\n", id="an escaped surrogate pair"
        ),
        pytest.param(b'{"type":' + b"[" * 5000 + b"]" * 5000 + b"} x\n", id="nested too deeply for Python"),
    ],
)
def test_a_file_pyarrow_cannot_take_whole_is_left_to_spark(tmp_path: Path, content: bytes) -> None:
    jsonl, parquet = tmp_path / "writes.jsonl", tmp_path / "writes.parquet"
    jsonl.write_bytes(content)
    assert parquet_of(jsonl, frames.WRITE_SCHEMA, parquet) == Parsed(False, None)
    assert not parquet.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (WRITE + b"\n" + WRITE + WRITE + b"\n", ":2: more than one JSON object on one line ('{"),
        (
            WRITE + b"\n" + WRITE.replace(b'"time_ns":5', b'"time_ns":5,"time_ns":6') + b"\n",
            ":2: key 'time_ns' given twice",
        ),
        # pyarrow does not take these files whole (CRLF, a torn line, an object across two lines)
        (WRITE + b"\r\n" + WRITE + b" " + WRITE + b"\r\n", ":2: more than one JSON object on one line ('{"),
        (
            WRITE + WRITE + b"\n" + WRITE[:40] + b"\n" + WRITE[40:] + b"\n",
            ":1: more than one JSON object on one line",
        ),
        (WRITE + b"\n" + WRITE + b"}, 7\n" + WRITE[:30], ":2: text after the JSON object ('}, 7')"),
        (WRITE + b"\n" + b"[" + WRITE + b"," + WRITE + b"]\n", ":2: expected a JSON object, got an array"),
        (
            b"[1]\n" + WRITE.replace(b'"time_ns":5', b'"time_ns":5,"time_ns":6') + b"\n",
            ":1: expected a JSON object, got an array",
        ),
        (b" [1, 2]\n", ":1: expected a JSON object, got an array"),
        (WRITE.replace(b'"p-1:0"', b"7") + b"\n", ":1: field 'value' must be a string, got 7"),
        (
            WRITE + b"\n" + WRITE.replace(b'"p-1"', b" true") + b"\n",
            ":2: field 'process' must be a string, got true",
        ),
        (
            WRITE.replace(b'"value"', b'"\\u0076alue"').replace(b'"p-1:0"', b'{"a":1}') + b"\r\n",
            ":1: field 'value' must be a string, got {\"a\": 1}",
        ),
        (
            WRITE.replace(b"p-1:0", b"p-1:\\ud800") + b"\n",
            ":1: field 'value' holds an escaped lone surrogate",
        ),
    ],
    ids=[
        "two objects on one line",
        "a key given twice",
        "two objects on a CRLF line",
        "two objects on one line, as many objects as lines",
        "text after an object, and a torn last line",
        "an array of objects",
        "an array before a key given twice",
        "an array",
        "a number for a string",
        "a boolean for a string",
        "an object for a string, under an escaped key",
        "a lone surrogate",
    ],
)
def test_what_spark_would_take_without_a_word_is_named_by_its_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    # Spark's parser would keep the first object of the line, the last value of the key, and make
    # a row of each element of an array.
    jsonl, parquet = tmp_path / "writes.jsonl", tmp_path / "writes.parquet"
    jsonl.write_bytes(content)
    parsed = parquet_of(jsonl, frames.WRITE_SCHEMA, parquet)
    assert not parsed.taken and str(parsed.misread).startswith(f"{jsonl}{message}"), parsed
    assert not parquet.exists()


def test_a_file_pyarrow_takes_parses_to_the_rows_spark_parses(spark: SparkSession, tmp_path: Path) -> None:
    jsonl, parquet = tmp_path / "reads.jsonl", tmp_path / "reads.parquet"
    jsonl.write_bytes(
        b'{"type":"record","time_ns":7,"process":"c","phase":"live","topic":"t","partition":1,'
        b'"offset":0,"value":"p-1:\\u00e9","extra":{"nested":[1]}}\n'
        b'{"type":"end","time_ns":9,"process":"c","phase":"final","topic":"t","partition":1,'
        b'"log_start":0,"high_watermark":1}\n'
        b'{"partition":null}\n'
    )
    assert parquet_of(jsonl, READS_SOURCE.schema, parquet).taken
    from_json = spark.read.schema(READS_SOURCE.schema).json(uri(jsonl))
    from_parquet = spark.read.schema(READS_SOURCE.schema).parquet(uri(parquet))
    assert from_parquet.collect() == from_json.collect()
    assert from_parquet.count() == 3


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 64])
def test_lines_are_told_apart_across_the_chunks_a_file_is_read_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    monkeypatch.setattr(arrow_parse, "_CHUNK_BYTES", chunk_bytes)
    jsonl, parquet = tmp_path / "writes.jsonl", tmp_path / "writes.parquet"
    jsonl.write_bytes(WRITE + b"\n" + WRITE + b"\n")
    assert parquet_of(jsonl, frames.WRITE_SCHEMA, parquet).taken
    jsonl.write_bytes(WRITE + WRITE + b"\n" + WRITE[:40] + b"\n" + WRITE[40:] + b"\n")
    # not taken as 3 rows of 3 lines
    assert "more than one JSON object" in str(parquet_of(jsonl, frames.WRITE_SCHEMA, parquet).misread)
    lines = [WRITE, WRITE.replace(b"p-1:0", b"p-1:\xff"), b"[" + WRITE + b"]", WRITE.replace(b'"p-1"', b"1")]
    jsonl.write_bytes(b"\n".join(lines) + b"\n")
    misread = parquet_of(jsonl, frames.WRITE_SCHEMA, parquet).misread
    assert misread is not None and ":3: expected a JSON object, got an array" in str(misread)
    jsonl.write_bytes(b"\n".join([*lines[:2], lines[3], lines[2]]))
    misread = parquet_of(jsonl, frames.WRITE_SCHEMA, parquet).misread
    assert misread is not None and ":3: field 'process' must be a string, got 1" in str(misread)
