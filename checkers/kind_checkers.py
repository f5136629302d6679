"""The checker of each anomaly kind: a topic's (`checkers.registry.Checker`, over
`checkers.anomalies`' functions) or a consumer group's (`GroupChecker`, over `checkers.groups`')."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers import anomalies, replication, transactions
from checkers import groups as g
from checkers.io import History
from checkers.registry import CheckInputs, GroupInputs, register, register_group
from contract.anomaly_kinds import kind


class _Unflagged:
    """For kinds found from the history alone: they start before the per-value flags are computed."""

    flags: tuple[str, ...] = ()


class _Always(_Unflagged):
    def applies(self, inputs: CheckInputs) -> bool:
        return True


class _Flagged:
    """For kinds read off per-value flags (`anomalies.value_flags`)."""

    flags: tuple[str, ...]

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


@register_group
class ConsumerSkips:
    kind = kind("consumer-skip")
    time_column = "committed_ns"

    def find(self, inputs: GroupInputs) -> DataFrame:
        return g.skipped(inputs.final, inputs.polled, inputs.commits)


@register_group
class Redeliveries:
    kind = kind("redelivery")
    time_column = "first_ns"

    def find(self, inputs: GroupInputs) -> DataFrame:
        return g.redelivered(inputs.polled)


@register_group
class PollSkips:
    kind = kind("poll-skip")
    time_column = "after_ns"

    def find(self, inputs: GroupInputs) -> DataFrame:
        return g.poll_skips(inputs.pairs, inputs.final)


@register_group
class NonmonotonicPolls:
    kind = kind("nonmonotonic-poll")
    time_column = "after_ns"

    def find(self, inputs: GroupInputs) -> DataFrame:
        return g.nonmonotonic(inputs.pairs)


@register_group
class CommitRegressions:
    kind = kind("commit-regression")
    time_column = "time_ns"

    def find(self, inputs: GroupInputs) -> DataFrame:
        return g.commit_regressions(inputs.commits)


@register_group
class UncommittedReads:
    kind = kind("uncommitted-read")
    time_column = "time_ns"

    def find(self, inputs: GroupInputs) -> DataFrame:
        return inputs.uncommitted
