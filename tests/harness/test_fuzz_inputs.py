"""Broken and hostile input, generated: whatever a scenario file or a run directory holds, kchaos
answers with exit 0 or with one line and exit 2, never a traceback, a crash (exit 3) or exit 1.

A seeded generator mutates valid inputs (the built-in scenarios; the handwritten run directories
of the report tests) the way files get broken and the way someone might break them on purpose:
wrong types, NaN, infinities, numbers too large for anything, bytes that are not UTF-8, nesting
thousands deep, truncated files, missing fields, YAML aliases that expand without end. Each case
goes through the CLI in-process: `run` (stopped at validation: a case that passes it never starts a
cluster), `check` (stopped where Spark would start) and `report`. Mutations that must be rejected
(not JSON, not UTF-8, NaN, ...) must exit 2; a mutation that may leave a valid input (a field nobody
reads, a key deleted) may also exit 0. Nothing may be written outside the run directory.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from contract.errors import ConfigError, HarnessError
from contract.history import CLUSTER, FAULTS, READS, RESULT, RUN_JSON, WRITES
from kchaos import run_cli
from kchaos.cli import main
from kchaos.runner import build_schedule
from kchaos.scenario import BUILTIN_DIR, load_scenario

SEED = 20261126
SCENARIO_CASES = 160
REPORT_CASES = 200
CHECK_CASES = 120
DEEP = 5000  # nesting levels: past Python's recursion limit, so parsers must not recurse on it
RAW_TOKENS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e999",
    "1" + "0" * 5000,
    "9" * 25,
    "[" * DEEP + "]" * DEEP,
    '{"a":' * 100 + "1" + "}" * 100,
]
"""JSON that Python's json module reads (or dies on) but that no history holds: NaN, infinities,
huge integers, nesting deeper than anything real."""


def _hostile_values(rng: random.Random) -> list[Any]:
    """Values of the wrong type or size for (nearly) any field."""
    nested: Any = "x"
    for _ in range(80):
        nested = [nested]
    return [
        None,
        True,
        -1,
        0,
        2**63,
        10**30,
        -(10**30),
        1e300,
        0.5,
        "",
        "x" * rng.choice((1, 300, 70_000)),
        "\x00\x1b[31m\u202e",
        [],
        {},
        [1, "two", None],
        {"nested": {"deeper": [1, 2]}},
        nested,
    ]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON/YAML document, as the keys and indexes leading to it."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return doc


def _delete(doc: Any, path: tuple[Any, ...]) -> Any:
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    return doc


@dataclass(frozen=True)
class Mutant:
    """A mutated file: its bytes, what was done, and whether the result must be rejected."""

    data: bytes
    how: str
    must_fail: bool


def _mutate_bytes(rng: random.Random, data: bytes) -> Mutant:
    """Byte-level damage, each of which no reader may accept (the file is JSON or YAML): bytes
    that are not UTF-8, or a NUL, which neither allows anywhere (not even inside a string)."""
    cut = rng.randrange(1, max(2, len(data) - 1))
    bad = rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00{]\n"))
    return Mutant(data[:cut] + bad + data[cut:], f"{bad!r} at byte {cut}", True)


def _mutate_json(rng: random.Random, doc: Any) -> Mutant:
    """A JSON document with one field changed, removed, or given a token no history holds."""
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    path = rng.choice(paths[1:] or paths)
    choice = rng.randrange(4)
    if choice == 0:
        token = rng.choice(RAW_TOKENS)
        text = json.dumps(_replace(doc, path, "\u0000RAW\u0000")).replace('"\\u0000RAW\\u0000"', token)
        return Mutant(text.encode(), f"{path} = {token[:12]}", True)
    if choice == 1 and path:
        return Mutant(json.dumps(_delete(doc, path)).encode(), f"del {path}", False)
    value = rng.choice(_hostile_values(rng))
    return Mutant(json.dumps(_replace(doc, path, value)).encode(), f"{path} = {str(value)[:30]!r}", False)


def _mutate_jsonl(rng: random.Random, data: bytes) -> Mutant:
    """One line of a JSON Lines file mutated like a JSON document; or the file cut short."""
    lines = data.splitlines(keepends=True)
    if rng.random() < 0.1:
        cut = rng.randrange(1, len(data))
        # A cut inside the last line leaves a torn tail, which the format allows readers to skip.
        return Mutant(data[:cut], f"cut at byte {cut}", False)
    i = rng.randrange(len(lines))
    mutant = _mutate_json(rng, json.loads(lines[i]))
    lines[i] = mutant.data + b"\n"
    return Mutant(b"".join(lines), f"line {i + 1}: {mutant.how}", mutant.must_fail)


def _mutate_file(rng: random.Random, data: bytes, jsonl: bool) -> Mutant:
    if rng.random() < 0.25:
        return _mutate_bytes(rng, data)
    return _mutate_jsonl(rng, data) if jsonl else _mutate_json(rng, json.loads(data))


# -- what every case must satisfy ---------------------------------------------------------------
def _snapshot(root: Path, inside: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` but outside `inside`, with its size and modification time."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and inside not in p.parents
    }


@dataclass
class Tally:
    """How many cases exited how, per surface: to prove the generator reaches validation."""

    rejected: int = 0
    accepted: int = 0


def _judge(
    capsys: pytest.CaptureFixture[str],
    run: Callable[[], int],
    mutant: Mutant,
    tmp_root: Path,
    inside: Path,
    accepted: tuple[int, ...],
    tally: Tally,
) -> None:
    before = _snapshot(tmp_root, inside)
    code = run()
    out, err = capsys.readouterr()
    context = f"{mutant.how}: exit {code}, stderr {err[:600]!r}"
    assert "Traceback" not in out + err, context
    assert code in ((2,) if mutant.must_fail else (2, *accepted)), context
    if code == 2:
        assert len(err.splitlines()) == 1 and err.startswith("error: "), context
        tally.rejected += 1
    else:
        tally.accepted += 1
    assert _snapshot(tmp_root, inside) == before, f"{context}: wrote outside {inside}"


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Caches (and any crash log) inside tmp_path, where the snapshots see them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KCHAOS_CACHE", str(tmp_path / "cache" / "kchaos"))
    return tmp_path


# -- scenario files -------------------------------------------------------------------------------
YAML_DAMAGE = [
    b"seed: 2024-13-01\n",  # a timestamp PyYAML cannot construct
    b"seed: !!int x\n",
    b"seed: !!python/object:os.system {}\n",
    b"name: &a [x, x, x, x, x, x, x, x, x, x]\ndescription: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    b"expect: [&c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b], [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]]\n",
    b"duration_s: 1" + b"0" * 5000 + b"\n",
    b"expect: " + b"[" * DEEP + b"]" * DEEP + b"\n",
    b"faults: " + b"{a: " * 200 + b"1" + b"}" * 200 + b"\n",
    b"\tname: tab\n",
    b"name: [unclosed\n",
    b"---\nname: a\n---\nname: b\n",
]


def _scenario_mutant(rng: random.Random, documents: list[dict[str, Any]], texts: list[bytes]) -> Mutant:
    choice = rng.random()
    if choice < 0.2:
        return _mutate_bytes(rng, rng.choice(texts))
    if choice < 0.3:
        return Mutant(rng.choice(texts) + rng.choice(YAML_DAMAGE), "damaged YAML", True)
    doc = copy.deepcopy(rng.choice(documents))
    path = rng.choice(list(_paths(doc))[1:])
    if choice < 0.45:
        return Mutant(yaml.safe_dump(_delete(doc, path)).encode(), f"del {path}", False)
    if choice < 0.6:
        value = rng.choice([math.nan, math.inf, -math.inf])
        return Mutant(yaml.safe_dump(_replace(doc, path, value)).encode(), f"{path} = {value}", True)
    value = rng.choice(_hostile_values(rng))
    return Mutant(yaml.safe_dump(_replace(doc, path, value)).encode(), f"{path} = {str(value)[:30]!r}", False)


def test_fuzzed_scenario_files_are_accepted_or_rejected_in_one_line(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_cluster(*args: object, **kwargs: object) -> object:
        raise AssertionError("a fuzz case got past validation to the cluster")

    monkeypatch.setattr(run_cli, "run_scenario", no_cluster)
    texts = [p.read_bytes() for p in sorted(BUILTIN_DIR.glob("*.yaml"))]
    documents = [yaml.safe_load(t) for t in texts]
    rng, tally, work = random.Random(SEED), Tally(), isolated / "work"
    for n in range(SCENARIO_CASES):
        mutant = _scenario_mutant(rng, documents, texts)
        path = work / f"case-{n}.yaml"
        work.mkdir(exist_ok=True)
        path.write_bytes(mutant.data)
        try:
            scenario = load_scenario(str(path))
        except ConfigError:
            # The same file through the CLI: one line, exit 2, and no --out directory made.
            args = ["run", str(path), "--out", str(isolated / "out")]
            _judge(capsys, lambda args=args: main(args), mutant, isolated, work, (), tally)
            continue
        assert not mutant.must_fail, f"{mutant.how}: accepted"
        tally.accepted += 1
        started = time.monotonic()  # what used to loop until memory ran out: the fault schedule
        build_schedule(
            scenario.faults, scenario.experiment.seed, scenario.experiment.duration_s, scenario.source
        )
        assert time.monotonic() - started < 5, mutant.how
    assert tally.rejected > SCENARIO_CASES // 3 and tally.accepted > 5, tally


# -- run directories ------------------------------------------------------------------------------
def _report_runs() -> ModuleType:
    """tests/reports/report_runs.py: the handwritten run directories the report tests use."""
    spec = importlib.util.spec_from_file_location(
        "report_runs", Path(__file__).resolve().parents[1] / "reports" / "report_runs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def base_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    runs = _report_runs()
    root = tmp_path_factory.mktemp("base")
    made = [runs.make_passing(root / "passing"), runs.make_failing(root / "failing")]
    for run in made:  # `check` only needs these to exist before Spark starts
        for name in (WRITES, READS):
            (run / name).touch()
    return made


def _fuzz_run_dirs(
    rng: random.Random, bases: list[Path], names: tuple[str, ...], cases: int, work: Path
) -> Iterator[tuple[Path, Mutant]]:
    for n in range(cases):
        run = work / f"case-{n}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(rng.choice(bases), run)
        name = rng.choice(names)
        mutant = _mutate_file(rng, (run / name).read_bytes(), jsonl=name.endswith(".jsonl"))
        (run / name).write_bytes(mutant.data)
        yield run, Mutant(mutant.data, f"{name}: {mutant.how}", mutant.must_fail)


def test_fuzzed_run_directories_report_or_fail_in_one_line(
    isolated: Path, base_runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rng, tally, work = random.Random(SEED + 1), Tally(), isolated / "work"
    for run, mutant in _fuzz_run_dirs(
        rng, base_runs, (RUN_JSON, RESULT, FAULTS, CLUSTER), REPORT_CASES, work
    ):
        _judge(capsys, lambda run=run: main(["report", str(run)]), mutant, isolated, run, (0,), tally)
    assert tally.rejected > REPORT_CASES // 3 and tally.accepted > 10, tally


class _SparkWouldStart(HarnessError):
    """Raised where the check would start Spark: every input check validates first got through."""

    exit_code = 99


def test_fuzzed_run_directories_are_checked_or_rejected_before_spark(
    isolated: Path,
    base_runs: list[Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def spark_would_start(*args: object, **kwargs: object) -> object:
        raise _SparkWouldStart("validation passed")

    monkeypatch.setattr("checkers.check.get_spark", spark_would_start)
    rng, tally, work = random.Random(SEED + 2), Tally(), isolated / "work"
    for run, mutant in _fuzz_run_dirs(rng, base_runs, (RUN_JSON, FAULTS, CLUSTER), CHECK_CASES, work):
        _judge(capsys, lambda run=run: main(["check", str(run)]), mutant, isolated, run, (99,), tally)
    assert tally.rejected > CHECK_CASES // 3 and tally.accepted > 10, tally


# -- the Spark path: writes.jsonl and reads.jsonl ---------------------------------------------------
def _line(**event: Any) -> bytes:
    return json.dumps(event).encode() + b"\n"


def _write(kind: str, value: str, time_ns: int = 5, **extra: Any) -> bytes:
    """A writes.jsonl line of process p to chaos-acks-all/0."""
    return _line(
        type=kind, time_ns=time_ns, process="p", topic="chaos-acks-all", partition=0, value=value, **extra
    )


SPARK_CASES = {
    "not-utf8": (
        WRITES,
        b'{"type": "invoke", "time_ns": 5, "process": "p", "topic": "chaos-acks-all", "partition": 0, '
        b'"value": "p:\xff"}\n',
        "writes.jsonl:3: not UTF-8 (byte 0xff)",  # before any parser: `contract.history_scan`
    ),
    "deep": (
        READS,
        b'{"type": ' + b"[" * DEEP + b"]" * DEEP + b"}\n",
        "reads.jsonl:5: malformed JSON (nested too deeply)",
    ),
    "deep-with-text-after": (
        READS,
        b'{"type": ' + b"[" * DEEP + b"]" * DEEP + b"} x\n",
        "reads.jsonl:5: malformed JSON (nested too deeply)",
    ),
    "long-number": (
        WRITES,
        b'{"type": "invoke", "time_ns": 1' + b"0" * 5000 + b', "process": "p", "topic": "chaos-acks-all", '
        b'"partition": 0, "value": "p:2"}\n',
        "writes.jsonl:3: malformed JSON (a number too long to read)",
    ),
    "beyond-the-run": (
        WRITES,
        _write("invoke", "p:2", time_ns=2**62),
        "writes.jsonl:3: field 'time_ns' must be from 0 to",
    ),
}


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(SPARK_CASES))
def test_hostile_lines_spark_reads_are_one_clear_error(
    isolated: Path, base_runs: list[Path], capsys: pytest.CaptureFixture[str], case: str
) -> None:
    name, bad, message = SPARK_CASES[case]
    run = isolated / "run"
    shutil.copytree(base_runs[0], run)
    (run / WRITES).write_bytes(_write("invoke", "p:1") + _write("ok", "p:1", 9, offset=0))
    final = {"time_ns": 20, "process": "c", "phase": "final", "partition": 0}
    reads = [_line(type="record", **final, topic="chaos-acks-all", offset=0, value="p:1")]
    for acks in ("all", "1", "0"):  # the shape of a final read; these cases fail before it counts
        reads.append(_line(type="end", **final, topic=f"chaos-acks-{acks}", log_start=0, high_watermark=0))
    (run / READS).write_bytes(b"".join(reads))
    with (run / name).open("ab") as handle:
        handle.write(bad)
    code = main(["check", str(run), "--master", "local[2]"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert message in err and "Traceback" not in err, err
