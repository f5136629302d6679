"""Plain-language explanations shown next to anomalies, faults, guarantees and counts.

Written for a Kafka operator who has never seen the history format: what it means, and why it
matters. Kept here so every page (run report, index, JUnit evidence) says the same thing.
"""

from __future__ import annotations

from harness.anomaly_kinds import BY_ID, GROUP_BY_ID

_KINDS = {**BY_ID, **GROUP_BY_ID}

GUARANTEES: dict[str, str] = {
    "no-lost-acked-writes": "Acknowledged writes are neither lost nor overwritten.",
    "no-phantom-writes": "A write that failed definitely is never read.",
    "no-duplicates": "No value appears at two offsets.",
    "per-partition-order": "Acknowledged writes of one producer to one partition keep their order.",
    "no-unexpected-values": "Every value read was written by the workload.",
    "no-consumer-skips": "No record below the group's committed offset goes unprocessed.",
    "no-redeliveries": "No record is processed twice by the group.",
    "monotonic-polls": "Between rebalances, a member's polls of a partition move forward.",
    "commits-advance": "An accepted commit is never lower than an earlier accepted one.",
}

VERDICTS: dict[str, str] = {
    "held": "the promise was kept",
    "violated": "the configuration promised this and the run broke it",
    "not-promised": "this configuration does not promise it; counts are shown for information",
    "unknown": "the final read was incomplete, so this cannot be judged",
}

FAULT_FALLBACK = "A fault injected by the scenario (this history predates recorded fault descriptions)."


def anomaly_title(kind_id: str) -> str:
    return _KINDS[kind_id].title if kind_id in _KINDS else kind_id


def anomaly_explanation(kind_id: str) -> str:
    return _KINDS[kind_id].explanation if kind_id in _KINDS else "An anomaly reported by the checker."
