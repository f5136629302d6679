"""The history is evidence: seeded byte-level mutations of a held-in history, each checked on Spark.

Every mutation class has a known answer, so no case can change a verdict without an error:
- benign (CRLF line ends, another key order, an unknown extra field, two lines swapped): the same
  counts and verdicts as the unmutated history;
- damage (a byte-order mark, a structural byte dropped, a byte that is not UTF-8, a type changed):
  exit 2 naming the file and the line mutated;
- a torn tail (a line cut short, NUL bytes appended): exit 2 naming the tail's line, and with
  `--prefix` the whole lines before it judged, and said so.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import FAULT, SAMPLE, acked, all_ends, kchaos_check, make_run, record, write
from pyspark.sql import SparkSession

from contract.anomaly_kinds import EXAMPLE_EVIDENCE, EXAMPLE_FIRST, kind
from contract.history import READS, RESULT, WRITES
from kchaos.cli import main

pytestmark = pytest.mark.spark

SEED = 20261129
CASES_PER_CLASS = 1
"""Per mutation class and file: each is a Spark check (a second one for a torn tail)."""


def _held_in(root: Path) -> Path:
    """A history with something of most kinds: 30 acked writes on two topics, a lost one (p:7), a
    duplicate (p:3 read twice), a reordered pair (r:1, r:2), a failed write, an unexpected value."""
    writes: list[dict[str, Any]] = []
    reads: list[dict[str, Any]] = []
    for n in range(30):
        topic = "t-all" if n % 2 == 0 else "t-1"
        writes += acked(100 + 20 * n, f"p:{n}", n // 2, topic=topic, partition=0)
        if n != 7:
            reads.append(record(10_000 + n, f"p:{n}", n // 2, topic=topic))
    reads.append(record(20_000, "p:3", 40, topic="t-1"))
    writes += [
        write("invoke", 900, "r:1", partition=1),
        write("invoke", 901, "r:2", partition=1),
        write("ok", 950, "r:2", partition=1, offset=0),
        write("ok", 960, "r:1", partition=1, offset=1),
        write("invoke", 970, "f:1", partition=1),
        write("fail", 980, "f:1", partition=1, error="timed out"),
    ]
    reads += [record(20_001, "r:2", 0, partition=1), record(20_002, "r:1", 1, partition=1)]
    reads += [record(20_003, "x:1", 41, topic="t-1"), *all_ends(30_000)]
    return make_run(root, writes, reads, [FAULT], [SAMPLE])


@dataclass(frozen=True)
class Mutated:
    data: bytes
    line: int | None
    """The line an error must name; None for a benign mutation."""
    torn: bool = False


Mutation = Callable[[random.Random, list[bytes]], Mutated]


def _joined(lines: list[bytes]) -> bytes:
    return b"".join(lines)


def _byte_order_mark(rng: random.Random, lines: list[bytes]) -> Mutated:
    return Mutated(b"\xef\xbb\xbf" + _joined(lines), 1)


def _crlf(rng: random.Random, lines: list[bytes]) -> Mutated:
    return Mutated(_joined(lines).replace(b"\n", b"\r\n"), None)


def _key_order(rng: random.Random, lines: list[bytes]) -> Mutated:
    def shuffled(line: bytes) -> bytes:
        event = list(json.loads(line).items())
        rng.shuffle(event)
        return json.dumps(dict(event)).encode() + b"\n"

    return Mutated(_joined([shuffled(line) for line in lines]), None)


def _extra_field(rng: random.Random, lines: list[bytes]) -> Mutated:
    at = rng.randrange(len(lines))
    event = json.loads(lines[at]) | {"note": {"from": "an editor", "n": [1, 2]}}
    return Mutated(_joined([*lines[:at], json.dumps(event).encode() + b"\n", *lines[at + 1 :]]), None)


def _swap(rng: random.Random, lines: list[bytes]) -> Mutated:
    a, b = rng.sample(range(len(lines)), 2)
    swapped = list(lines)
    swapped[a], swapped[b] = lines[b], lines[a]
    return Mutated(_joined(swapped), None)


def _drop_structural(rng: random.Random, lines: list[bytes]) -> Mutated:
    at = rng.randrange(len(lines))
    line = lines[at]
    where = rng.choice([m.start() for m in re.finditer(rb'[{}:,"]', line)])
    return Mutated(_joined([*lines[:at], line[:where] + line[where + 1 :], *lines[at + 1 :]]), at + 1)


def _not_utf8(rng: random.Random, lines: list[bytes]) -> Mutated:
    at = rng.randrange(len(lines))
    line = lines[at]
    where = rng.randrange(len(line) - 1)  # not the newline
    return Mutated(
        _joined([*lines[:at], line[:where] + b"\xff" + line[where + 1 :], *lines[at + 1 :]]), at + 1
    )


def _type_changed(rng: random.Random, lines: list[bytes]) -> Mutated:
    typed = [n for n, line in enumerate(lines) if b'"time_ns": ' in line]
    at = rng.choice(typed)
    replacement = rng.choice([rb'"time_ns": "\1"', rb'"time_ns": [\1]', rb'"time_ns": {"ns": \1}'])
    changed = re.sub(rb'"time_ns": (\d+)', replacement, lines[at])
    return Mutated(_joined([*lines[:at], changed, *lines[at + 1 :]]), at + 1)


def _cut_mid_line(rng: random.Random, lines: list[bytes]) -> Mutated:
    at = rng.randrange(len(lines))
    kept = rng.randrange(1, len(lines[at]) - 1)
    return Mutated(_joined(lines[:at]) + lines[at][:kept], at + 1, torn=True)


def _nul_tail(rng: random.Random, lines: list[bytes]) -> Mutated:
    return Mutated(_joined(lines) + b"\0" * rng.choice([1, 4096, 70_000]), len(lines) + 1, torn=True)


MUTATIONS: dict[str, Mutation] = {
    "byte-order-mark": _byte_order_mark,
    "crlf": _crlf,
    "key-order": _key_order,
    "extra-field": _extra_field,
    "swap-two-lines": _swap,
    "drop-a-structural-byte": _drop_structural,
    "a-byte-not-utf8": _not_utf8,
    "a-type-changed": _type_changed,
    "cut-mid-line": _cut_mid_line,
    "nul-tail": _nul_tail,
}
CASES = [(name, file, n) for name in MUTATIONS for file in (WRITES, READS) for n in range(CASES_PER_CLASS)]


def _verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """Everything a result judges: counts per acks mode and kind, verdicts, validity."""
    return {
        "valid": result["valid"],
        "complete": result["complete"],
        "unexpected": result["unexpected"],
        "events": {k: result["events"][k] for k in ("writes", "reads")},
        "acks": result["acks"],
        "anomalies": {kind: entry["count"] for kind, entry in result["anomalies"].items()},
        "guarantees": sorted(
            (g["id"], g.get("topic") or "", g["verdict"], bool(g["promised"])) for g in result["guarantees"]
        ),
    }


@pytest.fixture(scope="module")
def unmutated(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = _held_in(tmp_path_factory.mktemp("held-in") / "run")
    assert main(["check", str(root)]) == 1  # the held-in history breaks promises: verdicts to keep
    result = json.loads((root / RESULT).read_text())
    assert result["anomalies"]["lost-write"]["count"] == 1 and result["unexpected"] == 1
    return _verdicts(result)


@pytest.mark.parametrize(("mutation", "name", "n"), CASES)
def test_a_mutated_history_is_judged_the_same_or_refused_at_its_line(
    spark: SparkSession,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    unmutated: dict[str, Any],
    mutation: str,
    name: str,
    n: int,
) -> None:
    rng = random.Random(f"{SEED}-{mutation}-{name}-{n}")
    run_dir = _held_in(tmp_path / "run")
    mutated = MUTATIONS[mutation](rng, (run_dir / name).read_bytes().splitlines(keepends=True))
    (run_dir / name).write_bytes(mutated.data)
    code, text = kchaos_check(capfd, run_dir)
    if mutated.line is None:
        assert code == 1, text
        assert _verdicts(json.loads((run_dir / RESULT).read_text())) == unmutated
        return
    assert code == 2, text
    assert text.startswith("error: ") and len(text.strip().splitlines()) == 1, text
    assert f"{run_dir / name}:{mutated.line}: " in text, text
    assert not (run_dir / RESULT).exists()
    if mutated.torn:
        assert "torn tail" in text
        code, text = kchaos_check(capfd, run_dir, "--prefix")
        assert code in (0, 1), text
        result = json.loads((run_dir / RESULT).read_text())
        judged = result["history_files"][name]
        assert judged["judged_lines"] == judged["lines"] == mutated.line - 1
        assert f"{name} judged up to line {mutated.line - 1:,} of {mutated.line:,}" in text
        if mutation == "nul-tail":  # every line is there: nothing changes but what is said
            assert _verdicts(result) == unmutated


def test_every_example_column_of_the_held_in_history_is_placed_by_its_kind_row(
    spark: SparkSession, tmp_path: Path
) -> None:
    run_dir = _held_in(tmp_path / "run")
    assert main(["check", str(run_dir)]) == 1
    anomalies = json.loads((run_dir / RESULT).read_text())["anomalies"]
    found = {kind_id: entry for kind_id, entry in anomalies.items() if entry["examples"]}
    assert {"lost-write", "duplicate", "reordered", "unexpected-value"} <= set(found)
    for kind_id, entry in found.items():
        placed = {*EXAMPLE_FIRST, *kind(kind_id).example_fields, *EXAMPLE_EVIDENCE}
        for example in entry["examples"]:
            assert set(example) <= placed, (kind_id, sorted(set(example) - placed))
