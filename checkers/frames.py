"""Explicit schemas of the history files and the normalized frames every checker starts from.

Pure DataFrame -> DataFrame functions; `checkers.io` is the only package that reads or writes files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contract.events import (
    CONSUME_FIELDS,
    READ_FIELDS,
    READ_PHASES,
    READ_TYPES,
    TXN_FIELDS,
    WRITE_FIELDS,
    WRITE_TYPES,
    Field,
    FieldType,
)
from contract.limits import MAX_RUN_NS

CORRUPT = "_corrupt"
"""Column holding the raw text of a line Spark could not parse into the schema."""

_POSITION = [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())]
_SPARK_TYPES: dict[FieldType, T.DataType] = {
    "string": T.StringType(),
    "int": T.IntegerType(),
    "long": T.LongType(),
    "partitions": T.ArrayType(T.StructType(_POSITION)),
    "offsets": T.ArrayType(T.StructType([*_POSITION, T.StructField("offset", T.LongType())])),
}


def _schema(fields: tuple[Field, ...]) -> T.StructType:
    return T.StructType([T.StructField(f.name, _SPARK_TYPES[f.type]) for f in fields])


WRITE_SCHEMA = _schema(WRITE_FIELDS)
READ_SCHEMA = _schema(READ_FIELDS)
CONSUME_SCHEMA = _schema(CONSUME_FIELDS)
"""consumes.jsonl's fields the group checks read (validated line by line in `checkers.io.layout`)."""
TXN_SCHEMA = _schema(TXN_FIELDS)
"""transactions.jsonl's fields (validated line by line in `checkers.io.layout`)."""


RECORD_COLUMNS = ["phase", "topic", "partition", "offset", "value"]
"""What checks read of a `record` event (its time and process are only validated)."""
END_COLUMNS = ["type", "phase", "topic", "partition", "log_start", "high_watermark"]
"""What an `end` event says (a final one: its partition was read to the high watermark).

Kept whole: a field no query reads is not parsed at all, so keeping the watermarks is also what
makes a line with a mistyped one a bad line (`checkers.io` parses the history once)."""

Partitions = frozenset[tuple[str, int]]
"""Some (topic, partition) pairs: few, held by the driver and given to queries as literals."""


def complete_partitions(ends: Iterable[Mapping[str, Any]]) -> Partitions:
    """(topic, partition) whose final read reached its high watermark: with a final `end` event (a
    live reader's end says nothing of the final read)."""
    return frozenset(
        (str(end["topic"]), int(end["partition"]))
        for end in ends
        if end.get("type") == "end" and end.get("phase") == "final"
    )


def on_partitions(
    partitions: Partitions, topic_column: str = "topic", partition_column: str = "partition"
) -> Column:
    """True for a row whose (`topic`, `partition`) (or the columns named) is one of `partitions`,
    false otherwise (null too).

    A literal condition, not a join with a frame of them: no broadcast job, and a plan Spark
    analyzes quickly (keeping the per-value flags, warm: 0.6-1.1 s -> 0.33-0.38 s for 60 events,
    0.6 s -> 0.3 s for a real 60-s run)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    condition = F.lit(False)
    for topic, numbers in by_topic.items():
        condition = condition | ((F.col(topic_column) == topic) & F.col(partition_column).isin(*numbers))
    return F.coalesce(condition, F.lit(False))


def _all_present(*names: str) -> Column:
    condition = F.lit(True)
    for name in names:
        condition = condition & F.col(name).isNotNull()
    return condition


def _in_run() -> Column:
    """time_ns within the longest run (the small files are held to the same bound)."""
    return F.col("time_ns").between(0, MAX_RUN_NS)


COUNTED_FROM_ZERO = ("partition", "offset", "log_start", "high_watermark", "txn")


def _from_zero(schema: T.StructType) -> Column:
    """The schema's partitions, offsets and watermarks count from 0 (a null is `_all_present`'s)."""
    condition = F.lit(True)
    for name in (n for n in COUNTED_FROM_ZERO if n in schema.fieldNames()):
        condition = condition & F.coalesce(F.col(name) >= 0, F.lit(True))
    return condition


def write_event_is_valid() -> Column:
    """True for a writes.jsonl line that follows the format (see `problems.describe_write`)."""
    return (
        F.col(CORRUPT).isNull()
        & F.col("type").isin(*WRITE_TYPES)
        & _all_present("time_ns", "process", "topic", "partition", "value")
        & _in_run()
        & _from_zero(WRITE_SCHEMA)
    )


def read_event_is_valid() -> Column:
    """True for a reads.jsonl line that follows the format (see `problems.describe_read`)."""
    is_record = F.col("type") == "record"
    return (
        F.col(CORRUPT).isNull()
        & F.col("type").isin(*READ_TYPES)
        & F.col("phase").isin(*READ_PHASES)
        & _all_present("time_ns", "process", "topic", "partition")
        & (~is_record | _all_present("offset", "value"))
        & _in_run()
        & _from_zero(READ_SCHEMA)
    )


def acks_of(topic: Column, topic_acks: Mapping[str, str]) -> Column:
    """The acks mode a topic is written with, from run.json."""
    pairs: list[Column] = []
    for name, acks in sorted(topic_acks.items()):
        pairs += [F.lit(name), F.lit(acks)]
    return F.create_map(*pairs)[topic]


POSITION = ["topic", "partition", "offset"]
WRITE_COLUMNS = [
    "value",
    "topic",
    "partition",
    "acks",
    "process",
    "invoke_ns",
    "complete_ns",
    "outcome",
    "ack_offset",
    "error",
    "txn",
]
READ_COLUMNS = [
    "read",
    "read_topic",
    "read_low",
    "read_high",
    "offset_low",
    "offset_high",
    "final_low",
    "final_high",
    "write_slot",
]
"""What `value_table` says of a value's reads; `*_low`/`*_high` and `write_slot` are `slot`s."""

_PARTITION_BIAS = 1 << 31
_SLOT_PARTITION_BITS = 32


def topic_names(topic_acks: Mapping[str, str]) -> list[str]:
    """run.json's topics in the order of their index in a `slot`."""
    return sorted(topic_acks)


def slot(topic_index: Column, partition: Column) -> Column:
    """(topic, partition) as one long that orders like the pair: the topic's index, then the partition."""
    return F.shiftleft(topic_index.cast("long"), _SLOT_PARTITION_BITS) + (
        partition.cast("long") + _PARTITION_BIAS
    )


def slot_topic_index(slot_column: Column) -> Column:
    return F.shiftright(slot_column, _SLOT_PARTITION_BITS).cast("int")


def _literals(items: list[str] | tuple[str, ...]) -> Column:
    return F.array(*[F.lit(item) for item in items])


def topic_of_index(index: Column, topics: list[str]) -> Column:
    return F.element_at(_literals(topics), index + 1)


def _name_id(column: str) -> Column:
    """The id of a process or error name (null for none): the one definition both sides share."""
    return F.when(F.col(column).isNotNull(), F.xxhash64(column))


def name_and_id(column: str) -> Column:
    """A process or error name with the id `value_table` gives it: struct (name, id), null for none."""
    named = F.struct(F.col(column).alias("name"), _name_id(column).alias("id"))
    return F.when(F.col(column).isNotNull(), named)


def names_of(write_events: DataFrame) -> DataFrame:
    """Every process and error name of the write events, with its id: (kind, id, name) rows."""
    kinds = [write_events.select(F.lit(k).alias("kind"), name_and_id(k).alias("n")) for k in NAME_KINDS]
    named_rows = kinds[0].unionByName(kinds[1]).where(F.col("n").isNotNull())
    return named_rows.select("kind", "n.id", "n.name").distinct()


def value_table(write_events: DataFrame, read_events: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """One row per value written or read: its write, and what the reads saw of it, in one pass.

    The write columns (WRITE_COLUMNS, with `process_id` and `error_id` for `process` and `error`:
    see `named`) say where it went, when it was invoked and completed, and how; a write with no
    completion is `info` (indeterminate). `invokes` and `completions` count its events so that
    malformed histories (a value written twice, a completion with no invoke) can be reported.
    `written` and `read` say which side exists (write columns are null for a value only read).
    READ_COLUMNS: `read_low`/`read_high` are the smallest and largest (topic, partition) it was read
    at and `read_topic` the first of those topics, `offset_low`/`offset_high` the smallest and
    largest offset, `final_low`/`final_high` the smallest and largest (topic, partition) of its final
    reads, and `write_slot` the (topic, partition) it was written to.
    """
    topics = topic_names(topic_acks)
    index = F.create_map(*[x for i, name in enumerate(topics) for x in (F.lit(name), F.lit(i))])
    read_rows = read_events.where(F.col("type") == "record").select(
        "value",
        index[F.col("topic")].alias("topic_index"),
        "partition",
        "offset",
        (F.col("phase") == "final").alias("final"),
    )
    write_rows = write_events.select(
        (F.array_position(_literals(WRITE_TYPES), F.col("type")) - 1).cast("int").alias("code"),
        "time_ns",
        _name_id("process").alias("process_id"),
        index[F.col("topic")].alias("topic_index"),
        "partition",
        "offset",
        "value",
        _name_id("error").alias("error_id"),
        "txn",
    )
    rows = write_rows.unionByName(read_rows, allowMissingColumns=True)
    code = F.col("code")  # index in WRITE_TYPES: 0 invoke, 1 ok, 2 fail, 3 info; null for a read
    is_write, is_invoke, is_completion = code.isNotNull(), code == 0, code > 0
    is_read = F.col("final").isNotNull()
    read_slot = F.when(is_read, slot(F.col("topic_index"), F.col("partition")))
    # Only numbers in the aggregation buffers: Spark then hash-aggregates (strings there would make
    # it sort every event), which is most of what converting a history costs.
    per_value = (
        rows.groupBy("value")
        .agg(
            F.count(F.when(is_invoke, 1)).alias("invokes"),
            F.count(F.when(is_completion, 1)).alias("completions"),
            F.max(F.when(is_write, F.col("topic_index"))).alias("topic_index"),
            F.max(F.when(is_invoke, F.col("process_id"))).alias("process_id"),
            F.max(F.when(is_completion & (F.col("partition") >= 0), F.col("partition"))).alias(
                "completed_at"
            ),
            F.max(F.when(is_invoke, F.col("partition"))).alias("invoked_at"),
            F.min(F.when(is_invoke, F.col("time_ns"))).alias("invoke_ns"),
            F.max(F.when(is_completion, F.col("time_ns"))).alias("complete_ns"),
            F.max(F.when(is_completion, code)).alias("completion"),
            F.max(F.when(code == 1, F.col("offset"))).alias("ack_offset"),
            F.max(F.when(is_completion, F.col("error_id"))).alias("error_id"),
            F.max(F.when(is_invoke, F.col("txn"))).alias("txn"),
            F.max(is_read).alias("read"),
            F.min(read_slot).alias("read_low"),
            F.max(read_slot).alias("read_high"),
            F.min(F.when(is_read, F.col("offset"))).alias("offset_low"),
            F.max(F.when(is_read, F.col("offset"))).alias("offset_high"),
            F.min(F.when(F.col("final"), read_slot)).alias("final_low"),
            F.max(F.when(F.col("final"), read_slot)).alias("final_high"),
        )
        .withColumn("written", F.col("invokes") + F.col("completions") > 0)
        .withColumn("partition", F.coalesce("completed_at", "invoked_at"))
        .withColumn("topic", topic_of_index(F.col("topic_index"), topics))
        .withColumn("read_topic", topic_of_index(slot_topic_index(F.col("read_low")), topics))
        .withColumn("write_slot", slot(F.col("topic_index"), F.col("partition")))
    )
    outcome = F.element_at(_literals(WRITE_TYPES), F.col("completion") + 1)
    return per_value.select(
        "value",
        "topic",
        "partition",
        acks_of(F.col("topic"), topic_acks).alias("acks"),
        "process_id",
        "invoke_ns",
        "complete_ns",
        F.when(F.col("written"), F.coalesce(outcome, F.lit("info"))).alias("outcome"),
        "ack_offset",
        "error_id",
        "txn",
        "invokes",
        "completions",
        "written",
        *READ_COLUMNS,
    )


NAME_KINDS = ("process", "error")
NameTable = Mapping[int, str] | DataFrame
"""The names of one kind by id: a few as a mapping, many as an (id, name) frame."""


def named(values: DataFrame, names: Mapping[str, NameTable]) -> DataFrame:
    """`value_table` with `process` and `error` names in place of their ids.

    A kind's names given as a mapping become a literal map looked up per row, a column that Spark
    drops from every query that does not use it (most of them); a lookup scans the map, so many
    names are given as a frame instead and joined.
    """
    for kind in NAME_KINDS:
        table, id_column = names[kind], f"{kind}_id"
        if isinstance(table, DataFrame):
            renamed = table.select(F.col("id").alias(id_column), F.col("name").alias(kind))
            values = values.join(F.broadcast(renamed), id_column, "left")
        elif table:
            lookup = F.create_map(*[F.lit(x) for id_, name in sorted(table.items()) for x in (id_, name)])
            values = values.withColumn(kind, lookup[F.col(id_column)])
        else:
            values = values.withColumn(kind, F.lit(None).cast("string"))
    return values.select(*WRITE_COLUMNS, "invokes", "completions", "written", *READ_COLUMNS)


def writes_of(values: DataFrame) -> DataFrame:
    """The written values of `named` values, with WRITE_COLUMNS only: one row per write."""
    return values.where(F.col("written")).select(*WRITE_COLUMNS)


def write_problem() -> Column:
    """Why a `value_table` row's events break the one-invoke-at-most-one-completion rule, or null."""
    return (
        F.when((F.col("invokes") == 0) & (F.col("completions") > 0), F.lit("completion with no invoke"))
        .when(F.col("invokes") > 1, F.lit("value written twice (invoked more than once)"))
        .when(F.col("completions") > 1, F.lit("value written twice (completed more than once)"))
    )


def write_problems(writes: DataFrame) -> DataFrame:
    """Values whose events break the one-invoke-at-most-one-completion rule, with the reason."""
    return writes.select("value", write_problem().alias("reason")).where(F.col("reason").isNotNull())
