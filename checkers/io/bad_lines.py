"""Naming the first offending line of writes.jsonl or reads.jsonl, once a conversion found one.

Lines are only numbered (an extra, slower pass through Python) when something is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.io.sources import WRITES_SOURCE, Source, parse, uri
from checkers.session import spark_errors
from harness.errors import HistoryError


def _numbered(spark: SparkSession, path: Path) -> DataFrame:
    """(line, text) of a file, 1-based. Slow (Python serialization): only used to name a bad line."""
    numbered = spark.sparkContext.textFile(uri(path)).zipWithIndex().map(lambda pair: (pair[1] + 1, pair[0]))
    schema = T.StructType([T.StructField("line", T.LongType()), T.StructField("text", T.StringType())])
    return spark.createDataFrame(numbered, schema)


def raise_first_bad_line(spark: SparkSession, path: Path, source: Source, before: int | None = None) -> None:
    """Raise a HistoryError naming the first invalid line, unless it is a torn last line or not
    `before` that line."""
    with spark_errors(f"locating the bad line of {source.name}", str(path)):
        numbered = _numbered(spark, path)
        parsed = parse(numbered, source)
        first_bad = parsed.where(~source.is_valid()).orderBy("line").select("line", "text").limit(1).collect()
        line_count = numbered.count()
    if not first_bad:
        return
    line, text = int(first_bad[0]["line"]), str(first_bad[0]["text"])
    if before is not None and line >= before:
        return
    if line == line_count and not _ends_with_newline(path):
        return  # a torn last line of a run killed mid-write: the format promises only a readable prefix
    raise HistoryError(source.describe(text), str(path), line)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def first_line_where(spark: SparkSession, path: Path, source: Source, condition: Column) -> int | None:
    with spark_errors(f"locating a line of {source.name}", str(path)):
        parsed = parse(_numbered(spark, path), source)
        found = parsed.where(condition).agg(F.min("line").alias("line")).collect()
    return int(found[0]["line"]) if found and found[0]["line"] is not None else None


def offending_write_line(spark: SparkSession, path: Path, value: str, reason: str) -> int | None:
    """The line that breaks the rule: the orphan completion, or the second invoke or completion."""
    with spark_errors("locating a line of writes.jsonl", str(path)):
        parsed = parse(_numbered(spark, path), WRITES_SOURCE)
        lines = (
            parsed.where(F.col("value") == value).orderBy("line").select("line", "type").limit(10).collect()
        )
    invokes = [int(row["line"]) for row in lines if row["type"] == "invoke"]
    completions = [int(row["line"]) for row in lines if row["type"] != "invoke"]
    if "invoked" in reason and len(invokes) > 1:
        return invokes[1]
    if "completed" in reason and len(completions) > 1:
        return completions[1]
    return completions[0] if completions else None
