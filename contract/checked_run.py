"""A checked run, typed: run.json, check/result.json (docs/RESULT_FORMAT.md), faults and cluster
samples, read into small frozen dataclasses: the model of what the checkers write, as the reports
and the app read it.

Only the small files are read (never writes.jsonl / reads.jsonl): per-second series come from
result.json. Readers never touch raw JSON; every field they use is checked as it is read
(`contract.history_fields.Fields` for result.json, `contract.history_readers` for run.json and the
JSONL files, naming file, line and field). Unusable input raises HistoryError or InputError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.anomaly_kinds import COUNT_KEYS, GROUP_BY_ID, GROUP_COUNTS, KIND_IDS, TOPIC_CASES
from contract.coordinators import offsets_partitions
from contract.errors import InputError
from contract.events import FaultWindow, fault_windows
from contract.expectation_outcomes import ExpectationOutcome, read_expectations
from contract.history import ACKS_MODES, FAULTS, RESULT
from contract.history_fields import Fields
from contract.history_readers import (
    iter_cluster_samples,
    iter_fault_events,
    load_run_json,
    read_json_object,
    require_file,
)
from contract.history_scan import JudgedFile, judged_files
from contract.limits import MAX_RUN_NS, brief

RESULT_FORMATS = (1,)
NS = 1_000_000_000
MAX_T_S = MAX_RUN_NS // NS


NOT_EXERCISED = "not-exercised"
"""The verdict on a promise the run gave no case to judge on: neither kept nor broken."""


@dataclass(frozen=True)
class Exercised:
    """How many cases a guarantee was judged over (result.json's `guarantees[].exercised`)."""

    count: int
    what: str
    """The cases in words, plural: "appended records of aborted transactions"."""


@dataclass(frozen=True)
class Verdict:
    """One guarantee's verdict as result.json holds it: a row of its `guarantees`, or of a group's
    (`topic` and `acks` empty), apart from the guarantee itself (`contract.anomaly_kinds.Guarantee`)."""

    id: str
    topic: str
    acks: str
    promise: str
    promised: bool
    verdict: str
    reason: str
    promised_by: str
    exercised: Exercised | None = None
    """None: not recorded (results written before it was), so the number of cases is unknown."""

    @property
    def broken(self) -> bool:
        """Promised, and not shown kept: violated or unknown (not exercised is neither)."""
        return self.promised and self.verdict not in ("held", NOT_EXERCISED)


@dataclass(frozen=True)
class Anomalies:
    kind: str
    count: int | None  # None: its checker failed
    examples: tuple[dict[str, Any], ...]
    capped: bool
    error: str | None = None


@dataclass(frozen=True)
class GroupResult:
    """One consumer group's counts, commit outcomes, guarantees and anomalies (result.json `groups`)."""

    name: str
    commit: str
    commit_async: bool
    members: int | None
    counts: dict[str, int]
    commits: dict[str, int]
    guarantees: tuple[Verdict, ...]
    anomalies: tuple[Anomalies, ...]
    series: tuple[GroupSecond, ...] = ()
    recovery: tuple[dict[str, Any], ...] = ()
    """Per fault, when the group read every partition written to again after its heal (result.json's
    `groups.<name>.recovery`)."""
    heal_recovery: tuple[float, bool] | None = None
    """The longest time after a heal until the group polled every partition written to again, and
    whether it is a lower bound (result.json's `groups.<name>.heal_recovery_ms`); None: not judged."""
    topics: tuple[str, ...] = ()
    aborted_appended: int | None = None
    """Appended records of aborted transactions on its topics (result.json's
    `groups.<name>.aborted_appended`); None: not recorded."""
    aborted_polled: int | None = None
    """Of those, the distinct records its members polled (`groups.<name>.aborted_polled`): for a
    read_uncommitted group, the control that they were there to be seen; None: not recorded."""


@dataclass(frozen=True)
class GroupSecond:
    """What a group did in one second of run time (result.json `groups.<name>.series`)."""

    t_s: int
    polled: int
    commits_ok: int
    commits_failed: int
    assigns: int
    generation: int | None
    lag: int = 0


TRANSACTION_OUTCOME_COUNTS = (
    "begun",
    "committed",
    "aborted",
    "unknown",
    "fatal_errors",
    "abortable_errors",
    "retriable_errors",
)
"""A transactional.id's counts in result.json `transactions`: its transactions by outcome, and of
those not committed how many ended in each error class (of their last failed step)."""


@dataclass(frozen=True)
class TransactionCounts:
    """One transactional.id's row of result.json `transactions`."""

    transactional_id: str
    counts: dict[str, int]  # by TRANSACTION_OUTCOME_COUNTS


@dataclass(frozen=True)
class SeriesRow:
    acks: str
    t_s: int
    acked: int
    failed: int
    indeterminate: int
    lost: int
    divergent: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None


@dataclass(frozen=True)
class Result:
    valid: bool
    complete: bool
    unexpected: int
    checked_at: str
    incomplete_partitions: tuple[tuple[str, int, str | None], ...]
    """(topic, partition, why the final read did not finish it: None when run.json does not say)."""
    acks: dict[str, dict[str, int | None]]
    topics: tuple[dict[str, Any], ...]
    guarantees: tuple[Verdict, ...]
    anomalies: tuple[Anomalies, ...]
    series: tuple[SeriesRow, ...]
    latency: tuple[dict[str, Any], ...]
    recovery: tuple[dict[str, Any], ...]
    heal_recovery: dict[str, tuple[float, bool]]
    """Per acks mode with a judged heal: the longest recovery after one (ms), and whether it is a
    lower bound (result.json's `acks.<mode>.heal_recovery_ms`)."""
    errors: tuple[tuple[str, str], ...] = ()  # (kind, error) of each checker that failed
    groups: tuple[GroupResult, ...] = ()
    history_files: tuple[JudgedFile, ...] = ()
    """What the check read and judged of each history file (result.json's `history_files`)."""
    transactions: tuple[TransactionCounts, ...] | None = None
    """Per transactional.id (result.json's `transactions`); None: the run had no transactions."""

    @property
    def judged_prefixes(self) -> list[str]:
        """A sentence per history file judged up to a torn tail only (`kchaos check --prefix`)."""
        return [judged for file in self.history_files if (judged := file.judged_prefix()) is not None]


def passed(result: Result, expectations: Sequence[ExpectationOutcome]) -> bool:
    """What `kchaos run`'s exit code says: every promise and every scenario expectation held."""
    return result.valid and all(e.held for e in expectations)


def _counts(fields: Fields) -> dict[str, int | None]:
    """One acks mode's counts and cases; null where that kind's checker failed (result.json's
    `errors`); 0 for a count an older result does not hold."""
    return {k: fields.integer(k) if k in fields.obj else 0 for k in (*COUNT_KEYS, *TOPIC_CASES)}


def _series_row(r: Fields) -> SeriesRow:
    return SeriesRow(
        acks=_acks(r),
        t_s=r.integer("t_s", 0, MAX_T_S, required=True) or 0,
        acked=r.integer("acked") or 0,
        failed=r.integer("failed") or 0,
        indeterminate=r.integer("indeterminate") or 0,
        lost=r.integer("lost") or 0,
        divergent=r.integer("divergent") or 0,
        p50_ms=r.number("latency_p50_ms"),
        p99_ms=r.number("latency_p99_ms"),
        max_ms=r.number("latency_max_ms"),
    )


def _acks(r: Fields) -> str:
    acks = r.text("acks", required=True)
    if acks not in ACKS_MODES:
        raise r.fail("acks", f"one of {', '.join(ACKS_MODES)}", acks)
    return acks


def _latency_row(r: Fields) -> dict[str, Any]:
    _acks(r)
    r.flag("during_fault")
    r.integer("count")
    for key in ("p50_ms", "p99_ms", "max_ms"):
        r.number(key)
    for key in ("error_rate", "indeterminate_rate"):
        r.number(key, 0.0, 1.0)
    return r.obj


def _recovery_row(r: Fields) -> dict[str, Any]:
    """An acks mode's row of `availability.recovery`."""
    r.text("acks")
    r.time_ns("first_ok_ns")
    r.number("recovery_ms")
    return _after_heal(r)


def _after_heal(r: Fields) -> dict[str, Any]:
    """A fault's row of recovery after its heal, an acks mode's or a group's: validated, with the
    heal's fields null in results from before heals were measured."""
    r.text("fault")
    r.time_ns("start_ns")
    r.time_ns("healed_ns")
    r.time_ns("resumed_ns")
    lower_bound = r.flag("heal_recovery_lower_bound")
    r.number("heal_recovery_ms", required=bool(lower_bound))
    measured = {
        "healed_ns": None,
        "resumed_ns": None,
        "heal_recovery_ms": None,
        "heal_recovery_lower_bound": False,
    }
    return measured | r.obj


def load_result(root: Path) -> Result:
    path = root / RESULT
    if not path.exists():
        raise InputError(
            f"{root}: this run has not been checked yet (no {RESULT}); run `kchaos check {root}` first"
        )
    require_file(path, "")
    raw = read_json_object(path)
    run_id = load_run_json(root).get("run_id")
    if raw.get("run_id") != run_id:
        raise InputError(
            f"{path}: the result of run {brief(raw.get('run_id'))}, not of this run ({brief(run_id)}); "
            f"run `kchaos check {root}` again"
        )
    fmt = raw.get("result_format")
    if fmt not in RESULT_FORMATS or isinstance(fmt, bool):
        known = ", ".join(str(f) for f in RESULT_FORMATS)
        raise InputError(
            f"{path}: unknown result_format {brief(fmt)}; this kafka-chaos reads result format {known}"
        )
    top = Fields(raw, path)
    acks_fields = top.child("acks", required=True)
    for mode in acks_fields.obj:
        if mode not in ACKS_MODES:
            raise acks_fields.fail(mode, f"acks modes {', '.join(ACKS_MODES)} only", mode)
    acks = {mode: _counts(acks_fields.child(mode, required=True)) for mode in acks_fields.obj}
    longest = {mode: _heal_recovery(acks_fields.child(mode)) for mode in acks_fields.obj}
    guarantees = _guarantees(top)
    anomalies = _anomalies(top.child("anomalies"), KIND_IDS)
    avail = top.child("availability")
    return Result(
        valid=bool(top.flag("valid", required=True)),
        complete=bool(top.flag("complete", required=True)),
        unexpected=top.integer("unexpected") or 0,
        checked_at=top.text("checked_at") or "",
        incomplete_partitions=tuple(
            (p.text("topic", required=True) or "", p.integer("partition", required=True) or 0, p.text("why"))
            for p in top.children("incomplete_partitions")
        ),
        acks=acks,
        topics=tuple(t.obj for t in top.children("topics")),
        guarantees=guarantees,
        anomalies=tuple(anomalies),
        series=tuple(_series_row(r) for r in avail.children("series")),
        latency=tuple(_latency_row(r) for r in avail.children("latency")),
        recovery=tuple(_recovery_row(r) for r in avail.children("recovery")),
        heal_recovery={mode: judged for mode, judged in longest.items() if judged is not None},
        errors=tuple(
            (e.text("kind", required=True) or "", e.text("error", required=True) or "")
            for e in top.children("errors")
        ),
        groups=_groups(top.child("groups")),
        history_files=tuple(judged_files(top.child("history_files"))),
        transactions=_transactions(top),
    )


def _guarantees(fields: Fields) -> tuple[Verdict, ...]:
    return tuple(
        Verdict(
            id=g.text("id", required=True) or "",
            topic=g.text("topic") or "",
            acks=g.text("acks") or "",
            promise=g.text("promise") or "",
            promised=bool(g.flag("promised")),
            verdict=g.text("verdict", required=True) or "",
            reason=g.text("reason") or "",
            promised_by=g.text("promised_by") or "",
            exercised=_exercised(g),
        )
        for g in fields.children("guarantees", required=True)
    )


def _exercised(guarantee: Fields) -> Exercised | None:
    if guarantee.obj.get("exercised") is None:
        return None
    exercised = guarantee.child("exercised")
    count = exercised.integer("count", required=True) or 0
    return Exercised(count, exercised.text("what", required=True) or "")


def _anomalies(fields: Fields, kinds: tuple[str, ...]) -> tuple[Anomalies, ...]:
    anomalies = []
    for kind in kinds:
        if kind not in fields.obj:
            continue  # a result written before this kind was checked: not shown as zero
        a = fields.child(kind)
        examples = tuple(e.obj for e in a.children("examples"))
        error = a.text("error")
        count = a.integer("count") if error else a.integer("count") or 0
        anomalies.append(Anomalies(kind, count, examples, bool(a.flag("examples_capped")), error))
    return tuple(anomalies)


def _transactions(top: Fields) -> tuple[TransactionCounts, ...] | None:
    if top.obj.get("transactions") is None:
        return None
    return tuple(
        TransactionCounts(
            t.text("transactional_id", required=True) or "",
            {k: t.integer(k, required=True) or 0 for k in TRANSACTION_OUTCOME_COUNTS},
        )
        for t in top.children("transactions")
    )


def _heal_recovery(fields: Fields) -> tuple[float, bool] | None:
    """An acks mode's or a group's longest recovery after a heal and whether it is a lower bound;
    None when none was judged (or measured, in results from before)."""
    longest = fields.number("heal_recovery_ms")
    return None if longest is None else (longest, bool(fields.flag("heal_recovery_lower_bound")))


def _groups(fields: Fields) -> tuple[GroupResult, ...]:
    groups = []
    for name in fields.obj:
        group = fields.child(name)
        commits = group.child("commits")
        groups.append(
            GroupResult(
                name=str(name),
                commit=group.text("commit", required=True) or "",
                commit_async=bool(group.flag("commit_async")),
                members=group.integer("members"),
                counts={k: group.integer(k) or 0 for k in GROUP_COUNTS},
                commits={k: commits.integer(k) or 0 for k in ("invoke", "ok", "fail", "info")},
                guarantees=_guarantees(group),
                anomalies=_anomalies(group.child("anomalies"), tuple(GROUP_BY_ID)),
                series=tuple(
                    GroupSecond(
                        t_s=r.integer("t_s", 0, MAX_T_S, required=True) or 0,
                        polled=r.integer("polled") or 0,
                        commits_ok=r.integer("commits_ok") or 0,
                        commits_failed=r.integer("commits_failed") or 0,
                        assigns=r.integer("assigns") or 0,
                        generation=r.integer("generation"),
                        lag=r.integer("lag") or 0,
                    )
                    for r in group.children("series")
                ),
                recovery=tuple(_after_heal(r) for r in group.children("recovery")),
                heal_recovery=_heal_recovery(group),
                topics=tuple(str(t) for t in group.items("topics")),
                aborted_appended=group.integer("aborted_appended"),
                aborted_polled=group.integer("aborted_polled"),
            )
        )
    return tuple(groups)


@dataclass(frozen=True)
class PartitionState:
    leader: int | None
    leader_epoch: int | None
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterSample:
    time_ns: int
    controller: int | None
    live_brokers: tuple[int, ...]
    partitions: dict[tuple[str, int], PartitionState] = field(hash=False)


def _sample(ev: dict[str, Any]) -> ClusterSample:
    parts = {
        (p["topic"], p["partition"]): PartitionState(
            p.get("leader"), p.get("leader_epoch"), tuple(p.get("isr") or ())
        )
        for p in ev.get("partitions") or []
    }
    live = tuple(sorted(ev.get("live_brokers") or ()))
    return ClusterSample(ev["time_ns"], ev.get("controller"), live, parts)


def load_cluster(root: Path) -> tuple[ClusterSample, ...]:
    """Cluster samples, keeping only those that changed something (and the last one, for the end)."""
    kept: list[ClusterSample] = []
    last: ClusterSample | None = None
    for _, ev in iter_cluster_samples(root):
        sample = _sample(ev)
        if last is None or (sample.controller, sample.live_brokers, sample.partitions) != (
            last.controller,
            last.live_brokers,
            last.partitions,
        ):
            kept.append(sample)
        last = sample
    if last is not None and kept[-1] is not last:
        kept.append(last)
    return tuple(kept)


@dataclass(frozen=True)
class Topic:
    name: str
    acks: str
    partitions: int | None
    replication_factor: int | None
    config: dict[str, str]
    transactional: bool = False  # written in transactions (run.json's topic has `transactions`)
    pipeline: bool = False  # a consume-transform-produce pipeline's output (it has `pipeline`)


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    scenario: str
    seed: Any
    started_at: str
    duration_s: float | None
    kafka_version: str
    brokers: int | None
    broker_config: dict[str, str]
    producer: dict[str, str]
    topics: tuple[Topic, ...]
    offsets_partitions: int | None  # of __consumer_offsets, when the run had groups
    transaction_state_partitions: int | None  # of __transaction_state, when the run had transactions
    kafka_source: str = ""  # maven:<coordinates>, tarball:<path> or directory:<path>; "" when not recorded
    java: str = ""  # what `java -version` said in a running broker
    metadata: str = ""  # who held the metadata, in words ("ZooKeeper, 1 node"); "" when not recorded
    isolation: dict[str, str] = field(default_factory=dict)
    """Each consumer group's isolation.level (run.json's `groups[].config`; read_uncommitted unless set)."""
    disk: str = ""
    """Where the nodes' data lived: `plain` or `lossy` (run.json's `cluster.disk`; "" before it was kept)."""
    killed: tuple[tuple[str, str], ...] = ()
    """The workload processes killed at the stop bound, and why (run.json's `workload.killed`)."""


@dataclass(frozen=True)
class Run:
    root: Path
    info: RunInfo
    result: Result
    faults: tuple[FaultWindow, ...]
    cluster: tuple[ClusterSample, ...]  # only samples where something changed, plus the last one
    end_ns: int  # the run's time axis spans [0, end_ns]
    expectations: tuple[ExpectationOutcome, ...] = ()  # the scenario's, as `kchaos run` judged them

    @property
    def passed(self) -> bool:
        return passed(self.result, self.expectations)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str_dict(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def load_info(root: Path) -> RunInfo:
    run = load_run_json(root)
    kafka = _obj(run.get("kafka"))
    cluster = _obj(run.get("cluster"))
    topics = tuple(
        Topic(
            name=t["name"],
            acks=str(t["acks"]),
            partitions=_opt_int(t.get("partitions")),
            replication_factor=_opt_int(t.get("replication_factor")),
            config=_str_dict(t.get("config")),
            transactional=bool(t.get("transactions")),
            pipeline=bool(t.get("pipeline")),
        )
        for t in run["topics"]
    )
    return RunInfo(
        run_id=str(run.get("run_id", root.name)),
        scenario=str(run.get("scenario", "unnamed")),
        seed=run.get("seed"),
        started_at=str(run.get("started_at", "")),
        duration_s=_opt_float(run.get("duration_s")),
        kafka_version=str(kafka.get("version", "unknown")),
        brokers=_opt_int(cluster.get("brokers")),
        broker_config=_str_dict(cluster.get("broker_config")),
        producer=_str_dict(run.get("producer")),
        topics=topics,
        offsets_partitions=offsets_partitions(run),
        transaction_state_partitions=offsets_partitions(run, "transaction_state_topic"),
        kafka_source=str(kafka.get("source") or ""),
        java=str(kafka.get("java") or ""),
        metadata=_metadata_words(cluster),
        isolation={
            str(g["name"]): _str_dict(g.get("config")).get("isolation.level", "read_uncommitted")
            for g in run.get("groups") or []
        },
        disk=str(cluster.get("disk") or ""),
        killed=tuple(
            (str(k["process"]), str(k["why"])) for k in _obj(run.get("workload")).get("killed") or []
        ),
    )


def _metadata_words(cluster: dict[str, Any]) -> str:
    """`cluster.metadata` and its quorum in words; "" for runs recorded before it was kept."""
    if cluster.get("metadata") == "kraft":
        voters = _opt_int(cluster.get("controllers")) or 0
        kind = "combined with brokers" if cluster.get("combined") else "dedicated"
        features = ", ".join(f"{k}={v}" for k, v in sorted(_str_dict(cluster.get("features")).items()))
        return f"KRaft, {voters} {kind} controller{'s' if voters != 1 else ''}" + (
            f"; {features}" if features else ""
        )
    if cluster.get("metadata") == "zookeeper":
        nodes = _opt_int(cluster.get("zookeepers")) or 0
        return f"ZooKeeper, {nodes} node{'s' if nodes != 1 else ''}"
    return ""


def load_faults(root: Path) -> tuple[FaultWindow, ...]:
    path = root / FAULTS
    return tuple(fault_windows(iter_fault_events(root), str(path)))


def load_run(root: Path) -> Run:
    """Everything a report needs from one checked run directory."""
    info = load_info(root)
    result = load_result(root)
    faults = load_faults(root)
    cluster = load_cluster(root)
    ends = [int((info.duration_s or 0) * NS), NS]
    ends += [(r.t_s + 1) * NS for r in result.series]
    ends += [w.stop_ns or w.start_ns for w in faults] + [s.time_ns for s in cluster[-1:]]
    return Run(root, info, result, faults, cluster, max(ends), tuple(read_expectations(root)))
