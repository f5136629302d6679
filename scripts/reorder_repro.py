"""Bare reproduction of per-partition reordering of acks=all writes, without kafka-chaos's recording.

kafka-chaos is used only to start a 3-broker Kafka 0.9.0.1 cluster and to cut a broker off with its
`partition` fault (shape `isolate`: the broker loses every other broker and ZooKeeper; this host still
reaches it). Writes go through a bare `confluent_kafka.Producer` with kafka-chaos's producer settings
(retries 3, max.in.flight.requests.per.connection 1, request.timeout.ms 5000, message.timeout.ms 15000,
linger.ms 5, batch.num.messages 100, acks=all, api.version.request=false,
broker.version.fallback=0.9.0.1) and librdkafka debug logging, to one partition of a topic with
replication factor 3 and min.insync.replicas 2. The values are sequence numbers 0, 1, 2, ...; in
librdkafka's log, MsgId = value + 1 (msgids count a partition's messages from 1 in produce() order).

After healing, a bare consumer reads the partition from the beginning to the high watermark, and
the run reports:

- reordered: an acknowledged value whose acknowledged offset is lower than that of a value sent
  before it (kafka-chaos's `reordered`), with the earlier value it was written ahead of;
- duplicated: values read at more than one offset;
- for each reordered value, the debug-log lines of the ProduceRequests that carried it.

    PYTHONPATH=. .venv/bin/python scripts/reorder_repro.py --isolate follower
    PYTHONPATH=. .venv/bin/python scripts/reorder_repro.py --isolate leader --out runs/reorder-x

What it showed with librdkafka 2.16.0 (5 of 5 runs isolating a follower reordered, 0 of 2 isolating
the leader): max.in.flight=1 caps requests in flight, but one more ProduceRequest with the next
messages is already built and queued behind it (queue.buffering.backpressure.threshold, at least 1).
When the in-flight request fails with REQUEST_TIMED_OUT (the leader appended it, then waited 5 s for
the isolated follower that is still in the ISR), its messages go back to the partition queue for a
retry, and the request already queued behind it is sent first. `--set retries=0` or
`--set request.timeout.ms=30000` (longer than the broker's replica.lag.time.max.ms, 10 s) made
runs without reordering.

Everything goes into the output directory (default runs/reorder-<time>-<isolate>/): repro.log,
librdkafka.log (the producer's debug log), deliveries.jsonl, partition.jsonl, faults.jsonl,
summary.json. Exit code: 0 no reordering, 1 reordering found, 2 the run could not be made.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import random
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from reorder_analysis import Delivery, Run, analyse, log_lines_between

from contract.errors import ReadinessTimeout
from contract.history import new_run_id
from faults import Fault, make_fault
from faults.base import FaultContext
from harness.cluster import ClusterSpec, KafkaCluster
from harness.producer import DEFAULT_PRODUCER_CONFIG

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "reorder"
DEBUG = "msg,protocol,broker"
log = logging.getLogger("reorder")
librdkafka_log = logging.getLogger("reorder.librdkafka")

QUOTED_VALUES = 20
"""How many reordered values are quoted in full."""


class RelativeTime(logging.Formatter):
    """Log lines stamped with seconds since the run's start (the same clock as deliveries.jsonl)."""

    def __init__(self, run: Run) -> None:
        super().__init__("%(rel)9.3f %(levelname)s %(name)s: %(message)s")
        self.run = run

    def format(self, record: logging.LogRecord) -> str:
        record.rel = record.created - self.run.t0
        return super().format(record)


def _setup_logging(out: Path, run: Run) -> list[logging.Handler]:
    formatter = RelativeTime(run)
    script = logging.FileHandler(out / "repro.log", encoding="utf-8")
    client = logging.FileHandler(out / "librdkafka.log", encoding="utf-8")
    console = logging.StreamHandler(sys.stdout)
    for handler in (script, client, console):
        handler.setFormatter(formatter)
    log.setLevel(logging.DEBUG)
    log.addHandler(script)
    log.addHandler(console)
    librdkafka_log.setLevel(logging.DEBUG)
    librdkafka_log.propagate = False
    librdkafka_log.addHandler(client)
    return [script, client, console]


class FaultWindow(threading.Thread):
    """Starts `fault` at `at_s` after the run's start and heals it `duration_s` later (or when stopped)."""

    def __init__(self, cluster: KafkaCluster, fault: Fault, run: Run, at_s: float, duration_s: float) -> None:
        super().__init__(name="fault", daemon=True)
        self.cluster, self.fault, self.run_ = cluster, fault, run
        self.at_s, self.duration_s = at_s, duration_s
        self.stopping = threading.Event()
        self.started_fault = False
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            if self.stopping.wait(max(0.0, self.at_s - self.run_.now())):
                return
            before = self.cluster.state([TOPIC]).describe()
            self.started_fault = True
            self.fault.start(FaultContext(self.cluster), random.Random(0))
            self.run_.faults.append(
                {"at_s": self.run_.now(), "event": "start", "targets": self.fault.targets, "state": before}
            )
            log.info("fault started: partition isolate %s (before: %s)", self.fault.targets, before)
            self.stopping.wait(self.duration_s)
        except BaseException as exc:
            self.error = exc
        finally:
            self.heal()

    def heal(self) -> None:
        """Idempotent: heals once, from whichever thread gets here first."""
        if self.started_fault:
            self.started_fault = False
            self.fault.heal(FaultContext(self.cluster))
            after = self.cluster.state([TOPIC]).describe()
            self.run_.faults.append({"at_s": self.run_.now(), "event": "heal", "state": after})
            log.info("fault healed (state: %s)", after)


def produce(bootstrap: str, run: Run, args: argparse.Namespace) -> None:
    """Send values 0, 1, ... at `args.rate` per second for `args.produce_s`, then flush."""
    config: dict[str, Any] = {
        **DEFAULT_PRODUCER_CONFIG,
        "bootstrap.servers": bootstrap,
        "api.version.request": False,
        "broker.version.fallback": "0.9.0.1",
        "acks": "all",
        "debug": args.debug,
        "logger": librdkafka_log,
        **args.set,
    }
    log.info("producer config: %s", {k: v for k, v in config.items() if k != "logger"})
    producer = Producer(config)

    def on_delivery(value: int, sent_s: float, error: KafkaError | None, msg: Message | None) -> None:
        offset = msg.offset() if error is None and msg is not None else None
        name = None if error is None else error.name()
        run.deliveries[value] = Delivery(value, sent_s, run.now(), name, offset)

    interval = 1.0 / args.rate
    start = time.monotonic()
    deadline = start + args.produce_s
    value = 0
    while (now := time.monotonic()) < deadline:
        due = start + value * interval
        if now < due:
            producer.poll(min(due - now, 0.1))
            continue
        sent_s = run.now()
        payload = str(value).encode()
        for _ in range(100):  # a full local queue drains within message.timeout.ms
            try:
                producer.produce(
                    TOPIC,
                    payload,
                    partition=0,
                    on_delivery=functools.partial(on_delivery, value, sent_s),
                )
                break
            except BufferError:
                producer.poll(0.2)
        else:
            raise RuntimeError(f"the local queue stayed full for 20 s at value {value}")
        value += 1
        producer.poll(0)
    run.sent = value
    flush_deadline = time.monotonic() + int(config["message.timeout.ms"]) / 1000 + 10
    while len(producer) and time.monotonic() < flush_deadline:
        producer.flush(1.0)
    log.info(
        "producer done: %d sent, %d delivery reports, %d still queued",
        value,
        len(run.deliveries),
        len(producer),
    )


def read_partition(bootstrap: str, timeout_s: float) -> tuple[list[tuple[int, int]], bool]:
    """(offset, value) of every record of partition 0 from the beginning to the high watermark, and
    whether the read reached it in time."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "api.version.request": False,
            "broker.version.fallback": "0.9.0.1",
            "group.id": "reorder-repro",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "logger": log,
        }
    )
    records: list[tuple[int, int]] = []
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        last = -1
        while last + 1 < high and time.monotonic() < deadline:
            for msg in consumer.consume(500, 1.0):
                if msg.error():
                    log.warning("consumer: %s", msg.error())
                    continue
                value = msg.value()
                offset = msg.offset()
                if value is not None and offset is not None:
                    records.append((offset, int(value)))
                    last = max(last, offset)
        log.info("read %d records up to offset %d (high watermark %d)", len(records), last, high)
        return records, last + 1 >= high
    finally:
        consumer.close()


def run_once(args: argparse.Namespace, out: Path, run: Run) -> int:
    spec = ClusterSpec(
        brokers=3, broker_config={"min.insync.replicas": 2, "unclean.leader.election.enable": False}
    )
    records: list[tuple[int, int]] = []
    complete = False
    with KafkaCluster(spec, run_id=new_run_id("reorder")) as cluster:
        log.info("cluster %s up: %s", cluster.run_id, cluster.bootstrap_servers)
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        state = cluster.state([TOPIC]).partition(TOPIC, 0)
        assert state is not None
        followers = [b for b in state.isr if b != state.leader]
        victim = state.leader if args.isolate == "leader" else followers[0]
        log.info(
            "%s: leader %d, isr %s; isolating kafka-%d (%s)",
            TOPIC,
            state.leader,
            list(state.isr),
            victim,
            args.isolate,
        )
        fault = make_fault("partition", {"shape": "isolate", "target": f"kafka-{victim}"})
        window = FaultWindow(cluster, fault, run, args.fault_at, args.fault_s)
        run.t0 = time.time()
        window.start()
        try:
            produce(cluster.bootstrap_servers, run, args)
        finally:
            window.stopping.set()
            window.join(60)
            window.heal()  # in case the thread could not
        if window.error is not None:
            raise window.error
        try:
            cluster.wait_for_isr([TOPIC], timeout_s=60)
        except ReadinessTimeout as exc:
            log.warning("ISR did not recover: %s", exc)
        records, complete = read_partition(cluster.bootstrap_servers, timeout_s=30)

    findings = analyse(run, records)
    with open(out / "deliveries.jsonl", "w", encoding="utf-8") as f:
        for d in sorted(run.deliveries.values(), key=lambda d: d.value):
            f.write(json.dumps(d.__dict__) + "\n")
    with open(out / "partition.jsonl", "w", encoding="utf-8") as f:
        for offset, value in records:
            f.write(json.dumps({"offset": offset, "value": value}) + "\n")
    (out / "faults.jsonl").write_text("".join(json.dumps(e) + "\n" for e in run.faults), encoding="utf-8")

    client_lines = (out / "librdkafka.log").read_text(encoding="utf-8", errors="replace").splitlines()
    evidence: dict[str, dict[str, Any]] = {}
    for r in findings.reordered[:QUOTED_VALUES]:
        late, early = run.deliveries[r["value"]], run.deliveries[r["earlier_value"]]
        evidence[str(r["value"])] = {
            "value": late.__dict__,
            "earlier_value": early.__dict__,
            "log": log_lines_between(
                client_lines, early.sent_s - 0.02, max(late.done_s, early.done_s) + 0.02
            ),
        }
    overtaken = sorted({r["earlier_value"] for r in findings.reordered})
    summary = {
        "librdkafka": confluent_kafka.libversion()[0],
        "confluent_kafka": confluent_kafka.version()[0],
        "isolate": args.isolate,
        "rate_per_s": args.rate,
        "produce_s": args.produce_s,
        "fault_at_s": args.fault_at,
        "fault_s": args.fault_s,
        "overrides": args.set,
        "sent": run.sent,
        "acked": findings.acked,
        "failed": findings.failed,
        "missing_report": findings.missing_report,
        "read": len(records),
        "read_complete": complete,
        "lost": findings.lost,
        "duplicated": len(findings.duplicated),
        "duplicated_values": {str(v): o for v, o in sorted(findings.duplicated.items())},
        "reordered": len(findings.reordered),
        "reordered_values": findings.reordered,
        "overtaken_values": overtaken,
        "faults": run.faults,
        "evidence": evidence,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    log.info(
        "RESULT isolate=%s sent=%d acked=%d failed=%d read=%d complete=%s lost=%d duplicated=%d reordered=%d",
        args.isolate,
        run.sent,
        findings.acked,
        findings.failed,
        len(records),
        complete,
        len(findings.lost),
        len(findings.duplicated),
        len(findings.reordered),
    )
    for r in findings.reordered[:QUOTED_VALUES]:
        log.info(
            "reordered: value %d acked at offset %d, below earlier value %d at %d "
            "(read at %s; earlier read at %s)",
            r["value"],
            r["offset"],
            r["earlier_value"],
            r["earlier_offset"],
            r["read_at"],
            r["earlier_read_at"],
        )
    return 1 if findings.reordered else 0


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--isolate", choices=("follower", "leader"), default="follower")
    parser.add_argument("--rate", type=float, default=100.0, help="writes per second (one partition)")
    parser.add_argument("--produce-s", type=float, default=45.0, help="seconds of producing (at most 75)")
    parser.add_argument("--fault-at", type=float, default=8.0, help="seconds into producing")
    parser.add_argument("--fault-s", type=float, default=20.0, help="how long the broker stays cut off")
    parser.add_argument("--debug", default=DEBUG, help="librdkafka debug contexts")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a producer setting (e.g. retries=0, request.timeout.ms=30000); repeatable",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if any("=" not in item for item in args.set):
        parser.error("--set takes KEY=VALUE")
    args.set = dict(item.split("=", 1) for item in args.set)
    if not (0 < args.produce_s <= 75 and 0 < args.rate <= 2000 and 0 <= args.fault_at < args.produce_s):
        parser.error("need 0 < --produce-s <= 75, 0 < --rate <= 2000, 0 <= --fault-at < --produce-s")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out: Path = args.out or ROOT / "runs" / f"reorder-{stamp}-{args.isolate}"
    out.mkdir(parents=True, exist_ok=False)
    run = Run()
    handlers = _setup_logging(out, run)
    signal.signal(signal.SIGTERM, _sigterm)
    log.info("output in %s; librdkafka %s", out, confluent_kafka.libversion()[0])
    try:
        return run_once(args, out, run)
    except KeyboardInterrupt:
        log.warning("interrupted; the cluster was removed")
        return 130
    except Exception:
        log.exception("the run could not be made")
        return 2
    finally:
        for handler in handlers:
            handler.close()


if __name__ == "__main__":
    sys.exit(main())
