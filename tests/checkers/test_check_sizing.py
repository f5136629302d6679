"""Checks on one shared session: settings for each history's size change speed, never results, and
nothing a check kept stays behind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import acked, all_ends, make_run, record, write
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from checkers.check import check_run
from checkers.io import load_history
from checkers.result import build_result
from checkers.session import (
    LOCAL_SHUFFLE_PARTITIONS,
    QUICK_START_BYTES,
    TINY_HISTORY_BYTES,
    empty_frame,
    page_size,
    size_for,
)
from contract.anomaly_kinds import KINDS

pytestmark = pytest.mark.spark

SETTINGS = ("spark.sql.shuffle.partitions", "spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")


@pytest.fixture
def sized(spark: SparkSession) -> Iterator[SparkSession]:
    """The session, its size settings put back after the test."""
    before = {key: spark.conf.get(key) for key in SETTINGS}
    yield spark
    for key, value in before.items():
        spark.conf.set(key, value)


def settings(spark: SparkSession) -> tuple[str | None, ...]:
    return tuple(spark.conf.get(key) for key in SETTINGS)


def test_memory_pages_are_a_2048th_of_the_heap_within_sparks_bounds(spark: SparkSession) -> None:
    sizes = ("1g", "4g", "4096M", "6g", "32g", "1t", "1048576k")
    assert [page_size(m) for m in sizes] == ["1m", "2m", "2m", "4m", "16m", "64m", "1m"]
    assert spark.sparkContext.getConf().get("spark.buffer.pageSize") == "2m"  # the default heap's


def test_each_check_sets_partitions_and_code_generation_for_its_history(sized: SparkSession) -> None:
    cores = str(sized.sparkContext.defaultParallelism)
    size_for(sized, TINY_HISTORY_BYTES - 1)
    assert settings(sized) == ("1", "false", "NO_CODEGEN")
    size_for(sized, TINY_HISTORY_BYTES)
    assert settings(sized) == (cores, "true", "FALLBACK")
    size_for(sized, QUICK_START_BYTES)
    assert settings(sized) == (str(LOCAL_SHUFFLE_PARTITIONS), "true", "FALLBACK")
    size_for(sized, 10)  # and back: one process checks histories of any size in turn
    assert settings(sized) == ("1", "false", "NO_CODEGEN")


def _without_timing(result: dict[str, Any]) -> dict[str, Any]:
    """The verdicts of a result: not its timing, nor what `check_run` adds of the files it read."""
    return {k: v for k, v in result.items() if k not in ("checked_at", "spark", "history_files", "prefix")}


def every_kind(root: Path) -> Path:
    """A run with one anomaly of every kind: lost p:2, divergent at offset 1, duplicate p:1, phantom
    f:1, unexpected x, reordered r:2 (before r:1), and an indeterminate i:1."""
    writes = [
        *acked(100, "p:1", 0),
        *acked(200, "p:2", 1),
        *acked(300, "r:1", 5),
        *acked(310, "r:2", 4),
        write("invoke", 400, "f:1"),
        write("fail", 410, "f:1", error="NOT_ENOUGH_REPLICAS"),
        write("invoke", 500, "i:1"),
    ]
    reads = [
        record(900, "p:1", 0),
        record(900, "i:1", 1),
        record(900, "p:1", 2),
        record(900, "f:1", 3),
        record(900, "r:2", 4),
        record(900, "r:1", 5),
        record(900, "x", 6),
        *all_ends(),
    ]
    return make_run(root, writes, reads)


def test_compiled_or_evaluated_a_history_has_one_result(sized: SparkSession, tmp_path: Path) -> None:
    run_dir = every_kind(tmp_path / "run")
    evaluated = check_run(run_dir)  # a tiny history: evaluated, one shuffle partition
    assert settings(sized) == ("1", "false", "NO_CODEGEN")
    counts = {kind: entry["count"] for kind, entry in evaluated["anomalies"].items()}
    planted = (
        "lost-write",
        "divergent-offset",
        "duplicate",
        "phantom-write",
        "unexpected-value",
        "reordered",
    )
    assert counts == {kind.id: int(kind.id in planted) for kind in KINDS}  # one each, no other
    size_for(sized, QUICK_START_BYTES)  # as a large history is checked: compiled, more partitions
    compiled = build_result(load_history(sized, run_dir), evaluated["checked_at"], evaluated["spark"])
    assert json.loads(json.dumps(_without_timing(compiled))) == _without_timing(evaluated)


def test_a_check_keeps_nothing_once_it_is_done(spark: SparkSession, tmp_path: Path) -> None:
    kept_rdds = spark.sparkContext._jsc.getPersistentRDDs
    before = set(kept_rdds().keys())
    result = check_run(every_kind(tmp_path / "run"))
    assert result["anomalies"]["reordered"]["count"] == 1  # examples were sampled from kept frames
    assert set(kept_rdds().keys()) == before


def test_a_check_releases_only_what_it_kept(spark: SparkSession, tmp_path: Path) -> None:
    def kept_ids() -> set[int]:
        return set(spark.sparkContext._jsc.getPersistentRDDs().keySet().toArray())

    before = kept_ids()
    earlier = spark.range(3).localCheckpoint(eager=True)  # kept before the check, by someone else
    theirs = kept_ids() - before
    check_run(every_kind(tmp_path / "run"))
    assert theirs and kept_ids() == before | theirs
    assert earlier.count() == 3
    for rdd_id in theirs:
        spark.sparkContext._jsc.getPersistentRDDs().get(rdd_id).unpersist(False)


def test_an_empty_frame_has_its_schema_and_no_python_rdd(spark: SparkSession) -> None:
    schema = T.StructType([T.StructField("group", T.StringType()), T.StructField("n", T.LongType())])
    empty = empty_frame(spark, schema)
    assert "ExistingRDD" not in empty._jdf.queryExecution().executedPlan().toString()  # no Python RDD
    assert empty.count() == 0 and [(f.name, f.dataType) for f in empty.schema.fields] == [
        ("group", T.StringType()),
        ("n", T.LongType()),
    ]
