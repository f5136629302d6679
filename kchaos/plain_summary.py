"""Three lines a newcomer understands at the end of `kchaos run`: what was broken, which promises
held, which broke and why, and that a FAIL is Kafka's, not the tool's; a fourth names the headline
promises the run gave no case to break on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from contract.anomaly_kinds import GUARANTEES, AnomalyKind, kinds_of
from contract.events import FaultWindow
from contract.limits import brief
from kchaos.group_lines import each_group_guarantee

_HEADLINE = frozenset(g.id for g in GUARANTEES if g.headline)
_BY_TOPIC = frozenset(g.id for g in GUARANTEES if g.transactional and g.family == "topic")
"""Guarantees of transactional topics: said per topic, not per acks mode."""
_KAFKA = ("the brokers (", "the group coordinator (")
"""How the promises Kafka itself makes name who made them (`promised_by`)."""


def plain_summary(result: Mapping[str, Any], faults: Sequence[FaultWindow], exit_code: int) -> list[str]:
    """What happened, what held, what broke: three lines from result.json and the fault windows."""
    every = _guarantees(result)
    guarantees = [g for g in every if g.get("promised")]
    # Held: the promises about acknowledged writes and a group's records (the rest, when none of
    # those was made).
    held = [g for g in guarantees if g.get("verdict") == "held"]
    held = [g for g in held if g.get("id") in _HEADLINE] or held
    # A transactional topic's line is its transactions': its writes' own say less (an ok is no commit).
    transactional = {g.get("topic") for g in every if g.get("id") in _BY_TOPIC}
    held = [g for g in held if g.get("topic") not in transactional or g.get("id") in _BY_TOPIC]
    broke = [g for g in guarantees if g.get("verdict") == "violated"]
    seen = [g for g in every if not g.get("promised") and _anomalies(result, g)]
    writing = ", ".join(f"acks={mode}" for mode, n in result.get("acks", {}).items() if n.get("attempted"))
    if broke:
        outcome = (
            "Broke: "
            + "; ".join(_phrase(result, g) + _promiser(g) for g in broke)
            + f". FAIL means {_breaker(broke)} broke a promise this configuration makes; kafka-chaos "
            "itself ran correctly."
        )
    else:
        outcome = "Broke: nothing Kafka promised"
        if seen:
            outcome += " (not promised here, but seen: " + "; ".join(_phrase(result, g) for g in seen) + ")"
        outcome += "." if exit_code == 0 else "; the FAIL is a scenario expectation or an incomplete check."
    idle = [g for g in guarantees if g.get("verdict") == "not-exercised" and g.get("id") in _HEADLINE]
    untested = "Not exercised (no case to break on): " + "; ".join(_idle(g) for g in idle) + "."
    return [
        f"What happened: {_faults(faults)} while producers wrote under {writing or 'no acks mode'}"
        f"{_reading(result)}.",
        "Held: " + ("; ".join(_phrase(result, g) for g in held) or "no promise was judged held") + ".",
        outcome,
        *([untested] if idle else []),
    ]


def _idle(guarantee: Mapping[str, Any]) -> str:
    """`chaos-txn-0: no aborted reads (0 appended records of aborted transactions)`."""
    what = (guarantee.get("exercised") or {}).get("what") or "cases"
    return f"{_label(guarantee)}: {guarantee.get('promise')} (0 {what})"


def _guarantees(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The topics' guarantee rows, then each consumer group's, marked with the group's name."""
    groups = ({**g, "group": name} for name, g in each_group_guarantee(result))
    return [*result.get("guarantees", []), *groups]


def _reading(result: Mapping[str, Any]) -> str:
    """` and consumer group g (after-process) read`, for the groups of the run."""
    groups: Mapping[str, Mapping[str, Any]] = result.get("groups") or {}
    if not groups:
        return ""
    named = ", ".join(f"{name} ({group.get('commit')})" for name, group in groups.items())
    return f" and consumer group{'s' if len(groups) > 1 else ''} {named} read"


def _promiser(guarantee: Mapping[str, Any]) -> str:
    return f" (promised by {guarantee['promised_by']})" if guarantee.get("promised_by") else ""


def _breaker(broke: Sequence[Mapping[str, Any]]) -> str:
    """Kafka, when only the brokers' promises broke; else who made each is named beside it."""
    if all(str(g.get("promised_by") or _KAFKA[0]).startswith(_KAFKA) for g in broke):
        return "Kafka"
    return "the party that made it"


def _faults(faults: Sequence[FaultWindow]) -> str:
    """The faults that started, by kind, and those that could not start (their window says why)."""
    started = [w for w in faults if "error" not in w.detail]
    kinds = Counter(f"{w.fault} {w.detail['shape']}" if "shape" in w.detail else w.fault for w in started)
    listed = ", ".join(f"{n}x {kind}" for kind, n in sorted(kinds.items()))
    said = f"{len(started)} fault{'s' if len(started) > 1 else ''} ({listed})" if started else "no faults"
    if failed := [w for w in faults if "error" in w.detail]:
        first = failed[0]
        said += f" ({len(failed)} could not start; the first, {first.fault}: {brief(first.detail['error'])})"
    return said


def _anomalies(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> int:
    return sum(found for found, _ in _counts(result, guarantee))


def _counts(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> list[tuple[int, AnomalyKind]]:
    """Each count that decides the guarantee (`kinds_of`: the main one first), for its topic or group;
    none when its topic's or group's counts do not hold them (unexpected values are the run's)."""
    counts = _owner(result, guarantee)
    kinds = kinds_of(str(guarantee.get("id")))
    if not kinds or kinds[0].count not in counts:
        return []
    return [(int(counts.get(kind.count) or 0), kind) for kind in kinds]


def _owner(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> Mapping[str, Any]:
    """The counts of the guarantee's group or topic in result.json (empty when it has none)."""
    if "group" in guarantee:
        return (result.get("groups") or {}).get(guarantee["group"]) or {}
    topics: list[Mapping[str, Any]] = result.get("topics", [])
    return next((t for t in topics if t.get("topic") == guarantee.get("topic")), {})


def _label(guarantee: Mapping[str, Any]) -> str:
    """Whose guarantee: `group g`, a transactional topic's name, or `acks=all`."""
    if "group" in guarantee:
        return f"group {guarantee['group']}"
    if guarantee.get("id") in _BY_TOPIC:
        return str(guarantee.get("topic"))
    return f"acks={guarantee.get('acks')}"


def _phrase(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> str:
    """`acks=all: 0 of 10,117 acknowledged writes lost, 0 overwritten at their offset`, `group g: 3
    records processed more than once`, or the promise."""
    label = _label(guarantee)
    counts = _counts(result, guarantee)
    if not counts:
        return f"{label}: {guarantee.get('promise')}"
    (found, main), *also = counts
    base = main.rate_base
    out_of = "" if base is None else f" of {int(_owner(result, guarantee).get(base) or 0):,}"
    return f"{label}: {found:,}{out_of} {main.evidence}" + "".join(
        f", {count:,} {kind.evidence}" for count, kind in also
    )
