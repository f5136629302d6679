"""Faults of consumer-group members (`harness.groups`): crash one (`kill-member`: SIGKILL), freeze
one past its session timeout and let it wake up (`freeze-member`: SIGSTOP, a zombie), or stop it
cleanly (`leave-member`: a rebalance without a crash).

`member` picks the targets: a member's process name (`g-alo-1`), `random` (one member of any group,
or of `group`), or `all` (every member of `group`, or of every group). Heal starts killed and
stopped members again and thaws frozen ones, so each heal forces another rebalance.
"""

from __future__ import annotations

import random

from contract.errors import FaultError
from faults.base import FaultContext, register, text_param
from harness.groups import STOP_TIMEOUT_S, GroupMember


class _MemberFault:
    name = ""
    description = ""

    def __init__(self, *, member: str = "random", group: str | None = None) -> None:
        self.member = text_param("member", member)
        self.group = text_param("group", group) if group is not None else None
        self.targets: list[str] = []
        self.detail: dict[str, object] = {}
        self.healed: dict[str, object] = {}
        self._members: list[GroupMember] = []

    def describe(self) -> str:
        return self.description

    def resolve(self, context: FaultContext, rng: random.Random) -> list[GroupMember]:
        groups = context.workload.groups
        if groups is None or not groups.members:
            raise FaultError(f"{self.name}: the workload has no consumer groups (workload.groups)")
        pool = groups.of_group(self.group) if self.group is not None else list(groups.members.values())
        if not pool:
            raise FaultError(f"{self.name}: no group {self.group!r} (groups: {', '.join(groups.names)})")
        if self.member == "all":
            chosen = pool
        elif self.member == "random":
            live = [m for m in pool if m.alive and not m.paused] or pool
            chosen = [rng.choice(sorted(live, key=lambda m: m.process))]
        else:
            chosen = [groups.member(self.member)]
        self._members = chosen
        self.targets = [m.process for m in chosen]
        self.detail["groups"] = sorted({m.group.name for m in chosen})
        return chosen

    def heal(self, context: FaultContext) -> None:
        for member in self._members:
            member.resume()
            member.start()  # a no-op for a member that is running


@register
class KillMember(_MemberFault):
    name = "kill-member"
    description = (
        "Crash a consumer-group member (SIGKILL): no last commit, no LeaveGroup. Its partitions "
        "move after session.timeout.ms; records it processed since its last commit are redelivered "
        "to their next owner. Heal starts it again (another rebalance)."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        for member in self.resolve(context, rng):
            member.kill()


@register
class FreezeMember(_MemberFault):
    name = "freeze-member"
    description = (
        "Freeze a consumer-group member (SIGSTOP), like a long GC pause of the application: held past "
        "session.timeout.ms, the group moves its partitions on, and at heal it wakes as a zombie "
        "that still believes it owns them, processing and committing until it learns otherwise."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        for member in self.resolve(context, rng):
            member.pause()


@register
class LeaveMember(_MemberFault):
    name = "leave-member"
    description = (
        "Stop a consumer-group member cleanly (last commit, LeaveGroup): its partitions move at once. "
        "Heal starts it again and it joins: two rebalances without a crash."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        for member in self.resolve(context, rng):
            member.stop(STOP_TIMEOUT_S)


MEMBER_FAULTS = (KillMember.name, FreezeMember.name, LeaveMember.name)
"""The faults aimed at consumer-group members: a workload without groups has no target for them."""
