"""Plain-language explanations shown next to anomalies, faults, guarantees and counts.

Written for a Kafka operator who has never seen the history format: what it means, and why it
matters. Kept here so every page (run report, index, JUnit evidence) says the same thing.
"""

from __future__ import annotations

from contract.anomaly_kinds import BY_ID, GROUP_BY_ID
from contract.anomaly_kinds import GUARANTEES as GUARANTEE_ROWS

_KINDS = {**BY_ID, **GROUP_BY_ID}

GUARANTEES: dict[str, str] = {g.id: f"{g.promise[0].upper()}{g.promise[1:]}." for g in GUARANTEE_ROWS}
"""Each guarantee's promise as a sentence (`contract.anomaly_kinds.GUARANTEES`)."""

VERDICTS: dict[str, str] = {
    "held": "the promise was kept",
    "violated": "the configuration promised this and the run broke it",
    "not-exercised": "promised, but the run gave it no case to break on, so it neither held nor broke",
    "not-promised": "this configuration does not promise it; counts are shown for information",
    "unknown": "the final read was incomplete, so this cannot be judged",
}

FAULT_FALLBACK = "A fault injected by the scenario (this history predates recorded fault descriptions)."


def anomaly_title(kind_id: str) -> str:
    return _KINDS[kind_id].title if kind_id in _KINDS else kind_id


def anomaly_explanation(kind_id: str) -> str:
    return _KINDS[kind_id].explanation if kind_id in _KINDS else "An anomaly reported by the checker."
