"""A check's consumer groups in a terminal, for `kchaos check` and `kchaos run`: each group's counts
in one line, and its guarantee rows beside the topics'; and how the recovery after heals of a group
or an acks mode reads there."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from contract.anomaly_kinds import GROUP_COUNTS, counts_of_run


def group_lines(result: Mapping[str, Any]) -> list[str]:
    """`group g (after-process, 2 members): polled 8323, skipped 0, ...; commits 38 sent: 36 ok,
    2 failed, 0 unknown`, one line per group of result.json's `groups`."""
    lines = []
    for name, group in (result.get("groups") or {}).items():
        counts = ", ".join(f"{k} {group.get(k, 0)}" for k in counts_of_run(GROUP_COUNTS, result))
        commits = group.get("commits") or {}
        members = group.get("members")
        how = f"{group.get('commit')}{f', {members} members' if members else ''}"
        lines.append(
            f"group {name} ({how}): {counts}; commits {commits.get('invoke', 0)} sent: "
            f"{commits.get('ok', 0)} ok, {commits.get('fail', 0)} failed, {commits.get('info', 0)} unknown"
            + _after_heals(
                group, "was read again", "was not read again by the workload's end or the next fault"
            )
        )
    return lines


def acks_after_heals(counts: Mapping[str, Any]) -> str:
    """How soon after the run's heals every partition of an acks mode (its `counts` in result.json's
    `acks`) took writes again; '' when no heal was judged."""
    return _after_heals(
        counts, "took writes again", "took no write again by the writes' end or the next fault"
    )


def _after_heals(entry: Mapping[str, Any], again: str, not_again: str) -> str:
    """How soon after the run's heals every partition of an acks mode or a group's `entry` of
    result.json `again` (its longest `heal_recovery_ms`), a lower bound when after one a partition
    `not_again`; '' when no heal was judged."""
    longest = entry.get("heal_recovery_ms")
    if longest is None:
        return ""
    if entry.get("heal_recovery_lower_bound"):  # floored: the true time is this or more
        return (
            f"; every partition {again} within {math.floor(longest)} ms or more of each heal (after one, "
            f"a partition {not_again})"
        )
    return f"; every partition {again} within {longest:.0f} ms of each heal"


def every_guarantee(result: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(whose: its topic, or `group NAME`, guarantee row) for the topics' guarantees, then the groups'."""
    topics = [(str(g.get("topic", "")), g) for g in result.get("guarantees", [])]
    return [*topics, *((f"group {name}", g) for name, g in each_group_guarantee(result))]


def each_group_guarantee(result: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(group name, guarantee row) for each guarantee of each group of result.json's `groups`."""
    for name, group in (result.get("groups") or {}).items():
        for guarantee in group.get("guarantees") or []:
            yield name, guarantee
