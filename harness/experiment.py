"""One experiment from start to final read: the order of things, and what survives an interruption.

    cluster up -> topics -> run.json -> sampler + workload (+ chaos) for the duration
    -> stop producers -> heal (leaving the chaos context) -> settle -> final read
    -> forensics (what each replica holds, the nodes' logs) -> cluster down

A KeyboardInterrupt (Ctrl-C, or SIGTERM via kchaos.signals) during the chaos phase ends it early:
faults are healed, the final read still runs, run.json records `interrupted`, and the result
says `interrupted`: the caller decides whether to check what was recorded, and whether to stop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from contract.coordinators import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from contract.errors import HarnessError, ReadinessTimeout
from contract.history import (
    CLUSTER,
    FAULTS,
    HARNESS_LOG,
    NODE_LOGS,
    RUN_JSON,
    HistoryWriter,
    RunClock,
    RunDir,
    open_append,
    write_atomic,
)
from contract.history_readers import load_run_json
from harness import forensics
from harness.cluster import ClusterSpec, KafkaCluster
from harness.cluster_state import ClusterSampler
from harness.consumer import FinalReadResult
from harness.workload import Workload, WorkloadClients, WorkloadHandles, WorkloadSpec, resolve_clients

log = logging.getLogger("kchaos")

Chaos = Callable[[KafkaCluster, WorkloadHandles, HistoryWriter, RunClock], AbstractContextManager[Any]]
"""Builds the context manager that injects faults while the workload runs (and heals on exit):
given the cluster, the handles faults may reach of the running workload, the faults.jsonl writer
and the run clock."""


@dataclass
class ExperimentSpec:
    name: str
    duration_s: float
    seed: int = 0
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    settle_timeout_s: float = 60.0
    final_read_timeout_s: float = 90.0
    extra: dict[str, Any] = field(default_factory=dict)  # scenario fields recorded in run.json


@dataclass
class ExperimentResult:
    rundir: RunDir
    final_read: FinalReadResult | None
    interrupted: bool
    phases_s: dict[str, float]


@contextlib.contextmanager
def _harness_log(rundir: RunDir) -> Iterator[None]:
    """Write the harness's (and librdkafka's) log lines to RUN/harness.log."""
    stream = os.fdopen(open_append(rundir.root, HARNESS_LOG), "a", encoding="utf-8")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("kchaos")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()
        stream.close()


def run_experiment(
    spec: ExperimentSpec,
    rundir: RunDir,
    run_id: str,
    chaos: Chaos | None = None,
    on_tick: Callable[[Workload, float], None] | None = None,
) -> ExperimentResult:
    """Run one experiment into `rundir`; the cluster is removed whatever happens."""
    clock = RunClock()
    phases: dict[str, float] = {}
    mark = time.monotonic()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.monotonic()
        phases[name] = round(now - mark, 3)
        mark = now

    interrupted = False
    final: FinalReadResult | None = None
    topics = [t["name"] for t in spec.workload.topics()]
    with (
        _harness_log(rundir),
        KafkaCluster(
            spec.cluster, run_id=run_id, on_failed_start=lambda failed: _keep_node_logs(failed, rundir)
        ) as cluster,
        _forensics_kept(cluster, rundir, topics) as forensics,
    ):
        # Closed however the block ends (a second Ctrl-C in stop() too): the history files with it.
        with Workload(cluster, spec.workload, rundir, clock, spec.seed) as workload, rundir.syncing():
            workload.create_topics()
            # The brokers' log lines carry wall-clock times: this maps them to the run clock.
            unix_ns_at_zero = time.time_ns() - clock.now_ns()
            recorded = run_metadata(spec, run_id, cluster, workload.clients)
            rundir.write_run_json({**recorded, "clock": {"unix_ns_at_zero": unix_ns_at_zero}})
            phase("setup")
            with (
                rundir.writer(CLUSTER) as cluster_writer,
                rundir.writer(FAULTS, boundary=True) as fault_writer,  # each start and heal: synced
                # With groups, the offsets topic too: its leaders are the groups' coordinators.
                ClusterSampler(cluster.metadata, cluster_writer, clock, topics + _offsets(spec)),
            ):
                try:
                    workload.start()
                    faulting = chaos(cluster, workload.handles, fault_writer, clock) if chaos else None
                    with faulting or contextlib.nullcontext():
                        deadline = time.monotonic() + spec.duration_s
                        while (left := deadline - time.monotonic()) > 0:
                            time.sleep(min(1.0, left))
                            if on_tick:
                                on_tick(workload, max(0.0, deadline - time.monotonic()))
                except KeyboardInterrupt:
                    interrupted = True
                    log.warning("interrupted: healing, then reading what was written")
                finally:
                    workload.stop()  # every in-flight write gets its completion before the final read
                phase("chaos")
                try:
                    cluster.wait_for_isr(topics, timeout_s=spec.settle_timeout_s)
                except ReadinessTimeout as exc:  # read anyway: incomplete partitions are reported as such
                    log.warning("cluster did not settle: %s", exc)
                phase("settle")
                final = workload.final_read(spec.final_read_timeout_s)
                phase("final_read")
        replicas = forensics.collect()
        phase("forensics")
        run = load_run_json(rundir.root)
        if spec.workload.groups:
            run["offsets_topic"] = _internal_topic(cluster, OFFSETS_TOPIC)
        if spec.workload.transactions is not None:
            run["transaction_state_topic"] = _internal_topic(cluster, TRANSACTION_STATE_TOPIC)
        run.update(
            {
                "replicas": replicas,
                "interrupted": interrupted,
                "phases_s": phases,
                "final_read": {
                    "complete": len(final.complete),
                    "incomplete": [
                        {"topic": t, "partition": p, "why": final.why[(t, p)]} for t, p in final.incomplete
                    ],
                },
            }
        )
        run.pop("format", None)
        rundir.write_run_json(run)
    phase("teardown")
    return ExperimentResult(rundir, final, interrupted, phases)


def _offsets(spec: ExperimentSpec) -> list[str]:
    """The internal topics whose leaders are the workload's coordinators: sampled with the rest."""
    internal = []
    if spec.workload.groups:
        internal.append(OFFSETS_TOPIC)
    if spec.workload.transactions is not None:
        internal.append(TRANSACTION_STATE_TOPIC)
    return internal


def _internal_topic(cluster: KafkaCluster, topic: str) -> dict[str, Any]:
    """run.json's `offsets_topic` or `transaction_state_topic`: the replicas of the topic the groups'
    commits (the transactions' states) live in. Kafka < 0.11 creates the offsets topic with as many
    replicas as brokers were alive then (KIP-115), which may be fewer than
    offsets.topic.replication.factor."""
    try:
        counts = cluster.metadata.replica_counts(topic)
    except HarnessError as exc:
        return {"error": str(exc)}
    return {"partitions": len(counts), "replication_factor": min(counts) if counts else None}


def run_metadata(
    spec: ExperimentSpec, run_id: str, cluster: KafkaCluster, clients: WorkloadClients | None = None
) -> dict[str, Any]:
    """run.json as written before the workload starts; `cluster.broker_config` is the overrides as
    the brokers' server.properties hold them; `clients` the workload parts' (None: each part's
    as the scenario names it, resolved now, and no finalized feature levels)."""
    assert cluster.image is not None
    if clients is None:
        clients = resolve_clients(spec.workload, cluster.kafka_version)
    return {
        "run_id": run_id,
        "seed": spec.seed,
        "scenario": spec.name,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "duration_s": spec.duration_s,
        "kafka": {
            "version": cluster.image.kafka_version,
            "image": cluster.image.tag,
            "source": cluster.image.source,
            "java": cluster.java_version(),
        },
        "cluster": {
            "brokers": len(cluster.brokers),
            "zookeepers": len(cluster.zookeepers),
            "metadata": "kraft" if cluster.kraft else "zookeeper",
            **(
                {
                    "controllers": len(cluster.voter_ids),
                    "combined": not cluster.controllers,
                    "features": dict(cluster.spec.features),
                }
                if cluster.kraft
                else {}
            ),
            "broker_config": cluster.recorded_broker_config,
            "disk": cluster.spec.disk,
            **({"finalized_features": dict(clients.features)} if clients.features else {}),
        },
        **spec.workload.recorded(clients),
        **spec.extra,
    }


class _Forensics:
    """Collects what each replica holds once: after the final read, or on the way out when the run
    ends any other way."""

    def __init__(self, cluster: KafkaCluster, rundir: RunDir, topics: list[str]) -> None:
        self.cluster, self.rundir, self.topics = cluster, rundir, topics
        self.summary: dict[str, Any] | None = None

    def collect(self) -> dict[str, Any]:
        if self.summary is None:
            self.summary = forensics.collect(self.cluster.brokers, self.rundir, self.topics)
        return self.summary


@contextlib.contextmanager
def _forensics_kept(cluster: KafkaCluster, rundir: RunDir, topics: list[str]) -> Iterator[_Forensics]:
    """On the way out, however the run ends, keep what each replica holds and each node's log (the
    broker's own account of ISR changes, leader elections, truncations and ZooKeeper sessions) in
    the run directory before the containers are removed."""
    kept = _Forensics(cluster, rundir, topics)
    try:
        yield kept
    finally:
        if kept.summary is None:
            try:
                summary = kept.collect()
                if rundir.path(RUN_JSON).exists():
                    rundir.write_run_json({**load_run_json(rundir.root), "replicas": summary})
            except (HarnessError, OSError) as exc:
                log.warning("could not keep the replicas' contents: %s", exc)
        _keep_node_logs(cluster, rundir)


def _keep_node_logs(cluster: KafkaCluster, rundir: RunDir) -> None:
    """Keep each node's log in the run directory before its container goes: the run's end, or a
    start that failed (a node that exited during startup says why only there)."""
    for controller in cluster.controllers:  # KRaft's elections are in their controller.log
        try:
            forensics.keep_broker_logs(controller, rundir)
        except (HarnessError, OSError, tarfile.TarError) as exc:
            log.warning("could not keep %s's log files: %s", controller.name, exc)
    for node in cluster.nodes:
        try:
            write_atomic(rundir.root, f"{NODE_LOGS}/{node.name}.log", node.logs(tail="all"))
        except (HarnessError, OSError) as exc:  # the run's verdict does not depend on them
            log.warning("could not keep %s's log: %s", node.name, exc)
