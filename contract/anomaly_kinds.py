"""The anomaly kinds and the guarantees of the run-directory contract (docs/HISTORY_FORMAT.md,
docs/RESULT_FORMAT.md), in two tables.

A kind is a row: its id (as in result.json's `anomalies`), its family (a topic's or a consumer
group's), the name of its count (per acks mode in result.json, and in scenario expectations), its
title and plain-words explanation (reports), the guarantee it bears on, the count its rate is out
of, its count in plain words (`kchaos run`'s summary) and its trend chart on the index page. A
guarantee is a row: its id, what it promises and when. Checkers (`checkers.kind_checkers`), verdicts
(`checkers.guarantees`), reports and the CLI all read these tables, and tests/test_kinds_table.py
fails if a list of kinds anywhere drifts from them; adding a kind is one row here plus one checker
class, its tests and its docs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Guarantee:
    id: str
    family: str
    """`topic` (judged per topic) or `group` (per consumer group)."""
    promise: str
    """What it promises, as result.json's `promise` says it."""
    when: str
    """When it is promised, in short (the verdict's `reason` says why for each run)."""
    cases: str
    """The count of the cases it is judged over, each one a chance to break it (a topic's or a
    group's count in result.json): none, and a promised guarantee is `not-exercised`, never `held`."""
    cases_are: str
    """Those cases in words, after a number: "acknowledged writes"."""
    headline: bool = False
    """Said in `kchaos run`'s three-line summary when it held: a promise about acknowledged writes,
    transactions or a group's records (the others only when none of these was judged)."""
    transactional: bool = False
    """A promise of transactions: judged only where a run has transactional producers, and said per
    topic by name (a transactional topic's writes are its transactions')."""


GUARANTEES: tuple[Guarantee, ...] = (
    Guarantee(
        "no-lost-acked-writes",
        "topic",
        "no acknowledged write is lost or overwritten",
        "acks=all, replication factor >= 3, min.insync.replicas >= 2, unclean election off, and a "
        "power loss of every replica only with flush.messages=1",
        "acked",
        "acknowledged writes",
        headline=True,
    ),
    Guarantee(
        "no-lost-reads",
        "topic",
        "a record a consumer read is never lost",
        "unclean election off (a record a consumer can read is on every in-sync replica)",
        "live_reads",
        "records read by live consumers",
    ),
    Guarantee(
        "replicas-agree",
        "topic",
        "the replicas of a partition hold the same values below their ends",
        "always",
        "replica_offsets",
        "offsets held by two or more replicas",
    ),
    Guarantee(
        "epochs-advance",
        "topic",
        "leader and controller epochs never go backwards",
        "always",
        "epoch_samples",
        "samples of the cluster's epochs after a first",
    ),
    Guarantee(
        "failed-disk-leaves-isr",
        "topic",
        "a replica whose disk failed leaves the ISR",
        "always: the broker halts on an I/O error (0.9), or its log directory goes offline and a broker "
        "with none left shuts down (KIP-112, 1.0)",
        "failed_disk_replicas",
        "in-sync replicas whose disk failed an operation",
    ),
    Guarantee(
        "no-phantom-writes",
        "topic",
        "a write that failed definitely is never read",
        "acks=all or 1",
        "failed",
        "writes that failed definitely",
    ),
    Guarantee(
        "no-duplicates",
        "topic",
        "no value appears at two offsets",
        "the idempotent producer (enable.idempotence, Kafka >= 0.11)",
        "acked",
        "acknowledged writes",
        headline=True,
    ),
    Guarantee(
        "per-partition-order",
        "topic",
        "acknowledged writes of one producer to one partition keep their order",
        "acks=all or 1 on a durable topic, one request in flight or the idempotent producer",
        "acked",
        "acknowledged writes",
        headline=True,
    ),
    Guarantee(
        "no-unexpected-values",
        "topic",
        "every value read was written by the workload",
        "always",
        "reads",
        "records read",
    ),
    Guarantee(
        "committed-transactions-durable",
        "topic",
        "every record of a committed transaction is in the partition",
        "transactions (Kafka >= 0.11) on a topic whose acknowledged writes are promised to survive",
        "acked",
        "records of committed transactions",
        headline=True,
        transactional=True,
    ),
    Guarantee(
        "no-aborted-reads",
        "topic",
        "a read_committed reader never returns a record of an aborted transaction",
        "transactions (Kafka >= 0.11), read_committed readers",
        "aborted_appended",
        "appended records of aborted transactions",
        headline=True,
        transactional=True,
    ),
    Guarantee(
        "exactly-once-pipeline",
        "topic",
        "every input record below the pipeline's committed offsets has exactly one committed output",
        "a consume-transform-produce pipeline committing its input offsets in its transactions "
        "(Kafka >= 0.11) on a topic whose acknowledged writes are promised to survive",
        "pipeline_inputs",
        "input records below the pipeline's committed offsets",
        headline=True,
        transactional=True,
    ),
    Guarantee(
        "atomic-transactions",
        "topic",
        "a committed transaction is visible whole or not at all",
        "transactions (Kafka >= 0.11) on a topic whose acknowledged writes are promised to survive",
        "committed_transactions",
        "committed transactions of two or more records",
        headline=True,
        transactional=True,
    ),
    Guarantee(
        "no-consumer-skips",
        "group",
        "no record below the group's committed offset goes unprocessed",
        "at-least-once commit modes (after-process, auto)",
        "committed_positions",
        "records below the group's committed offsets",
        headline=True,
    ),
    Guarantee(
        "no-redeliveries",
        "group",
        "no record is processed twice by the group",
        "the before-process commit mode",
        "polled",
        "records polled",
        headline=True,
    ),
    Guarantee(
        "monotonic-polls",
        "group",
        "within a generation, a member's polls of a partition move forward",
        "always, on a durable topic",
        "polled",
        "records polled",
    ),
    Guarantee(
        "no-uncommitted-reads",
        "group",
        "a read_committed consumer is handed no record of a transaction not committed yet",
        "isolation.level=read_committed (Kafka >= 0.11)",
        "aborted_appended",
        "appended records of aborted transactions on its topics",
        headline=True,
        transactional=True,
    ),
    Guarantee(
        "commits-advance",
        "group",
        "an accepted commit is never lower than an earlier accepted one",
        "synchronous commits of the current generation",
        "commits_ok",
        "accepted commits",
    ),
)
GUARANTEE_BY_ID = {guarantee.id: guarantee for guarantee in GUARANTEES}


def promise(guarantee_id: str) -> str:
    """What the guarantee with this id promises (KeyError for an unknown one: the table is the authority)."""
    return GUARANTEE_BY_ID[guarantee_id].promise


@dataclass(frozen=True)
class AnomalyKind:
    id: str
    count: str
    """The count's name in result.json and in expectations (`acks=all lost == 0`)."""
    title: str
    explanation: str
    """What it means, for a Kafka operator who has never seen the history format."""
    count_help: str
    """One line: what the count counts."""
    guarantee: str
    """The id of the guarantee (GUARANTEES) whose verdict this kind decides."""
    evidence: str
    """The count in words after "N of M": "acknowledged writes lost"; the second kind of a guarantee
    words it alone: "overwritten at their offset"."""
    family: str = "topic"
    """`topic` (counted per acks mode or topic) or `group` (per consumer group)."""
    rate_base: str | None = None
    """The count a rate of this kind is out of (`acked`, `failed`); None: shown as a count only."""
    trend: str | None = None
    """The index page's trend chart of this count across runs: its title; None: no chart."""
    example_fields: tuple[str, ...] = ()
    """The example columns of this kind, in the order shown between EXAMPLE_FIRST and
    EXAMPLE_EVIDENCE (any other column follows, by name)."""
    per_acks: bool = True
    """Counted per acks mode; False for kinds with no write behind them (unexpected values)."""
    truncated: bool = False
    """A write of this kind was cut out of a log: examples quote the brokers' truncations below it."""
    complete_reads_only: bool = False
    """Counted only over partitions whose final read was complete: on a topic or group with an
    incomplete partition, its count is a lower bound of the truth. Every group kind is."""
    charted: bool = False
    """Counted per second of the ack in result.json's `availability.series` (the write chart)."""
    whole_run: bool = False
    """Also result.json's top-level count of the run, of which one is enough to make it invalid."""


KINDS: tuple[AnomalyKind, ...] = (
    AnomalyKind(
        "lost-write",
        "lost",
        "Lost write",
        "The producer was told this write succeeded, but it is not in the partition when the whole "
        "partition is read back at the end. Data the application believed was safe is gone.",
        "acknowledged writes missing from the complete final read",
        "no-lost-acked-writes",
        "acknowledged writes lost",
        rate_base="acked",
        trend="lost writes",
        truncated=True,
        example_fields=("ack_offset", "final_value"),
        complete_reads_only=True,
        charted=True,
    ),
    AnomalyKind(
        "divergent-offset",
        "divergent",
        "Divergent offset",
        "One offset of one partition held two different values: an acknowledged write was truncated "
        "and replaced, or two leaders handed out the same offset. Consumers at that offset disagree.",
        "acknowledged writes whose offset holds another value",
        "no-lost-acked-writes",
        "overwritten at their offset",
        rate_base="acked",
        trend="divergent writes",
        truncated=True,
        example_fields=("ack_offset", "final_value", "values"),
        charted=True,
    ),
    AnomalyKind(
        "duplicate",
        "duplicated",
        "Duplicate",
        "The same value sits at two or more offsets: the producer retried a write that had in fact "
        "succeeded. Harmless with idempotent consumers, a bug for everyone else.",
        "values found at more than one offset",
        "no-duplicates",
        "writes duplicated",
        rate_base="acked",
        trend="duplicated writes",
        example_fields=("ack_offset", "offsets"),
    ),
    AnomalyKind(
        "phantom-write",
        "phantom",
        "Phantom write",
        "The producer was told, definitely, that this write failed, yet consumers read it. An "
        "application that retried or compensated for the failure now has it twice.",
        "failed writes that were read anyway",
        "no-phantom-writes",
        "failed writes read anyway",
        rate_base="failed",
        example_fields=("outcome", "error"),
    ),
    AnomalyKind(
        "lost-committed",
        "lost_committed",
        "Committed record lost",
        "The producer's transaction committed, yet this record of it is not in the partition when "
        "the whole partition is read back (read_committed) at the end: a commit promises every "
        "record of the transaction to every read_committed consumer.",
        "records of committed transactions missing from the complete final read",
        "committed-transactions-durable",
        "records of committed transactions lost",
        rate_base="acked",
        trend="lost committed records",
        truncated=True,
        example_fields=("txn", "ack_offset", "final_value"),
        complete_reads_only=True,
    ),
    AnomalyKind(
        "aborted-read",
        "aborted_read",
        "Aborted record read",
        "A read_committed consumer returned a record of a transaction that was aborted: the "
        "application acted on data its producer took back.",
        "records of aborted transactions that a read_committed reader returned",
        "no-aborted-reads",
        "records of aborted transactions read",
        rate_base="aborted_appended",
        example_fields=("txn", "error"),
    ),
    AnomalyKind(
        "torn-transaction",
        "torn_transactions",
        "Torn transaction",
        "Some records of a committed transaction are in the final read and others are not: the "
        "transaction was not all-or-nothing. The example names its first missing record.",
        "committed transactions of which the complete final read holds some records and not others",
        "atomic-transactions",
        "committed transactions torn",
        example_fields=("txn", "records", "found", "missing"),
        complete_reads_only=True,
    ),
    AnomalyKind(
        "pipeline-skip",
        "pipeline_skipped",
        "Pipeline skipped a record",
        "The exactly-once pipeline committed its input offsets past this record, yet no committed "
        "transaction of it wrote the record's output: the pipeline moved on without processing it.",
        "input records below the pipeline's committed offsets with no committed output",
        "exactly-once-pipeline",
        "input records skipped by the pipeline",
        example_fields=("input_topic", "input_partition", "input_offset", "outputs"),
        complete_reads_only=True,
    ),
    AnomalyKind(
        "pipeline-duplicate",
        "pipeline_duplicated",
        "Pipeline processed a record twice",
        "Two committed transactions of the exactly-once pipeline each wrote an output for this input "
        "record: it was processed twice and both results count, which exactly once rules out.",
        "input records with more than one committed output",
        "exactly-once-pipeline",
        "input records processed twice by the pipeline",
        example_fields=("input_topic", "input_partition", "input_offset", "outputs"),
    ),
    AnomalyKind(
        "pipeline-offsets",
        "pipeline_offset_mismatches",
        "Pipeline stored the wrong offset",
        "A committed transaction of the exactly-once pipeline stored, for an input partition, an "
        "offset other than one past the last input record its outputs came from: a restart from "
        "that offset would skip records or process some again.",
        "(committed pipeline transaction, input partition) pairs whose stored offset is wrong",
        "exactly-once-pipeline",
        "stored input offsets that do not match the outputs",
        example_fields=("process", "txn", "input_topic", "stored", "expected"),
    ),
    AnomalyKind(
        "unexpected-value",
        "unexpected",
        "Unexpected value",
        "A consumer read a value that the workload never wrote: corruption or a reader bug. "
        "Never acceptable.",
        "values read that no write invoked",
        "no-unexpected-values",
        "values read that no write invoked",
        per_acks=False,
        example_fields=("offsets",),
        whole_run=True,
    ),
    AnomalyKind(
        "reordered",
        "reordered",
        "Reordered",
        "Two acknowledged writes of one producer to one partition landed in the opposite order to the "
        "one they were sent in. The offsets and earlier_offsets columns say where each was read: an earlier "
        "write also read below this one was first appended by an attempt whose acknowledgement never "
        "came (a timed-out request), then appended again, and acknowledged, by a retry sent after this "
        "write. client_log quotes what the producer's client logged meanwhile: a REQERR 'Request timed "
        "out: actions Retry' line is the retry that fell behind (librdkafka, see docs/FINDINGS.md).",
        "acknowledged writes stored out of their send order",
        "per-partition-order",
        "acknowledged writes reordered",
        rate_base="acked",
        example_fields=("ack_offset", "offsets", "earlier_value", "earlier_offset", "earlier_offsets"),
    ),
    AnomalyKind(
        "read-then-lost",
        "read_lost",
        "Read, then lost",
        "A live consumer read this record, so it was committed (below the high watermark), yet the "
        "complete final read of its partition no longer holds it: data consumers already acted on "
        "is gone, whatever the acks mode. final_value says what the final read holds at that offset.",
        "records a live consumer read that the complete final read lacks",
        "no-lost-reads",
        "records read, then lost",
        rate_base="acked",
        truncated=True,
        example_fields=("outcome", "ack_offset", "read_offset", "final_value"),
        complete_reads_only=True,
    ),
    AnomalyKind(
        "replica-divergence",
        "replica_divergent",
        "Diverged replicas",
        "Two replicas of one partition hold different values at the same offset, below both of "
        "their ends, after the run healed: the replicas no longer agree on the log, so what a "
        "consumer reads depends on which replica leads. The broker logs' truncations say how.",
        "offsets at which the replicas of a partition hold different values",
        "replicas-agree",
        "offsets at which replicas differ",
        rate_base="acked",
        truncated=True,
        example_fields=("replicas", "acked_values"),
    ),
    AnomalyKind(
        "failed-disk-in-isr",
        "failed_disk_in_isr",
        "Failed disk still in the ISR",
        "A broker's disk failed writes or fsyncs (a full disk, an fsync error), yet the broker stayed "
        "in the partition's in-sync replicas until well after the fault ended: acks=all counted a "
        "replica that could not keep what it acknowledged. Kafka halts such a broker instead.",
        "in-sync replicas whose disk failed an operation and that stayed in the ISR",
        "failed-disk-leaves-isr",
        "failed disks stayed in the ISR",
        example_fields=("broker", "fault", "failed_ops", "start_ns", "stop_ns", "last_in_isr_ns"),
    ),
    AnomalyKind(
        "epoch-regression",
        "epoch_regressions",
        "Epoch went backwards",
        "ZooKeeper showed a partition's leader epoch, or the controller epoch, lower than an earlier "
        "sample did: a stale leader or controller state was written back, which the fencing of "
        "leaders and controllers relies on never happening.",
        "times a leader or controller epoch was seen going backwards",
        "epochs-advance",
        "times an epoch went backwards",
        per_acks=False,
        example_fields=("what", "epoch", "previous_epoch", "previous_ns"),
    ),
)

BY_ID = {kind.id: kind for kind in KINDS}
KIND_IDS = tuple(BY_ID)

EXAMPLE_FIRST = ("topic", "partition", "offset", "value", "acks", "process", "invoke_ns", "complete_ns")
"""The example columns shown first, whatever the kind: where it is, and the write behind it."""
EXAMPLE_EVIDENCE = (
    "leader",
    "leader_epoch",
    "leader_epoch_at_end",
    "isr",
    "controller",
    "coordinator",
    "active_faults",
    "faults",
    "truncations",
    "client_log",
)
"""The evidence columns every kind's examples get (RESULT_FORMAT.md), shown after its own."""

WRITE_COUNTS = ("attempted", "acked", "failed", "indeterminate")
WRITE_RATE_BASE = {"acked": "attempted", "failed": "attempted", "indeterminate": "attempted"}
"""The outcomes' rates are out of the writes attempted."""
WRITE_COUNT_HELP = {
    "attempted": "writes the producers started",
    "acked": "writes the broker acknowledged (ok)",
    "failed": "writes the client was told definitely failed",
    "indeterminate": "writes whose outcome is unknown (timeouts, lost connections)",
}
ANOMALY_COUNTS = tuple(kind.count for kind in KINDS if kind.per_acks)
COUNT_KEYS = (*WRITE_COUNTS, *ANOMALY_COUNTS)
"""The per-acks-mode counts of check/result.json, in docs/HISTORY_FORMAT.md's order."""
COUNT_HELP = {**WRITE_COUNT_HELP, **{kind.count: kind.count_help for kind in KINDS}}


def kind(kind_id: str) -> AnomalyKind:
    """The kind with this id, a topic's or a group's (KeyError for an unknown one: the table is the
    authority)."""
    return BY_ID[kind_id] if kind_id in BY_ID else GROUP_BY_ID[kind_id]


GROUP_KINDS: tuple[AnomalyKind, ...] = (
    AnomalyKind(
        "consumer-skip",
        "skipped",
        "Skipped by the group",
        "The group committed past this record, but no member ever processed it: a member that "
        "restarts from the committed offset never sees it. An at-least-once consumer must not skip.",
        "records below the group's committed offset that no member polled",
        "no-consumer-skips",
        "records skipped below the committed offset",
        family="group",
        complete_reads_only=True,
        trend="records skipped by the group",
        per_acks=False,
        example_fields=("committed_ns",),
    ),
    AnomalyKind(
        "redelivery",
        "redelivered",
        "Redelivered",
        "Members of the group processed this record more than once: after a crash or a rebalance, "
        "the next owner of the partition started from a commit below what was already processed. "
        "At-least-once allows it; at-most-once must not.",
        "records the group polled more than once (each counted once)",
        "no-redeliveries",
        "records processed more than once",
        family="group",
        complete_reads_only=True,
        trend="records redelivered",
        per_acks=False,
        example_fields=("first_ns",),
    ),
    AnomalyKind(
        "poll-skip",
        "poll_skips",
        "Poll skipped records",
        "Two consecutive polls of one member on one partition, with no rebalance between, jumped "
        "over records that the partition holds: the consumer's position moved past data it never "
        "handed to the application (an out-of-range reset after a truncated log, for example).",
        "consecutive polls that jumped over records the final read holds",
        "no-consumer-skips",
        "polls jumped over records",
        family="group",
        complete_reads_only=True,
        per_acks=False,
        example_fields=("after_ns",),
    ),
    AnomalyKind(
        "nonmonotonic-poll",
        "nonmonotonic",
        "Poll went backwards",
        "Two consecutive polls of one member on one partition, with no rebalance between, went to "
        "the same or a lower offset: the position moved back without the application seeking.",
        "consecutive polls whose offset did not increase",
        "monotonic-polls",
        "polls went back",
        family="group",
        complete_reads_only=True,
        per_acks=False,
        example_fields=("after_ns",),
    ),
    AnomalyKind(
        "commit-regression",
        "commit_regressions",
        "Commit went backwards",
        "The coordinator accepted a commit lower than an earlier accepted commit of the group for "
        "the partition: a member restarting now goes back and processes records again.",
        "accepted commits lower than an earlier accepted commit of the partition",
        "commits-advance",
        "accepted commits went back",
        family="group",
        complete_reads_only=True,
        per_acks=False,
        example_fields=("time_ns",),
    ),
    AnomalyKind(
        "uncommitted-read",
        "uncommitted_read",
        "Uncommitted record polled",
        "A member of the group was handed a record of a transaction that was not committed at the "
        "time: its commit not yet invoked, or the transaction aborted. The application acted on "
        "data that was not (yet) committed; read_committed promises it never is.",
        "records of transactions not committed when a member of the group polled them",
        "no-uncommitted-reads",
        "uncommitted records polled",
        family="group",
        complete_reads_only=True,
        per_acks=False,
        example_fields=("time_ns", "txn", "outcome", "commit_ns"),
    ),
)
GROUP_BY_ID = {kind.id: kind for kind in GROUP_KINDS}
ALL_KINDS = (*KINDS, *GROUP_KINDS)
RATE_BASE = {**WRITE_RATE_BASE, **{k.count: k.rate_base for k in ALL_KINDS if k.rate_base is not None}}
"""Each count's rate base: outcomes per attempted write, anomalies per their kind's `rate_base`."""


def kinds_of(guarantee_id: str) -> tuple[AnomalyKind, ...]:
    """The kinds whose counts decide this guarantee, in table order (the first is its main count)."""
    return tuple(kind for kind in ALL_KINDS if kind.guarantee == guarantee_id)


def violations(guarantee_id: str, counts: Mapping[str, Any]) -> int:
    """How many times the guarantee was broken: the sum of the counts of its kinds (`kinds_of`) in a
    topic's or group's `counts` (a count that is null, its checker having failed, adds nothing)."""
    return sum(int(counts.get(kind.count) or 0) for kind in kinds_of(guarantee_id))


def trend_metrics(family: str) -> tuple[tuple[str, str], ...]:
    """(count, title) of the index page's trend charts of a family's kinds."""
    return tuple((k.count, k.trend) for k in ALL_KINDS if k.family == family and k.trend is not None)


TRANSACTION_GUARANTEES = tuple(g.id for g in GUARANTEES if g.transactional)
"""The guarantees of transactions: judged only where a run has transactional producers."""
TRANSACTION_KIND_COUNTS = frozenset(
    kind.count for kind in ALL_KINDS if kind.guarantee in TRANSACTION_GUARANTEES
)
"""The counts of the kinds that bear on transactions."""


def counts_of_run(keys: Iterable[str], result: Mapping[str, Any]) -> list[str]:
    """`keys` (count names) but the transactions' counts of a result without transactions: what a
    one-line summary of it names."""
    return [key for key in keys if key not in TRANSACTION_KIND_COUNTS or "transactions" in result]


TOPIC_CASES = tuple(
    dict.fromkeys(g.cases for g in GUARANTEES if g.family == "topic" and g.cases not in WRITE_COUNTS)
)
"""The counts of a topic's cases that its write counts do not hold: topics[] in result.json."""
GROUP_CASES = tuple(dict.fromkeys(g.cases for g in GUARANTEES if g.family == "group"))
"""The counts of a group's cases (`polled` is a group count; `commits_ok` is its `commits.ok`)."""

GROUP_COUNTS = ("polled", *(kind.count for kind in GROUP_KINDS))
"""The per-group counts of check/result.json's `groups`, and of expectations (`group=g skipped == 0`)."""
FINAL_READ_COUNTS = frozenset(
    {*(kind.count for kind in ALL_KINDS if kind.complete_reads_only), *GROUP_COUNTS}
)
"""The counts taken only over partitions whose final read was complete (docs/RESULT_FORMAT.md): on
a topic or group with an incomplete partition, each is a lower bound of the truth."""


def unread_partitions(incomplete: Iterable[Mapping[str, Any]], topics: Collection[str]) -> list[str]:
    """result.json's `incomplete_partitions` of these topics, as "topic partition N": what a count in
    FINAL_READ_COUNTS over them leaves out."""
    return [
        f"{p.get('topic')} partition {p.get('partition')}" for p in incomplete if p.get("topic") in topics
    ]
