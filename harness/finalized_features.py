"""The feature levels a cluster has finalized (KIP-584), as a broker tells its clients: ApiVersions v3.

Which protocol a client may speak depends on them: a 4.x Java client uses transaction version 2
(KIP-890's epoch bump per transaction) only when `transaction.version` is finalized at 2 or later.
run.json's `cluster.features` holds what the storage was formatted with beyond the release's
defaults; these are what the brokers run with, defaults included.

ApiVersions v3 (Kafka 2.4+) has a flexible body and, unlike every other flexible request, a response
header without tagged fields (so that a client can read it before it knows the broker's versions).
Finalized features are its response's tagged field 2 (Kafka 2.7+): each a name and a level range.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from contract.errors import ClusterError
from harness.broker_config import KafkaVersion
from harness.kafka_protocol import Reader, Writer, exchange, request

API_VERSIONS = 18
FINALIZED_FEATURES_TAG = 2
SOFTWARE_NAME, SOFTWARE_VERSION = "kchaos", "1"
FIRST_RELEASE = (2, 7)
"""The first release that finalizes features (KIP-584)."""


def api_versions_request() -> bytes:
    body = Writer().compact_string(SOFTWARE_NAME).compact_string(SOFTWARE_VERSION).no_tags()
    return request(API_VERSIONS, 3, body.bytes(), flexible=True)


def parse_finalized_features(reader: Reader) -> dict[str, int]:
    """Each finalized feature's level (the highest of its range) in an ApiVersions v3 response; a
    ClusterError for an error code."""
    error_code = reader.int16()
    if error_code:
        raise ClusterError(f"ApiVersions v3 answered error code {error_code}")

    def api_key() -> None:
        reader.skip(6)  # key, min and max version
        reader.skip_tags()

    reader.compact_array(api_key)
    reader.int32()  # throttle time
    features: dict[str, int] = {}
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        field = Reader(reader.data[reader.at : reader.at + size])
        reader.skip(size)
        if tag == FINALIZED_FEATURES_TAG:
            features.update(field.compact_array(partial(_feature, field)))
    return features


def _feature(field: Reader) -> tuple[str, int]:
    """One finalized feature: its name and the highest level of its range."""
    name = field.compact_string() or ""
    max_level = field.int16()
    field.int16()  # the lowest level
    field.skip_tags()
    return name, max_level


def finalized_features(
    addresses: Sequence[tuple[str, int]], release: KafkaVersion, timeout_s: float = 5.0
) -> dict[str, int]:
    """The finalized feature levels, asked of each broker address in turn until one answers; {} for a
    release before FIRST_RELEASE. ClusterError naming every failure when none answers."""
    if not release.at_least(*FIRST_RELEASE):
        return {}
    failures = []
    for address in addresses:
        try:
            return parse_finalized_features(
                exchange(address, api_versions_request(), timeout_s, flexible=False)
            )
        except ClusterError as exc:
            failures.append(str(exc))
    raise ClusterError(f"no broker answered ApiVersions: {'; '.join(failures) or 'no broker to ask'}")
