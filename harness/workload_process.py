"""A workload process as the conductor sees it (docs/CLIENTS.md): one service object per OS process,
in the style of kafkatest's services, with the verbs faults and the workload use: start, stop, kill,
freeze, thaw, pause, resume, stack.

The process is started with its spec, and a thread of the conductor reads its stdout: each whole
line goes, tag stripped, to the history file its tag names, as it arrives (`LineRouter`); a torn
last line of a process that died mid-write is dropped. Its stderr is RUN/logs/<process>.log.
`stop_all` stops processes side by side within a bound: one that is still running then is asked
for its stacks and killed.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from contract.errors import HistoryError
from contract.history import NODE_LOGS, HistoryWriter, RunDir, open_append
from contract.limits import brief
from harness.process_protocol import (
    FREEZE,
    STACK,
    STACK_END,
    STACK_START,
    STOP,
    THAW,
    LineRouter,
    ProcessSpec,
    encode_spec,
)
from harness.transactional_producer import TransactionalSpec

log = logging.getLogger("kchaos")

CHILD = (sys.executable, "-m", "harness.workload_child")
"""The command of a librdkafka workload process (its spec follows)."""
READ_CHUNK = 1 << 16
STACK_GRACE_S = 1.0
"""Of a stop bound, the last part: a process still running is asked for its stacks, then killed."""
CLOSE_WAIT_S = 5.0
"""How long a process that keeps its client gets to exit once its stdin ends."""
LATENCY_WINDOW = 10_000
"""Recent ack latencies kept per process for the live display; the checker computes the real ones."""


@dataclass(frozen=True)
class ProcessCounts:
    """A snapshot of one process's writes (for the progress display)."""

    attempted: int
    acked: int
    failed: int
    indeterminate: int
    latencies_ns: list[int]
    """Of recent acknowledged writes only."""


class WriteTally:
    """Counts a process's writes from its writes.jsonl lines as they arrive."""

    def __init__(self) -> None:
        self.attempted = self.acked = self.failed = self.indeterminate = 0
        self.latencies_ns: deque[int] = deque(maxlen=LATENCY_WINDOW)
        self._invoked_ns: dict[str, int] = {}  # by value, until its completion

    def add(self, lines: bytes) -> None:
        for line in lines.splitlines():
            try:
                event = orjson.loads(line)
                kind, value, time_ns = event["type"], event["value"], event["time_ns"]
            except (orjson.JSONDecodeError, TypeError, KeyError):
                continue  # not counted; the history's reader names the line
            if kind == "invoke":
                self.attempted += 1
                self._invoked_ns[value] = time_ns
                continue
            invoked_ns = self._invoked_ns.pop(value, None)
            if kind == "ok":
                self.acked += 1
                if invoked_ns is not None:
                    self.latencies_ns.append(time_ns - invoked_ns)
            elif kind == "fail":
                self.failed += 1
            else:
                self.indeterminate += 1

    def counts(self) -> ProcessCounts:
        latencies = list(self.latencies_ns)
        return ProcessCounts(self.attempted, self.acked, self.failed, self.indeterminate, latencies)


class WorkloadProcess:
    """One workload process: started with `command` and `spec` (its one argument), its tagged lines
    appended to `sinks` (by tag: `writes`, `transactions`, `consumes`, `client`), its stderr to
    RUN/logs/<process>.log. `command` is its client's (`harness.client_choice.Client.command`):
    librdkafka's CHILD unless given."""

    def __init__(
        self,
        spec: ProcessSpec,
        sinks: Mapping[str, HistoryWriter],
        rundir: RunDir,
        command: Sequence[str] = CHILD,
    ) -> None:
        self.spec, self.process = spec, spec.process
        self.command = list(command)
        self._sinks, self._rundir = sinks, rundir
        self.log_name = f"{NODE_LOGS}/{self.process}.log"
        """Its stderr, in the run directory."""
        self._child: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._said_all = threading.Event()  # its stdout ended: every line of it is in its file
        self._spoke = threading.Event()  # its first line arrived, or its stdout ended
        self._killed = False
        self._stack_from = 0  # where the log stood when stacks were asked for
        self.frozen = False  # holding its next transaction open (`freeze`)
        self.paused = False  # SIGSTOPped
        self.tally = WriteTally()

    @property
    def transactional_id(self) -> str | None:
        """Of a transactional producer or pipeline process."""
        return self.spec.transactional_id if isinstance(self.spec, TransactionalSpec) else None

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.poll() is None

    @property
    def pid(self) -> int | None:
        """Its OS process id, once started."""
        return self._child.pid if self._child is not None else None

    @property
    def exit_code(self) -> int | None:
        """The process's exit status (negative: the signal that ended it); None while it runs."""
        return self._child.poll() if self._child is not None else None

    @property
    def killed(self) -> bool:
        """Whether its last run ended in a kill from here."""
        return self._killed

    @property
    def counts(self) -> ProcessCounts:
        return self.tally.counts()

    def start(self) -> None:
        """Start the process (again, after a kill or stop)."""
        if self.alive:
            return
        self._join_reader()
        self._starting()
        self._said_all.clear()
        self._spoke.clear()
        stderr = open_append(self._rundir.root, self.log_name)
        try:
            self._child = subprocess.Popen(
                [*self.command, encode_spec(self.spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                # A process group of its own, so that a terminal's Ctrl-C or `timeout`'s signal to
                # the conductor's group does not end the client: the conductor stops it. In the
                # conductor's session still, so that when the conductor dies the kernel wakes a
                # client it left stopped (SIGHUP, SIGCONT; unless a process of that session adopts
                # it); a running one exits when its stdin ends.
                process_group=0,
            )
        finally:
            os.close(stderr)
        self._killed, self.frozen, self.paused = False, False, False
        self._reader = threading.Thread(
            target=self._read, args=(self._child,), name=f"process-{self.process}", daemon=True
        )
        self._reader.start()

    def wait_started(self, timeout_s: float) -> bool:
        """Whether the process has written its first line (its client is up: a JVM takes seconds
        to get there on a busy machine) or ended, within `timeout_s`."""
        return self._spoke.wait(timeout_s)

    def _starting(self) -> None:
        """Called before each start, before any of its lines can arrive (a subclass resets state)."""

    def _read(self, child: subprocess.Popen[bytes]) -> None:
        """Append the process's lines to their files until its stdout ends; then `_exited`."""
        assert child.stdout is not None
        router = LineRouter()
        unrecorded: set[str] = set()  # tags without a file here, said once
        fd = child.stdout.fileno()
        while chunk := os.read(fd, READ_CHUNK):
            self._spoke.set()
            for batch in router.feed(chunk):
                if batch.tag is None:
                    log.warning("%s wrote a line of no history file: %s", self.process, brief(batch.lines))
                elif (sink := self._sinks.get(batch.tag)) is None:
                    if batch.tag not in unrecorded:
                        log.warning("%s wrote %s lines: not recorded here", self.process, batch.tag)
                        unrecorded.add(batch.tag)
                else:
                    try:
                        sink.write_bytes(batch.lines)
                    except HistoryError:
                        continue  # the history is closed: the workload is closing
                    self._observe(batch.tag, batch.lines)
        if torn := router.end():
            log.info("%s: dropped a torn last line (%d bytes): it died mid-write", self.process, len(torn))
        self._said_all.set()
        self._spoke.set()
        self._exited(child.wait())

    def _observe(self, tag: str, lines: bytes) -> None:
        """Lines just appended to the file of `tag` (a subclass follows its own too)."""
        if tag == "writes":
            self.tally.add(lines)

    def _exited(self, code: int) -> None:
        """The process ended with `code` (after its last line was appended)."""
        if code != 0 and not self._killed:
            log.warning("%s exited with %s (see %s)", self.process, code, self.log_name)

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join()
            self._reader = None

    def _send(self, command: bytes) -> None:
        child = self._child
        if child is None or child.stdin is None or not self.alive:
            return
        try:
            child.stdin.write(command + b"\n")
            child.stdin.flush()
        except (BrokenPipeError, ValueError):  # it exited meanwhile (ValueError: stdin closed)
            pass

    def request_stop(self) -> None:
        """Ask for a clean stop (resumed first if paused); `wait` for it."""
        self.resume()
        self._send(STOP)

    @property
    def done(self) -> bool:
        """Whether it has said all it will: its stdout ended (it exited, or keeps its client)."""
        return self._said_all.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Whether the process ended within `timeout_s`, its lines all appended (one that keeps its
        client: whether it is `done`)."""
        if self._child is None:
            return True
        if self.spec.keeps_client:
            return self._said_all.wait(timeout_s)
        try:
            self._child.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        self._join_reader()
        return True

    def stop(self, timeout_s: float) -> None:
        """A clean stop; killed when it does not end within `timeout_s`."""
        self.request_stop()
        if not self.wait(timeout_s):
            log.warning("%s did not stop within %.0f s: killed", self.process, timeout_s)
            self.kill()

    def kill(self) -> None:
        """SIGKILL: a crash. What it had not completed stays without a completion."""
        if self._child is None or not self.alive:
            return
        self._killed = True
        self._child.kill()
        self._child.wait()
        self.paused = self.frozen = False
        self._join_reader()

    def freeze(self) -> None:
        """A transactional process holds its next transaction open once its records are written."""
        self._send(FREEZE)
        self.frozen = True

    def thaw(self) -> None:
        self._send(THAW)
        self.frozen = False

    def pause(self) -> None:
        """SIGSTOP: no polls, no heartbeats, no client threads until `resume` (a long GC pause)."""
        if self._child is not None and self.alive and not self.paused:
            self._child.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self._child is not None and self.alive and self.paused:
            self._child.send_signal(signal.SIGCONT)
            self.paused = False

    def ask_stack(self) -> None:
        """Ask for every thread's stack (to its log); `stack` returns it once written."""
        self._stack_from = self._log_size()
        self._send(STACK)

    def stack(self) -> str | None:
        """The stacks asked for by `ask_stack`, as the process logged them; None until written."""
        try:
            with open(self._rundir.path(self.log_name), "rb") as file:
                file.seek(self._stack_from)
                text = file.read()
        except OSError:
            return None
        start, end = text.find(STACK_START), text.find(STACK_END)
        return text[start + len(STACK_START) : end].decode(errors="replace") if 0 <= start < end else None

    def _log_size(self) -> int:
        try:
            return os.stat(self._rundir.path(self.log_name)).st_size
        except OSError:
            return 0

    def close(self) -> None:
        """End its stdin, at which a process that keeps its client exits; kill any other still
        running (and one that does not exit in time)."""
        if not self.done:
            self.kill()
        if self._child is not None and self._child.stdin is not None:
            self._child.stdin.close()
            try:
                self._child.wait(CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self._join_reader()


@dataclass(frozen=True)
class Killed:
    """A process that did not stop within the stop bound, and why it was killed."""

    process: str
    why: str

    def recorded(self) -> dict[str, str]:
        """An entry of run.json's `workload.killed`."""
        return {"process": self.process, "why": self.why}


def stop_all(processes: Sequence[WorkloadProcess], bound_s: float) -> list[Killed]:
    """Stop `processes` side by side within `bound_s`: each is sent `stop`; one still running
    STACK_GRACE_S before the bound is asked for its stacks (to its log) and killed at the bound, or
    as soon as it has answered. Returns the killed, each with why."""
    started = time.monotonic()
    for process in processes:
        process.request_stop()
    asked_at = started + max(0.0, bound_s - STACK_GRACE_S)
    for process in processes:
        process.wait(max(0.0, asked_at - time.monotonic()))
    stuck = [p for p in processes if p.alive and not p.done]
    for process in stuck:
        process.ask_stack()
    stacks = _stacks(stuck, started + bound_s)
    killed = []
    for process in stuck:
        if not process.alive or process.done:
            continue  # it stopped after all, within the bound
        process.kill()
        stack = stacks[process.process]
        where = f"its stacks are in {process.log_name}" if stack else "it answered no `stack` (stopped?)"
        why = f"did not stop within the stop bound ({bound_s:g} s): {where}"
        log.warning(
            "%s %s; killed: the history misses its last completions%s",
            process.process,
            why,
            f"\n{stack}" if stack else "",
        )
        killed.append(Killed(process.process, why))
    return killed


def _stacks(processes: Sequence[WorkloadProcess], deadline: float) -> dict[str, str | None]:
    """Each process's stacks once every one has answered (or stopped after all), or as they stand
    at `deadline` (monotonic): None for one that has not answered."""
    while True:
        stacks = {p.process: p.stack() for p in processes}
        answered = all(stacks[p.process] is not None or p.done or not p.alive for p in processes)
        if answered or time.monotonic() >= deadline:
            return stacks
        time.sleep(0.05)
