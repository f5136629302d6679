"""A value of the wrong type anywhere in a history line is exit 2 naming the file, the line and the
field (issue 68): generated over every history file x event type x field x wrong JSON type (and
null where the field is required) x line position (first, middle, last); `line_shapes` holds the
table the cases come from.

Without Spark, every case: the small files through the check's Python gate (`check_layout`, what
`kchaos check` runs before Spark starts); writes.jsonl and reads.jsonl through what the check
does of them in Python (pyarrow's parse and its pass for lines Spark's parser would misread, and
the words for a line Spark finds bad). On Spark, a subset through the real `kchaos check`: every
file and field once per way the check comes to it (`_route`), the event type, wrong value and
position taking turns, and the line issue 68 found.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from checker_rundirs import STACK_TRACE_MARKERS, acked, all_ends, make_run, record
from line_shapes import ALL_CASES, POSITIONS, SHAPES, Case, history_run_json, placed
from pyspark.sql import types as T

from checkers import problems
from checkers.io import arrow_parse, check_layout
from checkers.io.sources import READS_SOURCE, WRITES_SOURCE
from contract.errors import HistoryError
from contract.history import READS, WRITES
from kchaos.cli import main

_SOURCES = {WRITES: WRITES_SOURCE, READS: READS_SOURCE}


def _run_dir(root: Path, case: Case | None = None) -> Path:
    """A valid run of the checker tests' topics and group `g`, with `case`'s file in place."""
    writes = [*acked(100, "p:1", 0), *acked(200, "p:2", 1)]
    reads = [record(900, "p:1", 0), record(901, "p:2", 1), *all_ends()]
    run_dir = make_run(root, writes, reads, run=history_run_json(), consumes=[], transactions=[])
    if case is not None:
        data, _ = case.lines()
        (run_dir / case.file).write_bytes(data)
    return run_dir


def test_the_table_is_the_product_it_claims() -> None:
    ids = [case.id for case in ALL_CASES]
    assert len(ids) == len(set(ids))
    by_file = {case.file for case in ALL_CASES}
    assert len(by_file) == 8
    for file in by_file:
        of_file = [case for case in ALL_CASES if case.file == file]
        assert {case.position for case in of_file} == set(POSITIONS)
        assert {case.event for case in of_file} == set(of_file[0].shape.events)
        assert {case.field for case in of_file} == set(of_file[0].shape.fields)
    assert sum(case.must_fail for case in ALL_CASES) > 2000


def test_the_unmutated_lines_are_valid(tmp_path: Path) -> None:
    """Every event's line as the cases start from it, at every position, has its types right: what
    a case finds wrong is what it changed. (Out of its context a valid line may still be refused:
    a commit outcome with no invoke before it, a stop of no start.)"""
    for shape in SHAPES.values():
        for event, line in shape.events.items():
            for position in POSITIONS:
                data, _ = placed(shape, line, position)
                run_dir = _run_dir(tmp_path / f"{event}-{position}")
                (run_dir / shape.name).write_bytes(data)
                if shape.spark_read:
                    parsed = arrow_parse.parquet_of(
                        run_dir / shape.name, _SOURCES[shape.name].schema, tmp_path / "p"
                    )
                    assert parsed.taken, (shape.name, event, position)
                elif (error := _layout_error(run_dir)) is not None:
                    assert "expected" not in str(error) and "must" not in str(error), error


def _layout_error(run_dir: Path) -> HistoryError | None:
    try:
        check_layout(run_dir)
    except HistoryError as exc:
        return exc
    return None


def _small_file_cases() -> Iterator[Case]:
    return (case for case in ALL_CASES if not case.shape.spark_read)


@pytest.mark.parametrize("file", sorted({case.file for case in _small_file_cases()}))
def test_every_wrong_type_in_a_small_file_is_named_before_spark(tmp_path: Path, file: str) -> None:
    """One test per file, its cases in a loop (a run directory each: thousands, in seconds); every
    case that goes wrong is listed."""
    wrong: list[str] = []
    checked = 0
    for case in (c for c in _small_file_cases() if c.file == file):
        run_dir = _run_dir(tmp_path / "run", case)
        _, line = case.lines()
        error = _layout_error(run_dir)
        checked += 1
        if case.must_fail:
            expected = f"{run_dir / case.file}:{line}:"
            if error is None or not str(error).startswith(expected) or not case.named_in(str(error)):
                wrong.append(f"{case.id}: {error}")
        elif error is not None and error.line == line and case.named_in(str(error)):
            wrong.append(f"{case.id}: null refused where the field is optional: {error}")
    assert checked >= 90
    assert not wrong, f"{len(wrong)} of {checked} cases:\n" + "\n".join(wrong)


_DESCRIBE = {WRITES: problems.describe_write, READS: problems.describe_read}


def _spark_keeps_text(case: Case) -> bool:
    """Spark's JSON parser keeps the text of a number, boolean, object or array given for a string
    column: the line parses, so the check must find it in Python (`arrow_parse`)."""
    field = _SOURCES[case.file].schema[case.field]
    return field.dataType == T.StringType() and case.wrong != "null"


@pytest.mark.parametrize("file", [WRITES, READS])
def test_every_wrong_type_in_writes_or_reads_is_named_by_the_python_passes(tmp_path: Path, file: str) -> None:
    """What the check does of writes.jsonl and reads.jsonl without Spark: pyarrow takes no file with
    a wrong type; a line Spark's parser would take (a string column given another type) is named
    with its line by the misread pass; any other, which Spark's parser finds bad, is put in words
    that name the field."""
    wrong: list[str] = []
    checked = 0
    for case in (c for c in ALL_CASES if c.file == file and c.must_fail):
        data, line = case.lines()
        path = tmp_path / "history.jsonl"
        path.write_bytes(data)
        parsed = arrow_parse.parquet_of(path, _SOURCES[file].schema, tmp_path / "out.parquet")
        checked += 1
        text = json.dumps(case.line())
        if parsed.taken and case.wrong != "null":
            wrong.append(f"{case.id}: pyarrow took the file")
        elif _spark_keeps_text(case):
            misread = parsed.misread
            if misread is None or misread.line != line or not case.named_in(str(misread)):
                wrong.append(f"{case.id}: misread pass found {misread}")
        elif not case.named_in(said := _DESCRIBE[file](text)):
            wrong.append(f"{case.id}: described as {said!r}")
    assert checked >= 90
    assert not wrong, f"{len(wrong)} of {checked} cases:\n" + "\n".join(wrong)


def _route(case: Case) -> str:
    """How the check comes to a case: small files in Python before Spark (each wrong value its own
    way); in writes.jsonl and reads.jsonl, a null, a number beyond the field's bits, or another JSON
    type (one way for all of them: pyarrow refuses the file, and Spark's parser or the misread
    pass finds the line)."""
    if not case.shape.spark_read or case.wrong == "null" or case.wrong.startswith("beyond"):
        return case.wrong
    return "another type"


def _spark_subset() -> list[Case]:
    """Every file x field x route once (`_route`), the event type, the wrong value and the line
    position taking turns."""
    turns: dict[tuple[str, str, str], list[Case]] = {}
    for case in ALL_CASES:
        if case.must_fail:
            turns.setdefault((case.file, case.field, _route(case)), []).append(case)
    chosen: list[Case] = []
    for n, same in enumerate(turns.values()):
        events = sorted({case.event for case in same})
        wrongs = sorted({case.wrong for case in same})
        event, wrong = events[n % len(events)], wrongs[n % len(wrongs)]
        chosen.append(Case(same[0].file, event, same[0].field, wrong, POSITIONS[n % len(POSITIONS)]))
    return chosen


ISSUE_68 = Case(WRITES, "ok", "value", "object", "middle")
"""An `ok` whose value is `{"a": [1, 2]}`, as issue 68 found it: an IndexError (exit 3) then."""
SPARK_CASES = [*_spark_subset(), ISSUE_68]


@pytest.mark.spark
@pytest.mark.parametrize("case", SPARK_CASES, ids=[case.id for case in SPARK_CASES])
def test_a_wrong_type_is_exit_2_naming_file_line_and_field(
    spark: object, tmp_path: Path, capfd: pytest.CaptureFixture[str], case: Case
) -> None:
    run_dir = _run_dir(tmp_path / "run", case)
    _, line = case.lines()
    code = main(["check", str(run_dir)])
    out, err = capfd.readouterr()
    said = (out + err).strip()
    assert not any(marker in said for marker in STACK_TRACE_MARKERS), said
    assert code == 2, said
    assert said.startswith(f"error: {run_dir / case.file}:{line}:"), said
    assert case.named_in(said.splitlines()[0]), said
