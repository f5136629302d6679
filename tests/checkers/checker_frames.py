"""Build checker input frames from handwritten events, without going through files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checker_rundirs import TOPICS, run_json
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from checkers.frames import (
    NAME_KINDS,
    READ_SCHEMA,
    WRITE_SCHEMA,
    NameTable,
    complete_partitions,
    named,
    names_of,
    value_table,
    writes_of,
)
from checkers.io import History
from checkers.registry import Checker, CheckInputs

TOPIC_ACKS = {str(t["name"]): str(t["acks"]) for t in TOPICS}
TOPIC_PARTITIONS = {str(t["name"]): int(t["partitions"]) for t in TOPICS}


def write_frame(spark: SparkSession, events: Iterable[Mapping[str, Any]]) -> DataFrame:
    rows = [tuple(e.get(f.name) for f in WRITE_SCHEMA.fields) for e in events]
    return spark.createDataFrame(rows, WRITE_SCHEMA)


def read_frame(spark: SparkSession, events: Iterable[Mapping[str, Any]]) -> DataFrame:
    rows = [tuple(e.get(f.name) for f in READ_SCHEMA.fields) for e in events]
    return spark.createDataFrame(rows, READ_SCHEMA)


def name_tables(write_events: DataFrame, *, joined: bool = False) -> dict[str, NameTable]:
    """The process and error names of these events by kind: mappings, or frames to join if `joined`."""
    names = names_of(write_events)
    if joined:
        return {kind: names.where(names.kind == kind).select("id", "name") for kind in NAME_KINDS}
    rows = names.collect()
    return {kind: {row["id"]: row["name"] for row in rows if row["kind"] == kind} for kind in NAME_KINDS}


def values_of(write_events: DataFrame, read_events: DataFrame, *, joined: bool = False) -> DataFrame:
    """The per-value table of these events, as a check computes it when converting a history."""
    table = value_table(write_events, read_events, TOPIC_ACKS)
    return named(table, name_tables(write_events, joined=joined))


def per_value_writes(write_events: DataFrame) -> DataFrame:
    """One row per written value (no reads needed for the write columns)."""
    no_reads = write_events.sparkSession.createDataFrame([], READ_SCHEMA)
    return writes_of(values_of(write_events, no_reads))


def inputs_of(write_events: DataFrame, read_events: DataFrame) -> CheckInputs:
    """Checker inputs for these events, as a check builds them from a converted history."""
    values = values_of(write_events, read_events)
    spark = write_events.sparkSession
    history = History(
        run_json(),
        values,
        writes_of(values),
        read_events.where(read_events.type == "record"),
        complete_partitions(row.asDict() for row in read_events.where(read_events.type == "end").collect()),
        [],
        [],
        {},
        epochs=spark.createDataFrame([], "time_ns long, topic string, partition int, epoch long"),
        replica_values=spark.createDataFrame(
            [], "broker int, topic string, partition int, offset long, value string"
        ),
    )
    return CheckInputs.of(history).settled()


def anomalies_found(checker: type[Checker], write_events: DataFrame, read_events: DataFrame) -> DataFrame:
    """Every anomaly `checker` finds in these events, with the details a check gives its examples."""
    found: Checker = checker()
    inputs = inputs_of(write_events, read_events)
    return found.details(found.find(inputs), inputs.history.reads)


def assert_frame(frame: DataFrame, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Whole-frame equality: exactly these columns, in order, and exactly these rows, in any order."""
    assert frame.columns == list(columns)
    assertDataFrameEqual(frame, [Row(**dict(zip(columns, row, strict=True))) for row in rows])
