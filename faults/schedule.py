"""A seeded fault timeline (`Schedule`) and the runner that applies it to a cluster (`Nemesis`).

    schedule = Schedule.generate(seed=7, duration_s=60, faults=[("kill", {"target": "leader"})],
                                 interval_s=10, fault_duration_s=8, mode="mix")
    with Nemesis(cluster, schedule, writer, clock, seed=7) as nemesis:
        run_workload()            # nemesis.active() names the faults in force, for progress
    # here every fault that was started has been healed and its stop recorded

The same seed gives the same schedule and the same per-entry random choices (which broker is
`one`, which order a ring takes); targets themselves are resolved from live state at start.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from faults.base import Fault, make_fault
from harness.cluster import KafkaCluster
from harness.errors import ConfigError, FaultError, HarnessError
from harness.events import fault_event
from harness.history import HistoryWriter, RunClock
from harness.limits import MAX_DURATION_S

MODES = ("mix", "sequence")
MAX_ENTRIES = 10_000
"""Faults in one schedule: hours of back-to-back faults; more is a mistake in the intervals."""


@dataclass(frozen=True)
class ScheduleEntry:
    """One fault: started `start_s` and healed `stop_s` seconds after the nemesis starts."""

    start_s: float
    stop_s: float
    fault: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "start_s": self.start_s,
            "stop_s": self.stop_s,
            "fault": self.fault,
            "params": dict(self.params),
        }


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
        """An explicit timeline; entries may be mappings with start_s, stop_s, fault, params."""
        built: list[ScheduleEntry] = []
        for i, raw in enumerate(entries):
            try:
                entry = (
                    raw
                    if isinstance(raw, ScheduleEntry)
                    else ScheduleEntry(
                        float(raw["start_s"]),
                        float(raw["stop_s"]),
                        str(raw["fault"]),
                        dict(raw.get("params", {})),
                    )
                )
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise ConfigError(
                    f"schedule entry {i}: needs start_s, stop_s, fault (and params): {exc}"
                ) from None
            if not 0 <= entry.start_s < entry.stop_s <= 2 * MAX_DURATION_S:  # false for NaN too
                raise ConfigError(
                    f"schedule entry {i}: needs 0 <= start_s < stop_s <= {2 * MAX_DURATION_S}, "
                    f"got {entry.start_s}, {entry.stop_s}"
                )
            make_fault(entry.fault, entry.params)
            built.append(entry)
            if len(built) > MAX_ENTRIES:
                raise ConfigError(f"a schedule holds at most {MAX_ENTRIES} faults")
        return cls(tuple(sorted(built, key=lambda e: e.start_s)))

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.entries]


class Nemesis:
    """Applies a schedule from a background thread; leaving the `with` block in any way (end of the
    workload, an error, Ctrl-C) heals every active fault, newest first, and records each stop.

    A fault that cannot start (no leader right now) is recorded with its error and skipped;
    heal failures are collected and raised as one FaultError on exit unless an error is in flight.
    """

    def __init__(
        self,
        cluster: KafkaCluster,
        schedule: Schedule,
        writer: HistoryWriter,
        clock: RunClock,
        seed: int,
        join_timeout_s: float = 600.0,
    ) -> None:
        self.cluster, self.schedule, self.writer, self.clock = cluster, schedule, writer, clock
        self.seed = seed
        self.join_timeout_s = join_timeout_s
        self.errors: list[str] = []  # faults that could not start (recorded, run goes on)
        self.heal_errors: list[str] = []
        self._active: dict[int, tuple[str, Fault]] = {}  # entry index -> fault, in start order
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._origin_ns = 0

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

    def _wait_until(self, offset_s: float) -> bool:
        """Sleep until `offset_s` after the start; False when asked to stop first."""
        remaining = offset_s - (self.clock.now_ns() - self._origin_ns) / 1e9
        return not self._stop.wait(remaining) if remaining > 0 else not self._stop.is_set()

    def _run(self) -> None:
        # Starts and stops of all entries in time order, so explicit timelines may overlap.
        events = sorted(
            [(e.start_s, 1, i) for i, e in enumerate(self.schedule.entries)]
            + [(e.stop_s, 0, i) for i, e in enumerate(self.schedule.entries)]
        )
        for offset_s, is_start, index in events:
            if not self._wait_until(offset_s):
                return
            if is_start:
                self._start(index, self.schedule.entries[index])
            else:
                self._heal(index)

    def _start(self, index: int, entry: ScheduleEntry) -> None:
        fault = make_fault(entry.fault, entry.params)
        with self._lock:  # active before start: a heal after a partial start must see it
            self._active[index] = (entry.fault, fault)
        began = self.clock.now_ns()
        try:
            fault.start(self.cluster, random.Random(f"{self.seed}:{index}"))
        except Exception as exc:  # a runner thread must record and go on, not die silently
            exc = _as_harness_error(exc)
            self.errors.append(f"{entry.fault} could not start: {exc}")
            self._record(began, index, entry.fault, "start", fault, {"error": str(exc)})
            self._heal(index)
            return
        self._record(began, index, entry.fault, "start", fault, fault.detail)

    def _heal(self, index: int) -> None:
        with self._lock:
            if index not in self._active:
                return  # never started, or already healed
            name, fault = self._active[index]
        detail: dict[str, Any] = {}
        try:
            fault.heal(self.cluster)
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


def _as_harness_error(exc: Exception) -> HarnessError:
    """Docker and kazoo errors that escape a fault, wrapped so the record names what failed."""
    return exc if isinstance(exc, HarnessError) else FaultError(f"{type(exc).__name__}: {exc}")
