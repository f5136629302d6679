"""How long each consumer group took to read again after each heal: result.json's
`groups.<name>.recovery` and `groups.<name>.heal_recovery_ms` (docs/RESULT_FORMAT.md).

A group has recovered from a heal when it has polled, at or after the heal, every partition of its
topics that acknowledged a write after it: from the writes' side nothing stops it then. End to end,
so a slow producer shows too; acks=0 partitions are left out, their writes may never be in the log.
Until the group's last event or the last write to its topics, whichever is later, a poll could
have come: a partition not polled again by then (or by the next fault) makes a lower bound.
What reaches the driver is small: a row per (group, partition) polled, one per partition written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Row

from checkers.heals import Heal, heal_column, longest_heal_recovery, measured, unmeasured
from contract.events import FaultWindow


def with_recovery(
    entries: Mapping[str, dict[str, Any]],
    intervals: list[FaultWindow],
    healed: list[Heal | None],
    acknowledged: list[Row],
    polled: list[Row],
    last_ns: Mapping[str, int],
    acks: Mapping[str, str],
) -> None:
    """Add `recovery` (a row per fault) and the longest of them to each group's entry: `acknowledged`
    holds per partition its last invocation and first ok after each heal (`availability.firsts_after`),
    `polled` per (group, partition) its first poll after each heal (`groups.firsts_polled_after`),
    `last_ns` each group's last event, `acks` each topic's acks mode."""
    for name, entry in entries.items():
        topics = {t for t in entry["topics"] if acks.get(t) not in (None, "0")}
        written = [r for r in acknowledged if r["topic"] in topics]
        mine = {(r["topic"], r["partition"]): r for r in polled if r["group"] == name}
        # A poll could have come until the group's last event or the last write to its topics: a
        # group gone quiet does not end what tells of its recovery.
        invoked = [r["last_invoke_ns"] for r in written if r["last_invoke_ns"] is not None]
        end_ns = max([last_ns.get(name, 0), *invoked])
        recovery = [
            recovery_of(interval, heal, heal_column(i), written, mine, end_ns)
            for i, (interval, heal) in enumerate(zip(intervals, healed, strict=True))
        ]
        entry["recovery"] = recovery
        entry |= longest_heal_recovery(recovery)


def recovery_of(
    interval: FaultWindow,
    heal: Heal | None,
    column: str,
    written: list[Row],
    polled: Mapping[tuple[str, int], Row],
    end_ns: int,
) -> dict[str, Any]:
    """One fault's row for a group: when it had polled every partition of `written` that acknowledged
    a write at or after its `heal` (`column` of both), and how long after the heal that was. Not
    judged (null) without a heal or a write acknowledged after it; when a partition was not polled
    again by `end_ns`, or the next fault's start if sooner, the time to then, a lower bound (never
    below 0, nor below a poll of another partition that counted)."""
    entry: dict[str, Any] = {"fault": interval.fault, "start_ns": interval.start_ns, **unmeasured(heal)}
    if heal is None:
        return entry
    again = [(r["topic"], r["partition"]) for r in written if r[column] is not None]
    if not again:
        return entry
    firsts = [polled[p][column] if p in polled else None for p in again]
    return entry | measured(heal, firsts, [heal.observed_until(end_ns)] * len(firsts))
