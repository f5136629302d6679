"""The checker protocols and their registries: one checker per anomaly kind of
`contract.anomaly_kinds`, a topic's (`Checker`) or a consumer group's (`GroupChecker`).

A checker finds the anomalous rows of its kind (one row per anomaly, with the columns of result.json's
examples) and adds evidence to the few rows that become examples. `checkers.result` runs every
registered topic checker the same way: counted, capped, annotated; a checker that raises costs only
its own kind (Jepsen's check-safe). `checkers.group_result` runs every group checker in one job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers import anomalies
from checkers.io import History, topic_acks
from contract.anomaly_kinds import GROUP_BY_ID, KIND_IDS, AnomalyKind


@dataclass(frozen=True)
class CheckInputs:
    """What checkers read: the history, and the per-value flags computed once for every kind.

    `flags` holds only the anomalous rows of `anomalies.value_flags` (few); `present` says which
    flags occur in them (`lost_unsure`: whether some losses still need settling against the final
    records). Until `settled`, every flag counts as present.
    """

    history: History
    topic_acks: Mapping[str, str]
    flags: DataFrame
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
        return cls(history, topic_acks(history.run), flags)

    def settled(self) -> CheckInputs:
        """The same inputs, knowing which flags occur (one small job over the cached flags)."""
        row = self.flags.agg(
            *[F.max(F.coalesce(F.col(k), F.lit(False))).alias(k) for k in anomalies.FLAG_KINDS]
        ).first()
        present = frozenset(k for k in anomalies.FLAG_KINDS if row is not None and row[k])
        return CheckInputs(self.history, self.topic_acks, self.flags, present)


class Checker(Protocol):
    kind: AnomalyKind
    flags: tuple[str, ...]
    """The per-value flags (`anomalies.FLAG_KINDS`) `find` reads off `CheckInputs.flags`; none: it
    reads the history alone, and starts before the flags are computed."""
    reads_details: bool
    """True when `details` reads the reads of the examples' values (and `example_positions`)."""
    example_positions: str | None
    """An offset column of the rows whose (topic, partition, offset) positions `details` reads at."""
    example_values: tuple[str, ...]
    """The value columns of the rows whose reads `details` looks at (`value`, at least)."""

    def applies(self, inputs: CheckInputs) -> bool:
        """False when `find` would surely find nothing (its flag occurs in no row, its input file is
        missing): the kind is then counted 0 without a Spark job."""
        ...

    def find(self, inputs: CheckInputs) -> DataFrame:
        """One row per anomaly: `topic` first, `complete_ns` where a write is behind it."""
        ...

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        """`examples` (a few rows of `find`) with their evidence columns, from `reads`."""
        ...


_REGISTRY: dict[str, Checker] = {}
CheckerT = TypeVar("CheckerT", bound=type)
GroupCheckerT = TypeVar("GroupCheckerT", bound=type)


def register(cls: CheckerT) -> CheckerT:
    """Class decorator: run this checker for its kind (one checker per kind of the table)."""
    checker: Checker = cls()
    kind_id = checker.kind.id
    if kind_id in _REGISTRY:
        raise ValueError(f"a checker for {kind_id!r} is registered twice")
    _REGISTRY[kind_id] = checker
    return cls


def registered() -> list[Checker]:
    """Every registered checker, in the table's order of kinds."""
    return [_REGISTRY[kind_id] for kind_id in KIND_IDS if kind_id in _REGISTRY]


@dataclass(frozen=True)
class GroupInputs:
    """What group checkers read, each over partitions whose final read is complete: the final read's
    records, the groups' polls, their accepted commit entries and each member's consecutive polls
    (`checkers.groups`)."""

    final: DataFrame
    polled: DataFrame
    commits: DataFrame
    pairs: DataFrame
    uncommitted: DataFrame
    """Polls of records of transactions not committed then (`transactions.uncommitted_polls`;
    empty without transactions)."""


class GroupChecker(Protocol):
    kind: AnomalyKind
    time_column: str
    """The column that orders the kind's examples, and whose time names the faults active then."""

    def find(self, inputs: GroupInputs) -> DataFrame:
        """One row per anomaly, with its `group`."""
        ...


_GROUP_REGISTRY: dict[str, GroupChecker] = {}


def register_group(cls: GroupCheckerT) -> GroupCheckerT:
    """Class decorator: run this checker for its consumer-group kind (one per kind of the table)."""
    checker: GroupChecker = cls()
    if checker.kind.id in _GROUP_REGISTRY:
        raise ValueError(f"a checker for {checker.kind.id!r} is registered twice")
    _GROUP_REGISTRY[checker.kind.id] = checker
    return cls


def registered_groups() -> list[GroupChecker]:
    """Every registered group checker, in the table's order of kinds."""
    return [_GROUP_REGISTRY[kind_id] for kind_id in GROUP_BY_ID if kind_id in _GROUP_REGISTRY]
