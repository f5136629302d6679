"""What the brokers said about their own logs: the truncations and the halts kept in RUN/logs/.

A broker that becomes a follower cuts its log back (`Truncating log <topic>-<p> to offset N.`), and a
Kafka 0.9 follower that finds its new leader's log shorter than its own committed part stops the
whole broker rather than truncate committed data (`Halting because log truncation is not allowed`).
These lines are the mechanism of a lost or diverged write, so checks quote them as evidence. Lines
carry the broker's wall clock; run.json's `clock.unix_ns_at_zero` maps them to the run clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

NODE_LOG = re.compile(r"kafka-(?P<broker>[0-9]+)\.log")
_STAMP = r"^\[(?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] "
TRUNCATING = re.compile(
    _STAMP + r"INFO Truncating log (?P<topic>.+)-(?P<partition>\d+) to offset (?P<offset>\d+)\."
)
HALTING = re.compile(
    _STAMP + r"FATAL .*Halting because log truncation is not allowed for topic (?P<topic>\S+), "
    r"Current leader (?P<leader>\d+)'s latest offset (?P<leader_end>\d+) is less than "
    r"replica (?P<replica>\d+)'s latest offset (?P<replica_end>\d+)"
)
MAX_LOG_BYTES = 256 * 1024 * 1024
"""A node log longer than this is read up to here only: a broker logging in a loop is no reason to stall."""


@dataclass(frozen=True)
class LogEvent:
    """One truncation (`offset` set, `partition` set) or halt (`offset` None) a broker logged."""

    broker: int
    unix_ms: int
    topic: str
    partition: int | None
    offset: int | None
    line: str

    def at_run_s(self, unix_ns_at_zero: int | None) -> float | None:
        return (
            None if unix_ns_at_zero is None else round((self.unix_ms * 1_000_000 - unix_ns_at_zero) / 1e9, 3)
        )


def _unix_ms(when: str) -> int:
    # Containers log in UTC (the image sets no time zone).
    return int(datetime.strptime(when, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp() * 1000)


def parse_line(broker: int, text: str) -> LogEvent | None:
    """The truncation or halt this log line reports, if any."""
    if match := TRUNCATING.match(text):
        return LogEvent(
            broker,
            _unix_ms(match["when"]),
            match["topic"],
            int(match["partition"]),
            int(match["offset"]),
            text.strip(),
        )
    if match := HALTING.match(text):
        return LogEvent(broker, _unix_ms(match["when"]), match["topic"], None, None, text.strip())
    return None


def read_broker_logs(logs_dir: Path) -> list[LogEvent]:
    """Every truncation and halt in RUN/logs/kafka-N.log, in time order; none when there are no logs."""
    events: list[LogEvent] = []
    if not logs_dir.is_dir():
        return events
    for path in sorted(logs_dir.iterdir()):
        match = NODE_LOG.fullmatch(path.name)
        if match is None or not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as handle:
            text = handle.read(MAX_LOG_BYTES).decode(errors="replace")
        for line in text.splitlines():
            if "runcat" in line or "Halting" in line:  # cheap filter before the patterns
                event = parse_line(int(match["broker"]), line)
                if event is not None:
                    events.append(event)
    return sorted(events, key=lambda e: (e.unix_ms, e.broker))
