"""Searching for the smallest fault timeline that still breaks a promise (`kchaos shrink`).

Pure logic over timelines; whether a candidate still fails is asked of a callback, which in
`kchaos shrink` replays it on real clusters. The search is greedy, like Jepsen's and Hypothesis's
shrinkers: try simpler timelines one change at a time (a shorter run, one fault fewer, one fault
half as long, every fault earlier), keep the first that still fails, start over from it, and stop
when no change keeps the failure or the trial budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from faults.schedule import ScheduleEntry

MIN_FAULT_S = 1.0
"""A fault shorter than this is no shorter in effect: starting and healing one takes about as long."""
MIN_LEAD_S = 2.0
"""The workload writes this long before the first fault, so there is something to lose."""
TAIL_S = 5.0
"""The run goes on this long after the last heal, for the cluster to act on it under load."""


@dataclass(frozen=True)
class Timeline:
    """What shrinking varies: the faults and how long the run lasts."""

    entries: tuple[ScheduleEntry, ...]
    duration_s: float

    @property
    def fault_seconds(self) -> float:
        return round(sum(e.stop_s - e.start_s for e in self.entries), 3)

    def describe(self) -> str:
        count = len(self.entries)
        faults = f"{count or 'no'} fault{'' if count == 1 else 's'}"
        return f"{faults} ({self.fault_seconds:g} fault-seconds) in {self.duration_s:g} s"


@dataclass(frozen=True)
class Candidate:
    timeline: Timeline
    change: str
    """What was simplified, in words: `drop kill (target leader) at 15 s`."""


def _name(entry: ScheduleEntry) -> str:
    params = ", ".join(f"{k} {v}" for k, v in sorted(entry.params.items()))
    when = f"after {entry.after.describe(None)}" if entry.after else f"at {entry.start_s:g} s"
    return f"{entry.fault}{f' ({params})' if params else ''} {when}"


def candidates(timeline: Timeline) -> Iterator[Candidate]:
    """Simpler timelines than `timeline`, cheapest to try first."""
    entries = timeline.entries
    # Steps timed by events start when the cluster does something, not at a time: no end or shift
    # can be computed from their times.
    by_time = all(e.after is None for e in entries)
    end = round(max((e.stop_s for e in entries), default=MIN_LEAD_S) + TAIL_S, 3)
    if by_time and end < timeline.duration_s:  # first: it makes every later trial shorter
        yield Candidate(replace(timeline, duration_s=end), f"end the run at {end:g} s")
    for i, entry in enumerate(entries):
        yield Candidate(replace(timeline, entries=entries[:i] + entries[i + 1 :]), f"drop {_name(entry)}")
    for i, entry in enumerate(entries):
        half = round((entry.stop_s - entry.start_s) / 2, 3)
        if half >= MIN_FAULT_S:
            shorter = replace(entry, stop_s=round(entry.start_s + half, 3))
            yield Candidate(
                replace(timeline, entries=(*entries[:i], shorter, *entries[i + 1 :])),
                f"hold {_name(entry)} {half:g} s instead of {half * 2:g} s",
            )
    if entries and by_time:
        shift = round((min(e.start_s for e in entries) - MIN_LEAD_S) / 2, 3)
        if shift >= MIN_FAULT_S:
            earlier = tuple(
                replace(e, start_s=round(e.start_s - shift, 3), stop_s=round(e.stop_s - shift, 3))
                for e in entries
            )
            yield Candidate(
                Timeline(earlier, round(timeline.duration_s - shift, 3)),
                f"start every fault {shift:g} s earlier",
            )


@dataclass(frozen=True)
class Step:
    """One tried candidate and whether it still failed."""

    trial: int
    candidate: Candidate
    kept: bool


def shrink(
    timeline: Timeline,
    still_fails: Callable[[Candidate], bool],
    max_trials: int,
    on_step: Callable[[Step], None] = lambda step: None,
) -> Timeline:
    """The smallest timeline found that still fails (`timeline` itself if none does).

    `still_fails` may raise (KeyboardInterrupt included) to end the search; `on_step` has by then
    seen every kept timeline, so a caller that saves them loses nothing."""
    trial = 0
    while True:
        for candidate in candidates(timeline):
            if trial >= max_trials:
                return timeline
            trial += 1
            kept = still_fails(candidate)
            on_step(Step(trial, candidate, kept))
            if kept:
                timeline = candidate.timeline
                break
        else:
            return timeline


def reproduces(runs: int, needed: int, run_once: Callable[[], bool]) -> tuple[int, int]:
    """(failures, runs made): up to `runs` runs, stopping as soon as `needed` failed or can no
    longer fail."""
    failures = made = 0
    while made < runs and failures < needed and failures + (runs - made) >= needed:
        made += 1
        failures += run_once()
    return failures, made
