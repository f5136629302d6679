"""Which counts a page shows: the ones that apply to the run's workload.

A kind's count applies where some topic or consumer group of the run (or, on the index, of the
scenario's runs) has a row of the guarantee the kind decides (`AnomalyKind.guarantee`): a run
without transactions has no transaction or pipeline columns, one without groups no group columns.
The write counts always apply. A count that found something, or whose checker failed (null), is
shown wherever it is, so that nothing found is ever hidden.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from contract.anomaly_kinds import GROUP_KINDS, KINDS, WRITE_COUNTS, AnomalyKind


def applies(kind: AnomalyKind, judged: Collection[str], counted: Iterable[Mapping[str, Any]]) -> bool:
    """Whether `kind` applies: its guarantee is among `judged` (guarantee ids), or one of `counted`
    (count mappings: an acks mode's, a group's) has its count other than 0."""
    return kind.guarantee in judged or any(counts.get(kind.count, 0) != 0 for counts in counted)


def topic_counts(judged: Collection[str], counted: Collection[Mapping[str, Any]]) -> tuple[str, ...]:
    """The per-acks-mode counts to show, in result.json's order: the writes', then each kind's
    that applies."""
    return (*WRITE_COUNTS, *(k.count for k in KINDS if k.per_acks and applies(k, judged, counted)))


def group_counts(judged: Collection[str], counted: Collection[Mapping[str, Any]]) -> tuple[str, ...]:
    """The per-group counts to show: `polled`, then each group kind's that applies."""
    return ("polled", *(k.count for k in GROUP_KINDS if applies(k, judged, counted)))
