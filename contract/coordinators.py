"""Which partition of __consumer_offsets coordinates a consumer group, and which of
__transaction_state a transactional.id, found the way the broker finds it: the groups' coordinators
in cluster.jsonl, the checkers' and the reports' alike, and the `coordinator` and `txn-coordinator`
fault targets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
"""The transaction log: the leader of a transactional.id's partition is its transaction coordinator
(transaction.state.log.num.partitions, 50 unless set)."""


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: 32-bit signed, over UTF-16 code units."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The partition whose leader coordinates `key`: of __consumer_offsets for a group, of
    __transaction_state for a transactional.id (the broker hashes both alike). Kafka's
    `Utils.abs(key.hashCode) % partitions`, where abs(MIN_VALUE) is 0 (checked on 0.9.0.1 against
    DescribeGroups for a group whose hash is negative)."""
    h = java_string_hash(key)
    return (0 if h == -(2**31) else abs(h)) % partitions


def offsets_partitions(run: Mapping[str, Any], key: str = "offsets_topic") -> int | None:
    """How many partitions run.json's `offsets_topic` says __consumer_offsets has (or, with `key`
    `transaction_state_topic`, __transaction_state); None: no groups (transactions), or the count
    could not be read."""
    offsets = run.get(key)
    count = offsets.get("partitions") if isinstance(offsets, Mapping) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None


def group_offsets_partition(group: str, declared: int | None, sampled: Iterable[int]) -> int | None:
    """`coordinator_partition` over `declared` (`offsets_partitions`), or for a run.json without it
    over the offsets partitions cluster.jsonl sampled; None when neither is known."""
    count = declared or max(sampled, default=-1) + 1
    return coordinator_partition(group, count) if count else None
