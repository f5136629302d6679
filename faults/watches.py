"""What a schedule step timed by an event (`faults.triggers`) looks at while it waits: one watch per
kind of event. Each look says whether the event has happened; `last_seen` then says what was seen
(the step's record keeps it: which change started the step, or what was seen last on a timeout)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from contract.errors import FaultError
from faults.triggers import ZOOKEEPER_EVENTS, Trigger, Watched, seen, state_of
from harness.cluster_state import ClusterSnapshot
from harness.groups import MemberState, describe_states, stable


class Watch(Protocol):
    def look(self) -> bool:
        """Has the event happened (by this look)?"""
        ...

    def last_seen(self) -> str:
        """What the watched state is: for ZooKeeper, what the last look read, or once the event is
        seen, the change (`from <state> to <state>`)."""
        ...


class GroupStates(Protocol):
    """What `GroupStable` reads of the workload's consumer groups (`harness.groups.ConsumerGroups`)."""

    @property
    def members(self) -> Mapping[str, object]: ...

    def states(self, group: str | None = None) -> dict[str, list[MemberState]]: ...


class FaultsHealed:
    """`healed`: no fault is in force (a state, seen at the first look at which it holds)."""

    def __init__(self, active: Callable[[], list[str]]) -> None:
        self._active = active

    def look(self) -> bool:
        return not self._active()

    def last_seen(self) -> str:
        return f"in force: {', '.join(self._active()) or 'none'}"


class GroupStable:
    """`group-stable`: every member of `group` (or of every group) runs and is assigned in one
    generation (a state, like `healed`)."""

    def __init__(self, groups: GroupStates | None, group: str | None) -> None:
        if groups is None or not groups.members:
            raise FaultError("the workload has no consumer groups")
        self._groups, self._group = groups, group

    def look(self) -> bool:
        return all(stable(states) for states in self._groups.states(self._group).values())

    def last_seen(self) -> str:
        return "; ".join(
            f"{name}: {describe_states(states) or 'no members'}"
            for name, states in self._groups.states(self._group).items()
        )


class ZooKeeperChange:
    """A change ZooKeeper shows (`triggers.seen`): against `before`, what it held just before the
    step before started, at the first look; from sample to sample after that, so that an ISR that
    left and came back counts."""

    def __init__(
        self,
        event: str,
        watched: Watched | None,
        snapshot: Callable[[], ClusterSnapshot | None],
        before: ClusterSnapshot | None,
    ) -> None:
        if event != "controller-change" and watched is None:
            raise FaultError(f"{event}: no partition to watch (give topic and partition)")
        self._event, self._watched, self._snapshot = event, watched, snapshot
        self._before = self._last = before
        self._change: str | None = None

    def look(self) -> bool:
        self._last = self._snapshot() or self._last  # None: ZooKeeper unreadable, the next look counts
        before, now = self._before or self._last, self._last
        self._before = now
        if before is None or now is None or not seen(self._event, before, now, self._watched):
            return False
        self._change = f"from {state_of(before, self._watched)} to {state_of(now, self._watched)}"
        return True

    def last_seen(self) -> str:
        return self._change or state_of(self._last, self._watched)


def watch_for(
    trigger: Trigger,
    watched: Watched | None,
    *,
    active: Callable[[], list[str]],
    groups: GroupStates | None,
    snapshot: Callable[[], ClusterSnapshot | None],
    before: ClusterSnapshot | None,
) -> Watch:
    """The watch of `trigger`'s event (not `start`, which needs no look); FaultError when it cannot
    be watched."""
    if trigger.event == "healed":
        return FaultsHealed(active)
    if trigger.event == "group-stable":
        return GroupStable(groups, trigger.group)
    if trigger.event in ZOOKEEPER_EVENTS:
        return ZooKeeperChange(trigger.event, watched, snapshot, before)
    raise ValueError(f"{trigger.event}: no watch")
