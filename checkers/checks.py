"""The checker of each anomaly kind (`checkers.checker.Checker`), over `checkers.anomalies`' functions."""

from __future__ import annotations

from pyspark.sql import DataFrame

from checkers import anomalies
from checkers.checker import CheckInputs, register
from harness.anomaly_kinds import kind


class _NoDetails:
    """For kinds whose rows already hold their evidence."""

    reads_details = False
    example_positions: str | None = None

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return examples


@register
class LostWrites:
    kind = kind("lost-write")
    reads_details = True
    example_positions = "ack_offset"

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.lost_writes_from(inputs.flags, inputs.history.reads, unsure=inputs.lost_unsure)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        with_final = anomalies.with_final_value(examples, reads, "ack_offset")
        return with_final.select(*anomalies.LOST_COLUMNS, "final_value")


@register
class DivergentOffsets(_NoDetails):
    kind = kind("divergent-offset")

    def find(self, inputs: CheckInputs) -> DataFrame:
        history = inputs.history
        return anomalies.divergent_offsets(history.writes, history.reads, inputs.topic_acks)


@register
class Duplicates:
    kind = kind("duplicate")
    reads_details = True
    example_positions = None

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.duplicates_from(inputs.flags, inputs.topic_acks)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.with_offsets(examples, reads).select(
            "topic", "partition", "acks", "value", "offsets", *anomalies.WRITE_EVIDENCE
        )


@register
class PhantomWrites:
    kind = kind("phantom-write")
    reads_details = True
    example_positions = None

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.phantom_writes_from(inputs.flags)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.phantom_details(examples, reads)


@register
class UnexpectedValues:
    kind = kind("unexpected-value")
    reads_details = True
    example_positions = None

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.unexpected_values_from(inputs.flags, inputs.topic_acks)

    def details(self, examples: DataFrame, reads: DataFrame) -> DataFrame:
        return anomalies.unexpected_details(examples, reads)


@register
class ReorderedWrites(_NoDetails):
    kind = kind("reordered")

    def find(self, inputs: CheckInputs) -> DataFrame:
        return anomalies.reordered_writes(inputs.history.writes)
