"""The run's heals, which recovery is measured from (result.json's `heal_recovery_ms`, of the acks
modes' writes and of each consumer group): when no fault was in force any more after each fault, and
until when a recovery from it can be told apart from the next fault's outage."""

from __future__ import annotations

from typing import Any, NamedTuple

from checkers.evidence import merged_windows
from contract.events import FaultWindow


class Heal(NamedTuple):
    """When no fault was in force any more after a fault, and when the next one started."""

    at_ns: int
    """The fault's heal, or the last heal of the faults overlapping it."""
    next_fault_ns: int | None
    """A recovery not seen by then is a lower bound: what follows is the next fault's outage too
    (None: no fault started after it)."""

    def resumed_by(self, first_ns: int | None) -> bool:
        """Whether `first_ns`, the first success after this heal (None: none), tells of recovery
        from it: it came by the time the next fault started."""
        return first_ns is not None and (self.next_fault_ns is None or first_ns <= self.next_fault_ns)

    def observed_until(self, last_ns: int) -> int:
        """The end of what tells of recovery from this heal: `last_ns`, or the next fault's start."""
        return last_ns if self.next_fault_ns is None else min(last_ns, self.next_fault_ns)


def unmeasured(heal: Heal | None) -> dict[str, Any]:
    """A recovery row's fields for `heal` before it is measured (`measured`), and if it cannot be: never
    healed, or nothing to recover after it."""
    return {
        "healed_ns": heal.at_ns if heal is not None else None,
        "resumed_ns": None,
        "heal_recovery_ms": None,
        "heal_recovery_lower_bound": False,
    }


def measured(heal: Heal, firsts: list[int | None], observed_until: list[int]) -> dict[str, Any]:
    """A recovery row's fields for `heal`, from each partition waited for: its first success after the
    heal (`firsts`) and when what tells of it ends (`observed_until`). Resumed at the last first if
    every one came by the next fault's start; else a lower bound: to the latest end of the partitions
    that did not, or the latest first of those that did if later (never below 0)."""
    seen = [first for first in firsts if heal.resumed_by(first) and first is not None]
    waiting = [end for first, end in zip(firsts, observed_until, strict=True) if not heal.resumed_by(first)]
    if waiting:
        waited = max(max(waiting + seen) - heal.at_ns, 0)
        return unmeasured(heal) | {"heal_recovery_ms": duration_ms(waited), "heal_recovery_lower_bound": True}
    resumed = max(seen)
    return unmeasured(heal) | {"resumed_ns": resumed, "heal_recovery_ms": duration_ms(resumed - heal.at_ns)}


def duration_ms(ns: int) -> float:
    """A duration in nanoseconds as result.json holds it: milliseconds to three decimals."""
    return round(ns / 1e6, 3)


def heals(intervals: list[FaultWindow]) -> list[Heal | None]:
    """Each fault's `Heal` (None: some fault was still in force when the history ended), from the
    merged fault windows, so that a recovery does not count another fault's outage."""
    windows = merged_windows(intervals)
    found: list[Heal | None] = []
    for interval in intervals:
        # windows are apart (merged where one starts by another's stop), and one may end where it starts
        at = next(
            i
            for i, (start, stop) in enumerate(windows)
            if start <= interval.start_ns and (stop is None or interval.start_ns <= stop)
        )
        stop = windows[at][1]
        following = windows[at + 1][0] if at + 1 < len(windows) else None
        found.append(None if stop is None else Heal(stop, following))
    return found


def heal_column(index: int) -> str:
    """The column of fault `index`'s heal in `availability.firsts_after` and `groups.firsts_polled_after`."""
    return f"heal_{index}"


def heal_times(healed: list[Heal | None]) -> dict[str, int]:
    """The heals to find the firsts after, by their columns; none for a fault never healed."""
    return {heal_column(i): heal.at_ns for i, heal in enumerate(healed) if heal is not None}


def longest_heal_recovery(recovery: list[dict[str, Any]]) -> dict[str, Any]:
    """The longest `heal_recovery_ms` of `recovery`'s rows (null: none was judged) and whether one of
    them was a lower bound: result.json's `acks.<mode>.heal_recovery_ms` of the mode's rows, and
    `groups.<name>.heal_recovery_ms` of the group's, which expectations judge."""
    judged = [entry for entry in recovery if entry["heal_recovery_ms"] is not None]
    return {
        "heal_recovery_ms": max((entry["heal_recovery_ms"] for entry in judged), default=None),
        "heal_recovery_lower_bound": any(entry["heal_recovery_lower_bound"] for entry in judged),
    }
