"""How a producer error becomes a history completion: `fail` (definite) or `info` (indeterminate).

A write is `fail` only when it cannot have been appended to any log; anything that might have been
(timeouts, lost connections, errors after a retry that may have followed a timed-out attempt) is
`info`. When in doubt: `info`. The table:

- A write the client refused before queueing it (`sent` false: produce() raised, or the local
  queue stayed full): `fail`, whatever the error.
- ALWAYS_DEFINITE: rejected the same way on every attempt (message too large, invalid topic,
  authorization): `fail`.
- DEFINITE_WITHOUT_RETRIES: the broker refused before appending (NOT_ENOUGH_REPLICAS,
  NOT_LEADER_FOR_PARTITION, ...), or the client gave up on a queued write because its metadata
  lost the topic or partition (_UNKNOWN_TOPIC, _UNKNOWN_PARTITION): `fail` with retries = 0; with
  retries an earlier attempt may have timed out after being appended, so `info`. (librdkafka fails
  a write with _UNKNOWN_PARTITION after a timed-out attempt it itself calls "MsgPossiblyPersisted":
  such writes were read, docs/FINDINGS.md.)
- Everything else, NOT_ENOUGH_REPLICAS_AFTER_APPEND (appended by the leader) and every timeout
  and transport error included: `info`.
"""

from __future__ import annotations

from typing import Literal

from confluent_kafka import KafkaError

Completion = Literal["fail", "info"]

# Rejected on every attempt, or refused locally before any byte was sent.
ALWAYS_DEFINITE = frozenset(
    {
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
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
    }
)


def classify(code: int, retries: int, *, sent: bool = True) -> Completion:
    """The completion type for a write whose delivery failed with librdkafka error `code`; `sent`
    false: the client refused it before queueing it."""
    if not sent or code in ALWAYS_DEFINITE:
        return "fail"
    if code in DEFINITE_WITHOUT_RETRIES and retries == 0:
        return "fail"
    return "info"


def error_name(err: KafkaError) -> str:
    return str(err.name())
