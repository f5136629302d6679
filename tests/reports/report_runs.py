"""Handwritten run directories for the report tests: one run that passed, one that broke guarantees.

The files follow shared/HISTORY_FORMAT.md and docs/RESULT_FORMAT.md exactly; the failing run also
carries hostile text (markup in a fault target and an anomaly value) to prove escaping.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contract.anomaly_kinds import COUNT_KEYS, GROUP_BY_ID, KIND_IDS
from contract.events import fault_event
from faults import make_fault

S = 1_000_000_000
HOSTILE = '<script>alert("x")</script><img src="https://evil.example/x.png">'
TOPICS = [
    {"name": "chaos-acks-all", "partitions": 2, "replication_factor": 3, "acks": "all"},
    {"name": "chaos-acks-1", "partitions": 2, "replication_factor": 3, "acks": "1"},
    {"name": "chaos-acks-0", "partitions": 2, "replication_factor": 3, "acks": "0"},
]
KILL = make_fault("kill")
PARTITION = make_fault("partition", {"shape": "isolate-from-zookeeper"})


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def counts(**values: int) -> dict[str, int]:
    return {k: values.get(k, 0) for k in COUNT_KEYS}


def series(
    acks: str, seconds: int, lost_at: dict[int, int] | None = None, gap: range = range(0)
) -> list[dict[str, Any]]:
    rows = []
    for t in range(seconds):
        if t in gap:
            continue
        rows.append(
            {
                "acks": acks,
                "t_s": t,
                "acked": 100 + (t % 7),
                "failed": 0,
                "indeterminate": 0,
                "lost": (lost_at or {}).get(t, 0),
                "divergent": 0,
                "latency_p50_ms": 2.0 + t % 3,
                "latency_p99_ms": 9.0 + (t % 5) * 3,
                "latency_max_ms": 40.0,
            }
        )
    return rows


def cluster_samples(seconds: int, topics: list[dict[str, Any]] = TOPICS) -> list[dict[str, Any]]:
    """One sample per second: leader of each topic's partition 0 moves from 1 to 2 at 20 s, broker 1
    is down from 20 s to 30 s (ISR shrinks), with repeated identical samples in between."""
    rows = []
    for t in range(seconds):
        down = 20 <= t < 30
        live = [2, 3] if down else [1, 2, 3]
        parts = []
        for topic in topics:
            for p in range(2):
                leader = 2 if (down or t >= 30) and p == 0 else 1 + (p % 3) if not down else 2 + p % 2
                isr = [b for b in (1, 2, 3) if b in live]
                parts.append(
                    {
                        "topic": topic["name"],
                        "partition": p,
                        "leader": leader,
                        "leader_epoch": 1 + (t >= 20),
                        "isr": isr,
                    }
                )
        rows.append(
            {
                "time_ns": t * S + 5,
                "controller": 3 if t >= 20 else 1,
                "controller_epoch": 1,
                "live_brokers": live,
                "partitions": parts,
            }
        )
    return rows


def base_run(root: Path, run_id: str, scenario: str, started_at: str, config: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    run = {
        "format": 1,
        "run_id": run_id,
        "seed": 7,
        "scenario": scenario,
        "started_at": started_at,
        "duration_s": 60,
        "kafka": {"version": "0.9.0.1", "image": "kchaos/kafka:0.9.0.1"},
        "cluster": {"brokers": 3, "zookeepers": 1, "broker_config": config},
        "producer": {"retries": "3", "max.in.flight.requests.per.connection": "1"},
        "topics": TOPICS,
    }
    (root / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    write_jsonl(root / "history/cluster.jsonl", cluster_samples(60))


def guarantee(gid: str, topic: str, acks: str, promised: bool, verdict: str, reason: str) -> dict[str, Any]:
    return {
        "id": gid,
        "topic": topic,
        "acks": acks,
        "promise": f"promise of {gid}",
        "promised": promised,
        "verdict": verdict,
        "reason": reason,
    }


def result(
    run_id: str,
    valid: bool,
    acks: dict[str, dict[str, int]],
    guarantees: list[dict[str, Any]],
    anomalies: dict[str, dict[str, Any]],
    rows: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    return {
        "result_format": 1,
        "run_id": run_id,
        "checked_at": "2026-11-21T14:25:01Z",
        "spark": {"master": "local[*]", "version": "4.3.0", "seconds": 12.4},
        "events": {"writes": 36000, "reads": 40000, "faults": 4, "cluster": 60},
        "valid": valid,
        "complete": extra.get("complete", True),
        "unexpected": extra.get("unexpected", 0),
        "incomplete_partitions": extra.get("incomplete", []),
        "acks": acks,
        "topics": [{"topic": f"chaos-acks-{m}", "acks": m, **c, "complete": True} for m, c in acks.items()],
        "guarantees": guarantees,
        "anomalies": {
            k: anomalies.get(k, {"count": 0, "examples": [], "examples_capped": False}) for k in KIND_IDS
        },
        "availability": {
            "bucket_s": 1,
            "series": rows,
            "latency": [
                {
                    "acks": m,
                    "during_fault": f,
                    "count": 1000,
                    "p50_ms": 3.0,
                    "p99_ms": 11.0 + 30 * f,
                    "max_ms": 90.0,
                    "error_rate": 0.01 * f,
                    "indeterminate_rate": 0.0,
                }
                for m in acks
                for f in (False, True)
            ],
            "recovery": [
                {
                    "fault": "kill-leader",
                    "start_ns": 20 * S,
                    "acks": "all",
                    "first_ok_ns": 22 * S,
                    "recovery_ms": 2000.0,
                }
            ],
        },
    }


def make_passing(root: Path, started_at: str = "2026-11-20T02:00:00Z", scenario: str = "leader-kill") -> Path:
    base_run(
        root,
        root.name,
        scenario,
        started_at,
        {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
    )
    write_jsonl(
        root / "history/faults.jsonl",
        [
            {
                "time_ns": 20 * S,
                "fault": "kill-leader",
                "phase": "start",
                "targets": ["kafka-1"],
                "detail": {"topic": "chaos-acks-all", "partition": 0},
            },
            {
                "time_ns": 30 * S,
                "fault": "kill-leader",
                "phase": "stop",
                "targets": ["kafka-1"],
                "detail": {},
            },
        ],
    )
    acks = {m: counts(attempted=6000, acked=5990, failed=4, indeterminate=6) for m in ("all", "1", "0")}
    gs = [
        guarantee(
            "no-lost-acked-writes", "chaos-acks-all", "all", True, "held", "acks=all, RF 3, min.isr 2; 0 lost"
        ),
        guarantee("no-phantom-writes", "chaos-acks-all", "all", True, "held", "0 phantom"),
        guarantee("no-duplicates", "chaos-acks-all", "all", False, "not-promised", "no idempotence on 0.9"),
        guarantee("no-unexpected-values", "", "", True, "held", "0 unexpected"),
    ]
    rows = [r for m in ("all", "1", "0") for r in series(m, 60, gap=range(21, 24))]
    out = result(root.name, True, acks, gs, {}, rows)
    (root / "check").mkdir(parents=True, exist_ok=True)
    (root / "check/result.json").write_text(json.dumps(out), encoding="utf-8")
    return root


def make_failing(root: Path, started_at: str = "2026-11-21T02:00:00Z", scenario: str = "leader-kill") -> Path:
    base_run(root, root.name, scenario, started_at, {"min.insync.replicas": "1"})
    write_jsonl(
        root / "history/faults.jsonl",
        [
            fault_event(20 * S, 0, "kill-leader", "start", ["kafka-1"], {}, KILL.describe()),
            fault_event(
                25 * S,
                1,
                "partition-isolate-from-zookeeper",
                "start",
                ["kafka-2", HOSTILE],
                {"note": HOSTILE, "shape": "isolate-from-zookeeper"},
                PARTITION.describe(),
            ),
            fault_event(30 * S, 0, "kill-leader", "stop", ["kafka-1"], {}),
            fault_event(40 * S, 1, "partition-isolate-from-zookeeper", "stop", ["kafka-2", HOSTILE], {}),
            {  # as histories without fault ids and descriptions have it
                "time_ns": 50 * S,
                "fault": "slow",
                "phase": "start",
                "targets": ["kafka-3"],
                "detail": {"delay_ms": 200},
            },
        ],
    )
    acks = {
        "all": counts(attempted=6000, acked=5900, failed=50, indeterminate=50, lost=3, divergent=1),
        "1": counts(
            attempted=6000, acked=5950, failed=20, indeterminate=30, lost=12, duplicated=2, phantom=1
        ),
        "0": counts(attempted=6000, acked=6000, lost=40),
    }
    gs = [
        guarantee(
            "no-lost-acked-writes",
            "chaos-acks-all",
            "all",
            False,
            "not-promised",
            "min.insync.replicas 1 < 2; 3 lost, 1 divergent",
        ),
        guarantee("no-phantom-writes", "chaos-acks-all", "all", True, "held", "0 phantom"),
        guarantee("no-phantom-writes", "chaos-acks-1", "1", True, "violated", "1 failed write was read"),
        guarantee("per-partition-order", "chaos-acks-1", "1", True, "held", "0 reordered"),
        guarantee("no-unexpected-values", "", "", True, "violated", "2 values read that were never written"),
    ]
    lost_example = {
        "topic": "chaos-acks-all",
        "partition": 0,
        "offset": 41,
        "value": "p-all-0:17",
        "acks": "all",
        "process": "p-all-0",
        "invoke_ns": 21 * S,
        "complete_ns": 21 * S + 900,
        "ack_offset": 41,
        "final_value": None,
        "leader": 1,
        "leader_epoch": 1,
        "isr": [1],
        "controller": 1,
        "active_faults": ["kill-leader"],
    }
    anomalies = {
        "lost-write": {
            "count": 55,
            "examples": [lost_example, {**lost_example, "value": HOSTILE, "offset": 42}],
            "examples_capped": True,
        },
        "divergent-offset": {
            "count": 1,
            "examples": [{"topic": "chaos-acks-all", "partition": 0, "offset": 43, "values": ["a", "b"]}],
            "examples_capped": False,
        },
        "phantom-write": {
            "count": 1,
            "examples": [{"topic": "chaos-acks-1", "partition": 1, "offset": 7, "value": "p-1-0:3"}],
            "examples_capped": False,
        },
        "duplicate": {
            "count": 2,
            "examples": [{"topic": "chaos-acks-1", "value": "p-1-1:9", "offsets": [[0, 3], [0, 5]]}],
            "examples_capped": False,
        },
        "unexpected-value": {"count": 2, "examples": [], "examples_capped": False},
    }
    rows = (
        series("all", 60, {21: 2, 26: 1})
        + series("1", 60, {22: 12})
        + series("0", 60, {21: 30, 22: 10}, gap=range(25, 40))
    )
    rows[26]["divergent"] = 1  # acks=all, t=26
    out = result(root.name, False, acks, gs, anomalies, rows, unexpected=2)
    out["groups"] = {"g-alo": failing_group()}
    (root / "check").mkdir(parents=True, exist_ok=True)
    (root / "check/result.json").write_text(json.dumps(out), encoding="utf-8")
    return root


def failing_group() -> dict[str, Any]:
    """An at-least-once group that skipped 2 records after a member was killed at 20 s."""
    skip = {
        "topic": "chaos-acks-all",
        "partition": 1,
        "offset": 77,
        "value": HOSTILE,
        "committed": 80,
        "committed_by": "g-alo-1",
        "committed_ns": 22 * S,
        "faults": ["kill-member"],
    }
    anomalies = {k: {"count": 0, "examples": [], "examples_capped": False} for k in GROUP_BY_ID}
    anomalies["consumer-skip"] = {
        "count": 2,
        "examples": [skip, {**skip, "offset": 78}],
        "examples_capped": False,
    }
    return {
        "commit": "after-process",
        "commit_async": False,
        "members": 2,
        "topics": ["chaos-acks-all"],
        "polled": 5800,
        "skipped": 2,
        "redelivered": 40,
        "poll_skips": 0,
        "nonmonotonic": 0,
        "commit_regressions": 0,
        "commits": {"invoke": 60, "ok": 58, "fail": 1, "info": 1},
        "anomalies": anomalies,
        "guarantees": [
            {
                "id": "no-consumer-skips",
                "promise": "no record below the group's committed offset goes unprocessed",
                "promised": True,
                "promised_by": "the consumer's commit mode (after-process; librdkafka 2.16.0)",
                "verdict": "violated",
                "reason": "commits only offsets of records already processed; 2 skipped, 0 poll skips",
            }
        ],
        "series": [
            {
                "t_s": t,
                "polled": 0 if 20 <= t < 27 else 100,
                "commits_ok": 1,
                "commits_failed": int(t == 21),
                "assigns": int(t in (5, 27)),
                "generation": 1 if t < 27 else 2,
            }
            for t in range(60)
        ],
    }


TXN_COORDINATORS = {"kchaos-tx-0": 35, "kchaos-tx-1": 36}
"""Each transactional.id's partition of the 50 of __transaction_state: Utils.abs of the Java string
hash, mod 50, as the broker finds its coordinator."""
TRANSACTIONS = [
    {
        "transactional_id": "kchaos-tx-0",
        "begun": 73,
        "committed": 60,
        "aborted": 13,
        "unknown": 0,
        "fatal_errors": 0,
        "abortable_errors": 0,
        "retriable_errors": 0,
    },
    {
        "transactional_id": "kchaos-tx-1",
        "begun": 1210,
        "committed": 1200,
        "aborted": 6,
        "unknown": 4,
        "fatal_errors": 1,
        "abortable_errors": 3,
        "retriable_errors": 4,
    },
]


def add_transactions(root: Path) -> Path:
    """The run at `root` with two transactional producers writing chaos-txn-0 and chaos-txn-1: their
    topics in run.json, the transaction log sampled (kchaos-tx-0's coordinator moves from broker 1
    to 2 at 20 s, every other partition is led by 3), result.json's `transactions`, and an example of
    each transaction anomaly with the guarantee it broke on chaos-txn-0."""
    run = json.loads((root / "run.json").read_text())
    run["topics"] += [
        {
            "name": f"chaos-txn-{n}",
            "partitions": 2,
            "replication_factor": 3,
            "acks": "all",
            "producer": {
                "enable.idempotence": True,
                "transactional.id": "kchaos-tx",
                "transaction.timeout.ms": 10000,
            },
            "transactions": {"records": [1, 10], "abort_rate": 0.1},
        }
        for n in range(2)
    ]
    (root / "run.json").write_text(json.dumps(run))
    samples = cluster_samples(60)
    for sample in samples:
        moved = sample["time_ns"] >= 20 * S
        for p in range(50):
            leader = (2 if moved else 1) if p == TXN_COORDINATORS["kchaos-tx-0"] else 3
            epoch = 1 + moved if p == TXN_COORDINATORS["kchaos-tx-0"] else 0
            state = {"leader": leader, "leader_epoch": epoch, "isr": [1, 2, 3]}
            sample["partitions"].append({"topic": "__transaction_state", "partition": p, **state})
    write_jsonl(root / "history/cluster.jsonl", samples)
    out = json.loads((root / "check/result.json").read_text())
    out["transactions"] = TRANSACTIONS
    out["guarantees"] += [
        guarantee(gid, "chaos-txn-0", "all", True, "violated", "1 found")
        for gid in ("committed-transactions-durable", "no-aborted-reads", "atomic-transactions")
    ]
    where = {"topic": "chaos-txn-0", "partition": 1, "process": "tx-0", "txn": 7}
    out["anomalies"] |= {
        "torn-transaction": {
            "count": 1,
            "examples": [{**where, "value": "tx-0:41", "records": 4, "found": 3, "missing": 1}],
            "examples_capped": False,
        },
        "lost-committed": {
            "count": 1,
            "examples": [{**where, "value": "tx-0:41", "offset": 12, "acks": "all", "final_value": None}],
            "examples_capped": False,
        },
        "aborted-read": {
            "count": 1,
            "examples": [{**where, "value": "tx-0:50", "offset": 15, "txn": 9}],
            "examples_capped": False,
        },
    }
    (root / "check/result.json").write_text(json.dumps(out))
    return root


TXN_RUN_TOPICS = [
    {"name": "chaos-acks-all", "partitions": 2, "replication_factor": 3, "acks": "all"},
    *(
        {
            "name": name,
            "partitions": 2,
            "replication_factor": 3,
            "acks": "all",
            "producer": {"enable.idempotence": True, "transactional.id": prefix},
            "transactions": {"records": [1, 10], "abort_rate": 0.1},
            **extra,
        }
        for name, prefix, extra in (
            ("chaos-txn-0", "kchaos-tx", {}),
            ("chaos-txn-1", "kchaos-tx", {}),
            (
                "chaos-pipe-out",
                "kchaos-pipe",
                {"pipeline": {"group": "kchaos-pipe", "inputs": ["chaos-txn-0", "chaos-txn-1"]}},
            ),
        )
    ),
]
"""The topics of a run like kchaos/scenarios/txn-pipeline.yaml: an idempotent topic, two written in
transactions, and the exactly-once pipeline's output."""
TXN_GROUPS = {"g-rc": "read_committed", "g-ru": "read_uncommitted"}
"""Two groups reading the transactional topics; the read_uncommitted one is the control."""
ABORTED_APPENDED = 148
"""Appended records of aborted transactions on chaos-txn-0 (100) and chaos-txn-1 (48)."""
CASES_ARE = {
    "no-lost-acked-writes": "acknowledged writes",
    "no-lost-reads": "records read by live consumers",
    "no-phantom-writes": "writes that failed definitely",
    "no-duplicates": "acknowledged writes",
    "per-partition-order": "acknowledged writes",
    "no-unexpected-values": "records read",
    "epochs-advance": "samples of the cluster's epochs after a first",
    "committed-transactions-durable": "records of committed transactions",
    "no-aborted-reads": "appended records of aborted transactions",
    "atomic-transactions": "committed transactions of two or more records",
    "exactly-once-pipeline": "input records below the pipeline's committed offsets",
    "no-consumer-skips": "records below the group's committed offsets",
    "no-redeliveries": "records polled",
    "monotonic-polls": "records polled",
    "no-uncommitted-reads": "appended records of aborted transactions on its topics",
    "commits-advance": "accepted commits",
}
"""What each guarantee's `exercised` counts, as docs/RESULT_FORMAT.md words it."""


def judged(gid: str, topic: str, verdict: str, cases: int, promised: bool = True) -> dict[str, Any]:
    """A guarantee row of a topic with the cases it was judged over."""
    row = guarantee(gid, topic, "all", promised, verdict, f"why {gid} is {verdict} on {topic}")
    return row | {"exercised": {"count": cases, "what": CASES_ARE[gid]}}


def txn_group(name: str, isolation: str) -> dict[str, Any]:
    """An after-process group over the transactional topics that held its promises."""
    read_committed = isolation == "read_committed"
    rows = [
        ("no-consumer-skips", True, "held", 2800),
        ("no-redeliveries", False, "not-promised", 3100),
        ("monotonic-polls", True, "held", 3100),
        ("commits-advance", True, "held", 58),
        (
            "no-uncommitted-reads",
            read_committed,
            "held" if read_committed else "not-promised",
            ABORTED_APPENDED,
        ),
    ]
    return {
        "commit": "after-process",
        "commit_async": False,
        "members": 2,
        "topics": ["chaos-txn-0", "chaos-txn-1"],
        "polled": 3100,
        "skipped": 0,
        "redelivered": 12,
        "poll_skips": 0,
        "nonmonotonic": 0,
        "commit_regressions": 0,
        "uncommitted_read": 0 if read_committed else 57,
        "aborted_appended": ABORTED_APPENDED,
        "aborted_polled": 0 if read_committed else 57,
        "commits": {"invoke": 60, "ok": 58, "fail": 1, "info": 1},
        "anomalies": {k: {"count": 0, "examples": [], "examples_capped": False} for k in GROUP_BY_ID},
        "guarantees": [
            {
                "id": gid,
                "promise": f"promise of {gid}",
                "promised": promised,
                "promised_by": "the consumer's commit mode (after-process; librdkafka 2.16.0)",
                "verdict": verdict,
                "reason": f"isolation.level={isolation}; why {gid} is {verdict}",
                "exercised": {"count": cases, "what": CASES_ARE[gid]},
            }
            for gid, promised, verdict, cases in rows
        ],
        "series": [
            {
                "t_s": t,
                "polled": 50,
                "commits_ok": 1,
                "commits_failed": 0,
                "assigns": int(t == 2),
                "generation": 1,
            }
            for t in range(60)
        ],
    }


def make_transaction_run(
    root: Path, started_at: str = "2026-11-22T02:00:00Z", scenario: str = "txn-pipeline"
) -> Path:
    """A passing run of transactional producers, an exactly-once pipeline and two consumer groups
    on Kafka 3.9.2, as the checker judges one: every guarantee held, but `no-phantom-writes` on the
    idempotent topic was not exercised (no write failed definitely); the read_uncommitted group
    polled 57 of the 148 appended records of aborted transactions (the control)."""
    config = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    base_run(root, root.name, scenario, started_at, config)
    run = json.loads((root / "run.json").read_text())
    run["kafka"] = {"version": "3.9.2", "image": "kchaos/kafka:3.9.2"}
    run["producer"] = {"enable.idempotence": "true"}
    run["topics"] = TXN_RUN_TOPICS
    run["groups"] = [
        {
            "name": name,
            "topics": ["chaos-txn-0", "chaos-txn-1"],
            "commit": "after-process",
            "members": 2,
            "config": {"isolation.level": isolation},
        }
        for name, isolation in TXN_GROUPS.items()
    ]
    (root / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    write_jsonl(root / "history/cluster.jsonl", cluster_samples(60, TXN_RUN_TOPICS))
    write_jsonl(
        root / "history/faults.jsonl",
        [
            fault_event(20 * S, 0, "kill", "start", ["kafka-1"], {}, KILL.describe()),
            fault_event(30 * S, 0, "kill", "stop", ["kafka-1"], {}),
        ],
    )
    acks = {
        "all": counts(attempted=12000, acked=11890, failed=0, indeterminate=110),
        "1": counts(),
        "0": counts(),
    }
    rows: list[dict[str, Any]] = []
    for name in ("chaos-acks-all", "chaos-txn-0", "chaos-txn-1", "chaos-pipe-out"):
        transactional = name != "chaos-acks-all"
        plain = [("no-lost-acked-writes", 2990), ("no-phantom-writes", 0)] if not transactional else []
        txn = [
            ("committed-transactions-durable", 2700),
            ("no-aborted-reads", 100 if name == "chaos-txn-0" else 48),
        ]
        txn += [("atomic-transactions", 410)]
        shared = [
            ("no-lost-reads", 2600),
            ("no-duplicates", 2990),
            ("per-partition-order", 2990),
            ("no-unexpected-values", 5800),
            ("epochs-advance", 59),
        ]
        pipeline = [("exactly-once-pipeline", 2650)] if name == "chaos-pipe-out" else []
        for gid, cases in [*plain, *(txn if transactional else []), *shared, *pipeline]:
            rows.append(judged(gid, name, "held" if cases else "not-exercised", cases))
    out = result(root.name, True, acks, rows, {}, series("all", 60, gap=range(21, 23)))
    out["availability"]["latency"] = [r for r in out["availability"]["latency"] if r["acks"] == "all"]
    out["topics"] = [
        {
            "topic": t["name"],
            "acks": "all",
            **counts(attempted=3000, acked=2990, indeterminate=10),
            "complete": True,
        }
        for t in TXN_RUN_TOPICS
    ]
    out["groups"] = {name: txn_group(name, isolation) for name, isolation in TXN_GROUPS.items()}
    out["transactions"] = [
        *TRANSACTIONS,
        *({**TRANSACTIONS[0], "transactional_id": f"kchaos-pipe-{n}"} for n in range(2)),
    ]
    (root / "check").mkdir(parents=True, exist_ok=True)
    (root / "check/result.json").write_text(json.dumps(out), encoding="utf-8")
    return root


def make_plain_run(
    root: Path, started_at: str = "2026-11-20T02:00:00Z", scenario: str = "leader-kill"
) -> Path:
    """The passing run of `make_passing` as the checker judges one of three plain topics: each
    topic's guarantees with the cases they were judged over; acks=0 promises nothing of its writes,
    and no write failed definitely, so `no-phantom-writes` was not exercised on acks=all and 1."""
    make_passing(root, started_at, scenario)
    rows = []
    for topic in TOPICS:
        name, acks, durable = topic["name"], topic["acks"], topic["acks"] == "all"
        judged_here = [
            judged("no-lost-acked-writes", name, "held" if durable else "not-promised", 1990, durable),
            judged("no-lost-reads", name, "held", 1800),
            judged("epochs-advance", name, "held", 59),
            judged(
                "no-phantom-writes", name, "not-exercised" if acks != "0" else "not-promised", 0, acks != "0"
            ),
            judged("no-duplicates", name, "not-promised", 1990, False),
            judged("per-partition-order", name, "held" if durable else "not-promised", 1990, durable),
            judged("no-unexpected-values", name, "held", 5400),
        ]
        rows += [row | {"acks": acks} for row in judged_here]
    path = root / "check/result.json"
    out = json.loads(path.read_text())
    out["guarantees"] = rows
    out["acks"] = {t["acks"]: counts(attempted=2000, acked=1990, failed=0, indeterminate=10) for t in TOPICS}
    out["topics"] = [
        {
            "topic": t["name"],
            "acks": t["acks"],
            **counts(attempted=2000, acked=1990, failed=0, indeterminate=10),
            "complete": True,
        }
        for t in TOPICS
    ]
    path.write_text(json.dumps(out), encoding="utf-8")
    return root
