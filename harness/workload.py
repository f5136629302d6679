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
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contract.errors import ClusterError, ConfigError, HarnessError
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
from harness.broker_config import ConfigValue, KafkaVersion, format_settings
from harness.client_choice import LIBRDKAFKA_CLIENT, Client, ClientChoice, resolve
from harness.client_log import ClientLog
from harness.clients import client_config
from harness.cluster import KafkaCluster
from harness.consumer import FinalReadResult, LiveConsumer, final_read
from harness.finalized_features import finalized_features
from harness.groups import ConsumerGroups, GroupSpec
from harness.java_config import java_producer_settings
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
STARTUP_BOUND_S = 60.0
"""How long the workload waits for its processes' first lines before the chaos phase goes on."""
STOP_BOUND_S = 10.0
"""How long the workload's processes get to stop (a last transaction, a last commit, the writes in
flight) before each still running is killed: the chaos phase lasts at most its duration and this."""


def topic_name(acks: str) -> str:
    return f"{_TOPIC_PREFIX}{acks}"


def acks_of_topic(topic: str) -> str:
    """The acks mode a workload topic (`topic_name`) is written with; `txn` for a transactional one."""
    return "txn" if topic.startswith(TXN_TOPIC_PREFIX) else topic.removeprefix(_TOPIC_PREFIX)


PRODUCERS, TRANSACTIONS_PART, PIPELINE_PART = "producers", "transactions", "pipeline"
PARTS = (PRODUCERS, TRANSACTIONS_PART, PIPELINE_PART)
"""The workload parts that may name a client of their own (`workload.clients`); a consumer group names
its own in its entry."""


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
    client: ClientChoice = LIBRDKAFKA_CLIENT
    """Every part's client unless it names its own (`part_clients`, a group's `client`)."""
    part_clients: Mapping[str, ClientChoice] = field(default_factory=dict)
    """The client of a part by name (PARTS), over `client`."""

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
        for part in self.part_clients:
            if part not in PARTS:
                raise ConfigError(
                    f"workload.clients.{part}: not a workload part; use {', '.join(PARTS)} "
                    "(a group names its own client in its entry)"
                )
        if idle := [part for part in self.part_clients if part not in self.parts_running()]:
            raise ConfigError(
                f"workload.clients.{idle[0]}: the workload runs no {idle[0]} (workload.transactions"
                f"{'.pipelines' if idle[0] == PIPELINE_PART else ''})"
            )

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

    def client_of(self, part: str) -> ClientChoice:
        """The client of workload part `part` (PARTS)."""
        return self.part_clients.get(part, self.client)

    def group_client(self, group: GroupSpec) -> ClientChoice:
        return group.client or self.client

    def client_choices(self) -> list[ClientChoice]:
        """Every client this workload runs, once each: its own, its running parts', its groups'."""
        named = [self.client, *(self.client_of(p) for p in self.parts_running())]
        return list(dict.fromkeys([*named, *(self.group_client(g) for g in self.groups)]))

    def parts_running(self) -> list[str]:
        """The parts (PARTS) this workload runs."""
        producers, pipelines = self._txn_processes()
        return [PRODUCERS] + [TRANSACTIONS_PART] * (producers > 0) + [PIPELINE_PART] * (pipelines > 0)

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

    def topics(self, clients: WorkloadClients | None = None) -> list[dict[str, Any]]:
        """The `topics` list of run.json; with `clients`, each topic also names the client that wrote
        it (`client`), and a topic written by the Java client holds its producer settings
        (`producer`), a transactional one the transaction protocol its producers used."""
        config = format_settings(self.topic_config)
        topics = [
            {
                "name": topic_name(a),
                "partitions": self.partitions,
                "replication_factor": self.replication_factor,
                "acks": a,
                "config": config,
                **(_written_by(clients.parts[PRODUCERS], self.producer_settings) if clients else {}),
            }
            for a in self.acks
        ]
        if self.transactions is not None:
            producer = {
                "enable.idempotence": True,
                "transactional.id": TRANSACTIONAL_ID_PREFIX.rstrip("-"),
                "transaction.timeout.ms": self.transactions.transaction_timeout_ms,
            }
            transactions = self.transactions.recorded()
            recorded = {"producer": producer, "transactions": transactions}
            if clients is not None:
                recorded = _transactional(clients, TRANSACTIONS_PART, producer, transactions)
            topics += [
                {
                    "name": name,
                    "partitions": self.partitions,
                    "replication_factor": self.replication_factor,
                    "acks": "all",
                    "config": config,
                    **recorded,
                }
                for name in self.txn_topics()
            ]
            if self.transactions.pipelines:
                piped = {"group": PIPELINE_GROUP, "inputs": self.txn_topics()}
                pipe_producer = producer | {"transactional.id": PIPELINE_ID_PREFIX.rstrip("-")}
                output = {"producer": pipe_producer, "transactions": transactions}
                if clients is not None:
                    output = _transactional(clients, PIPELINE_PART, pipe_producer, transactions)
                topics.append(topics[-1] | {"name": PIPELINE_OUTPUT, "pipeline": piped, **output})
        return topics

    def producer_settings(
        self, client: Client, debug: Mapping[str, Any] | None = None, transactional: bool = False
    ) -> dict[str, Any]:
        """A producer's settings on `client`: the harness's own (DEFAULT_PRODUCER_CONFIG, a smaller
        queue at full speed, librdkafka's `debug` contexts), in the Java client's names on Java
        (`harness.java_config`; a `transactional` one idempotent); then the scenario's
        `producer_config` as written."""
        full_speed = (
            {"queue.buffering.max.messages": FULL_SPEED_QUEUE_MESSAGES} if not self.rate_per_s else {}
        )
        own = {**DEFAULT_PRODUCER_CONFIG, **full_speed, **(debug or {})}
        if client.is_java:
            own = java_producer_settings(own, transactional)
        return {**own, **self.producer_config}

    def recorded(self, clients: WorkloadClients) -> dict[str, Any]:
        """run.json's `client` (the workload's), `readers` (the live consumers' and the final read's),
        `topics`, `groups` and `producer` (of the acks producers), each part run by `clients`."""
        return {
            "client": clients.default.recorded(),
            "readers": {"client": clients.readers.recorded()},
            "topics": self.topics(clients),
            **({"groups": [g.recorded(clients.groups[g.name]) for g in self.groups]} if self.groups else {}),
            "producer": {
                **self.producer_settings(clients.parts[PRODUCERS]),
                "processes_per_mode": self.producers_per_mode,
                "rate_per_s": self.rate_per_s,
                "message_size": self.message_size,
            },
        }


TRANSACTION_VERSION_FEATURE = "transaction.version"
"""The KRaft feature whose level 2 turns on KIP-890's second part for clients that speak it."""


@dataclass(frozen=True)
class WorkloadClients:
    """Each part's client, resolved (`resolve_clients`), and the brokers' finalized feature levels
    (the transaction protocol depends on both)."""

    default: Client
    parts: Mapping[str, Client]
    """By part (PARTS), for the parts the workload runs."""
    groups: Mapping[str, Client]
    """By group name."""
    readers: Client
    """The live consumers' and the final read's: librdkafka."""
    features: Mapping[str, int] = field(default_factory=dict)
    """The brokers' finalized feature levels (`harness.finalized_features`); {} when not known."""

    def transaction_version(self, part: str) -> int:
        """The transaction protocol part `part`'s producers speak: 2 (KIP-890: an epoch bump per
        transaction) when the brokers finalized `transaction.version` 2 or later and the client is
        the Java client of 4.0 or later; 1 otherwise (librdkafka has no KIP-890)."""
        client = self.parts[part]
        speaks_2 = client.is_java and KafkaVersion.parse(client.version).at_least(4)
        return 2 if speaks_2 and self.features.get(TRANSACTION_VERSION_FEATURE, 0) >= 2 else 1


def resolve_clients(
    spec: WorkloadSpec, brokers: KafkaVersion, features: Mapping[str, int] | None = None
) -> WorkloadClients:
    """Every part's client for brokers of release `brokers` (Java ones built unless cached)."""
    return WorkloadClients(
        default=resolve(spec.client, brokers),
        parts={part: resolve(spec.client_of(part), brokers) for part in spec.parts_running()},
        groups={g.name: resolve(spec.group_client(g), brokers) for g in spec.groups},
        readers=resolve(LIBRDKAFKA_CLIENT, brokers),
        features=dict(features or {}),
    )


def _written_by(client: Client, settings: Callable[[Client], dict[str, Any]]) -> dict[str, Any]:
    """A topic's `client`, and on Java its `producer` settings (`settings(client)`)."""
    return {"client": client.recorded(), **({"producer": settings(client)} if client.is_java else {})}


def _transactional(
    clients: WorkloadClients, part: str, producer: dict[str, Any], transactions: dict[str, Any]
) -> dict[str, Any]:
    """A transactional topic's `client`, `producer` and `transactions` (with the transaction
    protocol version), written by part `part`."""
    version = clients.transaction_version(part)
    return {
        "client": clients.parts[part].recorded(),
        "producer": producer,
        "transactions": {**transactions, "transaction_version": version},
    }


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


def every_step(steps: Iterable[Callable[[], object]]) -> None:
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
        self._clients: WorkloadClients | None = None
        self.startup_s: float | None = None
        """How long its processes took to write their first lines (`_wait_started`)."""

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

    @property
    def clients(self) -> WorkloadClients:
        """Each part's client (resolved once: a Java client is built unless cached), with the
        brokers' finalized feature levels."""
        if self._clients is None:
            version = self.cluster.kafka_version
            addresses = [(host, int(port)) for host, _, port in self._bootstrap_addresses()]
            try:
                features = finalized_features(addresses, version)
            except ClusterError as exc:
                log.warning("could not read the brokers' finalized feature levels: %s", exc)
                features = {}
            self._clients = resolve_clients(self.spec, version, features)
        return self._clients

    def _bootstrap_addresses(self) -> list[tuple[str, str, str]]:
        return [address.rpartition(":") for address in self.cluster.bootstrap_servers.split(",")]

    def _client_config(self, **overrides: Any) -> dict[str, Any]:
        return client_config(self.cluster.bootstrap_servers, self.cluster.kafka_version, **overrides)

    def _settings(self, client: Client, settings: Mapping[str, Any]) -> dict[str, Any]:
        """A workload process's client settings, whole (JSON values only: the process adds its
        logger): the brokers' addresses (on librdkafka, what 0.9 brokers need too) and `settings`,
        already in `client`'s names."""
        if client.is_java:
            return {"bootstrap.servers": self.cluster.bootstrap_servers, **settings}
        return {k: v for k, v in self._client_config(**settings).items() if k != "logger"}

    def _producing(self, spec: ProcessSpec, mode: str, client: Client) -> WorkloadProcess:
        process = WorkloadProcess(spec, self._sinks, self.rundir, client.command)
        self.producers.append(process)
        self._modes[spec.process] = mode
        return process

    def start(self) -> None:
        if self.spec.transactions is not None and not self.cluster.kafka_version.at_least(0, 11):
            release = ".".join(map(str, self.cluster.kafka_version.parts))
            raise ConfigError(
                f"workload.transactions: Kafka {release} has no transactions (0.11 and later, KIP-98)"
            )
        clients = self.clients
        self._reads = self.rundir.writer(READS)
        self._sinks = {"writes": self.rundir.writer(WRITES), "client": self.rundir.writer(CLIENT)}
        origin_ns = self.clock.origin_ns
        self.handles.group_ids = self.spec.coordinated_groups()
        producers = clients.parts[PRODUCERS]
        for acks in self.spec.acks:
            for n in range(self.spec.producers_per_mode):
                spec = ProducerSpec(
                    process=f"p-{acks}-{n}",
                    origin_ns=origin_ns,
                    config=self._settings(producers, self.spec.producer_settings(producers, PRODUCER_DEBUG)),
                    topic=topic_name(acks),
                    partitions=self.spec.partitions,
                    acks=acks,
                    rate_per_s=self.spec.rate_per_s,
                    message_size=self.spec.message_size,
                )
                self._producing(spec, acks, producers)
        if (txn := self.spec.transactions) is not None:
            self._start_transactional(txn, clients)
        partitions = self.spec.read_partitions()
        reader_config = self._client_config(**self.spec.consumer_overrides())
        for n in range(self.spec.live_consumers):
            self.consumers.append(
                LiveConsumer(f"c-live-{n}", partitions, reader_config, self._reads, self.clock)
            )
        if self.spec.groups:
            self._sinks["consumes"] = self.rundir.writer(CONSUMES)
            configs, commands = {}, {}
            for group in self.spec.groups:
                client = clients.groups[group.name]
                configs[group.name] = self._settings(client, group.effective_config(client.is_java))
                commands[group.name] = client.command
            self.groups = ConsumerGroups(
                self.spec.groups, configs, self._sinks, self.clock, self.rundir, commands
            )
            self.handles.groups = self.groups
            self.groups.start()
        for consumer in self.consumers:
            consumer.start()
        for producer in self.producers:
            producer.start()
        self._wait_started()

    def _wait_started(self) -> None:
        """Wait until every process has written its first line, up to STARTUP_BOUND_S: faults and
        the run's duration start when the clients are up, not while JVMs load their classes."""
        started = time.monotonic()
        deadline = started + STARTUP_BOUND_S
        late = [
            p.process for p in self.processes if not p.wait_started(max(0.0, deadline - time.monotonic()))
        ]
        took = self.startup_s = round(time.monotonic() - started, 3)
        if late:
            log.warning("%s wrote nothing within %.0f s of their start: going on", ", ".join(late), took)
        else:
            log.info("every workload process was up within %.1f s of its start", took)

    def _start_transactional(self, txn: TransactionSpec, clients: WorkloadClients) -> None:
        """The transactional producers' and pipelines' processes (started with the rest)."""
        self._sinks["transactions"] = self.rundir.writer(TRANSACTIONS)
        self.handles.transactional_ids = self.spec.transactional_ids()
        origin_ns = self.clock.origin_ns
        transactional: list[WorkloadProcess] = []
        for process, transactional_id in zip(
            self.spec.txn_processes(), self.spec.transactional_ids(), strict=True
        ):
            pipeline = process.startswith("pipe-")
            client = clients.parts[PIPELINE_PART if pipeline else TRANSACTIONS_PART]
            config = self._settings(client, self.spec.producer_settings(client, TXN_PRODUCER_DEBUG, True))
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
                    consumer_config=self._settings(client, {}),
                    seed=self.seed,
                )
                if pipeline
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
            transactional.append(self._producing(spec_of, "txn", client))
        self.handles.transactional_producers = transactional

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

        every_step([stop_processes] + [consumer.stop for consumer in self.consumers] + [self._record_stop])
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
        recorded = {
            "startup_s": self.startup_s,
            "stop_bound_s": self.spec.stop_bound_s,
            "killed": [k.recorded() for k in self.killed],
        }
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
        every_step([process.close for process in self.processes] + [writer.close for writer in writers])

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
