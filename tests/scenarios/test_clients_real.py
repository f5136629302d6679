"""The clients on real Kafka clusters, checked on a real SparkSession.

A Java acks=all producer and a Java group through the normal workload on 3.9.2: the one test of
these that `make test` runs. The others are `clients` tests (`make clients-test`), on 4.1.1
(KRaft). A night of the nightly recipe (docs/CI.md: `scripts/nightly.sh run 4.1.1 java`, then
`index`) on a scenario that mixes clients: `--client java` makes the acks producers, the
transactional producer, a classic and a KIP-848 group Java's, while the pipeline and another KIP-848
group keep the librdkafka their entries name; the Java KIP-848 group's coordinator is killed once.
run.json names every part's client and the transaction protocol it spoke (2 on the 4.x Java client,
1 on librdkafka), every part does its work, every guarantee holds, and the night is carried into the
history and its index. And the `coordinator:<group>` target of a KIP-848 group, on either client, is
the broker FindCoordinator names."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from contract.history import CONSUMES, REPORT, RESULT, RUN_JSON, WRITES, RunClock, RunDir
from contract.nodes import broker_name
from faults.base import FaultContext
from faults.targets import resolve as resolve_target
from harness import kafka_protocol
from harness.broker_config import BROKER_PORT
from harness.client_choice import ClientChoice, resolve
from harness.cluster import ClusterSpec, KafkaCluster
from harness.groups import ConsumerGroups, GroupSpec, stable
from harness.waiting import wait_until
from harness.workload import WorkloadHandles
from kchaos.pytest_plugin import ChaosRun

pytestmark = [pytest.mark.docker]

RELEASE = "4.1.1"
KIP_848 = {"group.protocol": "consumer"}
NIGHTLY = Path(__file__).resolve().parents[2] / "scripts" / "nightly.sh"
JAVA_COORDINATOR_ID = 2**31 - 1
"""The classic Java consumer names a group coordinator node Integer.MAX_VALUE - its broker id."""
MIXED = {
    "name": "clients-mixed",
    "description": "Producers, a transactional producer, a pipeline, a classic and two KIP-848 groups on "
    "two clients; the Java KIP-848 group's coordinator killed once.",
    "duration_s": 35,
    "cluster": {
        "brokers": 3,
        # fewer coordinator partitions: the internal topics are made and loaded in seconds
        "broker_config": {
            "min.insync.replicas": 2,
            "offsets.topic.num.partitions": 10,
            "transaction.state.log.num.partitions": 10,
        },
    },
    "workload": {
        "client": "librdkafka",  # --client java replaces it: every part below without a client of its own
        "clients": {"pipeline": "librdkafka"},
        "acks": ["all", "1"],
        "rate_per_s": 50,
        "live_consumers": 0,
        "transactions": {"producers": 1, "topics": 1, "records": [1, 5], "abort_rate": 0.3, "pipelines": 1},
        "groups": [
            {"name": "g-classic", "acks": ["all"], "members": 1},
            {
                "name": "g-848",
                "acks": ["txn"],
                "members": 2,
                "client": "librdkafka",
                "config": {**KIP_848, "isolation.level": "read_committed"},
            },
            {"name": "g-848j", "acks": ["all"], "members": 1, "config": KIP_848},
        ],
    },
    "faults": {
        "mode": "schedule",
        "schedule": [
            {"at_s": 20, "duration_s": 6, "fault": "kill", "params": {"target": "coordinator:g-848j"}}
        ],
    },
}
JAVA_PARTS = {"chaos-acks-all", "chaos-acks-1", "chaos-txn-0", "g-classic", "g-848j"}
"""What --client java runs on Java; the rest names librdkafka."""


JAVA_WORKLOAD = """
name: java-workload
description: A Java acks=all producer and a Java at-least-once group through the normal workload, no fault.
duration_s: 20
cluster:
  kafka: "3.9.2"  # the Java client cannot talk to the suite's 0.9 brokers
  brokers: 3
  broker_config: {min.insync.replicas: 2, unclean.leader.election.enable: false}
workload:
  client: java
  acks: [all]
  live_consumers: 0
  groups:
    - {name: g-alo, commit: after-process, members: 1, commit_interval_s: 1}
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _coordinator_found(message: str) -> str | None:
    """The broker a Java consumer's "Discovered group coordinator" line names: the classic consumer's
    `host:port (id: N ...)`, N being Integer.MAX_VALUE - the broker id, or the KIP-848 consumer's
    `Coordinator(key=..., nodeId=B, ...)`."""
    found = re.search(
        r"Discovered group coordinator (?:\S+ \(id: (\d+)|Coordinator\(.*?nodeId=(\d+))", message
    )
    if found is None:
        return None
    classic, node = found.groups()
    return broker_name(JAVA_COORDINATOR_ID - int(classic) if classic else int(node))


def _nightly(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    kchaos = str(Path(sys.executable).with_name("kchaos"))
    return subprocess.run(
        [str(NIGHTLY), *args],
        env={**os.environ, "KCHAOS": kchaos, **env},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


@pytest.mark.spark
def test_a_java_producer_and_group_run_through_the_workload(chaos_run: ChaosRun, tmp_path: Path) -> None:
    scenario = tmp_path / "java-workload.yaml"
    scenario.write_text(JAVA_WORKLOAD)
    outcome = chaos_run(str(scenario), report=False)
    assert outcome.exit_code == 0, outcome.expectations
    run = json.loads((outcome.rundir.root / RUN_JSON).read_text())
    version = run["kafka"]["version"]  # `java` alone: the brokers' release of kafka-clients
    clients = {
        p["name"]: (p["client"]["library"], p["client"]["version"]) for p in [*run["topics"], *run["groups"]]
    }
    assert clients == {"chaos-acks-all": ("kafka-clients", version), "g-alo": ("kafka-clients", version)}
    written = outcome.result["acks"]["all"]
    assert written["acked"] > 0 and written["lost"] == 0 and written["duplicated"] == 0, written
    group = outcome.result["groups"]["g-alo"]
    assert group["polled"] > 0 and group["commits"]["ok"] > 0, (group["polled"], group["commits"])
    verdicts = {(g["topic"], g["id"]): g for g in outcome.result["guarantees"]}
    assert verdicts[("chaos-acks-all", "no-lost-acked-writes")]["verdict"] == "held"
    rows = {g["id"]: g for g in group["guarantees"]}
    assert rows["no-consumer-skips"]["verdict"] == "held", rows
    assert f"kafka-clients {version}" in rows["no-consumer-skips"]["promised_by"]


@pytest.mark.clients
@pytest.mark.spark
def test_a_night_on_mixed_clients_names_each_parts_client_and_holds(tmp_path: Path) -> None:
    scenario = tmp_path / "clients-mixed.yaml"
    scenario.write_text(yaml.safe_dump(MIXED))
    tonight, history = tmp_path / "tonight", tmp_path / "history"
    done = _nightly("run", RELEASE, "java", str(tonight), SCENARIOS=str(scenario), SEEDS="1")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]  # every promise held
    (root,) = [p for p in tonight.iterdir() if p.is_dir()]
    assert (root / "report" / "junit.xml").is_file()  # what the CI publishes
    run = json.loads((root / RUN_JSON).read_text())
    libraries = {p["name"]: p["client"]["library"] for p in [*run["topics"], *run["groups"]]}
    assert libraries == {
        name: "kafka-clients" if name in JAVA_PARTS else "librdkafka"
        for name in (
            "chaos-acks-all",
            "chaos-acks-1",
            "chaos-txn-0",
            "chaos-pipe-out",
            "g-classic",
            "g-848",
            "g-848j",
        )
    }
    java = [p["client"] for p in [*run["topics"], *run["groups"]] if p["name"] in JAVA_PARTS]
    assert {c["version"] for c in java} == {RELEASE}  # `java` alone: the brokers' release
    assert run["client"]["library"] == "kafka-clients" and run["client"]["java"].startswith("openjdk version")
    assert run["readers"]["client"]["library"] == "librdkafka"  # the final read stays librdkafka's
    assert run["cluster"]["finalized_features"]["transaction.version"] == 2  # 4.x formats TV2
    protocols = {
        t["name"]: t["transactions"]["transaction_version"] for t in run["topics"] if "transactions" in t
    }
    assert protocols == {"chaos-txn-0": 2, "chaos-pipe-out": 1}  # Java 4.x speaks KIP-890; librdkafka not
    # Every part did its work.
    steps = _lines(root / "history/transactions.jsonl")
    assert {s["process"] for s in steps if s["type"] == "commit" and s["phase"] == "ok"} == {"tx-0", "pipe-0"}

    # Transaction version 2 bumps the producer epoch as each transaction ends (KIP-890); version 1
    # keeps it until the producer is initialized again (or, at most, bumps it at an abort): the
    # replicas' record batches show both.
    def ended(kind: str, part: str) -> int:
        return sum(
            1 for s in steps if s["type"] == kind and s["phase"] == "ok" and s["process"].startswith(part)
        )

    epochs: dict[str, int] = {}
    for line in _lines(root / "history/replicas.jsonl"):
        if line["type"] == "replica" and line["topic"] in protocols:
            most = max((line.get("producer_epochs") or {}).values(), default=0)
            epochs[line["topic"]] = max(epochs.get(line["topic"], 0), most)
    bumps_at_most = ended("init", "pipe-") + ended("abort", "pipe-")
    assert epochs["chaos-txn-0"] > ended("init", "tx-") + 2, (epochs, ended("init", "tx-"))
    assert 1 <= epochs["chaos-pipe-out"] <= bumps_at_most, (epochs, bumps_at_most)
    events = _lines(root / CONSUMES)
    for group in ("g-classic", "g-848", "g-848j"):
        mine = [e for e in events if e["group"] == group]
        assert any(e["type"] == "poll" for e in mine), group
        assert any(e["type"] == "commit" and e["phase"] == "ok" for e in mine), group
    assigned = {
        e["process"] for e in events if e["group"] == "g-848" and e["type"] == "assign" and e["partitions"]
    }
    assert assigned == {"g-848-0", "g-848-1"}  # the broker split the partitions between both members
    # The coordinator the target killed is the one the Java KIP-848 member had found.
    (kill,) = [f for f in _lines(root / "history/faults.jsonl") if f["phase"] == "start"]
    found = [
        _coordinator_found(str(c["message"]))
        for c in _lines(root / "history/client.jsonl")
        if c["process"] == "g-848j-0" and c["time_ns"] < kill["time_ns"]
    ]
    found = [name for name in found if name]
    assert found and found[-1] == kill["targets"][0], (found, kill)
    # Judged: nothing Kafka or a client promised broke, on either protocol, and it was judged.
    result = json.loads((root / RESULT).read_text())
    verdicts = {(g["topic"], g["id"]): g for g in result["guarantees"]}
    assert verdicts[("chaos-txn-0", "committed-transactions-durable")]["verdict"] == "held"
    assert "kafka-clients 4.1.1" in verdicts[("chaos-txn-0", "committed-transactions-durable")]["promised_by"]
    assert verdicts[("chaos-pipe-out", "exactly-once-pipeline")]["verdict"] == "held"
    for group in ("g-classic", "g-848", "g-848j"):
        rows = {g["id"]: g for g in result["groups"][group]["guarantees"]}
        assert rows["no-consumer-skips"]["verdict"] == "held", rows
        assert ("kafka-clients" if group in JAVA_PARTS else "librdkafka") in rows["no-consumer-skips"][
            "promised_by"
        ]
    # The night goes into the history: beside another night's run (the same, dated later, unpacked
    # deeper as a CI system may), and one from long ago, past KEEP_DAYS, goes.
    later = "20990101" + root.name[8:]
    shutil.copytree(root, tonight / "runs-4.1.1-java" / later)
    shutil.copytree(root, history / ("20000101" + root.name[8:]))
    done = _nightly("index", str(history), str(tonight), KEEP_DAYS="30")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in history.iterdir() if p.is_dir()) == sorted([root.name, later])
    slim = history / root.name
    assert (slim / RESULT).is_file() and (slim / REPORT).is_file() and not (slim / WRITES).exists()
    page = (history / "index.html").read_text()
    assert page.count('class="run"') == 2 and "kafka-clients 4.1.1 + librdkafka" in page
    tips = re.findall(r'data-tip="([^"]*)"', page)
    assert any(t.startswith(root.name) for t in tips) and any(t.startswith(later) for t in tips)  # a trend
    assert _nightly("index", str(history), str(tonight)).returncode == 0  # again: the same


@pytest.fixture
def cluster_4x() -> Iterator[KafkaCluster]:
    with KafkaCluster(ClusterSpec(kafka=RELEASE, brokers=3)) as cluster:
        yield cluster


@pytest.mark.clients
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
            context = FaultContext(cluster, WorkloadHandles(groups=groups, group_ids=list(clients)))
            addresses = [(b.ip, BROKER_PORT) for b in cluster.brokers]
            for name in clients:
                nodes, detail = resolve_target(context, f"coordinator:{name}", random.Random(0))
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
