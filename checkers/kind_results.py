"""Each anomaly kind of check/result.json (docs/RESULT_FORMAT.md): its counts per topic and second of
the ack, and its capped examples with their evidence, from the registered checkers' DataFrames; and
how a check runs its parts side by side (`submit_part`).

Only small aggregates reach the driver: counts per topic and second, and the capped examples.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from typing import Any, TypeVar

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers import (
    anomalies,
    availability,
    checks,  # noqa: F401  (the built-in checkers register themselves)
)
from checkers.checker import Checker, CheckInputs, registered
from checkers.evidence import ClientLog, ClusterTimeline, TruncationLog, active_fault_names
from checkers.io import History
from checkers.session import kept
from harness.contract.events import FaultWindow
from harness.limits import MAX_RUN_NS

EXAMPLE_CAP = 50
_EXAMPLE_ORDER = ("complete_ns", "topic", "partition", "offset", "value")
_OFFSET_KEYS = ("offset", "ack_offset", "read_offset")
"""Where an example's write sits, for the truncations below it."""


_T = TypeVar("_T")


def submit_part(
    pool: ThreadPoolExecutor,
    context: SparkContext,
    scheduler_pool: str,
    work: Callable[..., _T],
    *args: Any,
) -> Future[_T]:
    """Run `work` in `pool`, its jobs on `context` in the FAIR scheduler's pool `scheduler_pool` (see
    `checkers.session`): parts of a check submitted side by side share the cores, so a part made of
    many small jobs is not queued behind the long tasks of another."""

    def run() -> _T:
        context.setLocalProperty("spark.scheduler.pool", scheduler_pool)
        return work(*args)

    return pool.submit(run)


@dataclass(frozen=True)
class Found:
    """One anomaly kind: counts per (topic, second of the ack) and the capped examples, or the error
    that stopped its checker."""

    per_topic_second: dict[tuple[str, int | None], int]
    examples: list[dict[str, Any]]
    error: str | None = None

    @property
    def count(self) -> int:
        return sum(self.per_topic_second.values())


def _failed(exc: Exception) -> Found:
    return Found(
        {}, [], f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    )


@dataclass(frozen=True)
class Evidence:
    """What an example is annotated with: the cluster's state and the faults active at its ack, and
    what its process's client logged while the write was outstanding."""

    timeline: ClusterTimeline
    intervals: list[FaultWindow]
    client_log: ClientLog
    truncations: TruncationLog


@dataclass(frozen=True)
class _Counted:
    """A checker's anomalous rows (kept: `kept`) and their counts per (topic, second of the ack)."""

    checker: Checker
    rows: DataFrame
    per_topic_second: dict[tuple[str, int | None], int]

    @functools.cached_property
    def first(self) -> DataFrame:
        """The EXAMPLE_CAP rows that come first in example order, kept: computed once (with the
        reads of the examples, `_example_reads`) for the several joins of their details."""
        return kept(self.rows.orderBy(*_example_order(self.rows)).limit(EXAMPLE_CAP))


def _counted_rows(rows: DataFrame) -> DataFrame:
    """A checker's rows as what is counted of them: topic, and the second of the ack if any."""
    second = availability.second_of(F.col("complete_ns")) if "complete_ns" in rows.columns else F.lit(None)
    return rows.select("topic", second.cast("long").alias("t_s"))


def _tally(rows: DataFrame) -> dict[tuple[str, int | None], int]:
    """A checker's rows counted per (topic, second of the ack)."""
    counted = _counted_rows(rows).groupBy("topic", "t_s").count().collect()
    return {(str(r["topic"]), r["t_s"]): int(r["count"]) for r in counted}


def _count(checker: Checker, inputs: CheckInputs) -> _Counted:
    rows = kept(checker.find(inputs))  # counted, then sampled: computed once
    return _Counted(checker, rows, _tally(rows))


def _count_together(checkers: list[Checker], inputs: CheckInputs) -> dict[str, _Counted | Exception]:
    """Kinds counted in one Spark job, each kind's rows kept as `_count` keeps them: for kinds read
    off the kept per-value flags, whose jobs are small, so one plan and job instead of one per kind
    saves most of what counting them costs. Should the job fail, each kind's rows are counted alone:
    a checker that raises costs only its own kind."""
    outcomes: dict[str, _Counted | Exception] = {}
    rows: dict[str, tuple[Checker, DataFrame]] = {}
    for checker in checkers:
        try:
            rows[checker.kind.id] = (checker, kept(checker.find(inputs)))
        except Exception as exc:  # check-safe, as in `_safely`
            outcomes[checker.kind.id] = exc
    if not rows:
        return outcomes
    per_kind = [_counted_rows(r).select(F.lit(k).alias("kind"), "*") for k, (_, r) in rows.items()]
    counts: dict[str, dict[tuple[str, int | None], int]] = {kind_id: {} for kind_id in rows}
    try:
        for r in reduce(DataFrame.unionByName, per_kind).groupBy("kind", "topic", "t_s").count().collect():
            counts[r["kind"]][(str(r["topic"]), r["t_s"])] = int(r["count"])
    except Exception:
        counts.clear()
    for kind_id, (checker, kind_rows) in rows.items():
        try:
            tally = counts[kind_id] if counts else _tally(kind_rows)
            outcomes[kind_id] = _Counted(checker, kind_rows, tally)
        except Exception as exc:  # check-safe
            outcomes[kind_id] = exc
    return outcomes


def _example_order(frame: DataFrame) -> list[Column]:
    return [F.col(c).asc_nulls_last() for c in _EXAMPLE_ORDER if c in frame.columns]


def _examples(counted: _Counted, reads: DataFrame, evidence: Evidence) -> list[dict[str, Any]]:
    """The first EXAMPLE_CAP rows with their checker's details and the cluster's state at their ack."""
    if not counted.per_topic_second:
        return []
    # Limited as well: ordered by a top-K, not a global sort (which would cost a job to sample the rows).
    detailed = counted.checker.details(counted.first, reads)
    first = detailed.orderBy(*_example_order(counted.rows)).limit(EXAMPLE_CAP)
    examples = []
    for row in first.collect():
        example = row.asDict(recursive=True)
        if "complete_ns" in example:
            at = example["complete_ns"]
            example |= evidence.timeline.state_at(at, example["topic"], example["partition"])
            example["active_faults"] = active_fault_names(evidence.intervals, at)
        if "invoke_ns" in example:
            example["client_log"] = evidence.client_log.between(
                example["process"], example["invoke_ns"], example.get("complete_ns")
            )
        if counted.checker.kind.truncated:
            offset = next((example[k] for k in _OFFSET_KEYS if example.get(k) is not None), None)
            example["truncations"] = evidence.truncations.below(
                example["topic"], example.get("partition"), offset, example.get("complete_ns")
            )
            # The epoch the partition ended in: how many leaders it went through since the ack.
            end = evidence.timeline.state_at(MAX_RUN_NS, example["topic"], example.get("partition"))
            example["leader_epoch_at_end"] = end["leader_epoch"]
        examples.append(example)
    return examples


def _example_reads(reads: DataFrame, counted: list[_Counted]) -> DataFrame:
    """The reads the details of these kinds' examples look at: of their `example_values`, and at their
    `example_positions` (`anomalies.reads_of`, one scan of the reads; a few hundred rows at most)."""
    firsts = [c.first for c in counted]
    values = reduce(
        DataFrame.unionByName,
        [
            first.select(F.col(column).alias("value"))
            for c, first in zip(counted, firsts, strict=True)
            for column in c.checker.example_values
        ],
    )
    positions = [
        first.select("topic", "partition", F.col(column).alias("offset"))
        for c, first in zip(counted, firsts, strict=True)
        if (column := c.checker.example_positions) is not None
    ]
    return anomalies.reads_of(reads, values, reduce(DataFrame.unionByName, positions) if positions else None)


def _found(checker: Checker, inputs: CheckInputs, evidence: Evidence) -> Found:
    """A kind whose rows hold their evidence: counted and sampled in one go."""
    counted = _count(checker, inputs)
    return Found(counted.per_topic_second, _examples(counted, inputs.history.reads, evidence))


def _safely(work: Callable[[], Found]) -> Found:
    try:
        return work()
    except Exception as exc:  # check-safe: the kind is unknown, the rest of the check stands
        return _failed(exc)


def run_checkers(history: History, evidence: Evidence, pool: ThreadPoolExecutor) -> dict[str, Found]:
    """Every registered checker, side by side. Those that read the history alone start first; the
    others once the per-value flags are computed and kept, and are counted in one job
    (`_count_together`). The kinds whose details read the reads, and the flagged kinds, are counted
    first, then sampled from one shared scan of the reads of their examples; the others are counted
    and sampled at once. A checker that raises costs its own kind only."""
    context = history.reads.sparkSession.sparkContext
    found: dict[str, Found] = {}
    whole: dict[str, Future[Found]] = {}
    counting: dict[str, Future[_Counted]] = {}

    inputs = CheckInputs.of(history)
    for c in registered():
        if c.flags:
            continue
        if not c.applies(inputs):
            found[c.kind.id] = Found({}, [])
        elif c.reads_details:
            counting[c.kind.id] = submit_part(pool, context, c.kind.id, _count, c, inputs)
        else:
            whole[c.kind.id] = submit_part(pool, context, c.kind.id, _found, c, inputs, evidence)
    inputs = dataclasses.replace(inputs, flags=kept(inputs.flags)).settled()
    together = []
    for c in registered():
        if c.flags and c.applies(inputs):
            together.append(c)
        elif c.flags:
            found[c.kind.id] = Found({}, [])
    counting_flagged = submit_part(pool, context, "flags", _count_together, together, inputs)
    counted: dict[str, _Counted] = {}
    for kind_id, counting_future in counting.items():
        try:
            counted[kind_id] = counting_future.result()
        except Exception as exc:
            found[kind_id] = _failed(exc)
    for kind_id, outcome in counting_flagged.result().items():
        if isinstance(outcome, Exception):
            found[kind_id] = _failed(outcome)
        else:
            counted[kind_id] = outcome
    occurred = [c for c in counted.values() if c.per_topic_second]
    reads = history.reads
    example_reads = kept(_example_reads(reads, occurred)) if occurred else reads
    if occurred:
        example_reads.count()  # kept once, before the kinds read it side by side
    sampling = {
        kind_id: submit_part(pool, context, kind_id, _examples, c, example_reads, evidence)
        for kind_id, c in counted.items()
    }
    for kind_id, sampling_future in sampling.items():
        try:
            found[kind_id] = Found(counted[kind_id].per_topic_second, sampling_future.result())
        except Exception as exc:  # check-safe, as in `_safely`
            found[kind_id] = _failed(exc)
    for kind_id, whole_future in whole.items():
        found[kind_id] = _safely(whole_future.result)
    return found


def anomalies_entry(found: Found) -> dict[str, Any]:
    if found.error:
        return {"count": None, "examples": [], "examples_capped": False, "error": found.error}
    return {
        "count": found.count,
        "examples": found.examples,
        "examples_capped": found.count > len(found.examples),
    }
