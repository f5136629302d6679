"""Cluster state, active faults and client log lines around a moment of the run, for the few
example anomalies.

faults.jsonl, cluster.jsonl (a sample every few hundred milliseconds) and client.jsonl (what the
clients logged: trouble only) are small, so this is plain Python over what `checkers.io` loaded
(faults paired into `contract.events.FaultWindow`s); it is only asked about capped example rows.
"""

from __future__ import annotations

import bisect
from typing import Any

from contract.broker_logs import LogEvent
from contract.events import FaultWindow

CLIENT_LINES_CAP = 8
"""Client log lines quoted per example; the rest are counted."""


def merged_windows(intervals: list[FaultWindow]) -> list[tuple[int, int | None]]:
    """The union of the fault intervals as disjoint [start, stop) windows (stop None: open-ended)."""
    windows: list[tuple[int, int | None]] = []
    for interval in sorted(intervals, key=lambda i: i.start_ns):
        if windows:
            start, stop = windows[-1]
            if stop is None or interval.start_ns <= stop:
                end = None if stop is None or interval.stop_ns is None else max(stop, interval.stop_ns)
                windows[-1] = (start, end)
                continue
        windows.append((interval.start_ns, interval.stop_ns))
    return windows


class ClusterTimeline:
    """The cluster.jsonl samples, answering "what was the state at time t" for one partition."""

    def __init__(self, samples: list[dict[str, Any]]) -> None:
        self._samples = sorted(samples, key=lambda s: int(s["time_ns"]))
        self._times = [int(s["time_ns"]) for s in self._samples]

    def state_at(self, time_ns: int | None, topic: str | None, partition: int | None) -> dict[str, Any]:
        """leader, leader_epoch, isr and controller from the last sample at or before `time_ns`."""
        state: dict[str, Any] = {"leader": None, "leader_epoch": None, "isr": None, "controller": None}
        index = bisect.bisect_right(self._times, time_ns) - 1 if time_ns is not None else -1
        if index < 0:
            return state
        sample = self._samples[index]
        state["controller"] = sample.get("controller")
        for entry in sample.get("partitions") or []:
            if entry.get("topic") == topic and entry.get("partition") == partition:
                state |= {key: entry.get(key) for key in ("leader", "leader_epoch", "isr")}
        return state


def active_fault_names(intervals: list[FaultWindow], time_ns: int | None) -> list[str]:
    if time_ns is None:
        return []
    return [interval.fault for interval in intervals if interval.active_at(time_ns)]


class ClientLog:
    """The client.jsonl lines, answering "what did this process's client log between two moments"."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self._by_process: dict[str, list[tuple[int, str]]] = {}
        for line in sorted(lines, key=lambda line: int(line["time_ns"])):
            quoted = f"{int(line['time_ns']) / 1e9:.3f} s {line.get('facility') or ''}: {line['message']}"
            self._by_process.setdefault(str(line["process"]), []).append((int(line["time_ns"]), quoted))

    def between(self, process: str | None, start_ns: int | None, stop_ns: int | None) -> list[str]:
        """The lines `process`'s client logged from `start_ns` to `stop_ns` (None: the run's end),
        each as "<run time> s <facility>: <message>", at most CLIENT_LINES_CAP and a count of the rest."""
        lines = self._by_process.get(process or "", [])
        if start_ns is None or not lines:
            return []
        first = bisect.bisect_left(lines, (start_ns, ""))
        last = len(lines) if stop_ns is None else bisect.bisect_right(lines, (stop_ns, "\U0010ffff"))
        quoted = [text for _, text in lines[first:last]]
        if len(quoted) > CLIENT_LINES_CAP:
            quoted[CLIENT_LINES_CAP:] = [
                f"... and {len(quoted) - CLIENT_LINES_CAP} more lines in history/client.jsonl"
            ]
        return quoted


TRUNCATION_LINES_CAP = 10


class TruncationLog:
    """The brokers' truncations and halts (`contract.broker_logs`), answering "which broker cut its
    log below this offset"."""

    def __init__(self, events: list[LogEvent], unix_ns_at_zero: int | None) -> None:
        self._events, self._zero = events, unix_ns_at_zero

    def below(
        self, topic: str | None, partition: int | None, offset: int | None, after_ns: int | None = None
    ) -> list[str]:
        """Each truncation of (topic, partition) to an offset above 0 and at most `offset` (the
        write there was cut away), and each halt of a broker over that topic, logged after `after_ns`
        (the write's acknowledgement; the whole run when the log times cannot be placed), as "<run
        time> s kafka-N: <line>"; at most TRUNCATION_LINES_CAP."""
        if topic is None or offset is None:
            return []
        quoted = []
        for event in self._events:
            at = event.at_run_s(self._zero)
            if after_ns is not None and at is not None and at * 1e9 < after_ns - 1e6:  # log times are in ms
                continue
            cut = event.offset is not None and event.partition == partition and 0 < event.offset <= offset
            halted = event.offset is None
            if event.topic == topic and (cut or halted):
                quoted.append(f"{'' if at is None else f'{at:.3f} s '}kafka-{event.broker}: {event.line}")
        if len(quoted) > TRUNCATION_LINES_CAP:
            quoted[TRUNCATION_LINES_CAP:] = [f"... and {len(quoted) - TRUNCATION_LINES_CAP} more in logs/"]
        return quoted
