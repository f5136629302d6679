"""Consumer groups: each member a workload process (`harness.workload_process`, role `member`:
`harness.group_member`), its events appended to history/consumes.jsonl as they arrive.

A member this harness kills gets its `stop` event (`killed`) from here, and one that dies on its own
gets `crashed`; the state of each (running, assigned in which generation) is followed from its
events, for the `group-stable` trigger.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.errors import ConfigError, FaultError
from contract.events import member_event
from contract.history import HistoryWriter, RunClock, RunDir
from contract.history_fields import COMMIT_MODES
from contract.limits import brief
from harness.group_member import MemberSpec
from harness.workload_process import Killed, WorkloadProcess, stop_all

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


class GroupMember(WorkloadProcess):
    """One member process: the verbs of `WorkloadProcess` (kill, pause, resume, stop, start again),
    and what the harness last saw of it (`state`, `polled`)."""

    def __init__(
        self,
        process: str,
        spec: GroupSpec,
        client_config: Mapping[str, Any],
        sinks: Mapping[str, HistoryWriter],
        clock: RunClock,
        rundir: RunDir,
    ) -> None:
        member = MemberSpec(
            process=process,
            origin_ns=clock.origin_ns,
            config={k: v for k, v in {**client_config, **spec.effective_config()}.items() if k != "logger"},
            group=spec.name,
            topics=list(spec.topics),
            commit=spec.commit,
            commit_async=spec.commit_async,
            processing_ms=spec.processing_ms,
            commit_interval_s=spec.commit_interval_s,
        )
        super().__init__(member, sinks, rundir)
        self.group, self._clock = spec, clock
        self.polled = 0
        self._assigned: int | None = None  # `MemberState.assigned`, set by the thread reading stdout
        self._stopped = False  # its last event is its own `stop`

    @property
    def state(self) -> MemberState:
        return MemberState(self.process, self.alive and not self.paused, self._assigned)

    def _starting(self) -> None:
        self._assigned, self._stopped = None, False

    def _observe(self, tag: str, lines: bytes) -> None:
        if tag != "consumes":
            return
        self.polled += lines.count(b'"type":"poll"')
        if b'"type":"assign"' in lines or b'"type":"revoke"' in lines:
            for line in lines.splitlines():
                if b'"type":"assign"' in line:
                    self._assigned = _generation(line)
                elif b'"type":"revoke"' in line:
                    self._assigned = None
        self._stopped = b'"type":"stop"' in lines[lines.rfind(b"\n", 0, -1) + 1 :]

    def _exited(self, code: int) -> None:
        """Its `stop` when it did not write one (killed here, or crashed)."""
        super()._exited(code)
        if not self._stopped and (consumes := self._sinks.get("consumes")) is not None:
            reason = "killed" if self.killed else "crashed"
            event = member_event("stop", self._clock.now_ns(), self.process, self.group.name, reason=reason)
            consumes.write(event)


class ConsumerGroups:
    """Every member of every group of a run, by process name."""

    def __init__(
        self,
        specs: Sequence[GroupSpec],
        client_config: Mapping[str, Any],
        sinks: Mapping[str, HistoryWriter],
        clock: RunClock,
        rundir: RunDir,
    ) -> None:
        self.members: dict[str, GroupMember] = {
            name: GroupMember(name, spec, client_config, sinks, clock, rundir)
            for spec in specs
            for name in spec.member_names()
        }

    def start(self) -> None:
        for member in self.members.values():
            member.start()

    def stop(self, bound_s: float = STOP_TIMEOUT_S) -> list[Killed]:
        """Stop every member side by side within `bound_s` (each stop waits on its own LeaveGroup
        and last commit); returns those killed at the bound."""
        return stop_all(list(self.members.values()), bound_s)

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
