"""The harness's own client settings in the Java client's names: one table (docs/CLIENTS.md).

The harness sets a few settings of its own on every client (harness.producer.DEFAULT_PRODUCER_CONFIG,
harness.groups.DEFAULT_MEMBER_CONFIG, the debug contexts of harness.workload), written in librdkafka's
names. A workload part that runs the Java client gets the same intent in the Java client's names
(`java_settings`); what the scenario's author wrote (`producer_config`, a group's `config`) passes
through as written: a part that runs Java reads Java names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JAVA_NAMES: dict[str, str | None] = {
    "bootstrap.servers": "bootstrap.servers",
    "retries": "retries",
    "max.in.flight.requests.per.connection": "max.in.flight.requests.per.connection",
    "request.timeout.ms": "request.timeout.ms",
    # librdkafka's bound on a write's whole life, retries included, is the Java client's
    # delivery.timeout.ms (KIP-91).
    "message.timeout.ms": "delivery.timeout.ms",
    "linger.ms": "linger.ms",
    # The Java client batches and queues by bytes (batch.size, buffer.memory) and blocks a send on a
    # full buffer for max.block.ms: a count of records has no equivalent.
    "batch.num.messages": None,
    "queue.buffering.max.messages": None,
    # librdkafka's debug contexts: the Java program logs the client's trouble loggers (connections,
    # transaction states, rebalances) at INFO itself (clients/java/README.md).
    "debug": None,
    "session.timeout.ms": "session.timeout.ms",
    "heartbeat.interval.ms": "heartbeat.interval.ms",
    "auto.commit.interval.ms": "auto.commit.interval.ms",
    "fetch.wait.max.ms": "fetch.max.wait.ms",
}
"""Each librdkafka setting the harness sets itself, and the Java client's name for it (None: no
equivalent, left out)."""

JAVA_PRODUCER_DEFAULTS: dict[str, Any] = {"enable.idempotence": False}
"""Where the two clients' own defaults differ in what kafka-chaos judges, the Java producer is set to
librdkafka's: it is idempotent by default from 3.0 (KIP-679), librdkafka's is not, and a part's
guarantees must not change with its client unless the scenario says so."""


def java_settings(harness: Mapping[str, Any]) -> dict[str, Any]:
    """The harness's own settings `harness` (librdkafka's names) in the Java client's names. A setting
    the table does not know is kafka-chaos's bug (KeyError naming it): the table is where each of the
    harness's settings is decided for both clients."""
    translated: dict[str, Any] = {}
    for key, value in harness.items():
        if key not in JAVA_NAMES:
            raise KeyError(f"the harness sets {key!r}, which harness.java_config.JAVA_NAMES does not map")
        if (name := JAVA_NAMES[key]) is not None:
            translated[name] = value
    return translated


def java_producer_settings(harness: Mapping[str, Any], transactional: bool = False) -> dict[str, Any]:
    """A producer's: `java_settings` over JAVA_PRODUCER_DEFAULTS; a `transactional` one is idempotent
    (the Java client refuses a transactional.id without it; librdkafka implies it)."""
    idempotence = {"enable.idempotence": True} if transactional else {}
    return {**JAVA_PRODUCER_DEFAULTS, **idempotence, **java_settings(harness)}
