"""What each producer's client library logged, kept in the history (history/client.jsonl).

librdkafka logs what it does about trouble at notice level and above: a request that timed out, a
connection that dropped, a broker it gave up on. Those lines explain what write events alone cannot
(a reordered write's retry follows a timed-out request), so every line a workload process's client
logs is forwarded to that process's log (harness.log for the final reader) and appended to
client.jsonl with the process that owns the client, on the run clock, as it happens.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from contract.history import RunClock
from harness.clients import is_known_deprecation, librdkafka_log
from harness.process_protocol import EventSink

_THREAD_PREFIX = re.compile(r"^\[thrd:[^\]]*\]: ")


class ClientLog:
    """The `logger` of one process's librdkafka client. confluent-kafka calls
    `log(level, "%s [%s] %s", facility, client name, message)`, from the thread that polls the client."""

    def __init__(
        self, process: str, writer: EventSink, clock: RunClock, forward: logging.Logger = librdkafka_log
    ) -> None:
        self.process, self._writer, self._clock, self._forward = process, writer, clock, forward

    def log(self, level: int, msg: str, *args: Any) -> None:
        self._forward.log(level, msg, *args)
        facility, message = (str(args[0]), str(args[2])) if len(args) == 3 else ("", msg % args)
        # Lines logged while the client is destroyed, after the history closed, go to the harness log only.
        if is_known_deprecation(message) or self._writer.closed:
            return
        self._writer.write(
            {
                "time_ns": self._clock.now_ns(),
                "process": self.process,
                "level": logging.getLevelName(level).lower(),
                "facility": facility,
                "message": _THREAD_PREFIX.sub("", message),
            }
        )
