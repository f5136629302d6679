"""Naming the first offending line of writes.jsonl or reads.jsonl, once a conversion found one.

Lines are only numbered (an extra, slower pass through Python) when something is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.io.sources import WRITES_SOURCE, Source, parse, partitions_of, topic_acks, uri
from checkers.session import spark_errors
from harness.errors import HistoryError


def _numbered(spark: SparkSession, path: Path) -> DataFrame:
    """(line, text) of a file, 1-based. Slow (Python serialization): only used to name a bad line."""
    numbered = spark.sparkContext.textFile(uri(path)).zipWithIndex().map(lambda pair: (pair[1] + 1, pair[0]))
    schema = T.StructType([T.StructField("line", T.LongType()), T.StructField("text", T.StringType())])
    return spark.createDataFrame(numbered, schema)


def located_errors(
    spark: SparkSession,
    path: Path,
    source: Source,
    run: dict[str, Any],
    *,
    bad: bool,
    unknown_topic: str | None,
    beyond: tuple[str, int] | None,
) -> list[HistoryError]:
    """What the conversion observed wrong in `path`, each error at its first line, in one pass: a
    `bad` line (not a torn last line), a line of an `unknown_topic`, one of the partition `beyond`
    its topic's count."""
    valid = source.is_valid()
    conditions: dict[str, Column] = {}
    if bad:
        conditions["bad"] = ~valid
    if unknown_topic is not None:
        conditions["unknown"] = valid & (F.col("topic") == unknown_topic)
    if beyond is not None:
        conditions["beyond"] = valid & (F.col("topic") == beyond[0]) & (F.col("partition") == beyond[1])
    if not conditions:
        return []
    with spark_errors(f"locating the bad lines of {source.name}", str(path)):
        numbered = _numbered(spark, path)
        firsts = [F.min(F.when(c, F.struct("line", "text"))).alias(name) for name, c in conditions.items()]
        found = parse(numbered, source).agg(*firsts).collect()[0]
        line_count = numbered.count() if bad and found["bad"] is not None else 0
    errors: list[HistoryError] = []
    if bad and found["bad"] is not None:
        line, text = int(found["bad"]["line"]), str(found["bad"]["text"])
        # a torn last line of a run killed mid-write: the format promises only a readable prefix
        if line != line_count or _ends_with_newline(path):
            errors.append(HistoryError(source.describe(text), str(path), line))
    if unknown_topic is not None:
        declared = ", ".join(sorted(topic_acks(run)))
        message = f"unknown topic {unknown_topic!r} (run.json declares: {declared})"
        errors.append(HistoryError(message, str(path), _line(found["unknown"])))
    if beyond is not None:
        topic, partition = beyond
        count = partitions_of(run)[topic]
        message = f"partition {partition} of {topic!r}: run.json declares {count} (0 to {count - 1})"
        errors.append(HistoryError(message, str(path), _line(found["beyond"])))
    return errors


def _line(found: Row | None) -> int | None:
    return int(found["line"]) if found is not None else None


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


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
