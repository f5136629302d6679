"""The anomaly kinds of the run-directory contract (docs/HISTORY_FORMAT.md), in one table.

Each kind's id (as in result.json's `anomalies`), the name of its count (per acks mode in
result.json, and in scenario expectations), its title and plain-words explanation (reports), and
the guarantee it bears on. Checkers (`checkers.checks`), reports and the CLI all read this table;
adding a kind is one row here plus one checker class.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


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
    """The id of the guarantee (checkers.guarantees) whose verdict this kind decides."""
    per_acks: bool = True
    """Counted per acks mode; False for kinds with no write behind them (unexpected values)."""
    truncated: bool = False
    """A write of this kind was cut out of a log: examples quote the brokers' truncations below it."""


KINDS: tuple[AnomalyKind, ...] = (
    AnomalyKind(
        "lost-write",
        "lost",
        "Lost write",
        "The producer was told this write succeeded, but it is not in the partition when the whole "
        "partition is read back at the end. Data the application believed was safe is gone.",
        "acknowledged writes missing from the complete final read",
        "no-lost-acked-writes",
        truncated=True,
    ),
    AnomalyKind(
        "divergent-offset",
        "divergent",
        "Divergent offset",
        "One offset of one partition held two different values: an acknowledged write was truncated "
        "and replaced, or two leaders handed out the same offset. Consumers at that offset disagree.",
        "acknowledged writes whose offset holds another value",
        "no-lost-acked-writes",
        truncated=True,
    ),
    AnomalyKind(
        "duplicate",
        "duplicated",
        "Duplicate",
        "The same value sits at two or more offsets: the producer retried a write that had in fact "
        "succeeded. Harmless with idempotent consumers, a bug for everyone else.",
        "values found at more than one offset",
        "no-duplicates",
    ),
    AnomalyKind(
        "phantom-write",
        "phantom",
        "Phantom write",
        "The producer was told, definitely, that this write failed, yet consumers read it. An "
        "application that retried or compensated for the failure now has it twice.",
        "failed writes that were read anyway",
        "no-phantom-writes",
    ),
    AnomalyKind(
        "unexpected-value",
        "unexpected",
        "Unexpected value",
        "A consumer read a value that the workload never wrote: corruption or a reader bug. "
        "Never acceptable.",
        "values read that no write invoked",
        "no-unexpected-values",
        per_acks=False,
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
        truncated=True,
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
        truncated=True,
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
        per_acks=False,
    ),
)

BY_ID = {kind.id: kind for kind in KINDS}
KIND_IDS = tuple(BY_ID)

WRITE_COUNTS = ("attempted", "acked", "failed", "indeterminate")
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
    """The kind with this id (KeyError for an unknown one: the table is the authority)."""
    return BY_ID[kind_id]


GROUP_KINDS: tuple[AnomalyKind, ...] = (
    AnomalyKind(
        "consumer-skip",
        "skipped",
        "Skipped by the group",
        "The group committed past this record, but no member ever processed it: a member that "
        "restarts from the committed offset never sees it. An at-least-once consumer must not skip.",
        "records below the group's committed offset that no member polled",
        "no-consumer-skips",
        per_acks=False,
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
        per_acks=False,
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
        per_acks=False,
    ),
    AnomalyKind(
        "nonmonotonic-poll",
        "nonmonotonic",
        "Poll went backwards",
        "Two consecutive polls of one member on one partition, with no rebalance between, went to "
        "the same or a lower offset: the position moved back without the application seeking.",
        "consecutive polls whose offset did not increase",
        "monotonic-polls",
        per_acks=False,
    ),
    AnomalyKind(
        "commit-regression",
        "commit_regressions",
        "Commit went backwards",
        "The coordinator accepted a commit lower than an earlier accepted commit of the group for "
        "the partition: a member restarting now goes back and processes records again.",
        "accepted commits lower than an earlier accepted commit of the partition",
        "commits-advance",
        per_acks=False,
    ),
)
GROUP_BY_ID = {kind.id: kind for kind in GROUP_KINDS}
GROUP_COUNTS = ("polled", *(kind.count for kind in GROUP_KINDS))
"""The per-group counts of check/result.json's `groups`, and of expectations (`group=g skipped == 0`)."""
FINAL_READ_COUNTS = frozenset({"lost", "read_lost", *GROUP_COUNTS})
"""The counts taken only over partitions whose final read was complete (docs/RESULT_FORMAT.md): on
a topic or group with an incomplete partition, each is a lower bound of the truth."""


def unread_partitions(incomplete: Iterable[Mapping[str, Any]], topics: Collection[str]) -> list[str]:
    """result.json's `incomplete_partitions` of these topics, as "topic partition N": what a count in
    FINAL_READ_COUNTS over them leaves out."""
    return [
        f"{p.get('topic')} partition {p.get('partition')}" for p in incomplete if p.get("topic") in topics
    ]
