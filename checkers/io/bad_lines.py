"""Naming the first offending line of writes.jsonl or reads.jsonl, once a conversion found one.

Lines are only numbered (an extra, slower pass through Python) when something is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.io.sources import (
    WRITES_SOURCE,
    Source,
    beyond_declared_partitions,
    parse,
    partitions_of,
    topic_acks,
    undeclared_topic,
    uri,
)
from checkers.session import spark_errors
from contract.errors import HistoryError
from contract.limits import brief


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
    unknown_topic: bool,
    beyond: bool,
) -> list[HistoryError]:
    """What the conversion observed wrong in `path`, each kind at its first line: a `bad` line, a
    line of a topic run.json does not declare (`unknown_topic`), one of a partition beyond its
    topic's count (`beyond`). One pass over the numbered file (whole lines only:
    `checkers.io.scanned` refused or cut off a torn tail)."""
    valid, counts = source.is_valid(), partitions_of(run)
    conditions: dict[str, Column] = {}
    if bad:
        conditions["bad"] = ~valid
    if unknown_topic:
        conditions["unknown"] = valid & undeclared_topic(run)
    if beyond:
        conditions["beyond"] = valid & beyond_declared_partitions(run)
    if not conditions:
        return []
    with spark_errors(f"locating the bad lines of {source.name}", str(path)):
        numbered = _numbered(spark, path)
        at = F.struct("line", "text", "topic", "partition")
        found = parse(numbered, source).agg(*[F.min(F.when(c, at)).alias(k) for k, c in conditions.items()])
        first = found.collect()[0]
    errors: list[HistoryError] = []
    if bad and first["bad"] is not None:
        line, text = int(first["bad"]["line"]), str(first["bad"]["text"])
        errors.append(HistoryError(source.describe(text), str(path), line))
    if unknown_topic and first["unknown"] is not None:
        row = first["unknown"]
        names = ", ".join(sorted(topic_acks(run)))
        message = f"unknown topic {row['topic']!r} (run.json declares: {names})"
        errors.append(HistoryError(message, str(path), int(row["line"])))
    if beyond and first["beyond"] is not None:
        row = first["beyond"]
        topic, partition, count = row["topic"], int(row["partition"]), counts[row["topic"]]
        message = f"partition {partition} of {topic!r}: run.json declares {count} (0 to {count - 1})"
        errors.append(HistoryError(message, str(path), int(row["line"])))
    return errors


def first_broken_write(
    spark: SparkSession, path: Path, problems: DataFrame, before: int | None
) -> HistoryError | None:
    """The first line of writes.jsonl that breaks the one-invoke-at-most-one-completion rule, of the
    values in `problems` (`frames.write_problems`: value, reason): a completion with no invoke, or a
    value's second invoke or second completion; only lines `before` the one given count (None: all).

    A line whose value is not a string (which `arrow_parse` names: `before` is its line) holds
    another text here than in the conversion (Spark's JSON reader keeps a value's text as written,
    `from_json` rewrites it): its value matches none of `problems`, and none is found for it."""
    with spark_errors("locating a broken write rule", str(path)):
        events = parse(_numbered(spark, path), WRITES_SOURCE).join(problems, "value")
        lines = events.groupBy("value", "reason").agg(
            F.sort_array(F.collect_list(F.when(F.col("type") == "invoke", F.col("line")))).alias("invokes"),
            F.sort_array(F.collect_list(F.when(F.col("type") != "invoke", F.col("line")))).alias(
                "completions"
            ),
        )
        second = F.when(F.col("reason").contains("invoked"), F.try_element_at("invokes", F.lit(2))).when(
            F.col("reason").contains("completed"), F.try_element_at("completions", F.lit(2))
        )
        line = F.coalesce(second, F.try_element_at("completions", F.lit(1))).alias("line")
        found = lines.select("value", "reason", line)
        if before is not None:
            found = found.where(F.col("line") < before)
        first = found.orderBy(F.col("line").asc_nulls_last()).limit(1).collect()
    if not first:
        return None
    value, reason, number = first[0]["value"], first[0]["reason"], first[0]["line"]
    return HistoryError(f"{reason}: value {brief(value)}", str(path), None if number is None else int(number))
