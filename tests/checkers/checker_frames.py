"""Build checker input frames from handwritten events, without going through files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checker_rundirs import TOPICS
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from checkers.frames import READ_SCHEMA, WRITE_SCHEMA, writes_by_value

TOPIC_ACKS = {str(t["name"]): str(t["acks"]) for t in TOPICS}
TOPIC_PARTITIONS = {str(t["name"]): int(t["partitions"]) for t in TOPICS}


def write_frame(spark: SparkSession, events: Iterable[Mapping[str, Any]]) -> DataFrame:
    rows = [tuple(e.get(f.name) for f in WRITE_SCHEMA.fields) for e in events]
    per_value = writes_by_value(spark.createDataFrame(rows, WRITE_SCHEMA), TOPIC_ACKS)
    return per_value.drop("invokes", "completions")


def read_frame(spark: SparkSession, events: Iterable[Mapping[str, Any]]) -> DataFrame:
    rows = [tuple(e.get(f.name) for f in READ_SCHEMA.fields) for e in events]
    return spark.createDataFrame(rows, READ_SCHEMA)


def assert_frame(frame: DataFrame, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Whole-frame equality: exactly these columns, in order, and exactly these rows, in any order."""
    assert frame.columns == list(columns)
    assertDataFrameEqual(frame, [Row(**dict(zip(columns, row, strict=True))) for row in rows])
