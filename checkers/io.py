"""All file I/O of the checkers: history files in, Parquet cache, check/result.json out.

writes.jsonl and reads.jsonl are parsed by Spark with explicit schemas and converted once per run
into Parquet under RUN_DIR/check/parquet/ (the read records, with only the columns checks use, and
the per-value table, each with its schema; with names.jsonl, the process and error names the
per-value table refers to, with their ids, and ends.jsonl, the reads' end events); a fingerprint of
what the conversion read (a SHA-256 of each file's content, and run.json's topics) lets a re-check
skip the conversion. Lines are only numbered (an extra, slower pass) when something is wrong, to
name the first offending line.
Every file written under the run directory goes through `harness.history`'s no-link writers.
faults.jsonl, cluster.jsonl and client.jsonl are small, read and validated in Python
(`harness.history`) before Spark starts, with run.json.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers import frames, problems
from checkers.session import spark_errors
from harness.broker_logs import LogEvent, read_broker_logs
from harness.errors import HistoryError
from harness.events import FaultWindow, fault_windows
from harness.history import (
    CHECK_CACHE,
    CLUSTER,
    CONSUMES,
    FAULTS,
    NODE_LOGS,
    READS,
    REPLICAS,
    RESULT,
    WRITES,
    fresh_dir,
    iter_client_lines,
    iter_cluster_samples,
    iter_consume_lines,
    iter_fault_events,
    iter_jsonl,
    iter_replica_lines,
    load_run_json,
    write_atomic,
)

CACHE_VERSION = 11
_FINGERPRINT = "fingerprint.json"
_VALID = "_valid"


@dataclass(frozen=True)
class History:
    """A validated run: run.json, per-value table, writes and reads as DataFrames, small files as lists.

    `values` is `frames.value_table` of the history with names (`frames.named`), `writes` its written
    rows (`frames.writes_of`), `reads` the read records (`frames.RECORD_COLUMNS` only) and `ends` the
    `end` events of reads.jsonl (END_COLUMNS only, kept apart: few).
    """

    run: dict[str, Any]
    values: DataFrame
    writes: DataFrame
    reads: DataFrame
    ends: DataFrame
    faults: list[FaultWindow]
    cluster: list[dict[str, Any]]
    event_counts: dict[str, int]
    client_log: list[dict[str, Any]] = field(default_factory=list)
    epochs: DataFrame | None = None
    """Leader and controller epochs as ZooKeeper showed them (`replication.EPOCH_COLUMNS`)."""
    replica_values: DataFrame | None = None
    """What each replica held at the end (`replication.REPLICA_COLUMNS`; empty without replicas.jsonl)."""
    replica_states: list[dict[str, Any]] | None = None
    """replicas.jsonl's `replica` lines (each replica's offsets and what could not be read); None
    without the file."""
    broker_log: list[LogEvent] = field(default_factory=list)
    """The truncations and halts the brokers logged (RUN/logs/kafka-N.log)."""
    consumes: DataFrame | None = None
    """consumes.jsonl (`CONSUME_SCHEMA`, with `seq`: line order); None without the file."""


@dataclass(frozen=True)
class _Source:
    name: str
    schema: T.StructType
    is_valid: Callable[[], Column]
    describe: Callable[[str], str]


_WRITES = _Source(WRITES, frames.WRITE_SCHEMA, frames.write_event_is_valid, problems.describe_write)
_READS = _Source(READS, frames.READ_SCHEMA, frames.read_event_is_valid, problems.describe_read)


def topic_acks(run: dict[str, Any]) -> dict[str, str]:
    return {str(topic["name"]): str(topic["acks"]) for topic in run["topics"]}


SPARK_GLOB_CHARACTERS = "[]{}*?\\"
"""Characters that Spark's file sources read as a glob pattern in a path, with no way to quote them."""


@dataclass(frozen=True)
class Layout:
    """What `check_layout` read and validated: run.json and the small history files."""

    run: dict[str, Any]
    faults: list[FaultWindow]
    fault_events: int
    cluster: list[dict[str, Any]]
    client_log: list[dict[str, Any]]
    replica_states: list[dict[str, Any]] | None
    """None without replicas.jsonl."""
    broker_log: list[LogEvent]
    consume_events: int | None = None
    """Valid lines of consumes.jsonl; None without the file."""


def check_layout(run_dir: Path) -> Layout:
    """Fail fast, before Spark starts, on a missing, unknown-format or invalid run.json,
    faults.jsonl, cluster.jsonl or client.jsonl, a missing history file, or a run directory Spark
    could not name or the check could not write its results in."""
    run = load_run_json(run_dir)
    if found := sorted(set(SPARK_GLOB_CHARACTERS) & set(str(run_dir.resolve()))):
        raise HistoryError(
            f"Spark reads {' '.join(found)} in a path as a glob pattern: move or rename the run directory",
            str(run_dir),
        )
    for source in (_WRITES, _READS):
        if not (run_dir / source.name).is_file():
            raise HistoryError("missing history file", str(run_dir / source.name))
    check_dir = run_dir / RESULT
    for where in (run_dir, check_dir.parent):  # the check writes its cache and result.json there
        if where.exists() and not os.access(where, os.W_OK | os.X_OK):
            raise HistoryError("this user cannot write in it (a check writes check/ there)", str(where))
    fault_events = list(iter_fault_events(run_dir))
    faults = fault_windows(fault_events, str(run_dir / FAULTS))
    cluster = [sample for _, sample in iter_cluster_samples(run_dir)]
    client_log = [line for _, line in iter_client_lines(run_dir)]
    states = [e for _, e in iter_replica_lines(run_dir) if e["type"] == "replica"]
    replica_states = states if (run_dir / REPLICAS).is_file() else None
    broker_log = read_broker_logs(run_dir / NODE_LOGS)
    consume_events = sum(1 for _ in iter_consume_lines(run_dir, run))
    return Layout(
        run,
        faults,
        len(fault_events),
        cluster,
        client_log,
        replica_states,
        broker_log,
        consume_events if (run_dir / CONSUMES).is_file() else None,
    )


def history_bytes(run_dir: Path) -> int:
    """Size of writes.jsonl and reads.jsonl together (what a check has to read)."""
    return sum((run_dir / source.name).stat().st_size for source in (_WRITES, _READS))


def load_history(spark: SparkSession, run_dir: Path, layout: Layout | None = None) -> History:
    """Validate the run directory (unless `layout` says it was) and return its history, converting
    JSONL to Parquet if needed."""
    layout = layout or check_layout(run_dir)
    run, faults, cluster = layout.run, layout.faults, layout.cluster
    cache = run_dir / CHECK_CACHE
    fingerprint = {
        "cache_version": CACHE_VERSION,
        "sources": _content_digests(run_dir),
        "topics": hashlib.sha256(json.dumps(topic_acks(run), sort_keys=True).encode()).hexdigest(),
    }
    counts = _cached_counts(cache / _FINGERPRINT, fingerprint)
    if counts is None:
        counts = _convert(spark, run_dir, run)
        fingerprint_json = json.dumps({**fingerprint, "events": counts}, indent=2) + "\n"
        write_atomic(run_dir, f"{CHECK_CACHE}/{_FINGERPRINT}", fingerprint_json)
    with spark_errors("reading the Parquet cache", str(cache)):
        values = frames.named(_read_parquet(spark, cache, _VALUES), _name_tables(spark, cache))
        reads = _read_records(spark, cache)
        ends = spark.read.schema(frames.END_SCHEMA).json(_uri(cache / _ENDS))
    counts = {
        **counts,
        "faults": layout.fault_events,
        "cluster": len(cluster),
        "client": len(layout.client_log),
    }
    replica_values = _replica_values(spark, run_dir, layout.replica_states is not None)
    writes = frames.writes_of(values)
    if layout.replica_states is not None:
        counts["replicas"] = len(layout.replica_states)
    if layout.consume_events is not None:
        counts["consumes"] = layout.consume_events
    return History(
        run,
        values,
        writes,
        reads,
        ends,
        faults,
        cluster,
        counts,
        layout.client_log,
        _epochs(spark, run_dir),
        replica_values,
        layout.replica_states,
        layout.broker_log,
        _consumes(spark, run_dir) if layout.consume_events is not None else None,
    )


_REPLICA_LINE_SCHEMA = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("broker", T.IntegerType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("values", T.ArrayType(T.StringType())),
    ]
)


_REPLICA_VALUES_SCHEMA = "broker int, topic string, partition int, offset long, value string"


def _replica_values(spark: SparkSession, run_dir: Path, present: bool) -> DataFrame:
    """replicas.jsonl's values, one row per (broker, topic, partition, offset) (none without the
    file); validated line by line in `check_layout` before Spark reads it."""
    if not present:
        return spark.createDataFrame([], _REPLICA_VALUES_SCHEMA)
    lines = spark.read.schema(_REPLICA_LINE_SCHEMA).json(_uri(run_dir / REPLICAS))
    held = lines.where(F.col("type") == "values").select(
        "broker", "topic", "partition", "offset", F.posexplode("values").alias("position", "value")
    )
    return held.select(
        "broker", "topic", "partition", (F.col("offset") + F.col("position")).alias("offset"), "value"
    )


_CLUSTER_SCHEMA = (
    "time_ns long, controller_epoch long, "
    "partitions array<struct<topic: string, partition: int, leader_epoch: long>>"
)


def _epochs(spark: SparkSession, run_dir: Path) -> DataFrame:
    """cluster.jsonl's epochs, read by Spark from the file (validated in `check_layout`): one row per
    sample for the controller epoch and one per sampled partition with a leader epoch."""
    if not (run_dir / CLUSTER).is_file():  # optional: no samples, no epochs
        return spark.createDataFrame([], "time_ns long, topic string, partition int, epoch long")
    samples = spark.read.schema(_CLUSTER_SCHEMA).json(_uri(run_dir / CLUSTER))
    controller = samples.where(F.col("controller_epoch").isNotNull()).select(
        "time_ns",
        F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.col("controller_epoch").alias("epoch"),
    )
    partitions = (
        samples.select("time_ns", F.explode("partitions").alias("p"))
        .where(F.col("p.leader_epoch") >= 0)
        .select("time_ns", "p.topic", "p.partition", F.col("p.leader_epoch").alias("epoch"))
    )
    return controller.unionByName(partitions)


CONSUME_SCHEMA = (
    "type string, time_ns long, process string, `group` string, generation long, topic string, "
    "partition int, offset long, value string, phase string, commit_id long, "
    "offsets array<struct<topic: string, partition: int, offset: long>>, "
    "partitions array<struct<topic: string, partition: int>>, reason string"
)


def _consumes(spark: SparkSession, run_dir: Path) -> DataFrame:
    """consumes.jsonl (validated in `check_layout`) with `seq`, each line's place in the file: a
    member's events are in its own order there, and times of two events may tie."""
    with spark_errors("reading consumes.jsonl", str(run_dir / CONSUMES)):
        lines = spark.read.schema(CONSUME_SCHEMA).json(_uri(run_dir / CONSUMES))
        # A torn last line (a run cut short) reads as all nulls: no event.
        return lines.where(F.col("type").isNotNull()).withColumn("seq", F.monotonically_increasing_id())


def write_result(run_dir: Path, result: dict[str, Any]) -> Path:
    """Write check/result.json atomically."""
    return write_atomic(run_dir, RESULT, json.dumps(result, indent=2) + "\n")


def _uri(path: Path) -> str:
    """`path` as Spark and Hadoop take it: `file://` and the path unquoted (Hadoop quotes it itself;
    `Path.as_uri`'s `my%20runs` would name another directory)."""
    return f"file://{path.resolve()}"


def _content_digests(run_dir: Path) -> dict[str, str]:
    """SHA-256 of writes.jsonl and of reads.jsonl, what the cache was converted from.

    Their content, not size and modification time, which an edit can keep. Both files at once
    (hashlib releases the GIL): 0.72 CPU-s per GB with SHA instructions, a 10M-event history
    (1.38 GB, in the page cache) in 0.7-1.0 s, against a re-check's 30 s or more.
    """
    names = [source.name for source in (_WRITES, _READS)]
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        return dict(zip(names, pool.map(lambda name: _sha256(run_dir / name), names), strict=True))


def _sha256(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise HistoryError(f"cannot read: {exc.strerror or exc}", str(path)) from None


def _cached_counts(fingerprint_path: Path, fingerprint: dict[str, Any]) -> dict[str, int] | None:
    """The valid event counts the cache was made with, or None when it is missing or stale."""
    try:
        cached = json.loads(fingerprint_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(cached, dict) or {k: v for k, v in cached.items() if k != "events"} != fingerprint:
        return None
    events = cached.get("events")
    if not isinstance(events, dict) or set(events) != {"writes", "reads"}:
        return None
    return {str(k): int(v) for k, v in events.items()}


_JSON_OPTIONS = {"columnNameOfCorruptRecord": frames.CORRUPT, "mode": "PERMISSIVE"}


def _with_corrupt(schema: T.StructType) -> T.StructType:
    return T.StructType([*schema.fields, T.StructField(frames.CORRUPT, T.StringType())])


def _parse(lines: DataFrame, source: _Source) -> DataFrame:
    """Parse the `text` column of `lines` like the conversion's JSON reader; blank lines are skipped."""
    parsed = lines.where(F.trim("text") != "").withColumn(
        "event", F.from_json("text", _with_corrupt(source.schema), _JSON_OPTIONS)
    )
    return parsed.select(*lines.columns, "event.*")


def _convert(spark: SparkSession, run_dir: Path, run: dict[str, Any]) -> dict[str, int]:
    """Convert both JSONL files to Parquet, validating them; return the valid event counts.

    reads.jsonl becomes its records (`read_records`, `frames.RECORD_COLUMNS`: what checks read of
    them; the other fields are validated, not stored); writes.jsonl goes straight, with the read
    records, into the per-value table (`values`, `frames.value_table`) without an events copy.
    """
    cache = fresh_dir(run_dir, CHECK_CACHE)  # out with a stale cache, perhaps of another layout
    known_topics = sorted(topic_acks(run))
    counts: dict[str, int] = {}
    problems = Observation()
    for source, name in ((_READS, "reads"), (_WRITES, "writes")):
        path = run_dir / source.name
        with spark_errors(f"converting {source.name} to Parquet", str(path)):
            parsed = spark.read.schema(_with_corrupt(source.schema)).json(_uri(path), **_JSON_OPTIONS)
            parsed = parsed.withColumn(_VALID, source.is_valid()).drop(frames.CORRUPT)
            # Observed while the Parquet is written, no extra pass: bad lines, valid lines, an
            # undeclared topic, if any, and the process and error names (few) of the writes.
            valid, observation = F.col(_VALID), Observation()
            if source is _WRITES:
                found = [
                    F.collect_set(F.when(valid, frames.name_and_id(k))).alias(k) for k in frames.NAME_KINDS
                ]
            else:  # the end events (one per partition read to its end): what completeness is decided on
                is_end = valid & (F.col("type") == "end")
                found = [F.collect_set(F.when(is_end, F.struct(*frames.END_COLUMNS))).alias("ends")]
            observed = parsed.observe(
                observation,
                F.count(F.when(~valid, 1)).alias("bad"),
                F.count(F.when(valid, 1)).alias("good"),
                F.min(F.when(valid & ~F.col("topic").isin(*known_topics), F.col("topic"))).alias("unknown"),
                *found,
            )
            if source is _READS:
                records = observed.where(valid & (F.col("type") == "record"))
                _write_parquet(run_dir, records.select(*frames.RECORD_COLUMNS), _RECORDS)
            else:
                values = frames.value_table(
                    observed.where(valid), _read_records(spark, cache), topic_acks(run)
                )
                # Broken write rules are counted as the table is written; found only if there are any.
                values = values.observe(problems, F.count(frames.write_problem()).alias("count"))
                _write_parquet(run_dir, values, _VALUES)
            summary = observation.get
        if summary["bad"]:
            _raise_first_bad_line(spark, path, source)
        counts[name] = int(summary["good"])
        if summary["unknown"] is not None:
            topic = summary["unknown"]
            line = _first_line_where(spark, path, source, F.col("topic") == topic)
            declared = ", ".join(known_topics)
            raise HistoryError(f"unknown topic {topic!r} (run.json declares: {declared})", str(path), line)
        if source is _WRITES:
            _write_names(run_dir, {kind: summary[kind] for kind in frames.NAME_KINDS}, path)
        else:
            ends = sorted(summary["ends"], key=lambda row: tuple(map(str, row)))
            write_atomic(run_dir, f"{CHECK_CACHE}/{_ENDS}", _jsonl(end.asDict() for end in ends))
    if not problems.get["count"]:
        return counts
    with spark_errors("locating a broken write rule", str(run_dir / WRITES)):
        bad_value = frames.write_problems(_read_parquet(spark, cache, _VALUES)).limit(1).collect()
    if bad_value:
        value, reason = bad_value[0]["value"], bad_value[0]["reason"]
        path = run_dir / WRITES
        line = _offending_write_line(spark, path, value, reason)
        raise HistoryError(f"{reason}: value {value!r}", str(path), line)
    return counts


MOSTLY_UNIQUE = (
    "value",
    "time_ns",
    "offset",
    "invoke_ns",
    "complete_ns",
    "ack_offset",
    "offset_low",
    "offset_high",
)
"""Cached columns whose values rarely repeat: stored without Parquet's dictionary encoding."""


def _write_parquet(run_dir: Path, frame: DataFrame, name: str) -> None:
    """Write `frame` as the Parquet table `name` of the cache, with its schema beside it.

    Only the columns whose values repeat are dictionary-encoded: a dictionary of mostly unique values
    fills up and is thrown away, page after page; trying it cost about 5% of a 10M-event conversion's
    CPU (79-88 -> 76.5-77.6 s with dictionaries off altogether). The schema lets `_read_parquet` skip
    the Spark job that would read it from a Parquet footer.
    """
    plain = {f"parquet.enable.dictionary#{c}": "false" for c in frame.columns if c in MOSTLY_UNIQUE}
    frame.write.mode("overwrite").options(**plain).parquet(_uri(run_dir / CHECK_CACHE / name))
    write_atomic(run_dir, f"{CHECK_CACHE}/{name}{_SCHEMA_SUFFIX}", frame.schema.json())


def _read_parquet(spark: SparkSession, cache: Path, name: str) -> DataFrame:
    """A cache table, with the schema it was written with, every column nullable as in a Parquet footer."""
    written = T.StructType.fromJson(json.loads((cache / f"{name}{_SCHEMA_SUFFIX}").read_text()))
    schema = T.StructType([T.StructField(f.name, f.dataType, nullable=True) for f in written.fields])
    return spark.read.schema(schema).parquet(_uri(cache / name))


_RECORDS = "read_records"
_VALUES = "values"
_SCHEMA_SUFFIX = ".schema.json"
_ENDS = "ends.jsonl"
_NAMES = "names.jsonl"
_NAMES_SCHEMA = "kind string, id long, name string"
LITERAL_NAMES = 64
"""Up to this many names of a kind are looked up in a literal map, more are joined (`frames.named`)."""


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _write_names(run_dir: Path, names: dict[str, list[Row]], path: Path) -> None:
    """Store the names the per-value table refers to, with their ids (`frames.name_and_id`: Spark's
    hash of each name, observed as the table was written)."""
    by_id: dict[tuple[str, int], str] = {}
    for kind, rows in names.items():
        for row in rows:
            if by_id.setdefault((kind, row["id"]), row["name"]) != row["name"]:
                # Two names with one 64-bit hash: never seen, but it would be wrong.
                raise HistoryError(
                    "two process or error names share an id (a 64-bit hash); rename one", str(path)
                )
    stored = ({"kind": kind, "id": id_, "name": name} for (kind, id_), name in sorted(by_id.items()))
    write_atomic(run_dir, f"{CHECK_CACHE}/{_NAMES}", _jsonl(stored))


def _name_tables(spark: SparkSession, cache: Path) -> dict[str, frames.NameTable]:
    """The stored names by kind: a mapping when few, else a frame read by Spark (see `frames.named`)."""
    path = cache / _NAMES
    by_kind: dict[str, dict[int, str]] = {kind: {} for kind in frames.NAME_KINDS}
    for _, row in iter_jsonl(path):
        by_kind[row["kind"]][int(row["id"])] = row["name"]
    tables: dict[str, frames.NameTable] = {}
    for kind, names in by_kind.items():
        if len(names) <= LITERAL_NAMES:
            tables[kind] = names
        else:
            stored = spark.read.schema(_NAMES_SCHEMA).json(_uri(path))
            tables[kind] = stored.where(F.col("kind") == kind).select("id", "name")
    return tables


def _read_records(spark: SparkSession, cache: Path) -> DataFrame:
    """The stored read records as read events (of type `record`), which the checkers take."""
    return _read_parquet(spark, cache, _RECORDS).select(F.lit("record").alias("type"), "*")


def _numbered(spark: SparkSession, path: Path) -> DataFrame:
    """(line, text) of a file, 1-based. Slow (Python serialization): only used to name a bad line."""
    numbered = spark.sparkContext.textFile(_uri(path)).zipWithIndex().map(lambda pair: (pair[1] + 1, pair[0]))
    schema = T.StructType([T.StructField("line", T.LongType()), T.StructField("text", T.StringType())])
    return spark.createDataFrame(numbered, schema)


def _raise_first_bad_line(spark: SparkSession, path: Path, source: _Source) -> None:
    with spark_errors(f"locating the bad line of {source.name}", str(path)):
        numbered = _numbered(spark, path)
        parsed = _parse(numbered, source)
        first_bad = parsed.where(~source.is_valid()).orderBy("line").select("line", "text").limit(1).collect()
        line_count = numbered.count()
    if not first_bad:
        return
    line, text = int(first_bad[0]["line"]), str(first_bad[0]["text"])
    if line == line_count and not _ends_with_newline(path):
        return  # a torn last line of a run killed mid-write: the format promises only a readable prefix
    raise HistoryError(source.describe(text), str(path), line)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _first_line_where(spark: SparkSession, path: Path, source: _Source, condition: Column) -> int | None:
    with spark_errors(f"locating a line of {source.name}", str(path)):
        parsed = _parse(_numbered(spark, path), source)
        found = parsed.where(condition).agg(F.min("line").alias("line")).collect()
    return int(found[0]["line"]) if found and found[0]["line"] is not None else None


def _offending_write_line(spark: SparkSession, path: Path, value: str, reason: str) -> int | None:
    """The line that breaks the rule: the orphan completion, or the second invoke or completion."""
    with spark_errors("locating a line of writes.jsonl", str(path)):
        parsed = _parse(_numbered(spark, path), _WRITES)
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
