"""How a producer error becomes a history completion: `fail` (definite) or `info` (indeterminate).

A write is `fail` only when it cannot have been appended to any log; anything that might have been
(timeouts, lost connections, errors after a retry that may have followed a timed-out attempt) is
`info`. When in doubt: `info`. This table is the documented contract (README, "Error table").

| librdkafka error                         | retries = 0 | retries > 0 | why                                   |
|------------------------------------------|-------------|-------------|---------------------------------------|
| _UNKNOWN_TOPIC, _UNKNOWN_PARTITION       | fail        | fail        | refused by the client before sending  |
| _QUEUE_FULL, _INVALID_ARG               | fail        | fail        | refused by the client before sending  |
| MSG_SIZE_TOO_LARGE, RECORD_LIST_TOO_LARGE| fail        | fail        | every attempt is rejected the same way|
| INVALID_TOPIC (TOPIC_EXCEPTION), INVALID_MSG, INVALID_REQUIRED_ACKS, TOPIC_AUTHORIZATION_FAILED | fail | fail | same |
| NOT_ENOUGH_REPLICAS                      | fail        | info        | rejected before append; but a retried |
| NOT_LEADER_FOR_PARTITION                 | fail        | info        | write's earlier attempt may have timed|
| LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PART | fail     | info        | out after being appended              |
| NOT_ENOUGH_REPLICAS_AFTER_APPEND         | info        | info        | appended by the leader, maybe kept    |
| _MSG_TIMED_OUT, _TIMED_OUT, REQUEST_TIMED_OUT, _TRANSPORT, NETWORK_EXCEPTION, _ALL_BROKERS_DOWN | info | info | outcome unknown |
| anything else                            | info        | info        | when in doubt, indeterminate          |
"""

from __future__ import annotations

from typing import Literal

from confluent_kafka import KafkaError

Completion = Literal["fail", "info"]

# Rejected on every attempt, or refused locally before any byte was sent.
ALWAYS_DEFINITE = frozenset(
    {
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._QUEUE_FULL,
        KafkaError._INVALID_ARG,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.TOPIC_EXCEPTION,
        KafkaError.INVALID_MSG,
        KafkaError.INVALID_REQUIRED_ACKS,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
)

# The broker refused before appending; definite only if no earlier (retried) attempt existed.
DEFINITE_WITHOUT_RETRIES = frozenset(
    {
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)


def classify(code: int, retries: int) -> Completion:
    """The completion type for a write whose delivery failed with librdkafka error `code`."""
    if code in ALWAYS_DEFINITE:
        return "fail"
    if code in DEFINITE_WITHOUT_RETRIES and retries == 0:
        return "fail"
    return "info"


def error_name(err: KafkaError) -> str:
    return str(err.name())
