"""A seeded fault timeline (`Schedule`) and the runner that applies it to a cluster (`Nemesis`).

    schedule = Schedule.generate(seed=7, duration_s=60, faults=[("kill", {"target": "leader"})],
                                 interval_s=10, fault_duration_s=8, mode="mix")
    with Nemesis(FaultContext(cluster, workload.handles), schedule, writer, clock, seed=7) as nemesis:
        run_workload()            # nemesis.active() names the faults in force, for progress
    # here every fault that was started has been healed and its stop recorded

The same seed gives the same schedule and the same per-entry random choices (which broker is
`one`, which order a ring takes); targets themselves are resolved from live state at start.

An explicit timeline may also time a step by an event (`ScheduleEntry.after`, `faults.triggers`):
such steps run in the order given, each waiting for its event after the step before started.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.errors import ClusterError, ConfigError, FaultError, HarnessError
from contract.events import fault_event
from contract.history import HistoryWriter, RunClock
from contract.limits import MAX_DURATION_S
from faults.base import Fault, FaultContext, make_fault
from faults.triggers import ZOOKEEPER_EVENTS, Trigger, Watched
from faults.watches import watch_for
from harness.cluster_state import ClusterSnapshot

MODES = ("mix", "sequence")
MAX_ENTRIES = 10_000
"""Faults in one schedule: hours of back-to-back faults; more is a mistake in the intervals."""
TRIGGER_POLL_S = 0.2
"""How often a step waiting for an event reads ZooKeeper (a read of a few partitions takes ~10 ms)."""


@dataclass(frozen=True)
class ScheduleEntry:
    """One fault: started `start_s` and healed `stop_s` seconds after the nemesis starts; or, with
    `after`, started on that trigger and held `stop_s - start_s` seconds."""

    start_s: float
    stop_s: float
    fault: str
    params: Mapping[str, Any] = field(default_factory=dict)
    after: Trigger | None = None
    same_partition: bool = False
    """Aim at the partition the step before was aimed at (its `topic` and `partition` params)."""

    @property
    def duration_s(self) -> float:
        return round(self.stop_s - self.start_s, 3)

    def to_json(self) -> dict[str, Any]:
        shown = {
            "start_s": self.start_s,
            "stop_s": self.stop_s,
            "fault": self.fault,
            "params": dict(self.params),
        }
        if self.after is not None:
            shown["after"] = self.after.to_json()
        if self.same_partition:
            shown["same_partition"] = True
        return shown


@dataclass(frozen=True)
class Schedule:
    entries: tuple[ScheduleEntry, ...]

    @classmethod
    def generate(
        cls,
        seed: int,
        duration_s: float,
        faults: Sequence[tuple[str, Mapping[str, Any]]],
        interval_s: float,
        fault_duration_s: float,
        mode: str = "mix",
    ) -> Schedule:
        """Faults one at a time: a quiet gap of `interval_s` (jittered 0.5x to 1.5x by the seed),
        then a fault held `fault_duration_s`, until `duration_s`. `mix` picks each fault at random,
        `sequence` takes them in the order given, round and round."""
        if mode not in MODES:
            raise ConfigError(f"schedule mode {mode!r}: expected one of {', '.join(MODES)}")
        if not faults:
            raise ConfigError("a schedule needs at least one fault")
        for what, seconds in (
            ("duration_s", duration_s),
            ("interval_s", interval_s),
            ("fault_duration_s", fault_duration_s),
        ):
            if not 0 < seconds <= MAX_DURATION_S:  # also false for NaN
                raise ConfigError(
                    f"schedule {what} must be above 0 and at most {MAX_DURATION_S}, got {seconds}"
                )
        for name, params in faults:
            make_fault(name, params)  # fail at planning time on an unknown fault or param
        rng = random.Random(seed)
        entries: list[ScheduleEntry] = []
        now = 0.0
        while True:
            start = round(now + interval_s * rng.uniform(0.5, 1.5), 3)
            stop = round(start + fault_duration_s, 3)
            if stop > duration_s:
                break
            if len(entries) == MAX_ENTRIES:
                raise ConfigError(
                    f"the schedule would hold more than {MAX_ENTRIES} faults: "
                    "make interval_s or fault_duration_s longer, or the duration shorter"
                )
            name, params = rng.choice(faults) if mode == "mix" else faults[len(entries) % len(faults)]
            entries.append(ScheduleEntry(start, stop, name, dict(params)))
            now = stop
        return cls(tuple(entries))

    @classmethod
    def from_entries(cls, entries: Iterable[ScheduleEntry | Mapping[str, Any]]) -> Schedule:
        """An explicit timeline; entries may be mappings with start_s, stop_s, fault, params (and
        after, same_partition). Sorted by start time unless some step is timed by an event: then
        the steps run in the order given."""
        built: list[ScheduleEntry] = []
        for i, raw in enumerate(entries):
            try:
                entry = raw if isinstance(raw, ScheduleEntry) else _entry(raw)
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise ConfigError(
                    f"schedule entry {i}: needs start_s, stop_s, fault "
                    f"(and params, after, same_partition): {exc}"
                ) from None
            except ConfigError as exc:
                raise ConfigError(f"schedule entry {i}: {exc}") from None
            if not 0 <= entry.start_s < entry.stop_s <= 2 * MAX_DURATION_S:  # false for NaN too
                raise ConfigError(
                    f"schedule entry {i}: needs 0 <= start_s < stop_s <= {2 * MAX_DURATION_S}, "
                    f"got {entry.start_s}, {entry.stop_s}"
                )
            make_fault(entry.fault, entry.params)
            if entry.same_partition:
                try:
                    make_fault(entry.fault, {**entry.params, "topic": "t", "partition": 0})
                except ConfigError:
                    raise ConfigError(
                        f"schedule entry {i}: same_partition needs a fault aimed at a partition's "
                        f"replicas (params topic and partition); {entry.fault!r} is not"
                    ) from None
            built.append(entry)
            if len(built) > MAX_ENTRIES:
                raise ConfigError(f"a schedule holds at most {MAX_ENTRIES} faults")
        if any(e.after is not None for e in built):
            return cls(tuple(built))
        return cls(tuple(sorted(built, key=lambda e: e.start_s)))

    @property
    def event_timed(self) -> bool:
        return any(e.after is not None for e in self.entries)

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.entries]


def _entry(raw: Mapping[str, Any]) -> ScheduleEntry:
    after = raw.get("after")
    return ScheduleEntry(
        float(raw["start_s"]),
        float(raw["stop_s"]),
        str(raw["fault"]),
        dict(raw.get("params", {})),
        after if isinstance(after, Trigger) or after is None else Trigger.from_mapping(after),
        bool(raw.get("same_partition", False)),
    )


class Nemesis:
    """Applies a schedule from a background thread; leaving the `with` block in any way (end of the
    workload, an error, Ctrl-C) heals every active fault, newest first, and records each stop.

    A fault that cannot start (no leader right now) is recorded with its error and skipped;
    heal failures are collected and raised as one FaultError on exit unless an error is in flight.
    """

    def __init__(
        self,
        context: FaultContext,
        schedule: Schedule,
        writer: HistoryWriter,
        clock: RunClock,
        seed: int,
        join_timeout_s: float = 600.0,
    ) -> None:
        self.context, self.schedule, self.writer, self.clock = context, schedule, writer, clock
        self.cluster = context.cluster
        self.seed = seed
        self.join_timeout_s = join_timeout_s
        self.errors: list[str] = []  # faults that could not start (recorded, run goes on)
        self.heal_errors: list[str] = []
        self._active: dict[int, tuple[str, Fault]] = {}  # entry index -> fault, in start order
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._origin_ns = 0
        self._heal_at: dict[int, float] = {}  # started entry -> when to heal it (seconds after start)
        self._last_start_s = 0.0  # when the step before started (seconds after start)
        self._last_partition: Watched | None = None  # the topic/partition the last started step aimed at

    def active(self) -> list[str]:
        """Names of the faults in force now."""
        with self._lock:
            return [name for name, _ in self._active.values()]

    def __enter__(self) -> Nemesis:
        self._origin_ns = self.clock.now_ns()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self._stop.set()
        try:
            self._thread.join(timeout=self.join_timeout_s)
        finally:
            self.heal_all()
        if self.heal_errors and exc_type is None:
            raise FaultError("; ".join(self.heal_errors))

    def _now_s(self) -> float:
        return (self.clock.now_ns() - self._origin_ns) / 1e9

    def _pause_until(self, offset_s: float) -> bool:
        """Wait until `offset_s` after the start, healing each fault when its time comes; False when
        asked to stop first."""
        while True:
            now = self._now_s()
            due = sorted((t, i) for i, t in self._heal_at.items() if t <= now)
            for _, index in due:
                del self._heal_at[index]
                self._heal(index)
            if now >= offset_s:
                return not self._stop.is_set()
            if self._stop.wait(min(offset_s, *self._heal_at.values(), math.inf) - now):
                return False

    def _run(self) -> None:
        # Each step in turn, healing on time meanwhile, so explicit timelines may overlap.
        entries = self.schedule.entries
        before = self._snapshot() if entries and _watches_zookeeper(entries[0]) else None
        for index, entry in enumerate(entries):
            if entry.after is None:
                if not self._pause_until(entry.start_s):
                    return
                waited: dict[str, Any] = {}
            else:
                outcome = self._await(entry.after, before)
                if outcome is None:
                    return
                waited = outcome
            follows = entries[index + 1] if index + 1 < len(entries) else None
            before = self._snapshot() if follows is not None and _watches_zookeeper(follows) else None
            self._last_start_s = self._now_s()
            if self._start(index, entry, waited):
                self._heal_at[index] = (
                    entry.stop_s if entry.after is None else self._now_s() + entry.duration_s
                )
        self._pause_until(max(self._heal_at.values(), default=0.0))

    def _snapshot(self) -> ClusterSnapshot | None:
        try:
            return self.cluster.state()
        except ClusterError:
            return None  # ZooKeeper unreachable (a fault may cut it off): the next readable one counts

    def _await(self, trigger: Trigger, before: ClusterSnapshot | None) -> dict[str, Any] | None:
        """Wait for `trigger` after the step before started, then its delay. What was waited for and
        when it was seen, for the step's record (with `error` when it was not seen in time); None
        when asked to stop."""
        watched = trigger.watched(self._last_partition)
        waited: dict[str, Any] = {"waited_for": trigger.describe(watched)}
        if trigger.event == "start":
            seen_s = self._last_start_s
        else:
            try:
                watch = watch_for(
                    trigger,
                    watched,
                    active=self.active,
                    groups=self.context.workload.groups,
                    snapshot=self._snapshot,
                    before=before,
                )
            except FaultError as exc:
                return waited | {"error": str(exc)}
            now = self._now_s()
            deadline = now + trigger.within_s
            while not watch.look():
                if now >= deadline:
                    shown = watch.last_seen()
                    return waited | {"error": f"not seen within {trigger.within_s:g} s; last seen: {shown}"}
                if not self._pause_until(now + TRIGGER_POLL_S):
                    return None
                now = self._now_s()
            seen_s = now
            waited["seen"] = watch.last_seen()
        if not self._pause_until(seen_s + trigger.delay_s):
            return None
        return waited | {"seen_ns": self._origin_ns + int(seen_s * 1e9)}

    def _start(self, index: int, entry: ScheduleEntry, waited: Mapping[str, Any]) -> bool:
        """Start one step; False (recorded with its error) when it could not start."""
        params = dict(entry.params)
        if entry.same_partition and self._last_partition is not None:
            params |= {"topic": self._last_partition[0], "partition": self._last_partition[1]}
        fault = make_fault(entry.fault, params)
        with self._lock:  # active before start: a heal after a partial start must see it
            self._active[index] = (entry.fault, fault)
        began = self.clock.now_ns()
        try:
            if "error" in waited:
                raise FaultError(f"waited for {waited['waited_for']}: {waited['error']}")
            if entry.same_partition and self._last_partition is None:
                raise FaultError("same_partition: the step before did not start aimed at a partition")
            fault.start(self.context, random.Random(f"{self.seed}:{index}"))
        except Exception as exc:  # a runner thread must record and go on, not die silently
            exc = _as_harness_error(exc)
            self.errors.append(f"{entry.fault} could not start: {exc}")
            self._last_partition = None  # a step aimed at the same partition as this one has none
            self._record(began, index, entry.fault, "start", fault, {**waited, "error": str(exc)})
            self._heal(index)
            return False
        if "topic" in fault.detail and "partition" in fault.detail:
            self._last_partition = (str(fault.detail["topic"]), int(fault.detail["partition"]))
        self._record(began, index, entry.fault, "start", fault, {**fault.detail, **waited})
        return True

    def _heal(self, index: int) -> None:
        with self._lock:
            if index not in self._active:
                return  # never started, or already healed
            name, fault = self._active[index]
        detail: dict[str, Any] = {}
        try:
            fault.heal(self.context)
            detail = dict(fault.healed)
        except Exception as exc:  # recorded and raised on exit; the other faults still get healed
            exc = _as_harness_error(exc)
            self.heal_errors.append(f"{name} could not heal: {exc}")
            detail = {"error": str(exc)}
        finally:
            with self._lock:
                del self._active[index]
            self._record(self.clock.now_ns(), index, name, "stop", fault, detail)

    def heal_all(self) -> None:
        """Heal every active fault, newest first (each attempted even if another fails)."""
        with self._lock:
            newest_first = list(reversed(self._active))
        for index in newest_first:
            self._heal(index)

    def _record(
        self, time_ns: int, index: int, name: str, phase: str, fault: Fault, detail: Mapping[str, Any]
    ) -> None:
        """A start (with what the fault does) or stop; the schedule index is the fault's id."""
        description = fault.describe() if phase == "start" else None
        self.writer.write(fault_event(time_ns, index, name, phase, fault.targets, detail, description))


def _watches_zookeeper(entry: ScheduleEntry) -> bool:
    return entry.after is not None and entry.after.event in ZOOKEEPER_EVENTS


def _as_harness_error(exc: Exception) -> HarnessError:
    """Docker and kazoo errors that escape a fault, wrapped so the record names what failed."""
    return exc if isinstance(exc, HarnessError) else FaultError(f"{type(exc).__name__}: {exc}")
