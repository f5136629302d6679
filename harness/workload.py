"""The workload: producers under each acks mode, transactional producers and pipelines, consumer
groups, live consumers, and the final read.

One topic per acks mode (`chaos-acks-all`, `chaos-acks-1`, `chaos-acks-0`), one or more producer
processes each, all recording into history/writes.jsonl and history/reads.jsonl of a run directory
(and what their client library logged into history/client.jsonl). Producers, transactional
producers, pipelines and group members are workload processes of their own
(`harness.workload_process`, docs/CLIENTS.md): what faults may act on of them is the workload's
`handles` (`WorkloadHandles`), which the nemesis passes to faults beside the cluster. The workload
stops them within its stop bound, killing any that is still running then.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contract.errors import ConfigError, HarnessError
from contract.history import (
    ACKS_MODES,
    CLIENT,
    CONSUMES,
    READS,
    RUN_JSON,
    TRANSACTIONS,
    WRITES,
    HistoryWriter,
    RunClock,
    RunDir,
)
from contract.history_fields import setting_problem
from contract.history_readers import load_run_json
from contract.limits import brief
from harness.broker_config import ConfigValue, format_settings
from harness.client_log import ClientLog
from harness.clients import client_config
from harness.cluster import KafkaCluster
from harness.consumer import FinalReadResult, LiveConsumer, final_read
from harness.groups import ConsumerGroups, GroupSpec
from harness.pipeline import PIPELINE_GROUP, PIPELINE_OUTPUT, PipelineSpec
from harness.process_protocol import ProcessSpec
from harness.producer import DEFAULT_PRODUCER_CONFIG, FULL_SPEED_QUEUE_MESSAGES, ProducerSpec
from harness.transactional_producer import TransactionalProducerSpec, TransactionSpec
from harness.workload_process import Killed, ProcessCounts, WorkloadProcess, stop_all

log = logging.getLogger("kchaos")

_TOPIC_PREFIX = "chaos-acks-"
TXN_TOPIC_PREFIX = "chaos-txn-"
TRANSACTIONAL_ID_PREFIX = "kchaos-tx-"
PIPELINE_ID_PREFIX = "kchaos-pipe-"
STOP_BOUND_S = 10.0
"""How long the workload's processes get to stop (a last transaction, a last commit, the writes in
flight) before each still running is killed: the chaos phase lasts at most its duration and this."""


def topic_name(acks: str) -> str:
    return f"{_TOPIC_PREFIX}{acks}"


def acks_of_topic(topic: str) -> str:
    """The acks mode a workload topic (`topic_name`) is written with; `txn` for a transactional one."""
    return "txn" if topic.startswith(TXN_TOPIC_PREFIX) else topic.removeprefix(_TOPIC_PREFIX)


def txn_topics(transactions: TransactionSpec | None) -> tuple[str, ...]:
    """The topics transactional producers write: `chaos-txn-N`."""
    count = transactions.topics if transactions is not None else 0
    return tuple(f"{TXN_TOPIC_PREFIX}{n}" for n in range(count))


@dataclass
class WorkloadSpec:
    acks: tuple[str, ...] = ACKS_MODES
    producers_per_mode: int = 1
    partitions: int = 3
    replication_factor: int = 3
    rate_per_s: float = 200.0  # per producer process; 0 = as fast as the client goes
    message_size: int = 0
    producer_config: Mapping[str, Any] = field(default_factory=dict)
    topic_config: Mapping[str, ConfigValue] = field(default_factory=dict)
    live_consumers: int = 1
    groups: tuple[GroupSpec, ...] = ()
    transactions: TransactionSpec | None = None
    """Transactional producers writing topics of their own (`chaos-txn-N`), besides the acks modes."""
    stop_bound_s: float = STOP_BOUND_S

    def __post_init__(self) -> None:
        unknown = [a for a in self.acks if a not in ACKS_MODES]
        if unknown or not self.acks:
            raise ConfigError(
                f"acks modes {unknown or '[]'} are not valid; use a list of {', '.join(ACKS_MODES)}"
            )
        if "acks" in self.producer_config:
            raise ConfigError(
                "producer_config must not set 'acks': each topic is written under its own acks mode"
            )
        if self.producers_per_mode < 1 or self.partitions < 1 or self.replication_factor < 1:
            raise ConfigError("producers_per_mode, partitions and replication_factor must be at least 1")
        if not self.stop_bound_s > 0:
            got = brief(self.stop_bound_s)
            raise ConfigError(f"stop_bound_s: expected a number of seconds above 0, got {got}")
        # What run.json's readers will judge guarantees by must mean something before the run.
        for kind, settings in (
            ("producer_config", self.producer_config),
            ("topic_config", self.topic_config),
        ):
            for key, value in settings.items():
                if (expected := setting_problem(key, value)) is not None:
                    raise ConfigError(f"{kind}.{key}: expected {expected}, got {brief(value)}")
        names = [topic_name(a) for a in self.acks] + self.txn_topics()
        for group in self.groups:
            if unknown_topics := [t for t in group.topics if t not in names]:
                raise ConfigError(
                    f"group {group.name!r}: topics {unknown_topics} are not written; use some of {names}"
                )
        if len({g.name for g in self.groups}) < len(self.groups):
            raise ConfigError("groups: two groups have the same name")

    def with_acks(self, acks: tuple[str, ...]) -> WorkloadSpec:
        """This workload writing under `acks` only: each group reads what is still written of its
        topics, and a group left with nothing to read is dropped."""
        written = {topic_name(a) for a in acks} | set(self.txn_topics())
        groups = tuple(
            dataclasses.replace(g, topics=tuple(t for t in g.topics if t in written))
            for g in self.groups
            if written & set(g.topics)
        )
        return dataclasses.replace(self, acks=acks, groups=groups)

    def txn_topics(self) -> list[str]:
        """The topics the transactional producers write (none without `transactions`)."""
        return list(txn_topics(self.transactions))

    def transactional_ids(self) -> list[str]:
        """Of the transactional producers, then of the pipeline processes."""
        producers, pipelines = self._txn_processes()
        return [f"{TRANSACTIONAL_ID_PREFIX}{n}" for n in range(producers)] + [
            f"{PIPELINE_ID_PREFIX}{n}" for n in range(pipelines)
        ]

    def coordinated_groups(self) -> list[str]:
        """The consumer groups whose coordinator a fault may target: the workload's groups, then the
        pipeline's group when there are pipeline processes."""
        _, pipelines = self._txn_processes()
        return [g.name for g in self.groups] + ([PIPELINE_GROUP] if pipelines else [])

    def txn_processes(self) -> list[str]:
        """The process names of the transactional producers, then of the pipeline processes, in the
        order of their transactional.ids."""
        producers, pipelines = self._txn_processes()
        return [f"tx-{n}" for n in range(producers)] + [f"pipe-{n}" for n in range(pipelines)]

    def _txn_processes(self) -> tuple[int, int]:
        spec = self.transactions
        return (spec.producers, spec.pipelines) if spec is not None else (0, 0)

    def read_partitions(self) -> dict[str, int]:
        """Every topic written, with its partition count: what live consumers and the final read read."""
        return {t["name"]: self.partitions for t in self.topics()}

    def consumer_overrides(self) -> dict[str, Any]:
        """With transactions, every reader of the workload reads committed records only."""
        return {"isolation.level": "read_committed"} if self.transactions is not None else {}

    def topics(self) -> list[dict[str, Any]]:
        """The `topics` list of run.json."""
        config = format_settings(self.topic_config)
        topics = [
            {
                "name": topic_name(a),
                "partitions": self.partitions,
                "replication_factor": self.replication_factor,
                "acks": a,
                "config": config,
            }
            for a in self.acks
        ]
        if self.transactions is not None:
            producer = {
                "enable.idempotence": True,
                "transactional.id": TRANSACTIONAL_ID_PREFIX.rstrip("-"),
                "transaction.timeout.ms": self.transactions.transaction_timeout_ms,
            }
            topics += [
                {
                    "name": name,
                    "partitions": self.partitions,
                    "replication_factor": self.replication_factor,
                    "acks": "all",
                    "config": config,
                    "producer": producer,
                    "transactions": self.transactions.recorded(),
                }
                for name in self.txn_topics()
            ]
            if self.transactions.pipelines:
                piped = {"group": PIPELINE_GROUP, "inputs": self.txn_topics()}
                pipe_producer = producer | {"transactional.id": PIPELINE_ID_PREFIX.rstrip("-")}
                topics.append(
                    topics[-1] | {"name": PIPELINE_OUTPUT, "producer": pipe_producer, "pipeline": piped}
                )
        return topics

    def effective_producer_config(self) -> dict[str, Any]:
        full_speed = (
            {"queue.buffering.max.messages": FULL_SPEED_QUEUE_MESSAGES} if not self.rate_per_s else {}
        )
        return {**DEFAULT_PRODUCER_CONFIG, **full_speed, **self.producer_config}


@dataclass
class WorkloadHandles:
    """What faults may reach of a running workload (Jepsen's test map holds such handles beside the
    nodes): its consumer groups' members, its transactional producers and pipelines, and the ids
    whose coordinators a fault target may name. Empty for a cluster with no workload (`kchaos
    fault` on a cluster from `kchaos cluster up`)."""

    groups: ConsumerGroups | None = None
    """The consumer groups' members: what member faults act on."""
    group_ids: list[str] = field(default_factory=list)
    """The workload's consumer groups, the pipeline's among them: whose group coordinator the
    `coordinator` target names."""
    transactional_ids: list[str] = field(default_factory=list)
    """The transactional.ids of its transactional producers and pipelines: whose transaction
    coordinator the `txn-coordinator` target names."""
    transactional_producers: list[WorkloadProcess] = field(default_factory=list)
    """Its transactional producers and pipelines: what producer faults act on."""


@dataclass(frozen=True)
class ModeCounts:
    attempted: int
    acked: int
    failed: int
    indeterminate: int
    latencies_ns: list[int]


def _every_step(steps: Iterable[Callable[[], object]]) -> None:
    """Call every step even when one raises, an interrupt (a second Ctrl-C) included; then re-raise
    the first exception. For shutting down, where a skipped step leaves a file or thread open."""
    first: BaseException | None = None
    for step in steps:
        try:
            step()
        except BaseException as exc:
            first = first or exc
    if first is not None:
        raise first


# librdkafka's `broker` debug context: a line per failed request ("REQERR ... Request timed out:
# actions Retry,MsgPossiblyPersisted", what a retry follows) and per connection change, a few lines
# a second at worst; per-message contexts (msg, protocol) would be a line per request. A
# scenario's own `debug` setting replaces it.
PRODUCER_DEBUG = {"debug": "broker"}
# And a transactional producer's steps with the coordinator (its PID, epoch and EndTxn requests):
# a few lines per transaction.
TXN_PRODUCER_DEBUG = {"debug": "broker,eos"}
# The final read's connections and the leaders it was told of: what an incomplete read needs to be
# explained, a few dozen lines per run.
FINAL_READ_DEBUG = {"debug": "broker,topic,metadata"}
FINAL_READER = "c-final-0"


class Workload:
    """Producers, groups and live consumers against one cluster, recording into `rundir`.

    As a context manager it is closed on the way out, however the block ends."""

    def __init__(
        self, cluster: KafkaCluster, spec: WorkloadSpec, rundir: RunDir, clock: RunClock, seed: int = 0
    ) -> None:
        self.cluster, self.spec, self.rundir, self.clock = cluster, spec, rundir, clock
        self.seed = seed  # what transactional producers draw their sizes and aborts from
        self._reads: HistoryWriter | None = None
        self._sinks: dict[str, HistoryWriter] = {}  # by tag (harness.process_protocol.TAGGED_FILES)
        self.groups: ConsumerGroups | None = None
        self.handles = WorkloadHandles()
        """What faults may act on of this workload once it runs."""
        self.producers: list[WorkloadProcess] = []
        """Every producing process: under an acks mode, transactional, pipeline."""
        self._modes: dict[str, str] = {}  # what each producer's counts are kept under: acks, or `txn`
        self.consumers: list[LiveConsumer] = []
        self.killed: list[Killed] = []
        """The processes killed at the stop bound."""
        self._stopped = False

    def __enter__(self) -> Workload:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_topics(self, timeout_s: float = 60.0) -> None:
        for topic in self.spec.topics():
            self.cluster.create_topic(
                topic["name"],
                topic["partitions"],
                topic["replication_factor"],
                topic["config"],
                timeout_s=timeout_s,
            )

    def _client_config(self, **overrides: Any) -> dict[str, Any]:
        return client_config(self.cluster.bootstrap_servers, self.cluster.kafka_version, **overrides)

    def _process_config(self, **overrides: Any) -> dict[str, Any]:
        """A workload process's client settings: JSON values only (the process adds its logger)."""
        return {k: v for k, v in self._client_config(**overrides).items() if k != "logger"}

    def _producing(self, spec: ProcessSpec, mode: str) -> WorkloadProcess:
        process = WorkloadProcess(spec, self._sinks, self.rundir)
        self.producers.append(process)
        self._modes[spec.process] = mode
        return process

    def start(self) -> None:
        if self.spec.transactions is not None and not self.cluster.kafka_version.at_least(0, 11):
            release = ".".join(map(str, self.cluster.kafka_version.parts))
            raise ConfigError(
                f"workload.transactions: Kafka {release} has no transactions (0.11 and later, KIP-98)"
            )
        self._reads = self.rundir.writer(READS)
        self._sinks = {"writes": self.rundir.writer(WRITES), "client": self.rundir.writer(CLIENT)}
        producer_config = self.spec.effective_producer_config()
        origin_ns = self.clock.origin_ns
        self.handles.group_ids = self.spec.coordinated_groups()
        for acks in self.spec.acks:
            for n in range(self.spec.producers_per_mode):
                spec = ProducerSpec(
                    process=f"p-{acks}-{n}",
                    origin_ns=origin_ns,
                    config=self._process_config(**{**PRODUCER_DEBUG, **producer_config}),
                    topic=topic_name(acks),
                    partitions=self.spec.partitions,
                    acks=acks,
                    rate_per_s=self.spec.rate_per_s,
                    message_size=self.spec.message_size,
                )
                self._producing(spec, acks)
        if (txn := self.spec.transactions) is not None:
            self._sinks["transactions"] = self.rundir.writer(TRANSACTIONS)
            self.handles.transactional_ids = self.spec.transactional_ids()
            config = self._process_config(**{**TXN_PRODUCER_DEBUG, **producer_config})
            transactional: list[WorkloadProcess] = []
            for process, transactional_id in zip(
                self.spec.txn_processes(), self.spec.transactional_ids(), strict=True
            ):
                spec_of: ProcessSpec = (
                    PipelineSpec(
                        process=process,
                        origin_ns=origin_ns,
                        config=config,
                        transactional_id=transactional_id,
                        inputs=self.spec.txn_topics(),
                        output=PIPELINE_OUTPUT,
                        partitions=self.spec.partitions,
                        transactions=txn,
                        consumer_config=self._process_config(),
                        seed=self.seed,
                    )
                    if process.startswith("pipe-")
                    else TransactionalProducerSpec(
                        process=process,
                        origin_ns=origin_ns,
                        config=config,
                        transactional_id=transactional_id,
                        topics=self.spec.txn_topics(),
                        partitions=self.spec.partitions,
                        transactions=txn,
                        seed=self.seed,
                        rate_per_s=self.spec.rate_per_s,
                        message_size=self.spec.message_size,
                    )
                )
                transactional.append(self._producing(spec_of, "txn"))
            self.handles.transactional_producers = transactional
        partitions = self.spec.read_partitions()
        reader_config = self._client_config(**self.spec.consumer_overrides())
        for n in range(self.spec.live_consumers):
            self.consumers.append(
                LiveConsumer(f"c-live-{n}", partitions, reader_config, self._reads, self.clock)
            )
        if self.spec.groups:
            self._sinks["consumes"] = self.rundir.writer(CONSUMES)
            self.groups = ConsumerGroups(
                self.spec.groups, self._client_config(), self._sinks, self.clock, self.rundir
            )
            self.handles.groups = self.groups
            self.groups.start()
        for consumer in self.consumers:
            consumer.start()
        for producer in self.producers:
            producer.start()

    @property
    def processes(self) -> list[WorkloadProcess]:
        """Every workload process: the producing ones, then the group members."""
        members = list(self.groups.members.values()) if self.groups is not None else []
        return [*self.producers, *members]

    def stop(self) -> None:
        """Stop every process within the stop bound (each finishes its unit of work and waits for
        its writes in flight; one still running at the bound is killed), and the live consumers;
        record the bound and the killed in run.json.

        Once only, and shielded: every step is taken even when one is interrupted or fails, and the
        first such exception is re-raised after the last step."""
        if self._stopped:
            return
        self._stopped = True

        def stop_processes() -> None:
            self.killed = stop_all(self.processes, self.spec.stop_bound_s)

        _every_step([stop_processes] + [consumer.stop for consumer in self.consumers] + [self._record_stop])
        for consumer in self.consumers:
            if consumer.error is not None:
                raise HarnessError(f"{consumer.process} failed: {consumer.error!r}") from consumer.error
        for producer in self.producers:
            if not producer.killed and producer.exit_code not in (0, None):
                raise HarnessError(
                    f"{producer.process} failed (exit status {producer.exit_code}): see {producer.log_name}"
                )

    def _record_stop(self) -> None:
        """run.json's `workload`: the stop bound and who was killed at it (when there is a run.json)."""
        if not self.rundir.path(RUN_JSON).exists():
            return
        recorded = {"stop_bound_s": self.spec.stop_bound_s, "killed": [k.recorded() for k in self.killed]}
        self.rundir.write_run_json({**load_run_json(self.rundir.root), "workload": recorded})

    def final_read(self, timeout_s: float = 60.0) -> FinalReadResult:
        assert self._reads is not None, "start() first"
        client_log = self._sinks["client"]
        logger = ClientLog(FINAL_READER, client_log, self.clock)
        config = self._client_config(**FINAL_READ_DEBUG, **self.spec.consumer_overrides(), logger=logger)
        partitions = self.spec.read_partitions()
        return final_read(partitions, config, self._reads, self.clock, timeout_s, FINAL_READER)

    def close(self) -> None:
        """Kill what still runs and close the history files: each step taken even when one is
        interrupted or fails (first exception re-raised after). Safe to call again."""
        writers = [*self._sinks.values(), *([self._reads] if self._reads is not None else [])]
        _every_step([process.close for process in self.processes] + [writer.close for writer in writers])

    def counts(self) -> dict[str, ModeCounts]:
        """Live counters per acks mode, and `txn` for the transactional producers (for progress
        lines and summaries)."""
        result: dict[str, ModeCounts] = {}
        txn = ("txn",) if self.spec.transactions is not None else ()
        for acks in (*self.spec.acks, *txn):
            mine: list[ProcessCounts] = [p.counts for p in self.producers if self._modes[p.process] == acks]
            result[acks] = ModeCounts(
                sum(c.attempted for c in mine),
                sum(c.acked for c in mine),
                sum(c.failed for c in mine),
                sum(c.indeterminate for c in mine),
                [v for c in mine for v in c.latencies_ns],
            )
        return result

    @property
    def read(self) -> int:
        return sum(c.read for c in self.consumers)
