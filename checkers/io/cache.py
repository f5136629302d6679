"""The Parquet cache of a run's history files, converted or parsed once and re-read by re-checks.

writes.jsonl and reads.jsonl are parsed with explicit schemas (by pyarrow into Parquet when it takes
the file whole, `arrow_parse`, else by Spark's JSON reader) and converted by Spark once per run
into Parquet under RUN_DIR/check/parquet/: the read records (pyarrow's Parquet of reads.jsonl as it
is, or Spark's of the columns checks use) and the per-value table, each with its schema;
names.jsonl, the process and error names the per-value table refers to, with their ids; and
ends.jsonl, the reads' end events; and the side files (consumes.jsonl, replicas.jsonl,
cluster.jsonl) as pyarrow parsed them, when it took them (else Spark parses them as the checks read
them). A fingerprint of what the conversion read (a SHA-256 of each file's content, and run.json's
topics) names the cache, RUN_DIR/check/parquet/<digest of the fingerprint>/, and lets a re-check
skip the conversion. A check builds the cache in a directory of its own and publishes it whole
(`checkers.io.published`): checks of one run directory at the same time never share a table.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from pyspark.sql import DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers import frames
from checkers.io import arrow_parse
from checkers.io.bad_lines import first_broken_write, located_errors
from checkers.io.published import building, publish, remove_stale
from checkers.io.sources import (
    CLUSTER_SCHEMA,
    CONSUME_SCHEMA,
    JSON_OPTIONS,
    READS_SOURCE,
    REPLICA_LINE_SCHEMA,
    SOURCES,
    TXN_SCHEMA,
    WRITES_SOURCE,
    Source,
    beyond_declared_partitions,
    topic_acks,
    undeclared_topic,
    uri,
    with_corrupt,
)
from checkers.session import spark_errors
from contract.errors import HistoryError
from contract.history import (
    CHECK_CACHE,
    CLUSTER,
    CONSUMES,
    REPLICAS,
    TRANSACTIONS,
    WRITES,
    fresh_dir,
    remove_dir,
    write_atomic,
)
from contract.history_readers import iter_jsonl

CACHE_VERSION = 15
_FINGERPRINT = "fingerprint.json"
_VALID = "_valid"
_RECORDS = "read_records"
_VALUES = "values"
_SCHEMA_SUFFIX = ".schema.json"
_ENDS = "ends.jsonl"
_NAMES = "names.jsonl"
_PARSED = "_parsed"
"""pyarrow's Parquet of the JSONL files, for the conversion only (`arrow_parse`)."""
_NAMES_SCHEMA = "kind string, id long, name string"
LITERAL_NAMES = 64
"""Up to this many names of a kind are looked up in a literal map, more are joined (`frames.named`)."""

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
SIDE_FILES: dict[str, tuple[str, T.StructType]] = {
    CONSUMES: ("consumes", CONSUME_SCHEMA),
    TRANSACTIONS: ("transactions", TXN_SCHEMA),
    REPLICAS: ("replicas", REPLICA_LINE_SCHEMA),
    CLUSTER: ("cluster", CLUSTER_SCHEMA),
}
"""Optional history files that pyarrow parses, if it takes them, into a cache table (name, schema)
of the columns the checks read; validated line by line in `layout`, not by Spark."""


class CachedHistory(NamedTuple):
    """The cache's tables as `checkers.io.History` holds them, and the valid event counts."""

    counts: dict[str, int]
    values: DataFrame
    reads: DataFrame
    complete_partitions: frames.Partitions
    cache: Path
    """The published cache the tables are read from (`parsed_table` finds the side files' there)."""


class CacheDir(NamedTuple):
    """A directory of cache tables, RUN_DIR/NAME: a check's own build, or the published cache."""

    run_dir: Path
    name: str

    @property
    def path(self) -> Path:
        return self.run_dir / self.name

    def write(self, file: str, text: str) -> None:
        write_atomic(self.run_dir, f"{self.name}/{file}", text)

    def fresh(self, table: str) -> None:
        fresh_dir(self.run_dir, f"{self.name}/{table}")


class ParsedFiles(NamedTuple):
    """What a check does of the conversion before it needs Spark (`parsed_files`)."""

    fingerprint: dict[str, Any]
    cached_counts: dict[str, int] | None
    """The valid event counts of a cache made from the files' present content; None: convert."""
    sources: Mapping[str, arrow_parse.Parsed]
    """What pyarrow made of writes.jsonl and reads.jsonl (none when the cache is there): the files it
    parsed to Parquet are a conversion's to start from; a line it found Spark's parser would misread
    is named by the conversion, unless a line before it is wrong."""
    cache: CacheDir
    """The published cache, or this check's build of it, published by `cached_history`."""
    published: str
    """The name the cache of this fingerprint is published under (relative to the run directory)."""


@contextmanager
def parsed_files(run_dir: Path, run: dict[str, Any], digests: Mapping[str, str]) -> Iterator[ParsedFiles]:
    """Fingerprint writes.jsonl, reads.jsonl and the SIDE_FILES by the SHA-256 `digests` of their
    content (`checkers.io.scanned`: their content, not size and modification time, which an edit
    can keep) and, unless a cache was published from their present content (and run.json's
    topics), parse them with pyarrow into this check's build of it: no Spark, so `kchaos check`
    does it while the JVM starts. The build is deleted as the block ends, unless `cached_history`
    published it; pyarrow's parse of writes.jsonl is deleted before; that of reads.jsonl is the
    read records table (`_convert_into`), those of the side files are kept for the checks
    (`parsed_table`)."""
    fingerprint = {
        "cache_version": CACHE_VERSION,
        "sources": {
            name: digests[name]
            for name in [source.name for source in SOURCES] + list(SIDE_FILES)
            if (run_dir / name).is_file()
        },
        "topics": hashlib.sha256(json.dumps(topic_acks(run), sort_keys=True).encode()).hexdigest(),
    }
    named = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]
    published = CacheDir(run_dir, f"{CHECK_CACHE}/{named}")
    if (run_dir / CHECK_CACHE).is_symlink():
        remove_dir(run_dir, CHECK_CACHE)  # deleted as a link: nothing it points at is touched
    counts = _cached_counts(published.path, fingerprint)
    if counts is not None:
        remove_stale(run_dir, CHECK_CACHE, published.name)
        yield ParsedFiles(fingerprint, counts, {}, published, published.name)
        return
    with building(run_dir, CHECK_CACHE) as name:
        build = CacheDir(run_dir, name)
        build.fresh(_PARSED)
        build.fresh(_RECORDS)
        parsed = {
            s.name: arrow_parse.parquet_of(run_dir / s.name, s.schema, _arrow(build, s), MOSTLY_UNIQUE)
            for s in SOURCES
        }
        for name, (table, schema) in SIDE_FILES.items():
            if (run_dir / name).is_file():
                build.fresh(table)
                side = arrow_parse.parquet_of(
                    run_dir / name, schema, _side_parquet(build.path, name), MOSTLY_UNIQUE
                )
                if side.misread is not None:
                    raise side.misread
        yield ParsedFiles(fingerprint, None, parsed, build, published.name)


def _arrow(cache: CacheDir, source: Source) -> Path:
    """Where pyarrow's Parquet of `source` goes: reads.jsonl's is the read records table itself."""
    if source is READS_SOURCE:
        return cache.path / _RECORDS / "part.parquet"
    return cache.path / _PARSED / "writes.parquet"


def _side_parquet(cache: Path, name: str) -> Path:
    return cache / SIDE_FILES[name][0] / "part.parquet"


def parsed_table(cache: Path, name: str) -> Path | None:
    """pyarrow's Parquet of the side file `name` (a key of SIDE_FILES, with its schema) in the
    published `cache` (`CachedHistory.cache`), made by `parsed_files` from the file's present
    content (it is in the fingerprint); None when pyarrow left the file to Spark."""
    parquet = _side_parquet(cache, name)
    return parquet if parquet.is_file() else None


def cached_history(
    spark: SparkSession, run_dir: Path, run: dict[str, Any], parsed: ParsedFiles
) -> CachedHistory:
    """The run's cached tables, converting writes.jsonl and reads.jsonl first (into this check's
    build, then published) unless `parsed` found the cache made from their present content."""
    cache, counts = parsed.cache, parsed.cached_counts
    if counts is None:
        counts = _convert_into(spark, run_dir, run, parsed)
        cache.write(_FINGERPRINT, json.dumps({**parsed.fingerprint, "events": counts}, indent=2) + "\n")
        remove_dir(run_dir, f"{cache.name}/{_PARSED}")
        made = counts

        def whole(path: Path) -> bool:
            return _cached_counts(path, parsed.fingerprint) == made

        publish(run_dir, cache.name, parsed.published, whole)
        remove_stale(run_dir, CHECK_CACHE, parsed.published)
        cache = CacheDir(run_dir, parsed.published)
    with spark_errors("reading the Parquet cache", str(cache.path)):
        values = frames.named(_read_parquet(spark, cache.path, _VALUES), _name_tables(spark, cache.path))
        reads = _read_records(spark, cache.path)
    complete = frames.complete_partitions(end for _, end in iter_jsonl(cache.path / _ENDS))
    return CachedHistory(counts, values, reads, complete, cache.path)


def _cached_counts(cache: Path, fingerprint: dict[str, Any]) -> dict[str, int] | None:
    """The valid event counts the cache at `cache` was made with, or None when it is missing, not
    whole or of another fingerprint (its fingerprint is written last)."""
    try:
        cached = json.loads((cache / _FINGERPRINT).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(cached, dict) or {k: v for k, v in cached.items() if k != "events"} != fingerprint:
        return None
    events = cached.get("events")
    if not isinstance(events, dict) or set(events) != {"writes", "reads"}:
        return None
    return {str(k): int(v) for k, v in events.items()}


def _convert_into(
    spark: SparkSession, run_dir: Path, run: dict[str, Any], parsed: ParsedFiles
) -> dict[str, int]:
    """Convert both JSONL files to Parquet, validating them; return the valid event counts.

    reads.jsonl becomes its records (`read_records`: what checks read of them, `frames.RECORD_COLUMNS`
    of its `record` events); writes.jsonl goes straight, with the read records, into the per-value
    table (`values`, `frames.value_table`) without an events copy. One Spark job when pyarrow took
    reads.jsonl: its Parquet is the read records table as it is (every line of it valid, or the
    conversion fails), validated while the per-value table is written. Else Spark writes the records
    first, then the per-value table from them.
    """
    build = parsed.cache
    taken_by_arrow = frozenset(name for name, source in parsed.sources.items() if source.taken)
    problems = Observation()
    history_dir = (run_dir / WRITES).parent
    with spark_errors("converting writes.jsonl and reads.jsonl to Parquet", str(history_dir)):
        reads, reads_seen = _observed(spark, build, READS_SOURCE, taken_by_arrow, run)
        if READS_SOURCE.name in taken_by_arrow:
            build.write(f"{_RECORDS}{_SCHEMA_SUFFIX}", READS_SOURCE.schema.json())
            records = reads.where(F.col(_VALID))
        else:
            is_record = F.col(_VALID) & (F.col("type") == "record")
            _write_parquet(build, reads.where(is_record).select("type", *frames.RECORD_COLUMNS), _RECORDS)
            records = _read_records(spark, build.path)
        writes, writes_seen = _observed(spark, build, WRITES_SOURCE, taken_by_arrow, run)
        values = frames.value_table(writes.where(F.col(_VALID)), records, topic_acks(run))
        # Broken write rules are counted as the table is written; found only if there are any.
        values = values.observe(problems, F.count(frames.write_problem()).alias("count"))
        _write_parquet(build, values, _VALUES)
        summaries = {"reads": reads_seen.get, "writes": writes_seen.get}
    counts: dict[str, int] = {}
    for name, source in (("reads", READS_SOURCE), ("writes", WRITES_SOURCE)):
        summary, path = summaries[name], run_dir / source.name
        # What pyarrow's pass found first: on the line Spark's parser misreads, it is the more exact.
        misread = parsed.sources[source.name].misread
        errors = [] if misread is None else [misread]
        errors += located_errors(
            spark,
            path,
            source,
            run,
            bad=bool(summary["bad"]),
            unknown_topic=bool(summary["unknown"]),
            beyond=bool(summary["beyond"]),
        )
        if source is WRITES_SOURCE and problems.get["count"]:
            broken = frames.write_problems(_read_parquet(spark, build.path, _VALUES))
            first = first_broken_write(spark, path, broken, None if misread is None else misread.line)
            errors += [] if first is None else [first]
            if not errors:
                raise AssertionError(f"{path}: a broken write rule that no line of it breaks")
        if errors:  # the first line wrong, whichever way; min keeps the first of equals
            raise min(errors, key=lambda error: error.line if error.line is not None else math.inf)
        counts[name] = int(summary["good"])
    _write_names(build, {kind: summaries["writes"][kind] for kind in frames.NAME_KINDS}, run_dir / WRITES)
    ends = sorted(summaries["reads"]["ends"], key=lambda row: tuple(map(str, row)))
    build.write(_ENDS, _jsonl(end.asDict() for end in ends))
    return counts


def _observed(
    spark: SparkSession,
    build: CacheDir,
    source: Source,
    taken_by_arrow: frozenset[str],
    run: dict[str, Any],
) -> tuple[DataFrame, Observation]:
    """`source`'s events with a `_VALID` column: from pyarrow's Parquet of the file if it took it
    (`parsed_files`), else parsed from JSON by Spark.

    Observed by the first job that reads them, no extra pass: bad lines, valid lines, an undeclared
    topic and a partition beyond its topic's count if any, and the process and error names (few)
    of the writes or the end events (one per partition read to its end: what completeness is
    decided on) of the reads."""
    path = build.run_dir / source.name
    if source.name in taken_by_arrow:
        events = spark.read.schema(source.schema).parquet(uri(_arrow(build, source)))
        events = events.withColumn(frames.CORRUPT, F.lit(None).cast(T.StringType()))
    else:
        events = spark.read.schema(with_corrupt(source.schema)).json(uri(path), **JSON_OPTIONS)
    events = events.withColumn(_VALID, source.is_valid()).drop(frames.CORRUPT)
    valid, observation = F.col(_VALID), Observation()
    if source is WRITES_SOURCE:
        found = [F.collect_set(F.when(valid, frames.name_and_id(k))).alias(k) for k in frames.NAME_KINDS]
    else:
        is_end = valid & (F.col("type") == "end")
        found = [F.collect_set(F.when(is_end, F.struct(*frames.END_COLUMNS))).alias("ends")]
    observed = events.observe(
        observation,
        F.count(F.when(~valid, 1)).alias("bad"),
        F.count(F.when(valid, 1)).alias("good"),
        F.count(F.when(valid & undeclared_topic(run), 1)).alias("unknown"),
        F.count(F.when(valid & beyond_declared_partitions(run), 1)).alias("beyond"),
        *found,
    )
    return observed, observation


def _write_parquet(build: CacheDir, frame: DataFrame, name: str) -> None:
    """Write `frame` as the Parquet table `name` of the cache, with its schema beside it.

    Only the columns whose values repeat are dictionary-encoded: a dictionary of mostly unique values
    fills up and is thrown away, page after page; trying it cost about 5% of a 10M-event conversion's
    CPU (79-88 -> 76.5-77.6 s with dictionaries off altogether). The schema lets `_read_parquet` skip
    the Spark job that would read it from a Parquet footer.
    """
    plain = {f"parquet.enable.dictionary#{c}": "false" for c in frame.columns if c in MOSTLY_UNIQUE}
    frame.write.mode("overwrite").options(**plain).parquet(uri(build.path / name))
    build.write(f"{name}{_SCHEMA_SUFFIX}", frame.schema.json())


def _read_parquet(spark: SparkSession, cache: Path, name: str) -> DataFrame:
    """A cache table, with the schema it was written with, every column nullable as in a Parquet footer."""
    written = T.StructType.fromJson(json.loads((cache / f"{name}{_SCHEMA_SUFFIX}").read_text()))
    schema = T.StructType([T.StructField(f.name, f.dataType, nullable=True) for f in written.fields])
    return spark.read.schema(schema).parquet(uri(cache / name))


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _write_names(build: CacheDir, names: dict[str, list[Row]], path: Path) -> None:
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
    build.write(_NAMES, _jsonl(stored))


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
            stored = spark.read.schema(_NAMES_SCHEMA).json(uri(path))
            tables[kind] = stored.where(F.col("kind") == kind).select("id", "name")
    return tables


def _read_records(spark: SparkSession, cache: Path) -> DataFrame:
    """The stored read records as read events (of type `record`), which the checkers take: the table
    holds pyarrow's rows of every read event, or Spark's of the records only (`_convert_into`)."""
    records = _read_parquet(spark, cache, _RECORDS).where(F.col("type") == "record")
    return records.select("type", *frames.RECORD_COLUMNS)
