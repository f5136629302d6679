"""The checker protocol and its registry: one checker per anomaly kind of `contract.anomaly_kinds`,
a topic's or a consumer group's alike.

A checker finds the anomalous rows of its kind (one row per anomaly, with the columns of result.json's
examples: `topic` first for a topic's kind, `group` for a group's) and adds evidence to the few rows
that become examples. `checkers.result` runs every registered checker: counted, capped, annotated;
a checker that raises costs only its own kind (Jepsen's check-safe), whatever its family.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers import anomalies
from checkers import group_anomalies as g
from checkers.io import History, topic_acks
from checkers.session import kept
from contract.anomaly_kinds import ALL_KINDS, AnomalyKind

ONE_PARTITION_EVENTS = 100_000
"""Below this many consumes.jsonl events, the consumes are kept in one partition: Spark then knows
every group, process and partition is in it, and their windows and aggregations need no shuffle.
A further check of a real 45-s run (20,638 events) took 4.18 s instead of 4.65 s with two partitions
(6 alternated, 12% less JVM CPU); with 206,380 events, 9.19 s instead of 8.75 s (4 alternated): one
task sorting them all is then slower than two shuffled ones."""


@dataclass(frozen=True)
class GroupInputs:
    """What the consumer groups' checkers read, each over partitions whose final read is complete:
    the final read's records, the groups' polls, their accepted commit entries and each member's
    consecutive polls (`checkers.group_anomalies`); and consumes.jsonl itself, parsed once and kept."""

    consumes: DataFrame
    final: DataFrame
    polled: DataFrame
    commits: DataFrame
    pairs: DataFrame
    small: bool
    """Few enough events to be kept, and ranked, in one partition (`ONE_PARTITION_EVENTS`)."""

    @classmethod
    def of(cls, history: History) -> GroupInputs | None:
        """The groups' inputs of `history`; None without consumes.jsonl or declared groups."""
        if history.consumes is None or not history.run.get("groups"):
            return None
        small = history.event_counts.get("consumes", 0) < ONE_PARTITION_EVENTS
        consumes = kept(history.consumes.coalesce(1) if small else history.consumes)
        complete = history.complete_partitions
        final = history.reads.where(F.col("phase") == "final").select(*g.POSITION, "value")
        return cls(
            consumes=consumes,
            final=g.complete_only(final, complete),
            polled=g.complete_only(g.polls(consumes), complete),
            commits=g.complete_only(g.ok_commit_entries(consumes), complete),
            pairs=g.complete_only(g.consecutive_polls(consumes), complete),
            small=small,
        )


@dataclass(frozen=True)
class CheckInputs:
    """What checkers read: the history, the per-value flags computed once for every topic kind,
    and the groups' inputs (None without groups).

    `flags` holds only the anomalous rows of `anomalies.value_flags` (few); `present` says which
    flags occur in them (`lost_unsure`: whether some losses still need settling against the final
    records). Until `settled`, every flag counts as present.
    """

    history: History
    topic_acks: Mapping[str, str]
    flags: DataFrame
    groups: GroupInputs | None
    present: frozenset[str] = frozenset(anomalies.FLAG_KINDS)
    """The per-value flags (`anomalies.FLAG_KINDS`) that some row of `flags` has: a kind whose
    flag none has is found empty without a Spark job."""

    @property
    def lost_unsure(self) -> bool:
        return "lost_unsure" in self.present

    @classmethod
    def of(cls, history: History) -> CheckInputs:
        """Inputs for `history`; the caller keeps and releases `flags` around a check."""
        partitions = {str(t["name"]): int(t.get("partitions") or 0) for t in history.run["topics"]}
        flags = anomalies.anomalous_values(
            anomalies.value_flags(history.values, history.complete_partitions, partitions)
        )
        return cls(history, topic_acks(history.run), flags, GroupInputs.of(history))

    def settled(self) -> CheckInputs:
        """The same inputs, knowing which flags occur (one small job over the cached flags)."""
        row = self.flags.agg(
            *[F.max(F.coalesce(F.col(k), F.lit(False))).alias(k) for k in anomalies.FLAG_KINDS]
        ).first()
        present = frozenset(k for k in anomalies.FLAG_KINDS if row is not None and row[k])
        return CheckInputs(self.history, self.topic_acks, self.flags, self.groups, present)


class Checker(Protocol):
    kind: AnomalyKind
    """Its row of the table; `kind.family` says whose rows it finds: a topic's or a group's."""
    flags: tuple[str, ...]
    """The per-value flags (`anomalies.FLAG_KINDS`) `find` reads off `CheckInputs.flags`; none: it
    reads the history alone, and starts before the flags are computed."""
    reads_details: bool
    """True when `details` reads the reads of the examples' values (and `example_positions`)."""
    example_positions: str | None
    """An offset column of the rows whose (topic, partition, offset) positions `details` reads at."""
    example_values: tuple[str, ...]
    """The value columns of the rows whose reads `details` looks at (`value`, at least)."""
    time_column: str
    """The column that orders its examples and places them in time (the faults active then, the
    cluster's state, the group's coordinator): the ack of a write (`complete_ns`) for most kinds."""

    def applies(self, inputs: CheckInputs) -> bool:
        """False when `find` would surely find nothing (its flag occurs in no row, its input file is
        missing, the run has no groups): the kind is then counted 0 without a Spark job."""
        ...

    def find(self, inputs: CheckInputs) -> DataFrame:
        """One row per anomaly: `topic` first (and `complete_ns` where a write is behind it) for a
        topic's kind, `group` for a group's."""
        ...

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        """`examples` (a few rows of `find`) with their evidence columns, from `reads`."""
        ...


_REGISTRY: dict[str, Checker] = {}
CheckerT = TypeVar("CheckerT", bound=type)


def register(cls: CheckerT) -> CheckerT:
    """Class decorator: run this checker for its kind (one checker per kind of the table)."""
    checker: Checker = cls()
    kind_id = checker.kind.id
    if kind_id in _REGISTRY:
        raise ValueError(f"a checker for {kind_id!r} is registered twice")
    _REGISTRY[kind_id] = checker
    return cls


def registered(family: str | None = None) -> list[Checker]:
    """Every registered checker (of one family: `topic` or `group`), in the table's order of kinds."""
    return [
        _REGISTRY[kind.id] for kind in ALL_KINDS if kind.id in _REGISTRY and family in (None, kind.family)
    ]


PerOwnerSecond = dict[tuple[str | None, int | None], int]
"""A kind's count per owner (a topic or a group) and second of the ack (see `Found`)."""


@dataclass(frozen=True)
class Found:
    """What the runner found of one kind: its count per owner (the topic, or the group, whose rows
    they are; None for a kind's rows of no topic) and second of the ack (None for a group's kind, and
    rows with no write behind them), and its capped examples; or the error that stopped its checker."""

    per_owner_second: PerOwnerSecond
    examples: list[dict[str, Any]]
    error: str | None = None

    @property
    def count(self) -> int:
        return sum(self.per_owner_second.values())


def failed_kind(exc: Exception) -> Found:
    """A kind whose checker raised: no count, the error's first line instead."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return Found({}, [], f"{type(exc).__name__}: {first}")


def anomalies_entry(found: Found) -> dict[str, Any]:
    """A kind's `anomalies` entry in result.json (a topic's, or one group's share of a group kind)."""
    if found.error:
        return {"count": None, "examples": [], "examples_capped": False, "error": found.error}
    return {
        "count": found.count,
        "examples": found.examples,
        "examples_capped": found.count > len(found.examples),
    }
