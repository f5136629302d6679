"""The guarantees of a run as one matrix: a row per guarantee, a column per topic, then per consumer
group; each cell the verdict there, with how many times it broke, over how many cases, and why.

A guarantee judged over the whole run rather than one topic (a row with no topic, as older results
have `no-unexpected-values`) gets one cell across every topic column. A read_uncommitted group that
reads transactional topics is the control of `no-aborted-reads`: what it polled of the aborted
transactions' records says whether there was anything for read_committed readers not to see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract.anomaly_kinds import GUARANTEE_BY_ID, GUARANTEES, kinds_of, violations
from contract.checked_run import NOT_EXERCISED, GroupResult, Run, Verdict


@dataclass(frozen=True)
class Column:
    name: str
    """A topic's or a group's name."""
    family: str  # topic | group
    note: str
    """What it is, in short: "acks=all, in transactions", "after-process, read_committed"."""


@dataclass(frozen=True)
class Cell:
    guarantee: Verdict
    where: str
    """The topic's or the group's name ("" for the whole run)."""
    family: str
    found: int | None
    """How many times it broke: the counts of the kinds that decide it; None: a checker failed."""
    by_kind: tuple[tuple[str, int], ...] = ()
    """Each deciding kind's count that is not 0, (count name, count): one write can be both lost and
    overwritten at its offset, so a sum of two kinds is not a number of writes."""

    @property
    def cases(self) -> str:
        """How many cases it was judged over, in words ("" when the result does not say)."""
        exercised = self.guarantee.exercised
        if exercised is None:
            return ""
        if self.guarantee.verdict == NOT_EXERCISED:
            return f"not exercised: {exercised.count:,} {exercised.what}"
        return f"judged over {exercised.count:,} {exercised.what}"

    @property
    def tally(self) -> str:
        """The count under the verdict: found of the cases, or found alone."""
        found = "?" if self.found is None else f"{self.found:,}"
        if len(self.by_kind) > 1:
            found = ", ".join(f"{count:,} {name}" for name, count in self.by_kind)
        exercised = self.guarantee.exercised
        return f"{found} found" if exercised is None else f"{found} of {exercised.count:,}"

    @property
    def tip(self) -> str:
        """Everything about the cell in one line, for hovering."""
        g = self.guarantee
        parts = [g.verdict, self.cases, g.reason, f"promised by {g.promised_by}" if g.promised_by else ""]
        return "; ".join(p for p in parts if p)


@dataclass(frozen=True)
class Slot:
    """The cells under one column of a row (`span` columns wide); none: not judged there."""

    span: int
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Row:
    id: str
    promise: str
    slots: tuple[Slot, ...]


@dataclass(frozen=True)
class Matrix:
    topics: tuple[Column, ...]
    groups: tuple[Column, ...]
    rows: tuple[Row, ...]


def _topic_note(acks: str, transactional: bool, pipeline: bool) -> str:
    written = "pipeline output" if pipeline else "in transactions" if transactional else ""
    return ", ".join(p for p in (f"acks={acks}" if acks else "", written) if p)


def _topic_columns(run: Run) -> tuple[Column, ...]:
    declared = {t.name: t for t in run.info.topics}
    judged = [g.topic for g in run.result.guarantees if g.topic]
    names = [t.name for t in run.info.topics if t.name in judged] + [n for n in judged if n not in declared]
    columns = []
    for name in dict.fromkeys(names):
        topic = declared.get(name)
        acks = topic.acks if topic else next(g.acks for g in run.result.guarantees if g.topic == name)
        note = _topic_note(acks, bool(topic and topic.transactional), bool(topic and topic.pipeline))
        columns.append(Column(name, "topic", note))
    return tuple(columns)


def _group_note(group: GroupResult, isolation: str) -> str:
    return f"{group.commit}{' (async)' if group.commit_async else ''}, {isolation}"


def _topic_counts(run: Run, topic: str) -> Mapping[str, Any]:
    """The counts a topic's guarantee is decided by: its row of result.json's `topics` (the whole
    run's, over every acks mode, for a row with no topic), with the run's unexpected values."""
    result = run.result
    rows = [t for t in result.topics if t.get("topic") == topic]
    if rows:
        counts = dict(rows[0])
    else:
        counts = {}
        for mode in result.acks.values():
            for key, value in mode.items():
                known = counts.get(key, 0)
                counts[key] = None if known is None or value is None else known + value
    return counts | {"unexpected": result.unexpected}


def _found(guarantee_id: str, counts: Mapping[str, Any]) -> int | None:
    if any(kind.count in counts and counts[kind.count] is None for kind in kinds_of(guarantee_id)):
        return None
    return violations(guarantee_id, counts)


def _by_kind(guarantee_id: str, counts: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    found = ((kind.count, int(counts.get(kind.count) or 0)) for kind in kinds_of(guarantee_id))
    return tuple((name, count) for name, count in found if count)


def _order(guarantee_id: str) -> int:
    ids = [g.id for g in GUARANTEES]
    return ids.index(guarantee_id) if guarantee_id in ids else len(ids)


def _row_order(item: tuple[tuple[str, bool], Any]) -> tuple[int, bool]:
    """The contract table's order of guarantees (unknown ids last); a whole run's row after the topics'."""
    (guarantee_id, whole_run), _ = item
    return _order(guarantee_id), whole_run


def guarantee_matrix(run: Run) -> Matrix:
    topics = _topic_columns(run)
    groups = tuple(
        Column(g.name, "group", _group_note(g, run.info.isolation.get(g.name, "read_uncommitted")))
        for g in run.result.groups
    )
    # (guarantee id, whole run) -> column name -> cells
    placed: dict[tuple[str, bool], dict[str, list[Cell]]] = {}
    for g in run.result.guarantees:
        counts = _topic_counts(run, g.topic)
        cell = Cell(g, g.topic, "topic", _found(g.id, counts), _by_kind(g.id, counts))
        placed.setdefault((g.id, not g.topic), {}).setdefault(g.topic, []).append(cell)
    for group in run.result.groups:
        for g in group.guarantees:
            cell = Cell(g, group.name, "group", _found(g.id, group.counts), _by_kind(g.id, group.counts))
            placed.setdefault((g.id, False), {}).setdefault(group.name, []).append(cell)
    rows = []
    for (gid, whole_run), by_column in sorted(placed.items(), key=_row_order):
        if whole_run:
            slots = [Slot(len(topics), tuple(by_column[""]))] if topics else []
            slots += [Slot(1, ()) for _ in groups]
        else:
            slots = [Slot(1, tuple(by_column.get(c.name, ()))) for c in (*topics, *groups)]
        known = GUARANTEE_BY_ID.get(gid)
        promise = known.promise if known else next(c.guarantee.promise for s in slots for c in s.cells)
        rows.append(Row(gid, promise, tuple(slots)))
    return Matrix(topics, groups, tuple(rows))


def controls(run: Run) -> list[dict[str, Any]]:
    """The controls of `no-aborted-reads`: each read_uncommitted group that recorded what it polled
    of the records of aborted transactions on its topics, with a sentence saying what it shows."""
    out = []
    for group in run.result.groups:
        isolation = run.info.isolation.get(group.name, "read_uncommitted")
        if group.aborted_polled is None or isolation == "read_committed":
            continue
        polled, appended = group.aborted_polled, group.aborted_appended
        said = f"The {isolation} group {group.name} polled {polled:,}"
        if appended is None:
            sentence = f"{said} records of aborted transactions" + (
                ": they were there to be seen." if polled else "."
            )
        elif appended == 0:
            sentence = f"{said} records of aborted transactions: none was appended, so none was to be seen."
        elif polled:
            sentence = f"{said} of {appended:,} appended aborted records: they were there to be seen."
        else:
            sentence = (
                f"{said} of {appended:,} appended aborted records: the control saw none of them, so "
                "that read_committed readers saw none shows less than it seems."
            )
        out.append({"group": group, "polled": polled, "appended": appended, "sentence": sentence})
    return out
