"""The checker of each anomaly kind (`checkers.registry.Checker`): a topic's, over the functions of
`checkers.anomalies`, `checkers.transactions` and `checkers.replication`, or a consumer group's, over
those of `checkers.group_anomalies`."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers import anomalies, cases, replication, transactions
from checkers import group_anomalies as g
from checkers.io import History
from checkers.registry import CheckInputs, GroupInputs, register
from contract.anomaly_kinds import kind


class _Unflagged:
    """For kinds found from the history alone: they start before the per-value flags are computed."""

    flags: tuple[str, ...] = ()
    time_column = "complete_ns"


class _Always(_Unflagged):
    def applies(self, inputs: CheckInputs) -> bool:
        return True


class _Flagged:
    """For kinds read off per-value flags (`anomalies.value_flags`)."""

    flags: tuple[str, ...]
    time_column = "complete_ns"

    def applies(self, inputs: CheckInputs) -> bool:
        return any(flag in inputs.present for flag in self.flags)


class _NoDetails:
    """For kinds whose rows already hold their evidence."""

    reads_details = False
    example_positions: str | None = None
    example_values: tuple[str, ...] = ("value",)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return examples


class _ReadDetails:
    """For kinds whose examples are completed from the reads of their values."""

    reads_details = True
    example_positions: str | None = None
    example_values: tuple[str, ...] = ("value",)


def _plain(flags: DataFrame) -> DataFrame:
    """The flagged values of writes in no transaction."""
    return flags.where(F.col("txn").isNull())


def _transactional(flags: DataFrame) -> DataFrame:
    """The flagged values of transactional writes (their outcome is their transaction's)."""
    return flags.where(F.col("txn").isNotNull())


@register
class LostWrites(_Flagged, _ReadDetails):
    kind = kind("lost-write")
    flags = ("lost", "lost_unsure")
    example_positions = "ack_offset"  # and what the final read holds at each one
    columns: tuple[str, ...] = tuple(anomalies.LOST_COLUMNS)

    def of(self, flags: DataFrame) -> DataFrame:
        return _plain(flags)

    def find(self, inputs: CheckInputs) -> DataFrame:
        lost = self.of(inputs.flags)
        return anomalies.lost_writes_from(lost, inputs.history.reads, inputs.lost_unsure, list(self.columns))

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        with_final = anomalies.with_final_value(examples, reads, "ack_offset")
        return with_final.select(*self.columns, "final_value")


@register
class LostCommitted(LostWrites):
    kind = kind("lost-committed")
    columns = (*anomalies.LOST_COLUMNS, "txn")

    def of(self, flags: DataFrame) -> DataFrame:
        return _transactional(flags)


@register
class DivergentOffsets(_Always, _NoDetails):
    kind = kind("divergent-offset")

    def find(self, inputs: CheckInputs) -> DataFrame:
        history = inputs.history
        return anomalies.divergent_offsets(history.writes, history.reads, inputs.topic_acks)


@register
class Duplicates(_Flagged, _ReadDetails):
    kind = kind("duplicate")
    flags = ("duplicate",)

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.duplicates_from(inputs.flags, inputs.topic_acks)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.with_offsets(examples, reads).select(
            "topic", "partition", "acks", "value", "offsets", *anomalies.WRITE_EVIDENCE
        )


@register
class PhantomWrites(_Flagged, _ReadDetails):
    kind = kind("phantom-write")
    flags = ("phantom",)

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.phantom_writes_from(_plain(inputs.flags))

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.phantom_details(examples, reads)


@register
class AbortedReads(PhantomWrites):
    kind = kind("aborted-read")

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.phantom_writes_from(_transactional(inputs.flags), ("txn",))


@register
class TornTransactions(_Unflagged, _NoDetails):
    kind = kind("torn-transaction")

    def applies(self, inputs: CheckInputs) -> bool:
        return inputs.history.transactions is not None  # transactions.jsonl was there

    def find(self, inputs: CheckInputs) -> DataFrame:
        history = inputs.history
        return transactions.torn_transactions(history.values, history.complete_partitions)


@register
class UnexpectedValues(_Flagged, _ReadDetails):
    kind = kind("unexpected-value")
    flags = ("unexpected",)

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.unexpected_values_from(inputs.flags, inputs.topic_acks)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.unexpected_details(examples, reads)


class _Pipelines(_Unflagged, _NoDetails):
    """For kinds of the exactly-once pipelines: judged where transactions.jsonl and a pipeline are,
    one frame of `rows` per pipeline, of `schema`."""

    schema = transactions.PIPELINE_SCHEMA

    def applies(self, inputs: CheckInputs) -> bool:
        history = inputs.history
        return history.transaction_steps is not None and bool(transactions.pipelines(history.run))

    def find(self, inputs: CheckInputs) -> DataFrame:
        history = inputs.history
        none = transactions.no_rows(history.reads, self.schema)
        if history.transaction_steps is None or history.transactions is None:
            return none
        found = [
            self.rows(history, history.transaction_steps, history.transactions, output, group)
            for output, group in transactions.pipelines(inputs.history.run)
        ]
        return reduce(DataFrame.unionByName, found, none)

    def rows(
        self, history: History, steps: DataFrame, outcomes: DataFrame, output: str, group: str
    ) -> DataFrame:
        raise NotImplementedError


@register
class PipelineSkips(_Pipelines):
    kind = kind("pipeline-skip")

    def rows(
        self, history: History, steps: DataFrame, outcomes: DataFrame, output: str, group: str
    ) -> DataFrame:
        progress = transactions.committed_progress(steps, outcomes)
        return transactions.pipeline_skips(
            history.values, history.reads, progress, output, group, history.complete_partitions
        )


@register
class PipelineDuplicates(_Pipelines):
    kind = kind("pipeline-duplicate")

    def rows(
        self, history: History, steps: DataFrame, outcomes: DataFrame, output: str, group: str
    ) -> DataFrame:
        return transactions.pipeline_duplicates(history.values, history.reads, output)


@register
class PipelineOffsetMismatches(_Pipelines):
    kind = kind("pipeline-offsets")
    schema = transactions.OFFSET_MISMATCH_SCHEMA

    def rows(
        self, history: History, steps: DataFrame, outcomes: DataFrame, output: str, group: str
    ) -> DataFrame:
        return transactions.pipeline_offset_mismatches(
            history.values, history.reads, steps, outcomes, output, group, history.complete_partitions
        )


@register
class ReorderedWrites(_Always, _ReadDetails):
    kind = kind("reordered")
    example_values = ("value", "earlier_value")

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.reordered_writes(inputs.history.writes)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.reordered_details(examples, reads)


@register
class ReadThenLost(_Flagged, _ReadDetails):
    kind = kind("read-then-lost")
    flags = ("read_then_lost",)
    example_positions = "read_offset"  # and what the final read holds there now

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.read_then_lost_from(inputs.flags)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        with_final = anomalies.with_final_value(examples, reads, "read_offset")
        return with_final.select(*anomalies.READ_THEN_LOST_COLUMNS, "final_value")


@register
class ReplicaDivergence(_Unflagged, _NoDetails):
    kind = kind("replica-divergence")

    def applies(self, inputs: CheckInputs) -> bool:
        return inputs.history.replica_states is not None  # replicas.jsonl was there

    def find(self, inputs: CheckInputs) -> DataFrame:
        history = inputs.history
        assert history.replica_values is not None  # `checkers.io.load_history` always sets it
        return replication.replica_divergence(history.replica_values, history.writes, inputs.topic_acks)


@register
class EpochRegressions(_Unflagged, _NoDetails):
    kind = kind("epoch-regression")

    def applies(self, inputs: CheckInputs) -> bool:
        return len(inputs.history.cluster) > 1  # one sample cannot go backwards

    def find(self, inputs: CheckInputs) -> DataFrame:
        assert inputs.history.epochs is not None  # `checkers.io.load_history` always sets it
        return replication.epoch_regressions(inputs.history.epochs)


@register
class FailedDisksInIsr(_Unflagged, _NoDetails):
    kind = kind("failed-disk-in-isr")
    time_column = "stop_ns"
    example_values = ()

    def applies(self, inputs: CheckInputs) -> bool:
        return any(replication.disk_failures(inputs.history.faults))

    def find(self, inputs: CheckInputs) -> DataFrame:
        return cases.failed_disks(inputs.history).where(F.col("left_ns").isNull()).drop("left_ns")


class _OfGroups(_Unflagged, _NoDetails):
    """For a consumer group's kinds: judged where the run has groups, over their inputs."""

    example_values: tuple[str, ...] = ()

    def applies(self, inputs: CheckInputs) -> bool:
        return inputs.groups is not None

    def find(self, inputs: CheckInputs) -> DataFrame:
        assert inputs.groups is not None  # `applies` said so
        return self.rows(inputs.groups, inputs.history)

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        raise NotImplementedError


@register
class ConsumerSkips(_OfGroups):
    kind = kind("consumer-skip")
    time_column = "committed_ns"

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        return g.skipped(groups.final, groups.polled, groups.commits)


@register
class Redeliveries(_OfGroups):
    kind = kind("redelivery")
    time_column = "first_ns"

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        return g.redelivered(groups.polled)


@register
class PollSkips(_OfGroups):
    kind = kind("poll-skip")
    time_column = "after_ns"

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        return g.poll_skips(groups.pairs, groups.final)


@register
class NonmonotonicPolls(_OfGroups):
    kind = kind("nonmonotonic-poll")
    time_column = "after_ns"

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        return g.nonmonotonic(groups.pairs)


@register
class CommitRegressions(_OfGroups):
    kind = kind("commit-regression")
    time_column = "time_ns"

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        return g.commit_regressions(groups.commits)


@register
class UncommittedReads(_OfGroups):
    kind = kind("uncommitted-read")
    time_column = "time_ns"

    def applies(self, inputs: CheckInputs) -> bool:
        return inputs.groups is not None and inputs.history.transactions is not None

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        assert history.transactions is not None  # `applies` said so
        return transactions.uncommitted_polls(groups.polled, history.values, history.transactions)
