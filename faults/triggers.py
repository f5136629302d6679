"""Event-timed schedule steps: a step may start `delay_s` after an event, not at a fixed time.

Events (`EVENTS`) are seen in ZooKeeper (`leader-change`, `controller-change`, `isr-shrink`,
`isr-expand`), in the nemesis itself (`start`: the step before started; `healed`: no fault is in
force) or in the consumer groups' events (`group-stable`: a group is formed, `harness.groups.stable`).
The reference point is always the start of the step before (the nemesis start for the first): a
ZooKeeper event counts when the first look differs from what ZooKeeper held just before that step
started, so an election that the step itself caused is seen however quickly it happens, and after
that when a sample differs from the one before it (a broker that leaves the ISR and comes back is an
isr-expand, though the ISR ends as it began). `healed` and `group-stable` are states: seen at the
first look at which they hold.

`seen` is pure (two snapshots in, what changed out) so it is unit-tested without Docker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract.errors import ConfigError
from contract.limits import MAX_DURATION_S, brief, finite, whole
from harness.cluster_state import ClusterSnapshot, PartitionState

EVENTS = {
    "start": "the step before started",
    "healed": "every fault started so far was healed",
    "leader-change": "a new leader of the watched partition (its leader epoch grew and it has a leader)",
    "controller-change": "a new controller (the controller epoch grew)",
    "isr-shrink": "a broker left the watched partition's ISR",
    "isr-expand": "a broker joined the watched partition's ISR",
    "group-stable": "every member of the group (or of every group) runs and is assigned, in one generation",
}
"""Event name -> what it means, for `kchaos faults` and errors."""
PARTITION_EVENTS = ("leader-change", "isr-shrink", "isr-expand")
ZOOKEEPER_EVENTS = (*PARTITION_EVENTS, "controller-change")
DEFAULT_WITHIN_S = 120.0
MAX_PARTITION = 2**31 - 1

Watched = tuple[str, int]
"""A topic/partition whose leader or ISR a trigger watches."""


@dataclass(frozen=True)
class Trigger:
    """Start a step `delay_s` after `event`, waiting at most `within_s` for it; partition events
    watch `topic`/`partition`, or the partition the step before was aimed at when not given."""

    event: str
    delay_s: float = 0.0
    within_s: float = DEFAULT_WITHIN_S
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    """The group `group-stable` waits for; None: every group."""

    @classmethod
    def from_mapping(cls, data: Any) -> Trigger:
        """Build from scenario YAML; ConfigError naming the field and what it expects."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                "expected a mapping with event (and delay_s, within_s, topic, partition, group), "
                f"got {brief(data)}"
            )
        allowed = ("event", "delay_s", "within_s", "topic", "partition", "group")
        unknown = [str(k) for k in data if k not in allowed]
        if unknown:
            raise ConfigError(f"{brief(unknown[0])}: unknown field; allowed: {', '.join(allowed)}")
        event = data.get("event")
        if event not in EVENTS:
            raise ConfigError(f"event: expected one of {', '.join(EVENTS)}, got {brief(event)}")
        topic, partition = data.get("topic"), data.get("partition")
        if topic is not None and (not isinstance(topic, str) or not topic.strip() or len(topic) > 255):
            raise ConfigError(f"topic: expected a topic name, got {brief(topic)}")
        if (topic is not None or partition is not None) and event not in PARTITION_EVENTS:
            raise ConfigError(f"topic and partition: only {', '.join(PARTITION_EVENTS)} watch a partition")
        if (topic is None) != (partition is None):
            raise ConfigError(
                "topic and partition: give both, or neither to watch the step before's partition"
            )
        group = data.get("group")
        if group is not None and event != "group-stable":
            raise ConfigError("group: only group-stable waits for a group")
        if group is not None and (not isinstance(group, str) or not group.strip() or len(group) > 255):
            raise ConfigError(f"group: expected a group name, got {brief(group)}")
        return cls(
            event,
            finite("delay_s", data.get("delay_s", 0.0), 0.0, MAX_DURATION_S),
            finite("within_s", data.get("within_s", DEFAULT_WITHIN_S), 0.1, MAX_DURATION_S),
            topic,
            whole("partition", partition, 0, MAX_PARTITION) if partition is not None else None,
            group,
        )

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"event": self.event, "delay_s": self.delay_s, "within_s": self.within_s}
        if self.topic is not None:
            shown |= {"topic": self.topic, "partition": self.partition}
        if self.group is not None:
            shown["group"] = self.group
        return shown

    def watched(self, before: Watched | None) -> Watched | None:
        """The partition this trigger watches, given the one the step before was aimed at."""
        if self.event not in PARTITION_EVENTS:
            return None
        if self.topic is not None and self.partition is not None:
            return (self.topic, self.partition)
        return before

    def describe(self, watched: Watched | None) -> str:
        """`leader-change of t/0, then 1 s`: what the nemesis waits for."""
        what = f"{self.event} of {watched[0]}/{watched[1]}" if watched else self.event
        what += f" of {self.group}" if self.group is not None else ""
        return f"{what}, then {self.delay_s:g} s" if self.delay_s else what


def seen(event: str, before: ClusterSnapshot, now: ClusterSnapshot, watched: Watched | None) -> bool:
    """Has ZooKeeper `event` happened between the `before` and `now` snapshots?"""
    if event == "controller-change":
        return (now.controller_epoch or 0) > (before.controller_epoch or 0) and now.controller is not None
    if watched is None:
        raise ValueError(f"{event} needs a partition to watch")
    old, new = before.partition(*watched), now.partition(*watched)
    if new is None:
        return False
    if event == "leader-change":
        return new.leader >= 0 and new.leader_epoch > (old.leader_epoch if old else -1)
    old_isr = set(old.isr) if old else set()
    if event == "isr-shrink":
        return bool(old_isr - set(new.isr))
    if event == "isr-expand":
        return bool(set(new.isr) - old_isr)
    raise ValueError(f"{event} is not seen in ZooKeeper")


def state_of(snapshot: ClusterSnapshot | None, watched: Watched | None) -> str:
    """What ZooKeeper last showed of the watched partition (or the controller), for a timeout error."""
    if snapshot is None:
        return "ZooKeeper could not be read"
    part: PartitionState | None = snapshot.partition(*watched) if watched else None
    if part is None:
        return f"controller={snapshot.controller} epoch={snapshot.controller_epoch}"
    return f"leader={part.leader} leader_epoch={part.leader_epoch} isr={list(part.isr)}"
