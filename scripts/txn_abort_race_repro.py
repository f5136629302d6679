"""Minimal reproduction: librdkafka ends an abort right after a commit with a fatal INVALID_TXN_STATE.

No faults, one broker. In a loop: commit a transaction of one record, begin another, write to three
partitions (or, with --via offsets, send offsets to the transaction), and abort at once (or after
--wait-ms, or after flush() with --flush). Now and then `abort_transaction` raises a fatal error
("Failed to end transaction: ... invalid state"), and the producer must be replaced. Stops by
itself after --seconds or --aborts.

    .venv/bin/kchaos cluster up --kafka 3.9.2 --brokers 1     # prints the bootstrap address
    .venv/bin/python scripts/txn_abort_race_repro.py 172.18.0.101:9092 --seconds 60

It prints one line per failed abort, the count of fatal aborts over all aborts, the aborts that
sent an EndTxn sorted by what was known of the transaction's registration then, and librdkafka's
transaction lines (debug eos,protocol,broker; librdkafka's own timestamps) around the first fatal
abort. librdkafka writes its log to stderr when no logger is set: the program points stderr at
--log while the producers run, and reads it back. `--analyse` reads a kept log again without a
broker. Exit 1 when a fatal abort was seen, 0 when none was, 2 on bad input. Standalone
(confluent-kafka only), so it can be posted upstream.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

TOPIC = "abort-race"
TXN_ID = "abort-race"
TXN_LINE = re.compile(
    r"ADDPARTS|ADDOFFSETS|ENDTXN|TXNABORT|TXNCOMMIT|TXNSTATE|TXNERR"
    r"|(Sent|Received) (AddPartitionsToTxn|AddOffsetsToTxn|EndTxn|TxnOffsetCommit|InitProducerId)"
)
"""librdkafka's log lines about the transaction (its facilities, and the protocol's requests)."""
FATAL = "Fatal transaction error"
OFFSETS_ADDED = re.compile(r"AddOffsetsToTxn response from [^:]*: NO_ERROR")


def new_producer(bootstrap: str) -> Producer:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": TXN_ID, "debug": "eos,protocol,broker"}
    )
    producer.init_transactions(30)
    return producer


def abort_right_after_commit(
    producer: Producer, args: argparse.Namespace, consumer: Consumer | None
) -> KafkaError | None:
    """One round: commit a transaction, begin the next, add partitions or offsets, abort."""
    producer.begin_transaction()
    producer.produce(TOPIC, b"committed", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    if consumer is not None:
        offsets = [TopicPartition(TOPIC, 0, 0)]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
    else:
        for partition in range(3):
            producer.produce(TOPIC, b"aborted", partition=partition)
    time.sleep(args.wait_ms / 1000)
    if args.flush:
        producer.flush(30)
    try:
        producer.abort_transaction(30)
    except KafkaException as error:
        kafka_error: KafkaError = error.args[0]  # not the exception: its traceback holds the producer
        return kafka_error
    return None


def run(args: argparse.Namespace) -> int:
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 3, 1)]).values():
        try:
            future.result(30)
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
    consumer = None
    if args.via == "offsets":
        consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": TXN_ID})
    saved_stderr = os.dup(2)
    with args.log.open("w") as log_file:
        os.dup2(log_file.fileno(), 2)
        try:
            aborts, fatal, other = 0, 0, 0
            producer = new_producer(args.bootstrap)
            t0 = time.time()
            while time.time() - t0 < args.seconds and aborts < args.aborts:
                failure = abort_right_after_commit(producer, args, consumer)
                aborts += 1
                if failure is None:
                    continue
                print(f"{time.time() - t0:7.3f} s abort {aborts}: {failure}")
                if not failure.fatal():
                    other += 1
                    continue
                fatal += 1
                producer = new_producer(args.bootstrap)  # the failed one is destroyed here
            del producer  # destroyed while stderr still goes to the log
        finally:
            os.dup2(saved_stderr, 2)
    print(f"fatal aborts: {fatal} of {aborts} in {time.time() - t0:.1f} s ({other} other errors)")
    analyse(args.log)
    return 1 if fatal else 0


def analyse(log_path: Path) -> bool:
    """Print the aborts that sent EndTxn by cause, and the first fatal abort's lines; True if any."""
    lines = [line.rstrip("\n") for line in log_path.open(errors="replace") if TXN_LINE.search(line)]
    print_aborts_by_cause(lines)
    if not any(FATAL in line for line in lines):
        return False
    print_first_fatal(lines, log_path)
    return True


def print_aborts_by_cause(lines: list[str]) -> None:
    """Each abort that sent EndTxn(ABORT), by what was known of the registration when it went out.

    A transaction runs, per producer instance, from `Ready -> InTransaction` to the next `-> Ready`
    or fatal error. registered: a partition was registered ("... registered with transaction"),
    or the offsets were (AddOffsetsToTxn answered NO_ERROR).
    in flight: nothing registered, and an AddPartitionsToTxn answer came after the EndTxn had
    gone out ("Ignoring outdated ... in state AbortingTransaction"). refused: nothing registered,
    nothing in flight, the last answer CONCURRENT_TRANSACTIONS (its request count put back).
    """
    open_txns: dict[str, list[str]] = {}
    causes: Counter[tuple[str, bool]] = Counter()
    for line in lines:
        fields = line.split("|")
        instance = fields[3] if len(fields) > 4 else ""
        if "Ready -> InTransaction" in line:
            open_txns[instance] = []
        txn = open_txns.get(instance)
        if txn is None:
            continue
        txn.append(line)
        if "-> Ready" not in line and FATAL not in line:
            continue
        text = "\n".join(open_txns.pop(instance))
        if "BeginAbort -> AbortingTransaction" not in text:
            continue
        if "registered with transaction" in text or OFFSETS_ADDED.search(text):
            cause = "registered"
        elif "Ignoring outdated AddPartitionsToTxn response in state AbortingTransaction" in text:
            cause = "in flight"
        elif "AddPartitionsToTxn response: partition" in text:
            cause = "refused"
        else:
            cause = "other"
        causes[(cause, FATAL in text)] += 1
    print("aborts that sent EndTxn(ABORT), by the transaction's registration then:")
    for cause in ("registered", "in flight", "refused", "other"):
        fatal, total = causes[(cause, True)], causes[(cause, True)] + causes[(cause, False)]
        if total:
            print(f"  {cause:10}  {fatal} fatal of {total}")


def print_first_fatal(lines: list[str], log_path: Path) -> None:
    """librdkafka's transaction lines from the last commit before the first fatal abort."""
    fatal_at = next(i for i, line in enumerate(lines) if FATAL in line)
    commits = [i for i in range(fatal_at) if "Committed transaction now acked" in lines[i]]
    start = commits[-1] if commits else max(0, fatal_at - 40)
    print(f"\nlibrdkafka's transaction lines before the first fatal abort ({log_path}):")
    for line in lines[start : fatal_at + 1]:
        print("  " + line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap", nargs="?", help="host:port of a broker (kchaos cluster up prints it)")
    parser.add_argument("--via", choices=("produce", "offsets"), default="produce")
    parser.add_argument("--wait-ms", type=float, default=0.0, help="between the writes and the abort")
    parser.add_argument("--flush", action="store_true", help="flush() before abort_transaction()")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--aborts", type=int, default=100_000, help="stop after this many aborts")
    parser.add_argument("--log", type=Path, default=Path("txn-abort-race.log"))
    parser.add_argument("--analyse", action="store_true", help="only read --log again")
    args = parser.parse_args()
    if args.analyse:
        if not args.log.is_file():
            parser.error(f"--log {args.log}: no such file")
        return 1 if analyse(args.log) else 0
    if args.bootstrap is None:
        parser.error("the bootstrap address is required (or --analyse)")
    if args.seconds <= 0 or args.aborts <= 0 or args.wait_ms < 0:
        parser.error("--seconds and --aborts must be positive, --wait-ms not negative")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
