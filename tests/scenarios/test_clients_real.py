"""Each client through the normal workload on a real Kafka 4.1.1 cluster (KRaft), checked on a real
SparkSession: acks=all producers, a transactional producer and a pipeline, a classic group and a
KIP-848 group (`group.protocol: consumer`), the KIP-848 group's coordinator killed once. run.json
names the client of every part and the transaction protocol it spoke (2 on the 4.x Java client, 1
on librdkafka), and every guarantee holds. And the `coordinator:<group>` target of a KIP-848 group,
on either client, is the broker FindCoordinator names."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from contract.history import CONSUMES, RunClock, RunDir
from contract.nodes import broker_name
from faults.targets import resolve as resolve_target
from harness import kafka_protocol
from harness.broker_config import BROKER_PORT
from harness.client_choice import JAVA, LIBRDKAFKA, ClientChoice, resolve
from harness.cluster import ClusterSpec, KafkaCluster
from harness.groups import ConsumerGroups, GroupSpec, stable
from harness.waiting import wait_until
from kchaos.pytest_plugin import ChaosRun

pytestmark = [pytest.mark.docker]

RELEASE = "4.1.1"
KIP_848 = {"group.protocol": "consumer"}


def scenario(client: str) -> dict[str, Any]:
    return {
        "name": f"clients-{client}",
        "description": "Producers, a transactional producer, a pipeline, a classic and a KIP-848 group "
        "on one client; the KIP-848 group's coordinator killed once.",
        "duration_s": 20,
        "cluster": {"kafka": RELEASE, "brokers": 3, "broker_config": {"min.insync.replicas": 2}},
        "workload": {
            "client": client,
            "acks": ["all"],
            "rate_per_s": 50,
            "live_consumers": 0,
            "transactions": {
                "producers": 1,
                "topics": 1,
                "records": [1, 5],
                "abort_rate": 0.3,
                "pipelines": 1,
            },
            "groups": [
                {"name": "g-classic", "acks": ["all"], "members": 1},
                {
                    "name": "g-848",
                    "acks": ["txn"],
                    "members": 2,
                    "config": {**KIP_848, "isolation.level": "read_committed"},
                },
            ],
        },
        "faults": {
            "mode": "schedule",
            "schedule": [
                {"at_s": 4, "duration_s": 6, "fault": "kill", "params": {"target": "coordinator:g-848"}}
            ],
        },
    }


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.spark
@pytest.mark.parametrize("client", [LIBRDKAFKA, JAVA])
def test_each_client_runs_every_part_and_run_json_names_it(
    chaos_run: ChaosRun, tmp_path: Path, client: str
) -> None:
    path = tmp_path / f"clients-{client}.yaml"
    path.write_text(yaml.safe_dump(scenario(client)))
    outcome = chaos_run(str(path))
    root, result = outcome.rundir.root, outcome.result
    run = json.loads((root / "run.json").read_text())
    library = "kafka-clients" if client == JAVA else "librdkafka"
    parts = [*run["topics"], *run["groups"]]
    assert {p["client"]["library"] for p in parts} == {library} == {run["client"]["library"]}
    assert run["readers"]["client"]["library"] == "librdkafka"  # the final read stays librdkafka's
    if client == JAVA:
        assert {p["client"]["version"] for p in parts} == {RELEASE}  # java alone: the brokers' release
        assert run["client"]["java"].startswith("openjdk version")
    assert run["cluster"]["finalized_features"]["transaction.version"] == 2  # 4.x formats TV2
    protocols = {
        t["name"]: t["transactions"]["transaction_version"] for t in run["topics"] if "transactions" in t
    }
    assert protocols == dict.fromkeys(("chaos-txn-0", "chaos-pipe-out"), 2 if client == JAVA else 1)
    # Every part did its work, through the normal workload.
    steps = _lines(root / "history/transactions.jsonl")
    committed = {s["process"] for s in steps if s["type"] == "commit" and s["phase"] == "ok"}
    assert committed == {"tx-0", "pipe-0"}
    events = _lines(root / CONSUMES)
    for group in ("g-classic", "g-848"):
        mine = [e for e in events if e["group"] == group]
        assert any(e["type"] == "poll" for e in mine), group
        assert any(e["type"] == "commit" and e["phase"] == "ok" for e in mine), group
    assigned = {
        e["process"] for e in events if e["group"] == "g-848" and e["type"] == "assign" and e["partitions"]
    }
    assert assigned == {"g-848-0", "g-848-1"}  # the broker split the partitions between both members
    (kill,) = [f for f in _lines(root / "history/faults.jsonl") if f["type"] == "start"]
    assert kill["detail"]["group"] == "g-848"
    # Judged: nothing Kafka or the client promised broke, on either protocol, and it was judged.
    verdicts = {(g["topic"], g["id"]): g["verdict"] for g in result["guarantees"]}
    assert verdicts[("chaos-txn-0", "committed-transactions-durable")] == "held"
    assert verdicts[("chaos-pipe-out", "exactly-once-pipeline")] == "held"
    for group in ("g-classic", "g-848"):
        rows = {g["id"]: g for g in result["groups"][group]["guarantees"]}
        assert rows["no-consumer-skips"]["verdict"] == "held", rows
        assert library in rows["no-consumer-skips"]["promised_by"]
    assert outcome.exit_code == 0, [g for g in result["guarantees"] if g["verdict"] == "violated"]


@pytest.fixture
def cluster_4x() -> Iterator[KafkaCluster]:
    with KafkaCluster(ClusterSpec(kafka=RELEASE, brokers=3)) as cluster:
        yield cluster


def test_a_kip_848_groups_coordinator_is_its_offsets_partitions_leader_on_either_client(
    cluster_4x: KafkaCluster, tmp_path: Path
) -> None:
    cluster = cluster_4x
    cluster.create_topic("chaos-acks-all", 3, 3, {})
    clients = {
        g: resolve(ClientChoice(g.split("-")[-1]), cluster.kafka_version) for g in ("g-librdkafka", "g-java")
    }
    specs = [GroupSpec(name, ("chaos-acks-all",), members=1, config=KIP_848) for name in clients]
    bootstrap = {"bootstrap.servers": cluster.bootstrap_servers}
    configs = {s.name: {**bootstrap, **s.effective_config(clients[s.name].is_java)} for s in specs}
    commands = {name: client.command for name, client in clients.items()}
    rundir = RunDir(tmp_path)
    with rundir.writer(CONSUMES) as writer:
        groups = ConsumerGroups(specs, configs, {"consumes": writer}, RunClock(), rundir, commands)
        groups.start()
        try:
            wait_until(
                lambda: (all(stable(s) for s in groups.states().values()), str(groups.states())),
                what="each KIP-848 group's member assigned",
                timeout_s=120,
            )
            cluster.group_ids = list(clients)
            addresses = [(b.ip, BROKER_PORT) for b in cluster.brokers]
            for name in clients:
                nodes, detail = resolve_target(cluster, f"coordinator:{name}", random.Random(0))
                answer = kafka_protocol.find_coordinator(addresses, name, 0, 5.0)
                assert answer.error_code == 0 and broker_name(answer.node_id) == nodes[0].name, (name, detail)
        finally:
            groups.stop()
    assigns = [e for e in _lines(tmp_path / CONSUMES) if e["type"] == "assign"]
    # Each member got every partition, in a member epoch of 1 or later.
    assert {e["process"]: len(e["partitions"]) for e in assigns if e["partitions"]} == {
        "g-librdkafka-0": 3,
        "g-java-0": 3,
    }
    assert all(isinstance(e["generation"], int) and e["generation"] >= 1 for e in assigns if e["partitions"])
