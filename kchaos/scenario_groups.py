"""A scenario's consumer groups (`workload.groups`): each a list item, validated field by field.

groups:
  - name: g-alo
    acks: [all]              # the topics read, by acks mode (default: every mode written; txn:
                             # the transactional topics)
    commit: after-process    # after-process | before-process | auto
    commit_async: false      # after-process only: commit without waiting for the reply
    members: 2
    config: {session.timeout.ms: 6000}   # the client's own names: librdkafka's, or Java's
    client: java             # librdkafka | java | java:<kafka-clients release> (default: workload.client)
"""

from __future__ import annotations

import re
from typing import Any

from contract.errors import ConfigError
from contract.limits import brief
from harness.client_choice import ClientChoice
from harness.groups import MAX_COMMIT_INTERVAL_S, MAX_MEMBERS, MAX_PROCESSING_MS, GroupSpec
from harness.workload import topic_name
from kchaos.scenario_fields import Fields, fail

MAX_GROUPS = 16
_FIELDS = (
    "name",
    "acks",
    "commit",
    "commit_async",
    "members",
    "processing_ms",
    "commit_interval_s",
    "config",
    "client",
)
_GROUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,40}")


TXN_MODE = "txn"
"""A group's `acks` word for the transactional topics (`workload.transactions`)."""


def parse_groups(
    value: Any, path: str, written: tuple[str, ...], txn_topics: tuple[str, ...] = ()
) -> tuple[GroupSpec, ...]:
    """The groups listed at `path`, reading topics written under the acks modes `written`, and
    `txn_topics` (the transactional topics, if any) for the mode `txn`."""
    modes_written = (*written, TXN_MODE) if txn_topics else written
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_GROUPS:
        raise fail(path, f"expected a list of at most {MAX_GROUPS} groups, got {brief(value)}")
    groups = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        g = Fields(item, where, _FIELDS)
        name = g.text("name", None, pattern=_GROUP_NAME)
        if name is None:
            raise fail(f"{where}.name", "required: the group id (and its members' name prefix)")
        acks = g.get("acks", list, list(written))
        modes = [str(a) for a in acks if isinstance(a, str | int) and not isinstance(a, bool)]
        if not modes or len(modes) != len(acks) or any(m not in modes_written for m in modes):
            raise fail(
                f"{where}.acks",
                f"expected a non-empty list of the modes written ({', '.join(modes_written)})",
            )
        topics = tuple(t for m in modes for t in (txn_topics if m == TXN_MODE else (topic_name(m),)))
        try:
            groups.append(
                GroupSpec(
                    name=name,
                    topics=topics,
                    commit=g.text("commit", "after-process"),
                    commit_async=g.get("commit_async", bool, False),
                    members=g.integer("members", 2, 1, MAX_MEMBERS),
                    config=g.mapping("config"),
                    processing_ms=g.number("processing_ms", 0.0, 0.0, MAX_PROCESSING_MS),
                    commit_interval_s=g.number("commit_interval_s", 0.0, 0.0, MAX_COMMIT_INTERVAL_S),
                    client=None
                    if g.data.get("client") is None
                    else ClientChoice.parse(g.data["client"], "client"),
                )
            )
        except ConfigError as exc:
            raise fail(where, str(exc)) from None
    if len({g.name for g in groups}) < len(groups):
        raise fail(path, "two groups have the same name")
    return tuple(groups)
