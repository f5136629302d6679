"""The workload process protocol's pure parts (docs/CLIENTS.md): specs that survive the command
line, tagged lines routed to their files with a torn last line dropped, a long log line cut to fit
a pipe, the conductor's counts of what it routed, commands, and how a transaction's ending is drawn."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import orjson
import pytest

from contract.errors import ConfigError
from contract.history import RunClock
from harness.group_member import MemberSpec
from harness.pipeline import PipelineSpec
from harness.process_protocol import (
    CUT,
    PIPE_BUF,
    LineRouter,
    ProcessSpec,
    Routed,
    TaggedLines,
    decode_spec,
    encode_spec,
    route,
)
from harness.producer import AcksProducer, ProducerSpec
from harness.transactional_producer import (
    ABORT,
    COMMIT,
    EARLY_ABORT,
    TransactionalProducer,
    TransactionalProducerSpec,
    TransactionSpec,
    draw_ending,
)
from harness.workload_child import ROLE_SPECS, obey
from harness.workload_process import WriteTally

COMMON: dict[str, Any] = {"origin_ns": 81234567890123, "config": {"bootstrap.servers": "10.0.0.2:9092"}}
TRANSACTIONS = TransactionSpec(producers=2, records=(2, 5), abort_rate=0.3, early_abort_rate=0.25, hold_ms=50)
SPECS: list[ProcessSpec] = [
    ProducerSpec(
        process="p-all-0", topic="chaos-acks-all", partitions=3, acks="all", rate_per_s=200, **COMMON
    ),
    ProducerSpec(process="p-0-1", topic="chaos-acks-0", partitions=1, acks="0", max_writes=5, **COMMON),
    TransactionalProducerSpec(
        process="tx-0",
        transactional_id="kchaos-tx-0",
        topics=["chaos-txn-0", "chaos-txn-1"],
        partitions=3,
        transactions=TRANSACTIONS,
        seed=7,
        message_size=100,
        **COMMON,
    ),
    PipelineSpec(
        process="pipe-0",
        transactional_id="kchaos-pipe-0",
        inputs=["chaos-txn-0"],
        output="chaos-pipe-out",
        partitions=3,
        transactions=TRANSACTIONS,
        consumer_config={"bootstrap.servers": "10.0.0.2:9092", "fetch.wait.max.ms": 100},
        seed=7,
        **COMMON,
    ),
    MemberSpec(
        process="g-alo-1",
        group="g-alo",
        topics=["chaos-acks-all"],
        commit="after-process",
        commit_async=True,
        processing_ms=1.5,
        **COMMON,
    ),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.role)
def test_a_spec_survives_its_trip_through_the_command_line(spec: ProcessSpec) -> None:
    text = encode_spec(spec)
    assert orjson.loads(text)["role"] == spec.role and "\n" not in text
    assert decode_spec(text, ROLE_SPECS) == spec  # nested TransactionSpec and its tuple rebuilt


def test_every_role_of_the_doc_has_a_spec() -> None:
    assert set(ROLE_SPECS) == {"producer", "transactional-producer", "pipeline", "member"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "workload process spec: not JSON"),
        ("[1]", "workload process spec: expected an object, got [1]"),
        (
            '{"role": "consumer"}',
            "workload process spec: role: expected one of producer, transactional-producer, pipeline, "
            "member, got 'consumer'",
        ),
        (
            encode_spec(SPECS[0])[:-1] + ',"linger":5}',
            "workload process spec: unknown field 'linger'",
        ),
        ('{"role": "producer", "process": "p-all-0"}', "workload process spec: missing field 'origin_ns'"),
        (
            encode_spec(SPECS[2]).replace('"abort_rate":0.3', '"abort_rte":0.3'),
            "workload process spec.transactions: unknown field 'abort_rte'",
        ),
    ],
)
def test_a_bad_spec_is_a_config_error_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        decode_spec(text, ROLE_SPECS)
    assert str(raised.value).startswith(message)


def test_lines_go_to_their_files_in_order_consecutive_ones_together() -> None:
    data = (
        b'writes {"type":"invoke"}\n'
        b'writes {"type":"ok"}\n'
        b'client {"message":"a b"}\n'
        b"stray text of no file\n"
        b'writes {"type":"invoke"}\n'
        b'writesx {"type":"x"}\n'
        b"consumes\n"
    )
    assert route(data) == [
        Routed("writes", b'{"type":"invoke"}\n{"type":"ok"}\n'),
        Routed("client", b'{"message":"a b"}\n'),
        Routed(None, b"stray text of no file\n"),
        Routed("writes", b'{"type":"invoke"}\n'),
        Routed(None, b'writesx {"type":"x"}\nconsumes\n'),
    ]
    assert route(b"") == []


def test_a_line_split_across_reads_is_whole_and_a_torn_last_line_is_dropped() -> None:
    stream = b'transactions {"type":"begin","txn":0}\nwrites {"type":"invoke","value":"tx-0:1"}\nwrites {"ty'
    router = LineRouter()
    routed = [batch for cut in range(0, len(stream), 7) for batch in router.feed(stream[cut : cut + 7])]
    assert [(b.tag, b.lines) for b in routed] == [
        ("transactions", b'{"type":"begin","txn":0}\n'),
        ("writes", b'{"type":"invoke","value":"tx-0:1"}\n'),
    ]
    assert router.end() == b'writes {"ty'  # killed mid-write: not an event
    assert router.end() == b""


def test_a_process_writes_tagged_lines_and_cuts_a_long_log_line_to_fit_a_pipe() -> None:
    emitted: list[bytes] = []
    TaggedLines("writes", emitted.append).write_bytes(b'{"type":"invoke"}\n')
    TaggedLines("transactions", emitted.append).write_bytes(b'{"a":1}\n{"b":2}\n')
    client = TaggedLines("client", emitted.append)
    client.write({"process": "tx-0", "message": "short"})
    long_message = "é\u0001" * 3000  # 2 bytes and a 6-byte escape each: far over PIPE_BUF
    client.write({"process": "tx-0", "facility": "TXN", "message": long_message})
    assert emitted[:4] == [
        b'writes {"type":"invoke"}\n',
        b'transactions {"a":1}\n',
        b'transactions {"b":2}\n',
        b'client {"process":"tx-0","message":"short"}\n',
    ]
    cut = emitted[4]
    assert cut.startswith(b"client ") and cut.endswith(b"\n") and len(cut) <= PIPE_BUF
    event = orjson.loads(cut[len(b"client ") :])
    assert event["facility"] == "TXN" and event["message"].endswith(CUT)
    assert long_message.startswith(event["message"].removesuffix(CUT))
    assert len(cut) > PIPE_BUF - 64  # cut to fit, not far below it
    assert not client.closed


def test_the_conductor_counts_writes_and_their_latencies_from_the_lines() -> None:
    tally = WriteTally()
    tally.add(
        b'{"type":"invoke","time_ns":100,"value":"p-1-0:0"}\n'
        b'{"type":"invoke","time_ns":110,"value":"p-1-0:1"}\n'
        b'{"type":"invoke","time_ns":120,"value":"p-1-0:2"}\n'
        b'{"type":"ok","time_ns":150,"value":"p-1-0:0","offset":3}\n'
    )
    tally.add(
        b'{"type":"fail","time_ns":160,"value":"p-1-0:1","error":"X"}\n'
        b'{"type":"info","time_ns":170,"value":"p-1-0:2","error":"Y"}\n'
        b'{"type":"invoke","time_ns":180,"value":"p-1-0:3"}\n'
        b"not json\n"
    )
    counts = tally.counts()
    assert (counts.attempted, counts.acked, counts.failed, counts.indeterminate) == (4, 1, 1, 1)
    assert counts.latencies_ns == [50]


class RecordingRole:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def run(self) -> None:
        self.calls.append("run")

    def stop(self) -> None:
        self.calls.append("stop")


def test_commands_reach_the_role_and_freeze_only_a_transactional_one(
    capfd: pytest.CaptureFixture[str],
) -> None:
    role = RecordingRole()
    obey(role, [b"freeze\n", b"stop\n", b"reboot\n"])
    assert role.calls == ["stop"]
    assert "command b'freeze' ignored" in capfd.readouterr().err
    sink = TaggedLines("writes", lambda line: None)
    producer = TransactionalProducer(
        "tx-0", "kchaos-tx-0", ["t"], 1, TransactionSpec(), {}, sink, sink, RunClock(), 0
    )
    obey(producer, [b"freeze\n"])
    assert not producer._thawed.is_set()
    obey(producer, [b"thaw\n", b"stop\n"])
    assert producer._thawed.is_set() and producer._stop.is_set()
    assert isinstance(producer, AcksProducer)


@pytest.mark.parametrize(
    ("abort_rate", "early_abort_rate", "endings"),
    [
        (0.0, 1.0, {COMMIT}),
        (1.0, 0.0, {ABORT}),
        (1.0, 1.0, {EARLY_ABORT}),
    ],
)
def test_a_transaction_s_ending_follows_its_rates(
    abort_rate: float, early_abort_rate: float, endings: set[str]
) -> None:
    spec = TransactionSpec(abort_rate=abort_rate, early_abort_rate=early_abort_rate)
    rng = random.Random(1)
    assert {draw_ending(rng, spec) for _ in range(200)} == endings


def test_aborts_are_drawn_as_often_as_asked_and_the_same_from_the_same_seed() -> None:
    spec = TransactionSpec(abort_rate=0.2, early_abort_rate=0.1)

    def drawn(seed: str) -> list[str]:
        rng = random.Random(seed)
        return [draw_ending(rng, spec) for _ in range(20_000)]

    endings = Counter(drawn("7:tx-0"))
    assert abs(endings[ABORT] + endings[EARLY_ABORT] - 4000) < 300  # a fifth of the transactions
    assert abs(endings[EARLY_ABORT] - 400) < 80  # a tenth of those, early
    assert drawn("7:tx-0") == drawn("7:tx-0") != drawn("7:tx-1")
