"""Single-process Python references for the counts a check takes from the optional history files,
written from docs/HISTORY_FORMAT.md's definitions, not from the Spark checkers: each consumer
group's counts ("What the checker counts per group", from consumes.jsonl), `replica-divergence`
(replicas.jsonl) and `epoch-regression` (cluster.jsonl). The benchmarks compare every check's
counts with them, as with history_reference.py's for writes.jsonl and reads.jsonl.

    .venv/bin/python benchmarks/side_files_reference.py RUN_DIR   # prints the counts as JSON
"""

from __future__ import annotations

import bisect
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from contract.anomaly_kinds import GROUP_COUNTS

Partition = tuple[str, int]


def final_offsets(run_dir: Path) -> dict[Partition, list[int]]:
    """The offsets of the final read's records, sorted, on each partition whose final read is complete
    (an `end` event of phase `final`)."""
    offsets: dict[Partition, set[int]] = defaultdict(set)
    complete: set[Partition] = set()
    with (run_dir / "history/reads.jsonl").open() as handle:
        for line in handle:
            event = json.loads(line)
            if event["phase"] != "final":
                continue
            where = (event["topic"], event["partition"])
            if event["type"] == "end":
                complete.add(where)
            else:
                offsets[where].add(event["offset"])
    return {where: sorted(offsets[where]) for where in complete}


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """consumes.jsonl's events in line order; a torn last line (a run cut short) is no event."""
    with path.open() as handle:
        lines = handle.readlines()
    for number, line in enumerate(lines, 1):
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if number < len(lines) or line.endswith("\n"):
                raise


def python_group_counts(run_dir: Path, final: dict[Partition, list[int]]) -> dict[str, dict[str, int]]:
    """Each declared group's counts (`GROUP_COUNTS`), over the complete partitions of `final`
    (`final_offsets`); {} without consumes.jsonl."""
    run = json.loads((run_dir / "run.json").read_text())
    path = run_dir / "history/consumes.jsonl"
    if not path.is_file():
        return {}
    counts = {str(group["name"]): dict.fromkeys(GROUP_COUNTS, 0) for group in run.get("groups") or []}
    polls: Counter[tuple[str, str, int, int]] = Counter()
    commits: dict[tuple[str, str, int], list[tuple[int, int, int]]] = defaultdict(list)
    # process -> partition -> (generation, offset) of its last poll there since it (re)started or rebalanced
    last_polls: dict[str, dict[Partition, tuple[int, int]]] = {}
    for seq, event in enumerate(_events(path)):
        kind, process = event["type"], event["process"]
        if kind in ("start", "assign", "revoke"):  # a rebalance or a restart ends the run of polls
            last_polls.pop(process, None)
        elif kind == "poll" and (where := (event["topic"], event["partition"])) in final:
            group, generation, offset = event["group"], event["generation"], event["offset"]
            counts[group]["polled"] += 1
            polls[(group, *where, offset)] += 1
            mine = last_polls.setdefault(process, {})
            before = mine.get(where)
            if before is not None and before[0] == generation:
                if offset <= before[1]:
                    counts[group]["nonmonotonic"] += 1
                elif _any_between(final[where], before[1], offset):
                    counts[group]["poll_skips"] += 1
            mine[where] = (generation, offset)
        elif kind == "commit" and event["phase"] == "ok":
            for entry in event["offsets"]:
                if (entry["topic"], entry["partition"]) in final:
                    key = (event["group"], entry["topic"], entry["partition"])
                    commits[key].append((event["time_ns"], seq, entry["offset"]))
    for (group, *_), times in polls.items():
        counts[group]["redelivered"] += times > 1
    for (group, topic, partition), entries in commits.items():
        highest = -1
        for _, _, offset in sorted(entries):
            counts[group]["commit_regressions"] += offset < highest
            highest = max(highest, offset)
        below = final[(topic, partition)][: bisect.bisect_left(final[(topic, partition)], highest)]
        counts[group]["skipped"] += sum((group, topic, partition, offset) not in polls for offset in below)
    return counts


def checked_group_counts(result: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Each group's counts as a check's result.json gives them, to set beside `python_group_counts`."""
    return {name: {k: group[k] for k in GROUP_COUNTS} for name, group in result.get("groups", {}).items()}


def python_group_recovery(
    run_dir: Path,
    ok_times: Mapping[Partition, list[int]],
    last_invoke: Mapping[Partition, int],
    healed: list[tuple[int | None, float]],
) -> dict[str, list[list[Any]]]:
    """Each declared group's recovery after each heal (docs/RESULT_FORMAT.md, `groups.<name>.recovery`)
    as [resumed_ns, heal_recovery_ms, heal_recovery_lower_bound]: `ok_times`, each partition's `ok`
    completion times, sorted; `last_invoke`, each partition's last write invocation; `healed`, when
    each fault's heal left the cluster whole (None: never) and when the next fault started (inf:
    none did)."""
    run = json.loads((run_dir / "run.json").read_text())
    counts = {t["name"]: int(t["partitions"]) for t in run["topics"] if t["acks"] != "0"}
    polled: dict[tuple[str, Partition], list[int]] = defaultdict(list)
    last: dict[str, int] = {}
    for event in _events(run_dir / "history/consumes.jsonl"):
        last[event["group"]] = max(last.get(event["group"], event["time_ns"]), event["time_ns"])
        if event["type"] == "poll":
            polled[(event["group"], (event["topic"], event["partition"]))].append(event["time_ns"])
    for times in polled.values():
        times.sort()
    recovery: dict[str, list[list[Any]]] = {}
    for group in run.get("groups") or []:
        name, rows = group["name"], []
        mine = [(t, p) for t in group["topics"] if t in counts for p in range(counts[t])]
        # a poll could have come until the group's last event or the last write to its topics
        end = max([last.get(name, 0), *(last_invoke[w] for w in mine if w in last_invoke)])
        for heal, following in healed:
            written = [w for w in mine if heal is not None and _at_or_after(ok_times.get(w, []), heal)]
            if heal is None or not written:
                rows.append([None, None, False])
                continue
            firsts = [_at_or_after(polled[(name, w)], heal) for w in written]
            seen = [first for first in firsts if first is not None and first <= following]
            if len(seen) < len(firsts):
                until = max([min(end, following), *seen])
                rows.append([None, round(max(until - heal, 0) / 1e6, 3), True])
            else:
                resumed = max(f for f in firsts if f is not None)
                rows.append([resumed, round((resumed - heal) / 1e6, 3), False])
        recovery[name] = rows
    return recovery


def checked_group_recovery(result: dict[str, Any]) -> dict[str, list[list[Any]]]:
    """Each group's recovery as a check's result.json gives it, to set beside `python_group_recovery`."""
    return {
        name: [
            [r["resumed_ns"], r["heal_recovery_ms"], r["heal_recovery_lower_bound"]]
            for r in group["recovery"]
        ]
        for name, group in result.get("groups", {}).items()
    }


def _at_or_after(times: list[int], start_ns: int) -> int | None:
    at = bisect.bisect_left(times, start_ns)
    return times[at] if at < len(times) else None


def python_side_counts(run_dir: Path) -> dict[str, int]:
    """`replica-divergence`: positions at which two replicas hold different values (null is a value);
    `epoch-regression`: samples whose controller epoch, or a partition's leader epoch, is lower than
    in the sample before it that had one."""
    held: dict[tuple[str, int, int], Counter[str | None]] = defaultdict(Counter)
    replicas = run_dir / "history/replicas.jsonl"
    for event in _lines(replicas):
        if event["type"] == "values":
            for at, value in enumerate(event["values"]):
                held[(event["topic"], event["partition"], event["offset"] + at)][value] += 1
    divergent = sum(len(values) > 1 and sum(values.values()) > 1 for values in held.values())
    last: dict[tuple[str, int] | None, int] = {}  # None: the controller
    regressions = 0
    for sample in sorted(_lines(run_dir / "history/cluster.jsonl"), key=lambda sample: sample["time_ns"]):
        epochs: list[tuple[tuple[str, int] | None, int]] = [
            ((p["topic"], p["partition"]), p["leader_epoch"])
            for p in sample.get("partitions") or []
            if p["leader_epoch"] >= 0
        ]
        if sample.get("controller_epoch") is not None:
            epochs.append((None, sample["controller_epoch"]))
        for what, epoch in epochs:
            regressions += what in last and epoch < last[what]
            last[what] = epoch
    return {"replica-divergence": divergent, "epoch-regression": regressions}


def _lines(path: Path) -> list[dict[str, Any]]:
    """An optional file's events (none without it)."""
    if not path.is_file():
        return []
    with path.open() as handle:
        return [json.loads(line) for line in handle]


def _any_between(offsets: list[int], low: int, high: int) -> bool:
    """Whether sorted `offsets` holds one strictly between `low` and `high`."""
    at = bisect.bisect_right(offsets, low)
    return at < len(offsets) and offsets[at] < high


if __name__ == "__main__":
    given = Path(sys.argv[1])
    groups = python_group_counts(given, final_offsets(given))
    print(json.dumps({**python_side_counts(given), "groups": groups}, indent=2))
