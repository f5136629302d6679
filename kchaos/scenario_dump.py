"""A scenario as the YAML document `parse_scenario` reads back: what `kchaos run` keeps in each run
directory (the effective scenario, its generated fault timeline written out) and what `kchaos
shrink` writes. `parse_scenario(scenario_data(s))` equals `s` but for `source` and a generated
plan turned explicit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from faults.schedule import ScheduleEntry
from harness.groups import GroupSpec
from harness.images import LOCAL_BASE_IMAGE
from harness.transactional_producer import TransactionSpec
from harness.workload import acks_of_topic
from kchaos.scenario import FaultPlan, Scenario


def explicit_plan(entries: tuple[ScheduleEntry, ...]) -> FaultPlan:
    """A fault plan that replays exactly these timeline entries (none: a fault-free plan)."""
    return FaultPlan(
        mode="schedule" if entries else "none",
        schedule=[
            {
                "at_s": e.start_s,
                "duration_s": e.duration_s,
                "fault": e.fault,
                "params": dict(e.params),
                "after": e.after,
                "same_partition": e.same_partition,
            }
            for e in entries
        ],
    )


def with_timeline(scenario: Scenario, entries: tuple[ScheduleEntry, ...], duration_s: float) -> Scenario:
    """`scenario` running exactly `entries` for `duration_s` seconds."""
    experiment = dataclasses.replace(scenario.experiment, duration_s=duration_s)
    return dataclasses.replace(scenario, experiment=experiment, faults=explicit_plan(entries))


def pinned(scenario: Scenario, image: str) -> Scenario:
    """`scenario` on exactly this Kafka image, whatever it would otherwise build."""
    cluster = dataclasses.replace(scenario.experiment.cluster, image=image, kafka=None)
    return dataclasses.replace(scenario, experiment=dataclasses.replace(scenario.experiment, cluster=cluster))


def on_release(scenario: Scenario, kafka: str | None, metadata: str | None = None) -> Scenario:
    """`scenario` on the Kafka release `kafka` names (ClusterSpec.kafka) and in `metadata` mode
    (ClusterSpec.metadata); None keeps the scenario's own."""
    if kafka is None and metadata is None:
        return scenario
    cluster = scenario.experiment.cluster
    if kafka is not None:
        cluster = dataclasses.replace(cluster, image=None, kafka=kafka)
    if metadata is not None:
        cluster = dataclasses.replace(cluster, metadata=metadata)
    return dataclasses.replace(scenario, experiment=dataclasses.replace(scenario.experiment, cluster=cluster))


def scenario_data(scenario: Scenario) -> dict[str, Any]:
    spec = scenario.experiment
    cluster, workload = spec.cluster, spec.workload
    cluster_data: dict[str, Any] = {
        "brokers": cluster.brokers,
        "zookeepers": cluster.zookeepers,
        "broker_config": dict(cluster.broker_config),
        "heap": cluster.heap,
    }
    if cluster.image:
        cluster_data["image"] = cluster.image
    elif cluster.kafka:
        cluster_data["kafka"] = cluster.kafka
    if cluster.base_image != LOCAL_BASE_IMAGE:
        cluster_data["base_image"] = cluster.base_image
    if cluster.metadata:
        cluster_data["metadata"] = cluster.metadata
    if cluster.controllers != 1:
        cluster_data["controllers"] = cluster.controllers
    if cluster.combined:
        cluster_data["combined"] = True
    if cluster.features:
        cluster_data["features"] = dict(cluster.features)
    if cluster.zookeeper_only:
        cluster_data["zookeeper_only"] = cluster.zookeeper_only
    if cluster.disk != "plain":
        cluster_data["disk"] = cluster.disk
    plan = scenario.faults
    faults: dict[str, Any] = {"mode": plan.mode}
    if plan.mode == "schedule":
        faults["schedule"] = [_step_data(e) for e in plan.schedule]
    elif plan.mode != "none":
        faults["faults"] = [{"name": name, "params": dict(params)} for name, params in plan.faults]
        faults["interval_s"] = plan.interval_s
        faults["fault_duration_s"] = plan.fault_duration_s
    return {
        "name": scenario.name,
        "description": scenario.description,
        "duration_s": spec.duration_s,
        "seed": spec.seed,
        "cluster": cluster_data,
        "workload": {
            "acks": list(workload.acks),
            "producers_per_mode": workload.producers_per_mode,
            "partitions": workload.partitions,
            "replication_factor": workload.replication_factor,
            "rate_per_s": workload.rate_per_s,
            "message_size": workload.message_size,
            "producer_config": dict(workload.producer_config),
            "topic_config": dict(workload.topic_config),
            "live_consumers": workload.live_consumers,
            **({"groups": [_group_data(g) for g in workload.groups]} if workload.groups else {}),
            **({"transactions": _transactions_data(workload.transactions)} if workload.transactions else {}),
        },
        "faults": faults,
        "expect": [e.text for e in scenario.expectations],
    }


def scenario_yaml(scenario: Scenario, header: str = "") -> str:
    """The YAML text; `header` lines become comments above it."""
    comments = "".join(f"# {line}\n" for line in header.splitlines())
    return comments + yaml.safe_dump(scenario_data(scenario), sort_keys=False, allow_unicode=True, width=100)


def _transactions_data(spec: TransactionSpec) -> dict[str, Any]:
    return {
        "producers": spec.producers,
        "topics": spec.topics,
        "records": list(spec.records),
        "abort_rate": spec.abort_rate,
        "early_abort_rate": spec.early_abort_rate,
        "transaction_timeout_ms": spec.transaction_timeout_ms,
        "call_timeout_ms": spec.call_timeout_ms,
        "on_commit_timeout": spec.on_commit_timeout,
        "hold_ms": spec.hold_ms,
        "pipelines": spec.pipelines,
        "rewind_on_abort": spec.rewind_on_abort,
    }


def _group_data(group: GroupSpec) -> dict[str, Any]:
    return {
        "name": group.name,
        "acks": list(dict.fromkeys(acks_of_topic(topic) for topic in group.topics)),
        "commit": group.commit,
        "commit_async": group.commit_async,
        "members": group.members,
        "processing_ms": group.processing_ms,
        "commit_interval_s": group.commit_interval_s,
        "config": dict(group.config),
    }


def _step_data(step: dict[str, Any]) -> dict[str, Any]:
    """A schedule step as YAML: `at_s` or `after`, and `same_partition` only when set."""
    data: dict[str, Any] = {
        "duration_s": step["duration_s"],
        "fault": step["fault"],
        "params": dict(step["params"]),
    }
    if step.get("after") is not None:
        data["after"] = step["after"].to_json()
    else:
        data["at_s"] = step["at_s"]
    if step.get("same_partition"):
        data["same_partition"] = True
    return data
