"""The history files Spark parses (writes.jsonl, reads.jsonl; consumes.jsonl, replicas.jsonl,
cluster.jsonl), and how it is told where files are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers import frames, problems
from contract.history import READS, WRITES


@dataclass(frozen=True)
class Source:
    """A history file Spark parses: its name, schema, what makes an event valid, how to say why not."""

    name: str
    schema: T.StructType
    validity: Callable[[], Column]
    describe: Callable[[str], str]

    def is_valid(self) -> Column:
        """True for a line that follows the format, false for any other: never null. (A null field
        makes a condition on it null, `isin` too: a line whose `type` is null would be neither
        valid nor bad, and go uncounted.)"""
        return F.coalesce(self.validity(), F.lit(False))


WRITES_SOURCE = Source(WRITES, frames.WRITE_SCHEMA, frames.write_event_is_valid, problems.describe_write)
READS_SOURCE = Source(READS, frames.READ_SCHEMA, frames.read_event_is_valid, problems.describe_read)
SOURCES = (WRITES_SOURCE, READS_SOURCE)

_POSITION_FIELDS = [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())]
CONSUME_SCHEMA = frames.CONSUME_SCHEMA
TXN_SCHEMA = frames.TXN_SCHEMA
REPLICA_LINE_SCHEMA = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("broker", T.IntegerType()),
        *_POSITION_FIELDS,
        T.StructField("offset", T.LongType()),
        T.StructField("values", T.ArrayType(T.StringType())),
    ]
)
"""replicas.jsonl's fields the replica checks read (validated line by line in `layout`)."""
CLUSTER_SCHEMA = T.StructType(
    [
        T.StructField("time_ns", T.LongType()),
        T.StructField("controller_epoch", T.LongType()),
        T.StructField(
            "partitions",
            T.ArrayType(
                T.StructType(
                    [
                        *_POSITION_FIELDS,
                        T.StructField("leader_epoch", T.LongType()),
                        T.StructField("isr", T.ArrayType(T.IntegerType())),
                    ]
                )
            ),
        ),
    ]
)
"""cluster.jsonl's fields the epoch and ISR checks read (validated line by line in `layout`)."""

JSON_OPTIONS = {
    "columnNameOfCorruptRecord": frames.CORRUPT,
    "mode": "PERMISSIVE",
    "allowSingleQuotes": "false",
}
"""Spark's JSON reader, as strict as JSON: by default it takes 'single-quoted' strings too."""


def topic_acks(run: dict[str, Any]) -> dict[str, str]:
    return {str(topic["name"]): str(topic["acks"]) for topic in run["topics"]}


def partitions_of(run: dict[str, Any]) -> dict[str, int]:
    """How many partitions run.json declares for each topic."""
    return {str(topic["name"]): int(topic["partitions"]) for topic in run["topics"]}


def undeclared_topic(run: dict[str, Any]) -> Column:
    """True for an event of a topic run.json does not declare."""
    return ~F.col("topic").isin(*partitions_of(run))


def beyond_declared_partitions(run: dict[str, Any]) -> Column:
    """True for an event of a partition beyond its topic's declared count (null: undeclared topic)."""
    counts = partitions_of(run)
    declared = F.create_map(*[F.lit(v) for topic, n in sorted(counts.items()) for v in (topic, n)])
    return F.col("partition") >= declared[F.col("topic")]


def uri(path: Path) -> str:
    """`path` as Spark and Hadoop take it: `file://` and the path unquoted (Hadoop quotes it itself;
    `Path.as_uri`'s `my%20runs` would name another directory)."""
    return f"file://{path.resolve()}"


def with_corrupt(schema: T.StructType) -> T.StructType:
    return T.StructType([*schema.fields, T.StructField(frames.CORRUPT, T.StringType())])


def parse(lines: DataFrame, source: Source) -> DataFrame:
    """Parse the `text` column of `lines` like the conversion's JSON reader; blank lines are skipped."""
    parsed = lines.where(F.trim("text") != "").withColumn(
        "event", F.from_json("text", with_corrupt(source.schema), JSON_OPTIONS)
    )
    return parsed.select(*lines.columns, "event.*")
