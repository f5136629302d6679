"""Minimal reproduction: librdkafka's send_offsets_to_transaction outlives its timeout, for good,
when the group coordinator's broker is killed (librdkafka #5456, #5511).

A transactional producer commits transactions of one record plus the offsets of a consumer group
(`send_offsets_to_transaction(..., --timeout-s)`), in a thread, without pause. Meanwhile the
program kills the group's coordinator (`docker kill` of its broker's container), keeps it down
for --down-s, starts it again (`docker start`) and waits --between-s, --kills times. A call still
running --grace-s past its own timeout is a hang: the program prints librdkafka's lines since that
call began (debug eos,broker,protocol; its own timestamps) and exits 1 without waiting for it. It
exits 0 when every call returned, 2 on bad input.

    .venv/bin/kchaos cluster up --kafka 3.9.2 --brokers 3      # prints the run id and bootstrap
    .venv/bin/python scripts/txn_offsets_hang_repro.py 172.18.0.101:9092 RUN_ID-kafka- --kills 6

CONTAINER_PREFIX + the broker id names the broker's container (kchaos names them RUN_ID-kafka-N).
librdkafka writes its log to stderr when no logger is set: the program points stderr at --log
while the producer runs. Standalone (confluent-kafka and the docker CLI), so it can be posted
upstream.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

TOPIC = "offsets-hang"
GROUP = "offsets-hang"
OFFSETS_TOPIC = "__consumer_offsets"
CALL_LINES = (
    "COORD",
    "ADDOFFSETS",
    "TXNOFFSET",
    "FINDCOORD",
    "DECOMM",
    "TERMINATE",
    "BRKTERM",
    "Sent ",
    "Received ",
)
"""librdkafka's lines worth printing during a hang: coordinators, requests, broker handles."""


class Transactions(threading.Thread):
    """Commits transactions of one record and the group's offsets until told to stop; says when
    the current send_offsets_to_transaction call began (None between calls). A retriable error
    retries the same call, an abortable one aborts, a fatal one replaces the producer."""

    def __init__(self, bootstrap: str, timeout_s: float) -> None:
        super().__init__(daemon=True)  # a hung call must not keep the program alive
        self.bootstrap, self.timeout_s = bootstrap, timeout_s
        self.call_started: float | None = None
        self.committed = 0
        self.errors: Counter[str] = Counter()
        self.stopping = threading.Event()

    def new_producer(self) -> Producer:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "transactional.id": GROUP, "debug": "eos,broker,protocol"}
        )
        producer.init_transactions(60)
        return producer

    def run(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP})
        producer, offset = self.new_producer(), 0
        while not self.stopping.is_set():
            producer.begin_transaction()
            producer.produce(TOPIC, b"x", partition=0)
            offset += 1
            offsets = [TopicPartition(TOPIC, 0, offset)]
            self.call_started = time.time()
            metadata = consumer.consumer_group_metadata()
            send = functools.partial(producer.send_offsets_to_transaction, offsets, metadata, self.timeout_s)
            sent = self.attempt(send)
            self.call_started = None
            commit = functools.partial(producer.commit_transaction, 60)
            outcome = self.attempt(commit) if sent == "ok" else sent
            if outcome == "ok":
                self.committed += 1
            elif outcome == "abort":
                with contextlib.suppress(KafkaException):  # what state it left, begin says next
                    producer.abort_transaction(60)
            else:
                producer = self.new_producer()

    def attempt(self, call: Callable[[], object]) -> str:
        """`call` until it returns ("ok") or fails other than retriably ("abort", "fatal")."""
        while True:
            try:
                call()
                return "ok"
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                self.errors[error.name()] += 1
                if error.fatal():
                    return "fatal"
                if error.txn_requires_abort() or not error.retriable():
                    return "abort"
                time.sleep(0.5)


def group_coordinator(admin: AdminClient) -> int:
    """The group's coordinator: the leader of its __consumer_offsets partition (Kafka's choice:
    the group id's Java hashCode, made non-negative, modulo the partitions), asked of the metadata
    until it names a live leader (it moves while a broker is down)."""
    hashed = 0
    for char in GROUP:
        hashed = (31 * hashed + ord(char)) & 0xFFFFFFFF
    deadline = time.time() + 120
    while True:
        topic = admin.list_topics(OFFSETS_TOPIC, timeout=30).topics.get(OFFSETS_TOPIC)
        if topic is not None and topic.partitions:
            leader = topic.partitions[(hashed & 0x7FFFFFFF) % len(topic.partitions)].leader
            if leader >= 0:
                return int(leader)
        if time.time() > deadline:
            raise RuntimeError(f"{OFFSETS_TOPIC} has no leader for group {GROUP} after 120 s")
        time.sleep(1)


def docker(*args: str) -> None:
    subprocess.run(["docker", *args], check=True, capture_output=True, timeout=120)


def hung(worker: Transactions, args: argparse.Namespace) -> bool:
    started = worker.call_started
    return started is not None and time.time() - started > args.timeout_s + args.grace_s


def run(args: argparse.Namespace) -> int:
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 3, 3)]).values():
        try:
            future.result(30)
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
    saved_stderr = os.dup(2)
    log_file = args.log.open("w")
    os.dup2(log_file.fileno(), 2)
    worker = Transactions(args.bootstrap, args.timeout_s)
    worker.start()
    try:  # stderr stays on the log while a stuck producer may still write to it
        for kill in range(1, args.kills + 1):
            time.sleep(args.between_s)
            broker = group_coordinator(admin)
            docker("kill", f"{args.container_prefix}{broker}")
            print(f"{time.strftime('%H:%M:%S')} kill {kill}: broker {broker}, the group's coordinator")
            time.sleep(args.down_s)
            docker("start", f"{args.container_prefix}{broker}")
            deadline = time.time() + args.timeout_s + args.grace_s
            while time.time() < deadline and not hung(worker, args):
                time.sleep(1)
            if hung(worker, args):
                break
        if not hung(worker, args):
            worker.stopping.set()
            worker.join(120)
    except BaseException:
        os.dup2(saved_stderr, 2)
        raise
    if not hung(worker, args):
        os.dup2(saved_stderr, 2)
        print(
            f"no hang in {args.kills} kills: {worker.committed} transactions committed; "
            f"errors {dict(worker.errors)}"
        )
        return 0
    started = worker.call_started or 0.0
    print(
        f"HANG: send_offsets_to_transaction(..., {args.timeout_s:g} s) called at "
        f"{time.strftime('%H:%M:%S', time.localtime(started))} has not returned after "
        f"{time.time() - started:.0f} s ({worker.committed} transactions committed before it; "
        f"errors {dict(worker.errors)})"
    )
    print_since(args.log, started)
    sys.stdout.flush()
    os._exit(1)  # the worker thread is stuck inside librdkafka: do not wait for it


def print_since(log_path: Path, started: float) -> None:
    """librdkafka's lines of interest since `started`, the repeated ones counted."""
    shown: dict[str, int] = {}
    for line in log_path.open(errors="replace"):
        fields = line.split("|")
        if len(fields) < 5 or not any(key in line for key in CALL_LINES):
            continue
        try:
            if float(fields[1]) < started:
                continue
        except ValueError:
            continue
        message = fields[4].strip()
        shown[message] = shown.get(message, 0) + 1
        if shown[message] <= 2:
            print("  " + line.rstrip("\n"))
    for message, count in shown.items():
        if count > 2:
            print(f"  ({count} times) {message}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap", help="host:port of a broker (kchaos cluster up prints it)")
    parser.add_argument(
        "container_prefix", help="the brokers' container names less their id, e.g. RUN_ID-kafka-"
    )
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--down-s", type=float, default=10.0)
    parser.add_argument("--between-s", type=float, default=5.0)
    parser.add_argument("--timeout-s", type=float, default=10.0, help="send_offsets_to_transaction's timeout")
    parser.add_argument("--grace-s", type=float, default=60.0, help="past the timeout, a call is hung")
    parser.add_argument("--log", type=Path, default=Path("txn-offsets-hang.log"))
    args = parser.parse_args()
    if min(args.kills, args.down_s, args.timeout_s, args.grace_s) <= 0 or args.between_s < 0:
        parser.error(
            "--kills, --down-s, --timeout-s and --grace-s must be positive, --between-s not negative"
        )
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
