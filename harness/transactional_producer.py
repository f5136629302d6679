"""The `transactional-producer` role of a workload process (docs/CLIENTS.md): writes in transactions,
each committed or aborted as a whole, and records every step of them in history/transactions.jsonl
(docs/HISTORY_FORMAT.md).

A transaction drawn for abort first waits until its records are acknowledged (flush), then aborts:
its records are in the log, with an abort marker after them, which is what read_committed readers
must skip. A seeded share of the aborts (`early_abort_rate`) aborts at once instead, before the
client sent anything (librdkafka purges what it holds: nothing reaches the log).

The librdkafka transaction API as it is documented: `init_transactions` once per client, then per
transaction `begin_transaction`, the writes (recorded in writes.jsonl with their `txn`), and
`commit_transaction` or `abort_transaction`. A failed call is classed the way the client says to
treat it: `retriable` (call it again), `abortable` (`txn_requires_abort`: abort, then go on) or
`fatal` (anything else: the client is unusable; a new one with the same transactional.id is
created and initialized, which fences the old one and aborts what it left open).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException, Producer

from contract.errors import ConfigError
from contract.events import txn_step
from contract.history import RunClock
from contract.limits import brief
from harness.process_protocol import EventSink, ProcessSpec
from harness.producer import MAX_WAIT_S, AcksProducer, paced_wait_s
from harness.recorder import Recorder

MAX_ATTEMPTS = 3
"""Calls of one step before the client is given up as fatal (a new one fences it)."""
FENCED = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
"""The coordinator refused the producer's epoch: the call definitely did nothing."""


MAX_TXN_RECORDS = 1000
MAX_TXN_TOPICS = 16
MAX_PIPELINES = 16
MAX_HOLD_MS = 60_000
TRANSACTION_FIELDS = (
    "producers",
    "topics",
    "records",
    "abort_rate",
    "early_abort_rate",
    "transaction_timeout_ms",
    "call_timeout_ms",
    "on_commit_timeout",
    "hold_ms",
    "pipelines",
    "rewind_on_abort",
)
"""A scenario's `workload.transactions` fields, as TransactionSpec names them."""
COMMIT_TIMEOUT_ACTIONS = ("retry", "abort")

COMMIT, ABORT, EARLY_ABORT = "commit", "abort", "early-abort"
"""How a transaction is drawn to end: committed, aborted once its records are acknowledged, or
aborted before they were sent."""
ABORT_REASONS = {ABORT: "drawn", EARLY_ABORT: "drawn-early"}
"""An `abort` step's `reason` for a drawn abort; `failure` for one that a failed step forced."""


@dataclass(frozen=True)
class TransactionSpec:
    """What the transactional producers of a workload do: `producers` processes, each writing
    transactions of `records` (min, max) writes spread over `topics`' partitions, aborting
    `abort_rate` of them on purpose."""

    producers: int = 1
    topics: int = 2
    records: tuple[int, int] = (1, 10)
    abort_rate: float = 0.1
    early_abort_rate: float = 0.1
    """Of the aborts, the share made at once, before the records were sent (none reaches the log),
    rather than after they were acknowledged. A few keep the client's purge path exercised (where
    librdkafka's abort raced its own AddPartitionsToTxn: docs/FINDINGS.md); the rest put aborted
    records in the log, which read_committed readers must skip."""
    transaction_timeout_ms: int = 10_000
    """Short, so that a transaction left open by a dead client is aborted within the run."""
    call_timeout_ms: int = 10_000
    """How long one init, offsets, commit or abort call may block; a call that times out is retriable."""
    on_commit_timeout: str = "retry"
    """What the application does when a commit times out: `retry` it, or `abort` the transaction and
    go on (what lets an EndTxn still on its way land on the next transaction: KAFKA-17754)."""
    hold_ms: int = 0
    """How long a transaction stays open after its last write before it is committed or aborted:
    the window in which a read_uncommitted reader sees what may yet be aborted."""
    rewind_on_abort: bool = True
    """A pipeline seeks its consumer back to the group's committed offsets after a transaction that
    did not commit; false: it goes on from where it read (KAFKA-17582: the client does not rewind)."""
    pipelines: int = 0
    """Consume-transform-produce processes (`harness.pipeline`) reading what these producers commit,
    each transaction at most `records[1]` records."""

    def __post_init__(self) -> None:
        if self.on_commit_timeout not in COMMIT_TIMEOUT_ACTIONS:
            choices, got = " or ".join(COMMIT_TIMEOUT_ACTIONS), brief(self.on_commit_timeout)
            raise ConfigError(f"workload.transactions.on_commit_timeout: expected {choices}, got {got}")

    def recorded(self) -> dict[str, Any]:
        """A transactional topic's `transactions` in run.json."""
        return {
            "records": list(self.records),
            "abort_rate": self.abort_rate,
            "early_abort_rate": self.early_abort_rate,
        }


def draw_ending(rng: random.Random, spec: TransactionSpec) -> str:
    """How the next transaction is to end: COMMIT, ABORT or EARLY_ABORT, drawn from `rng`."""
    if rng.random() >= spec.abort_rate:
        return COMMIT
    return EARLY_ABORT if rng.random() < spec.early_abort_rate else ABORT


@dataclass(frozen=True, kw_only=True)
class TransactionalSpec(ProcessSpec):
    """What every transactional process is started with."""

    transactional_id: str
    partitions: int
    transactions: TransactionSpec
    seed: int
    """What its transactions' sizes and endings are drawn from (with its process name)."""


@dataclass(frozen=True, kw_only=True)
class TransactionalProducerSpec(TransactionalSpec):
    """A `transactional-producer` process: transactions across `topics`, as `transactions` says."""

    role: ClassVar[str] = "transactional-producer"
    topics: list[str]
    rate_per_s: float = 0.0
    message_size: int = 0


def error_class(error: KafkaError) -> str:
    """How the client says to treat a failed transaction call."""
    if error.retriable():
        return "retriable"
    if error.txn_requires_abort():
        return "abortable"
    return "fatal"


class TransactionalProducer(AcksProducer):
    """Writes unique values in transactions across `topics` (each with `partitions`) until stopped.

    A transaction in progress when the process is stopped is still finished (committed, or aborted
    as drawn)."""

    def __init__(
        self,
        process: str,
        transactional_id: str,
        topics: Sequence[str],
        partitions: int,
        transactions: TransactionSpec,
        client_config: Mapping[str, Any],
        writer: EventSink,
        steps: EventSink,
        clock: RunClock,
        seed: int,
        rate_per_s: float = 0.0,
        message_size: int = 0,
    ) -> None:
        # librdkafka refuses a write that may outlive its transaction.
        message_timeout_ms = min(
            int(client_config.get("message.timeout.ms", 300_000)), transactions.transaction_timeout_ms
        )
        config = {
            **client_config,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": transactions.transaction_timeout_ms,
            "message.timeout.ms": message_timeout_ms,
        }
        super().__init__(
            process, topics[0], partitions, "all", config, writer, clock, rate_per_s, message_size
        )
        self.transactional_id, self.spec = transactional_id, transactions
        self._targets = [(t, p) for p in range(partitions) for t in topics]
        self._recorders = {
            t: Recorder(process, t, self.retries, writer, clock, transactional=True) for t in topics
        }
        self._steps, self._clock = steps, clock
        self._rng = random.Random(f"{seed}:{process}")
        self._thawed = threading.Event()
        self._thawed.set()

    def freeze(self) -> None:
        """Hold the next transaction open once its records are written, committing nothing, until
        `thaw`: a zombie once held past transaction.timeout.ms (the coordinator aborts it and bumps
        the epoch). The client's own threads go on: this is the application stalling, not the
        process."""
        self._thawed.clear()

    def thaw(self) -> None:
        self._thawed.set()

    def _while_frozen(self) -> None:
        while not self._thawed.wait(MAX_WAIT_S) and not self._stop.is_set():
            pass

    def _step(
        self, kind: str, txn: int | None, phase: str | None, error: KafkaError | None = None, **fields: Any
    ) -> None:
        self._steps.write(
            txn_step(
                kind,
                self._clock.now_ns(),
                self.process,
                self.transactional_id,
                txn,
                phase=phase,
                error=error.name() if error is not None else None,
                error_class=error_class(error) if error is not None else None,
                **fields,
            )
        )

    def _call(
        self,
        kind: str,
        txn: int | None,
        call: Callable[[], object],
        attempts: int = MAX_ATTEMPTS,
        **fields: Any,
    ) -> str:
        """Invoke a transaction call, retried while the client calls its failure retriable, up to
        `attempts` calls; record each (with `fields`). Returns `ok`, `abortable`, `fatal` or
        `retriable` (the attempts ran out)."""
        for _ in range(attempts):
            self._step(kind, txn, "invoke", **fields)
            try:
                call()
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                klass = error_class(error)
                # Refused (fenced, or told to abort) is definite; a timeout or a lost answer is not.
                definite = error.code() in FENCED or klass == "abortable"
                self._step(kind, txn, "fail" if definite else "info", error, **fields)
                if klass != "retriable":
                    return klass
                continue
            self._step(kind, txn, "ok", **fields)
            return "ok"
        return "retriable"

    def _client(self) -> Producer:
        """A new client with the process's transactional.id, initialized (fencing any older one)."""
        while True:
            producer = self._producer = Producer(self.config)
            init = partial(producer.init_transactions, self.spec.call_timeout_ms / 1000)
            if self._call("init", None, init) == "ok":
                return producer
            if self._stop.is_set():
                raise _Stopped
            producer.poll(1.0)  # the coordinator may be down: a pause before the next client

    def run(self) -> None:
        producer: Producer | None = self._started()
        sequence = txn = 0
        next_send = time.monotonic()
        low, high = self.spec.records
        while producer is not None and not self._stop.is_set():
            size, ending = self._rng.randint(low, high), draw_ending(self._rng, self.spec)
            try:
                producer.begin_transaction()
            except KafkaException:
                producer = self._replaced()
                continue
            self._step("begin", txn, None)
            for _ in range(size):
                while self._interval_s and (delay_s := next_send - time.monotonic()) > 0:
                    producer.poll(paced_wait_s(delay_s))
                next_send += self._interval_s
                topic, partition = self._targets[sequence % len(self._targets)]
                self._send(producer, sequence, topic, partition, txn)
                sequence += 1
                producer.poll(0)
            self._while_frozen()
            self._hold(producer)
            outcome = self._finish(producer, txn, ending)
            txn += 1
            if outcome == "fatal":
                producer = self._replaced()

    def _hold(self, producer: Producer) -> None:
        """Keep the transaction open `hold_ms` (its writes go out meanwhile), unless stopping."""
        until = time.monotonic() + self.spec.hold_ms / 1000
        while (left := until - time.monotonic()) > 0 and not self._stop.is_set():
            producer.poll(paced_wait_s(left))

    def _finish(self, producer: Producer, txn: int, ending: str, failed: bool = False) -> str:
        """End transaction `txn` as drawn (`ending`), or abort it when a step of it `failed`; an
        abortable failure of its commit is aborted. Returns `committed`, `aborted` or `fatal`
        (neither known: the client is to be replaced)."""
        timeout_s = self.spec.call_timeout_ms / 1000
        if ending == COMMIT and not failed:
            # After a commit that timed out, retry it (the default) or abort (`on_commit_timeout`).
            attempts = 1 if self.spec.on_commit_timeout == "abort" else MAX_ATTEMPTS
            outcome = self._call("commit", txn, partial(producer.commit_transaction, timeout_s), attempts)
            if outcome == "ok":
                return "committed"
            if outcome == "fatal" or (outcome == "retriable" and attempts > 1):
                return "fatal"
        if ending == ABORT:
            # Its records acknowledged first: in the log, where the abort marker must hide them.
            producer.flush(timeout_s)
        reason = ABORT_REASONS.get(ending, "failure")
        aborted = self._call("abort", txn, partial(producer.abort_transaction, timeout_s), reason=reason)
        return "aborted" if aborted == "ok" else "fatal"

    def _replaced(self) -> Producer | None:
        """After a fatal error: a new client (its init fences the old one), or None when stopping."""
        old = self._producer
        if old is not None:
            # Its queued writes complete now, as unknown; a client in a fatal state may refuse.
            with contextlib.suppress(KafkaException):
                old.purge()
                old.flush(0)
        return self._started()

    def _started(self) -> Producer | None:
        """An initialized client, or None when stopped before one could be initialized."""
        try:
            return self._client()
        except _Stopped:
            return None


class _Stopped(Exception):
    """The process was stopped while it had no initialized client."""
