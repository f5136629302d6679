"""What scripts/reorder_repro.py saw, and what it makes of it: deliveries, kafka-chaos's reordered,
duplicated and lost values, and the producer's debug-log lines around a reordered value."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

QUOTED_LINES = 40
"""How many debug-log lines are quoted per reordered value."""


@dataclass
class Delivery:
    value: int
    sent_s: float
    done_s: float
    error: str | None
    offset: int | None


@dataclass
class Run:
    """What one producing phase saw: deliveries by value, fault events, the producer's last value."""

    t0: float = field(default_factory=time.time)
    deliveries: dict[int, Delivery] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    sent: int = 0

    def now(self) -> float:
        return round(time.time() - self.t0, 3)


@dataclass
class Findings:
    acked: int
    failed: int
    missing_report: int
    reordered: list[dict[str, Any]]
    duplicated: dict[int, list[int]]
    lost: list[int]


def analyse(run: Run, records: list[tuple[int, int]]) -> Findings:
    """kafka-chaos's definitions: reordered = an acknowledged value at a lower acknowledged offset
    than an earlier-sent acknowledged value; duplicated = read at more than one offset."""
    at: dict[int, list[int]] = {}
    for offset, value in records:
        at.setdefault(value, []).append(offset)
    acked = sorted(
        (d for d in run.deliveries.values() if d.error is None and d.offset is not None),
        key=lambda d: d.value,
    )
    reordered: list[dict[str, Any]] = []
    highest: Delivery | None = None
    for d in acked:
        assert d.offset is not None
        if highest is not None and highest.offset is not None and d.offset < highest.offset:
            reordered.append(
                {
                    "value": d.value,
                    "offset": d.offset,
                    "read_at": at.get(d.value, []),
                    "earlier_value": highest.value,
                    "earlier_offset": highest.offset,
                    "earlier_read_at": at.get(highest.value, []),
                }
            )
        if highest is None or (highest.offset is not None and d.offset > highest.offset):
            highest = d
    return Findings(
        acked=len(acked),
        failed=sum(d.error is not None for d in run.deliveries.values()),
        missing_report=run.sent - len(run.deliveries),
        reordered=reordered,
        duplicated={v: offsets for v, offsets in at.items() if len(offsets) > 1},
        lost=[d.value for d in acked if d.value not in at],
    )


_STAMP = re.compile(r"^\s*(-?\d+\.\d+) ")
_TAGS = ("PRODUCE", "SEND", "RECV", "REQERR", "MSGSET", "RETRY", "REQTMOUT", "TIMEOUT", "MSGTIMEOUT")


def log_lines_between(lines: list[str], from_s: float, to_s: float) -> list[str]:
    """The producer's request-level debug lines (built, sent, answered, failed, retried) logged from
    `from_s` to `to_s`. Without idempotence librdkafka logs every batch as "MsgId 0" (a batch's msgid
    range is kept only with a producer id, rdkafka_msg.c rd_kafka_msgbatch_set_first_msg), so a
    value's requests are found by time: from its produce() to the later of the two deliveries."""
    found = []
    for line in lines:
        m = _STAMP.match(line)
        if not m or not from_s <= float(m.group(1)) <= to_s:
            continue
        if any(f" {tag} [" in line for tag in _TAGS):
            found.append(line.rstrip("\n"))
    if len(found) > QUOTED_LINES:
        half = QUOTED_LINES // 2
        found = [*found[:half], f"... {len(found) - QUOTED_LINES} lines left out ...", *found[-half:]]
    return found
