"""librdkafka (confluent-kafka) settings shared by every producer and consumer of the harness."""

from __future__ import annotations

import logging
from typing import Any

from harness.broker_config import KafkaVersion

librdkafka_log = logging.getLogger("kchaos.librdkafka")


def is_known_deprecation(message: str) -> bool:
    """librdkafka's warning that the 0.9 compatibility settings are deprecated: we set them on
    purpose (ENVIRONMENT.md), and two paragraphs per client would bury the lines that matter."""
    return "deprecated" in message and (
        "api.version.request" in message or "broker.version.fallback" in message
    )


class _KnownDeprecations(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not is_known_deprecation(record.getMessage())


librdkafka_log.addFilter(_KnownDeprecations())


def client_config(bootstrap_servers: str, kafka_version: KafkaVersion, **overrides: Any) -> dict[str, Any]:
    """Base config: brokers older than 0.10 cannot answer ApiVersionRequest, so the client must be
    told the broker version up front; librdkafka's own log lines go to the harness log."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "logger": librdkafka_log}
    if not kafka_version.at_least(0, 10):
        config["api.version.request"] = False
        config["broker.version.fallback"] = "0.9.0.1"
    config.update(overrides)
    return config
