"""Consumer groups: each member an OS process (`harness.group_member`) with kill / freeze / thaw /
restart / stop verbs, its events appended to history/consumes.jsonl as they arrive.

A member's stdout is a pipe read by a thread here, which appends each line to the history; the
member's librdkafka log goes to RUN/logs/<member>.log. A member this harness kills gets its `stop`
event (`killed`) from here, and one that dies on its own gets `crashed`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from contract.errors import ConfigError, FaultError
from contract.events import member_event
from contract.history import NODE_LOGS, HistoryWriter, RunClock, RunDir, open_append
from contract.history_fields import COMMIT_MODES
from contract.limits import brief

log = logging.getLogger("kchaos")

STOP_TIMEOUT_S = 20.0  # a clean stop: a last commit and a LeaveGroup, each bounded by the client
MAX_MEMBERS = 16
MAX_PROCESSING_MS = 1000.0
MAX_COMMIT_INTERVAL_S = 600.0

# Group members give up on the coordinator within a chaos run: session.timeout.ms is Kafka 0.9's
# lowest allowed (group.min.session.timeout.ms) so a killed member is noticed within 6 s.
DEFAULT_MEMBER_CONFIG: dict[str, Any] = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 1000,
    "auto.commit.interval.ms": 1000,
    "fetch.wait.max.ms": 100,
}


@dataclass(frozen=True)
class GroupSpec:
    """A consumer group of the workload: `members` processes subscribed to `topics`."""

    name: str
    topics: tuple[str, ...]
    commit: str = "after-process"
    commit_async: bool = False
    members: int = 2
    config: Mapping[str, Any] = field(default_factory=dict)
    processing_ms: float = 0.0
    """How long processing one record takes: the window in which a crash finds a batch half done."""
    commit_interval_s: float = 0.0
    """after-process: commit at most this often (0: after every batch); a crash redelivers what was
    processed since the last commit."""

    def __post_init__(self) -> None:
        where = f"group {self.name!r}"
        if self.commit not in COMMIT_MODES:
            raise ConfigError(
                f"{where}: commit: expected one of {', '.join(COMMIT_MODES)}, got {brief(self.commit)}"
            )
        if self.commit_async and self.commit != "after-process":
            raise ConfigError(f"{where}: commit_async applies to commit: after-process only")
        if not 1 <= self.members <= MAX_MEMBERS:
            raise ConfigError(f"{where}: members: expected 1 to {MAX_MEMBERS}, got {brief(self.members)}")
        if not 0 <= self.processing_ms <= MAX_PROCESSING_MS:
            raise ConfigError(f"{where}: processing_ms: expected 0 to {MAX_PROCESSING_MS}")
        if not 0 <= self.commit_interval_s <= MAX_COMMIT_INTERVAL_S:
            raise ConfigError(f"{where}: commit_interval_s: expected 0 to {MAX_COMMIT_INTERVAL_S}")
        if self.commit_interval_s and self.commit != "after-process":
            raise ConfigError(f"{where}: commit_interval_s applies to commit: after-process only")
        if not self.topics:
            raise ConfigError(f"{where}: topics: expected at least one topic")
        reserved = {"group.id", "enable.auto.commit", "on_commit", "bootstrap.servers"} & set(self.config)
        if reserved:
            raise ConfigError(f"{where}: config must not set {', '.join(sorted(reserved))}: the harness does")

    def member_names(self) -> list[str]:
        return [f"{self.name}-{n}" for n in range(self.members)]

    def effective_config(self) -> dict[str, Any]:
        return {**DEFAULT_MEMBER_CONFIG, **self.config}

    def recorded(self) -> dict[str, Any]:
        """The group's entry in run.json's `groups`."""
        return {
            "name": self.name,
            "topics": list(self.topics),
            "commit": self.commit,
            "commit_async": self.commit_async,
            "members": self.members,
            "processing_ms": self.processing_ms,
            "commit_interval_s": self.commit_interval_s,
            "config": dict(self.effective_config()),
        }


@dataclass(frozen=True)
class MemberState:
    """What the harness last saw of a member: `running` (alive and not frozen), and `assigned` the
    generation of its last assign event since it started (-1 when the member could not read it), None
    when there was none or a revoke came after it."""

    process: str
    running: bool
    assigned: int | None


def stable(states: Sequence[MemberState]) -> bool:
    """Is a group whole and formed: is every member running and assigned, all in one generation?
    (Right after a thaw, a zombie and the others may still show the generation they last shared.)"""
    return (
        bool(states)
        and all(s.running and s.assigned is not None for s in states)
        and len({s.assigned for s in states}) == 1
    )


def describe_states(states: Sequence[MemberState]) -> str:
    """`g-alo-0 in generation 2, g-alo-1 unassigned, g-alo-2 stopped or frozen`: for a timeout error."""
    return ", ".join(f"{s.process} {_shown(s)}" for s in states)


def _shown(state: MemberState) -> str:
    if not state.running:
        return "stopped or frozen"
    return "unassigned" if state.assigned is None else f"in generation {state.assigned}"


class GroupMember:
    """One member process (a kafkatest-style service object): start, stop, kill, freeze, thaw."""

    def __init__(
        self,
        process: str,
        spec: GroupSpec,
        client_config: Mapping[str, Any],
        writer: HistoryWriter,
        clock: RunClock,
        rundir: RunDir,
    ) -> None:
        self.process, self.group = process, spec
        self._argument = json.dumps(
            {
                "process": process,
                "group": spec.name,
                "topics": list(spec.topics),
                "commit": spec.commit,
                "commit_async": spec.commit_async,
                "config": {
                    k: v for k, v in {**client_config, **spec.effective_config()}.items() if k != "logger"
                },
                "origin_ns": clock.origin_ns,
                "processing_ms": spec.processing_ms,
                "commit_interval_s": spec.commit_interval_s,
            }
        )
        self._writer, self._clock, self._rundir = writer, clock, rundir
        self._child: subprocess.Popen[bytes] | None = None
        self._copier: threading.Thread | None = None
        self._killed = False
        self.frozen = False
        self.polled = 0
        self._assigned: int | None = None  # `MemberState.assigned`, set by the thread reading stdout

    @property
    def exit_code(self) -> int | None:
        """The member process's exit status (negative: the signal that ended it); None while it runs."""
        return self._child.poll() if self._child is not None else None

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.poll() is None

    @property
    def state(self) -> MemberState:
        return MemberState(self.process, self.alive and not self.frozen, self._assigned)

    def start(self) -> None:
        """Start the member process (again, after a kill or stop)."""
        if self.alive:
            return
        self._join_copier()
        stderr = os.fdopen(open_append(self._rundir.root, f"{NODE_LOGS}/{self.process}.log"), "ab")
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "harness.group_member", self._argument],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        finally:
            stderr.close()
        self._killed, self.frozen, self._assigned = False, False, None
        assert self._child.stdout is not None
        self._copier = threading.Thread(
            target=self._copy,
            args=(self._child, self._child.stdout),
            name=f"member-{self.process}",
            daemon=True,
        )
        self._copier.start()

    def _copy(self, child: subprocess.Popen[bytes], stdout: IO[bytes]) -> None:
        """Append the member's event lines to consumes.jsonl until its stdout ends; then its `stop`
        when the member did not write one (killed here, or crashed)."""
        stopped = False
        for line in stdout:
            if not line.endswith(b"\n"):
                break  # torn by the member's death: not an event
            self._writer.write_bytes(line)
            stopped = line.startswith(b'{"type":"stop"')
            self.polled += line.startswith(b'{"type":"poll"')
            if line.startswith(b'{"type":"assign"'):
                self._assigned = _generation(line)
            elif line.startswith(b'{"type":"revoke"'):
                self._assigned = None
        code = child.wait()
        if not stopped:
            reason = "killed" if self._killed else "crashed"
            if reason == "crashed":
                log.warning(
                    "group member %s exited with %s (see logs/%s.log)", self.process, code, self.process
                )
            self._writer.write(
                member_event("stop", self._clock.now_ns(), self.process, self.group.name, reason=reason)
            )

    def _join_copier(self) -> None:
        if self._copier is not None:
            self._copier.join(STOP_TIMEOUT_S)
            self._copier = None

    def kill(self) -> None:
        """SIGKILL: no last commit, no LeaveGroup; the coordinator notices after session.timeout.ms."""
        if self._child is None or not self.alive:
            return
        self._killed = True
        self._child.kill()
        self._child.wait()
        self.frozen = False
        self._join_copier()

    def freeze(self) -> None:
        """SIGSTOP: no polls and no heartbeats until `thaw`, like a long GC pause of the application."""
        if self._child is not None and self.alive and not self.frozen:
            self._child.send_signal(signal.SIGSTOP)
            self.frozen = True

    def thaw(self) -> None:
        if self._child is not None and self.alive and self.frozen:
            self._child.send_signal(signal.SIGCONT)
            self.frozen = False

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """A clean stop (last commit, close); killed when it does not end within `timeout_s`."""
        if self._child is None:
            return
        if self.alive:
            self.thaw()
            self._child.terminate()
            try:
                self._child.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("group member %s did not stop within %.0f s: killed", self.process, timeout_s)
                self.kill()
        self._join_copier()
        if self._child.stdin is not None:
            self._child.stdin.close()


class ConsumerGroups:
    """Every member of every group of a run, by process name."""

    def __init__(
        self,
        specs: Sequence[GroupSpec],
        client_config: Mapping[str, Any],
        writer: HistoryWriter,
        clock: RunClock,
        rundir: RunDir,
    ) -> None:
        self.members: dict[str, GroupMember] = {
            name: GroupMember(name, spec, client_config, writer, clock, rundir)
            for spec in specs
            for name in spec.member_names()
        }

    def start(self) -> None:
        for member in self.members.values():
            member.start()

    def stop(self) -> None:
        """Stop every member side by side (each stop waits on its own LeaveGroup and last commit)."""
        threads = [threading.Thread(target=m.stop, daemon=True) for m in self.members.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(STOP_TIMEOUT_S + 5)

    @property
    def names(self) -> list[str]:
        """The groups' names, in the order declared."""
        return list(dict.fromkeys(m.group.name for m in self.members.values()))

    def of_group(self, group: str) -> list[GroupMember]:
        return [m for m in self.members.values() if m.group.name == group]

    def member(self, name: str) -> GroupMember:
        try:
            return self.members[name]
        except KeyError:
            known = ", ".join(self.members) or "none"
            raise FaultError(f"no group member {name!r} (members: {known})") from None

    @property
    def polled(self) -> int:
        return sum(m.polled for m in self.members.values())

    def states(self, group: str | None = None) -> dict[str, list[MemberState]]:
        """Each group's (or `group`'s) members as last seen, by group name."""
        names = [group] if group is not None else self.names
        return {name: [m.state for m in self.of_group(name)] for name in names}


def _generation(assign_line: bytes) -> int:
    """An assign event's generation; -1 when the member could not read it (an assign all the same).
    Never raises: the thread copying the member's events to the history must not stop."""
    try:
        generation = json.loads(assign_line).get("generation")
    except ValueError:  # the history's reader names such a line
        return -1
    return generation if isinstance(generation, int) else -1
