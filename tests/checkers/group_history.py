"""The consumer-group history the group checks' tests share: two groups' consumes.jsonl events and
a run directory around them (`group_run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker_rundirs import GROUP, acked, assignment, commit, consume, end, make_run, poll, record, run_json

FINAL_OFFSETS = range(6)  # t-all partition 0 holds p:0 .. p:5; partition 1 is not read to its end

CONSUMES_G = [
    consume("start", 100, "g-0"),
    assignment("assign", 110, "g-0", 1),
    poll(120, "g-0", 0),
    poll(130, "g-0", 1),
    poll(140, "g-0", 3),  # a poll skip: 2 is in the final read
    commit(150, "g-0", "invoke", 1, 4),
    commit(160, "g-0", "ok", 1, 4),
    poll(170, "g-0", 2),  # went back from 3
    poll(175, "g-0", 0, partition=1),
    poll(176, "g-0", 5, partition=1),  # a gap, on a partition not read to its end: not counted
    assignment("revoke", 180, "g-0", 1),
    assignment("assign", 190, "g-0", 3),
    poll(200, "g-0", 0, generation=3),  # a rebalance between: not a step back, but a redelivery
    consume("stop", 210, "g-0", reason="killed"),
    consume("start", 300, "g-1"),
    assignment("assign", 310, "g-1", 4),
    poll(320, "g-1", 3, generation=4),  # redelivered
    commit(330, "g-1", "invoke", 1, 6, generation=4),
    commit(340, "g-1", "ok", 1, 6, generation=4),  # past 4 and 5, never polled: skipped
    commit(350, "g-1", "invoke", 2, 5, generation=4),
    commit(360, "g-1", "ok", 2, 5, generation=4),  # lower than 6: a regression
    commit(370, "g-1", "invoke", 3, 6, generation=4),
    commit(380, "g-1", "fail", 3, 6, generation=4, error="ILLEGAL_GENERATION"),
    consume("stop", 390, "g-1", reason="closed"),
]
CONSUMES_H = [  # at most once, clean: commits first, then processes
    consume("start", 400, "h-0"),
    assignment("assign", 410, "h-0", 1),
    commit(420, "h-0", "invoke", 1, 6),
    commit(430, "h-0", "ok", 1, 6),
    *[poll(440 + offset, "h-0", offset) for offset in FINAL_OFFSETS],
]


def group_run(
    root: Path,
    consumes: list[dict[str, Any]],
    live: tuple[dict[str, Any], ...] = (),
    more_writes: tuple[dict[str, Any], ...] = (),
) -> Path:
    """A run whose final read holds t-all/0's offsets 0..5 and reads every partition but t-all/1 to its
    end (written to only by `more_writes`); `live`: the live readers' events."""
    writes = [*(e for o in FINAL_OFFSETS for e in acked(10 + o, f"p:{o}", o)), *more_writes]
    reads = [*live, *(record(900 + o, f"p:{o}", o) for o in FINAL_OFFSETS)]
    ends = [
        end(1000, t["name"], p)
        for t in run_json()["topics"]
        for p in range(2)
        if (t["name"], p) != ("t-all", 1)
    ]
    groups = [GROUP, {"name": "h", "topics": ["t-all"], "commit": "before-process", "members": 1}]
    return make_run(root, writes, [*reads, *ends], run=run_json(groups=groups), consumes=consumes)
