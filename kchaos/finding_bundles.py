"""The findings' evidence bundles: docs/findings/<id>/, one per finding, small enough for the
repository (at most BUNDLE_BYTES), made from run directories by `kchaos findings bundle`.

    docs/findings/<id>/
      finding.yaml                      what the finding is and which counts its tables show
      evidence/<run_id>/run.json        the run as recorded
      evidence/<run_id>/scenario.yaml   the scenario as it ran (`kchaos run` takes it again)
      evidence/<run_id>/check/result.json  the check's result, without its example lists and
                                        per-second series (the counts and verdicts stay)
      quotes.jsonl                      the log lines the text quotes: {"run", "file", "line", "text"}
      counts.md                         generated: counts per run and seed, and how to reproduce them
      ...                               anything else: reproductions, notes, texts for upstream

finding.yaml (hand-written; every key but `counts`'s `of` and `releases` is checked):

    title: A double failover loses committed acks=all writes     # the summary table's link
    section: a-double-failover-loses-committed-acksall-writes-kip-101   # FINDINGS.md's heading
    whose: Kafka's (KIP-101)                                       # whose promise it was
    order: 10                                                      # its row among the findings
    counts:                                        # what the result column says (README: the first)
      - {say: "acks=all lost", count: acks.all.lost, of: acks.all.acked}   # also: releases, scenarios,
                                                   # clients (librdkafka, java): only those runs
    client: false            # true: the client library's finding (the release column says so)
    summary: true            # false: not a row of FINDINGS' summary (a matrix column only)
    readme: double failover loses committed writes (KIP-101)      # README's row (absent: none)
    matrix: {column: "`hw-truncation` (double failover)", order: 1, acks: all, count: 0,
             verdicts: [no-lost-acked-writes, replicas-agree, per-partition-order]}

Each bundled run is checked as a run directory of the current contract (`contract.checked_run`), and its
scenario.yaml as a scenario of the current format, so a bundle that no longer reads is found.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.checked_run import load_result
from contract.errors import ConfigError, HarnessError
from contract.history import RESULT, RUN_JSON, SCENARIO, write_atomic
from contract.history_readers import load_run_json, read_json_object
from harness.client_choice import JAVA, JAVA_LIBRARY, LIBRARIES, LIBRDKAFKA, ClientChoice
from kchaos.finding_counts import CountSpec, Measured, parse_path, pick
from kchaos.scenario import load_scenario
from kchaos.yamlfile import read_yaml

FINDING = "finding.yaml"
FINDINGS_SCENARIOS = "docs/findings"
"""Where the findings' own scenario files are, in the repository."""
QUOTES = "quotes.jsonl"
COUNTS = "counts.md"
RUNS = "evidence"
"""Where a bundle keeps its runs (not `runs/`: the repository ignores every directory of that name)."""
BUNDLE_BYTES = 1024 * 1024
"""A bundle's largest size: the repository keeps every finding's evidence."""
QUOTE_CHARS = 2000
"""A quoted log line's longest text (the rest cut)."""
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_KEYS = {"title", "section", "whose", "order", "counts", "client", "summary", "readme", "matrix"}
_MATRIX_KEYS = {"column", "order", "acks", "verdicts", "count"}
_COUNT_KEYS = {"say", "count", "of", "releases", "scenarios", "clients"}


@dataclass(frozen=True)
class MatrixColumn:
    """A finding's column of FINDINGS' release matrix: its first count, and these verdicts."""

    title: str
    order: int
    acks: str
    verdicts: tuple[str, ...]
    count: int
    """Which of the finding's counts the column shows (an index into `counts`)."""


@dataclass(frozen=True)
class Finding:
    """finding.yaml."""

    title: str
    section: str
    whose: str
    order: int
    counts: tuple[CountSpec, ...]
    client: bool
    summary: bool
    readme: str | None
    matrix: MatrixColumn | None


@dataclass(frozen=True)
class BundledRun:
    """One run of a bundle: its run.json and (stripped) result.json, as read and checked."""

    run_id: str
    run: dict[str, Any]
    result: dict[str, Any]

    @property
    def release(self) -> str:
        return str(self.run["kafka"]["version"])

    @property
    def seed(self) -> int:
        return int(self.run["seed"])

    @property
    def scenario(self) -> str:
        """How to ask for the run's scenario again: a built-in's name, or a findings scenario's
        path in the repository (run.json's `scenario_source` is the path `kchaos run` was given,
        absolute or relative to the checkout)."""
        source = str(self.run.get("scenario_source") or "")
        if f"/{FINDINGS_SCENARIOS}/" in f"/{source}":
            return f"{FINDINGS_SCENARIOS}/{Path(source).name}"
        return str(self.run["scenario"])

    @property
    def metadata(self) -> str:
        return str(self.run.get("cluster", {}).get("metadata") or "zookeeper")

    def counted_by(self, spec: CountSpec) -> bool:
        """Whether `spec` applies to this run (its release, scenario and client filters)."""
        return (
            (spec.releases is None or self.release in spec.releases)
            and (spec.scenarios is None or self.scenario in spec.scenarios)
            and (spec.clients is None or self.client_name in spec.clients)
        )

    @property
    def _client_record(self) -> dict[str, Any]:
        """run.json's `client` (absent in runs made before it: librdkafka)."""
        return self.run.get("client") or {}

    @property
    def client(self) -> str:
        client = self._client_record
        return f"{client.get('library', 'librdkafka')} {client.get('version', '?')}"

    @property
    def client_name(self) -> str:
        """The workload's client as `kchaos run --client` names it: librdkafka or java."""
        return JAVA if self._client_record.get("library") == JAVA_LIBRARY else LIBRDKAFKA

    @property
    def client_option(self) -> str | None:
        """The `kchaos run --client` that makes this run's client again: None for librdkafka (the
        default), `java` for kafka-clients of the brokers' release, `java:VERSION` for another."""
        if self.client_name != JAVA:
            return None
        version = str(self._client_record.get("version"))
        return ClientChoice(JAVA, None if version == self.release else version).text


@dataclass(frozen=True)
class Bundle:
    id: str
    path: Path
    finding: Finding
    runs: tuple[BundledRun, ...]

    def measured(self, spec: CountSpec) -> list[Measured]:
        """`spec`'s count (and what it is of) in each of this bundle's runs it applies to."""
        measured = []
        for run in self.runs:
            if not run.counted_by(spec):
                continue
            count = pick(run.result, spec.count, run.run)
            of = pick(run.result, spec.of, run.run) if spec.of is not None else None
            if count is None or (spec.of is not None and of is None):
                where = f"{self.path / FINDING}: counts {spec.say!r}"
                raise ConfigError(f"{where}: run {run.run_id}'s result.json has no such count")
            measured.append(Measured(run.release, run.seed, count, of, run.scenario, run.client))
        return measured


def _text(data: Mapping[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: `{key}` must be a non-empty string, got {value!r}")
    return value.strip()


def _integer(data: Mapping[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be an integer, got {value!r}")
    return value


def _flag(data: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be true or false, got {value!r}")
    return value


def _mapping(value: Any, keys: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(keys))})")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: expected a non-empty list of strings, got {value!r}")
    return tuple(value)


def _clients(value: Any, where: str) -> tuple[str, ...]:
    clients = _strings(value, where)
    unknown = sorted(set(clients) - set(LIBRARIES))
    if unknown:
        known = ", ".join(LIBRARIES)
        raise ConfigError(f"{where}: unknown client(s) {', '.join(unknown)} (known: {known})")
    return clients


def read_finding(path: Path) -> Finding:
    """finding.yaml, every field checked (a ConfigError names the file and the field)."""
    where = str(path)
    data = _mapping(read_yaml(path), _KEYS, where)
    counts_value = data.get("counts")
    if not isinstance(counts_value, list) or not counts_value:
        raise ConfigError(f"{where}: `counts` must be a non-empty list of {{say, count, of}}")
    counts = []
    for n, item in enumerate(counts_value):
        at = f"{where}: counts[{n}]"
        spec = _mapping(item, _COUNT_KEYS, at)
        count_path = _text(spec, "count", at) or ""
        of_path = _text(spec, "of", at, required=False)
        releases, scenarios, clients = spec.get("releases"), spec.get("scenarios"), spec.get("clients")
        counts.append(
            CountSpec(
                say=_text(spec, "say", at) or "",
                count=parse_path(count_path, f"{at}.count"),
                of=parse_path(of_path, f"{at}.of") if of_path is not None else None,
                releases=_strings(releases, f"{at}.releases") if releases is not None else None,
                scenarios=_strings(scenarios, f"{at}.scenarios") if scenarios is not None else None,
                clients=_clients(clients, f"{at}.clients") if clients is not None else None,
            )
        )
    matrix = None
    if data.get("matrix") is not None:
        at = f"{where}: matrix"
        column = _mapping(data["matrix"], _MATRIX_KEYS, at)
        matrix = MatrixColumn(
            title=_text(column, "column", at) or "",
            order=_integer(column, "order", at),
            acks=_text(column, "acks", at) or "",
            verdicts=_strings(column.get("verdicts"), f"{at}.verdicts"),
            count=_integer(column, "count", at) if "count" in column else 0,
        )
        if not 0 <= matrix.count < len(counts):
            raise ConfigError(f"{at}: `count` {matrix.count} names none of the {len(counts)} counts")
    return Finding(
        title=_text(data, "title", where) or "",
        section=_text(data, "section", where) or "",
        whose=_text(data, "whose", where) or "",
        order=_integer(data, "order", where),
        counts=tuple(counts),
        client=_flag(data, "client", where, False),
        summary=_flag(data, "summary", where, True),
        readme=_text(data, "readme", where, required=False),
        matrix=matrix,
    )


def _read_run(run_dir: Path) -> BundledRun:
    """A bundled (or any checked) run: run.json and result.json checked as the contract says."""
    load_result(run_dir)
    if (run_dir / SCENARIO).is_file():
        load_scenario(str(run_dir / SCENARIO))
    run = load_run_json(run_dir)
    return BundledRun(str(run["run_id"]), run, read_json_object(run_dir / RESULT))


def load_bundle(path: Path) -> Bundle:
    """A bundle read and checked: finding.yaml, every run against the current contract, the quotes
    against the runs, the size."""
    if not _ID.match(path.name):
        raise ConfigError(f"{path}: a bundle's directory is the finding's id: lower case, digits, dashes")
    finding = read_finding(path / FINDING)
    runs_dir = path / RUNS
    runs = []
    for run_dir in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
        run = _read_run(run_dir)
        if run.run_id != run_dir.name:
            raise ConfigError(f"{run_dir}: holds run {run.run_id}: a bundled run's directory is its run id")
        if _has_examples(run.result):
            raise ConfigError(f"{run_dir / RESULT}: keeps example lists (bundle the run again)")
        runs.append(run)
    _check_quotes(path, {run.run_id for run in runs})
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    if size > BUNDLE_BYTES:
        raise ConfigError(f"{path}: {size:,} bytes, more than a bundle's {BUNDLE_BYTES:,}")
    return Bundle(path.name, path, finding, tuple(runs))


def load_bundles(root: Path) -> list[Bundle]:
    """Every bundle under `root` (a directory with a finding.yaml), by its order."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such directory of findings")
    bundles = [load_bundle(d) for d in sorted(root.iterdir()) if (d / FINDING).is_file()]
    return sorted(bundles, key=lambda b: (b.finding.order, b.id))


def stripped(result: Mapping[str, Any]) -> dict[str, Any]:
    """result.json without example lists or per-second series: every count and verdict kept;
    `examples_capped` true wherever examples were dropped (RESULT_FORMAT.md's meaning)."""
    out = copy.deepcopy(dict(result))
    for holder in [out, *(g for g in (out.get("groups") or {}).values() if isinstance(g, dict))]:
        for anomaly in (holder.get("anomalies") or {}).values():
            if isinstance(anomaly, dict) and anomaly.get("examples"):
                anomaly["examples"] = []
                anomaly["examples_capped"] = True
        if isinstance(holder.get("series"), list):
            holder["series"] = []
    availability = out.get("availability")
    if isinstance(availability, dict) and isinstance(availability.get("series"), list):
        availability["series"] = []
    return out


def _has_examples(result: Mapping[str, Any]) -> bool:
    holders = [result, *(g for g in (result.get("groups") or {}).values() if isinstance(g, dict))]
    return any(
        isinstance(a, dict) and a.get("examples")
        for holder in holders
        for a in (holder.get("anomalies") or {}).values()
    )


@dataclass(frozen=True)
class Quote:
    """A log line quoted as evidence: which run, which file of it, which line (1-based)."""

    run: str
    file: str
    line: int
    text: str

    def as_json(self) -> str:
        return json.dumps({"run": self.run, "file": self.file, "line": self.line, "text": self.text})


def read_quotes(path: Path) -> list[Quote]:
    file = path / QUOTES
    if not file.is_file():
        return []
    quotes = []
    for n, raw in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        try:
            data = json.loads(raw)
            quote = Quote(str(data["run"]), str(data["file"]), int(data["line"]), str(data["text"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{file}:{n}: expected {{run, file, line, text}} ({exc})") from None
        quotes.append(quote)
    return quotes


def _check_quotes(path: Path, run_ids: set[str]) -> None:
    for n, quote in enumerate(read_quotes(path), 1):
        if quote.run not in run_ids:
            raise ConfigError(f"{path / QUOTES}:{n}: quotes run {quote.run}, which is not in the bundle")


def quote_lines(spec: str, run_dirs: Sequence[Path]) -> list[Quote]:
    """`FILE:LINE` or `FILE:FIRST-LAST`, FILE inside one of `run_dirs`: the lines it names."""
    file_text, _, lines_text = spec.rpartition(":")
    first_text, _, last_text = lines_text.partition("-")
    if not file_text or not first_text.isdigit() or (last_text and not last_text.isdigit()):
        raise ConfigError(f"--quote {spec!r}: expected FILE:LINE or FILE:FIRST-LAST")
    first, last = int(first_text), int(last_text or first_text)
    file = Path(file_text).resolve()
    owner = next((d for d in run_dirs if file.is_relative_to(d.resolve())), None)
    if owner is None:
        raise ConfigError(f"--quote {spec!r}: {file} is not inside any of the runs bundled")
    if not file.is_file() or not 0 < first <= last or last - first >= 100:
        raise ConfigError(f"--quote {spec!r}: no such file, or not 1 to 100 lines")
    with file.open(encoding="utf-8", errors="replace") as handle:
        texts = [line.rstrip("\n") for n, line in enumerate(handle, 1) if first <= n <= last]
    if len(texts) != last - first + 1:
        raise ConfigError(f"--quote {spec!r}: {file} has no line {last}")
    run_id = str(load_run_json(owner)["run_id"])
    relative = file.relative_to(owner.resolve()).as_posix()
    return [Quote(run_id, relative, first + i, t[:QUOTE_CHARS]) for i, t in enumerate(texts)]


def bundle_runs(run_dirs: Sequence[Path], path: Path, quotes: Sequence[str]) -> list[str]:
    """Copy each checked run into bundle `path` (run.json, scenario.yaml, stripped result.json)
    and add the quoted lines; the run ids, in order. The bundle's finding.yaml must exist."""
    if not (path / FINDING).is_file():
        raise ConfigError(
            f"{path / FINDING}: write the finding's finding.yaml first (see `kchaos findings --help`)"
        )
    read_finding(path / FINDING)
    quoted = [q for spec in quotes for q in quote_lines(spec, run_dirs)]
    runs = [_read_run(run_dir) for run_dir in run_dirs]  # every run read before any is copied
    ids = []
    for run_dir, run in zip(run_dirs, runs, strict=True):
        target = path / RUNS / run.run_id
        try:
            (target / "check").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run_dir / RUN_JSON, target / RUN_JSON)
            if (run_dir / SCENARIO).is_file():
                shutil.copyfile(run_dir / SCENARIO, target / SCENARIO)
        except OSError as exc:
            raise HarnessError(f"{target}: cannot write the bundle ({exc.strerror})") from None
        write_atomic(target, RESULT, json.dumps(stripped(run.result), indent=1) + "\n")
        ids.append(run.run_id)
    if quoted:
        known = {q.as_json() for q in read_quotes(path)}
        new = [q.as_json() for q in quoted if q.as_json() not in known]
        existing = (path / QUOTES).read_text(encoding="utf-8") if (path / QUOTES).is_file() else ""
        write_atomic(path, QUOTES, existing + "".join(line + "\n" for line in new))
    return ids
