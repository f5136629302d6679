"""Three lines a newcomer understands at the end of `kchaos run`: what was broken, which promises
held, which broke and why, and that a FAIL is Kafka's, not the tool's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.app.group_lines import each_group_guarantee
from harness.events import FaultWindow
from harness.limits import brief

# Each guarantee's counts in words: "0 of 10,117 acknowledged writes lost, 0 overwritten at their
# offset" (count, what it is out of, its words, and a second count that bears on it, if any).
_EVIDENCE: dict[str, tuple[str, str, str, tuple[str, str] | None]] = {
    "no-lost-acked-writes": (
        "lost",
        "acked",
        "acknowledged writes lost",
        ("divergent", "overwritten at their offset"),
    ),
    "no-phantom-writes": ("phantom", "failed", "failed writes read anyway", None),
    "no-duplicates": ("duplicated", "attempted", "writes duplicated", None),
    "per-partition-order": ("reordered", "acked", "acknowledged writes reordered", None),
}

# A consumer group's guarantees, from its counts in result.json's `groups`: its count, its words,
# and a second count that bears on it, if any.
_GROUP_EVIDENCE: dict[str, tuple[str, str, tuple[str, str] | None]] = {
    "no-consumer-skips": (
        "skipped",
        "records skipped below the committed offset",
        ("poll_skips", "polls jumped over records"),
    ),
    "no-redeliveries": ("redelivered", "records processed more than once", None),
    "monotonic-polls": ("nonmonotonic", "polls went back", None),
    "commits-advance": ("commit_regressions", "accepted commits went back", None),
}

_HEADLINE = (
    "no-lost-acked-writes",
    "per-partition-order",
    "no-duplicates",
    "no-consumer-skips",
    "no-redeliveries",
)
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
    return [
        f"What happened: {_faults(faults)} while producers wrote under {writing or 'no acks mode'}"
        f"{_reading(result)}.",
        "Held: " + ("; ".join(_phrase(result, g) for g in held) or "no promise was judged held") + ".",
        outcome,
    ]


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
    if "group" in guarantee:
        return sum(_group_counts(result, guarantee))
    found, _, second = _counts(result, guarantee)
    return found + second


def _counts(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> tuple[int, int, int]:
    """The guarantee's count, what it is out of and its second count, for its topic (0s when none)."""
    if str(guarantee.get("id")) not in _EVIDENCE:
        return 0, 0, 0
    count, base, _, also = _EVIDENCE[str(guarantee["id"])]
    topics: list[Mapping[str, Any]] = result.get("topics", [])
    topic = next((t for t in topics if t.get("topic") == guarantee.get("topic")), {})
    second = int(topic.get(also[0]) or 0) if also else 0
    return int(topic.get(count) or 0), int(topic.get(base) or 0), second


def _group_counts(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> tuple[int, int]:
    """A group guarantee's count and its second count, for its group (0s when none)."""
    if str(guarantee.get("id")) not in _GROUP_EVIDENCE:
        return 0, 0
    count, _, also = _GROUP_EVIDENCE[str(guarantee["id"])]
    group: Mapping[str, Any] = (result.get("groups") or {}).get(guarantee["group"]) or {}
    return int(group.get(count) or 0), (int(group.get(also[0]) or 0) if also else 0)


def _phrase(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> str:
    """`acks=all: 0 of 10,117 acknowledged writes lost, 0 overwritten at their offset`, `group g: 3
    records processed more than once`, or the promise."""
    if "group" in guarantee:
        return _group_phrase(result, guarantee)
    acks = f"acks={guarantee.get('acks')}"
    if str(guarantee.get("id")) not in _EVIDENCE:
        return f"{acks}: {guarantee.get('promise')}"
    found, out_of, second = _counts(result, guarantee)
    _, _, words, also = _EVIDENCE[str(guarantee["id"])]
    return f"{acks}: {found:,} of {out_of:,} {words}" + (f", {second:,} {also[1]}" if also else "")


def _group_phrase(result: Mapping[str, Any], guarantee: Mapping[str, Any]) -> str:
    label = f"group {guarantee['group']}"
    if str(guarantee.get("id")) not in _GROUP_EVIDENCE:
        return f"{label}: {guarantee.get('promise')}"
    found, second = _group_counts(result, guarantee)
    _, words, also = _GROUP_EVIDENCE[str(guarantee["id"])]
    return f"{label}: {found:,} {words}" + (f", {second:,} {also[1]}" if also else "")
