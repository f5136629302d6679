"""The live progress line of `kchaos workload` and `kchaos run`, and the end-of-run summary table
and phase times."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from rich.console import Console
from rich.table import Table

from harness.workload import ModeCounts, Workload


def _percentile_ms(latencies_ns: list[int], q: float) -> float | None:
    if not latencies_ns:
        return None
    ordered = sorted(latencies_ns)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


class Progress:
    """Renders one line per tick: time left, writes/s, per-mode acked/failed/indeterminate, reads.

    On a terminal the line is redrawn in place; elsewhere (CI logs) one line is printed every
    `log_every_s` seconds so logs stay short.
    """

    def __init__(
        self, console: Console, status: Callable[[], str] | None = None, log_every_s: float = 5.0
    ) -> None:
        self.console = console
        self.status = status
        self._last_attempted = 0
        self._last_time = time.monotonic()
        self._last_logged = 0.0
        self._log_every_s = log_every_s

    def __call__(self, workload: Workload, left_s: float) -> None:
        counts = workload.counts()
        attempted = sum(c.attempted for c in counts.values())
        now = time.monotonic()
        rate = (attempted - self._last_attempted) / max(now - self._last_time, 1e-6)
        self._last_attempted, self._last_time = attempted, now
        modes = "  ".join(
            f"{a if a == 'txn' else 'acks=' + a}: {c.acked} ok {c.failed} fail {c.indeterminate} info"
            for a, c in counts.items()
        )
        extra = f"  | {self.status()}" if self.status else ""
        line = f"{left_s:4.0f}s left  {rate:6.0f} writes/s  {modes}  read {workload.read}{extra}"
        if self.console.is_terminal:
            self.console.print(line, end="\r", overflow="crop", no_wrap=True, highlight=False)
        elif now - self._last_logged >= self._log_every_s:
            self.console.print(line, highlight=False)
            self._last_logged = now


def run_ticker(console: Console) -> Callable[[Workload, float, str], None]:
    """The `on_tick` of `run_scenario`: a live progress line with the run's status text."""
    progress = Progress(console)

    def tick(workload: Workload, left_s: float, status: str) -> None:
        progress.status = lambda: status
        progress(workload, left_s)

    return tick


def summary_table(counts: dict[str, ModeCounts], duration_s: float) -> Table:
    table = Table(title="workload summary")
    for column in ("acks", "attempted", "acked", "failed", "indeterminate", "acked/s", "p50 ms", "p99 ms"):
        table.add_column(column, justify="right")
    for acks, c in counts.items():
        p50, p99 = _percentile_ms(c.latencies_ns, 0.5), _percentile_ms(c.latencies_ns, 0.99)
        table.add_row(
            acks,
            str(c.attempted),
            str(c.acked),
            str(c.failed),
            str(c.indeterminate),
            f"{c.acked / duration_s:.0f}" if duration_s else "-",
            f"{p50:.1f}" if p50 is not None else "-",
            f"{p99:.1f}" if p99 is not None else "-",
        )
    return table


def phase_times(phases_s: Mapping[str, float]) -> str:
    """`setup 5.2 s, chaos 40.3 s, final read 1.6 s`: how long each phase of a run took, in order."""
    return ", ".join(f"{name.replace('_', ' ')} {seconds:.1f} s" for name, seconds in phases_s.items())
