"""Unit tests of the cluster foundation that need no Docker engine.

Broker config rendering and override checks per Kafka version, the history writer and readers
(including a writer SIGKILLed mid-stream), and reading a Kafka distribution's version and config keys.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from harness.app.cluster_cli import parse_overrides
from harness.app.console import make_console
from harness.broker_config import (
    BROKER_PORT,
    KafkaVersion,
    render_broker_config,
    render_zookeeper_config,
    validate_overrides,
)
from harness.errors import ConfigError, HistoryError
from harness.groups import GroupSpec
from harness.history import FORMAT, HistoryWriter, RunDir, iter_jsonl, load_run_json
from harness.images import KafkaDistribution
from harness.waiting import wait_until
from harness.workload import WorkloadSpec

IP = "172.28.0.101"
ZKS = ["172.28.0.11"]
KNOWN_09 = [
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "num.network.threads",
    "replica.lag.time.max.ms",
    "auto.create.topics.enable",
    "broker.id",
]


def properties(text: str) -> dict[str, str]:
    assert text.endswith("\n")
    pairs = [line.split("=", 1) for line in text.splitlines()]
    assert all(len(pair) == 2 for pair in pairs), text
    result = dict((key, value) for key, value in pairs)
    assert len(result) == len(pairs), f"a key is rendered twice:\n{text}"
    return result


# -- broker config --------------------------------------------------------------------------------
def test_render_09_uses_advertised_host_name() -> None:
    props = properties(render_broker_config(KafkaVersion.parse("0.9.0.1"), 2, IP, ZKS, 3, {}))
    assert props["broker.id"] == "2"
    assert props["advertised.host.name"] == IP
    assert props["port"] == props["advertised.port"] == str(BROKER_PORT)
    assert "listeners" not in props and "advertised.listeners" not in props
    assert props["zookeeper.connect"] == f"{ZKS[0]}:2181"
    assert props["auto.create.topics.enable"] == "false"
    assert props["offsets.topic.replication.factor"] == "3"
    # Settings that 0.9 does not know must not be rendered for it.
    assert "group.initial.rebalance.delay.ms" not in props
    assert "transaction.state.log.replication.factor" not in props


@pytest.mark.parametrize("version", ["2.8.2", "3.6.1"])
def test_render_newer_uses_listeners(version: str) -> None:
    props = properties(render_broker_config(KafkaVersion.parse(version), 1, IP, ZKS * 3, 1, {}))
    assert props["listeners"] == f"PLAINTEXT://0.0.0.0:{BROKER_PORT}"
    assert props["advertised.listeners"] == f"PLAINTEXT://{IP}:{BROKER_PORT}"
    for old in ("advertised.host.name", "advertised.port", "port"):
        assert old not in props
    # Internal topics cannot ask for more replicas than there are brokers.
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"


def test_render_applies_overrides_last_with_kafka_booleans() -> None:
    overrides = {"min.insync.replicas": 2, "unclean.leader.election.enable": False, "num.partitions": 6}
    props = properties(render_broker_config(KafkaVersion.parse("0.9.0.1"), 1, IP, ZKS, 3, overrides))
    assert props["min.insync.replicas"] == "2"
    assert props["unclean.leader.election.enable"] == "false"
    assert props["num.partitions"] == "6"  # replaces the harness default of 1


def test_render_zookeeper_ensemble() -> None:
    single = render_zookeeper_config(ZKS)
    assert "clientPort=2181" in single and "server." not in single
    ensemble = render_zookeeper_config(["10.0.0.11", "10.0.0.12", "10.0.0.13"])
    assert "server.1=10.0.0.11:2888:3888" in ensemble
    assert "server.3=10.0.0.13:2888:3888" in ensemble


@pytest.mark.parametrize(
    ("version", "unclean_default", "listeners"),
    [
        ("0.9.0.1", True, False),
        ("0.10.1.1", True, False),
        ("0.10.2.0", True, True),
        ("0.11.0.3", False, True),
        ("2.8.2", False, True),
        ("3.6.1", False, True),
    ],
)
def test_version_defaults(version: str, unclean_default: bool, listeners: bool) -> None:
    parsed = KafkaVersion.parse(version)
    assert parsed.unclean_election_default is unclean_default
    assert parsed.uses_listeners is listeners
    assert str(parsed) == version


def test_version_parse() -> None:
    assert KafkaVersion.parse("3.6.1").parts == (3, 6, 1)
    assert KafkaVersion.parse("2.8.0-SNAPSHOT").parts == (2, 8, 0)
    assert KafkaVersion.parse("0.9.0.1") < KafkaVersion.parse("0.10.0.0")
    with pytest.raises(ConfigError, match="cannot read a Kafka version from 'abc'"):
        KafkaVersion.parse("abc")


def test_validate_overrides_accepts_good_values() -> None:
    validate_overrides(
        {
            "min.insync.replicas": 2,
            "unclean.leader.election.enable": "false",
            "auto.create.topics.enable": True,
            "num.network.threads": "abc",
        },
        KNOWN_09,
        "0.9.0.1",
    )


def test_validate_overrides_typo_names_key_and_suggests() -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({"min.insync.replica": 2}, KNOWN_09, "0.9.0.1")
    message = str(info.value)
    assert "'min.insync.replica'" in message
    assert "not a Kafka 0.9.0.1 broker setting" in message
    assert "did you mean 'min.insync.replicas'?" in message


def test_validate_overrides_unknown_key_without_close_match() -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({"zzz.qqq": 1}, KNOWN_09, "0.9.0.1")
    assert "'zzz.qqq'" in str(info.value) and "did you mean" not in str(info.value)


def test_validate_overrides_without_known_keys_only_checks_types() -> None:
    validate_overrides({"anything.goes": 1}, [], "9.9")
    with pytest.raises(ConfigError, match=r"'min\.insync\.replicas' must be an integer"):
        validate_overrides({"min.insync.replicas": "two"}, [], "9.9")


@pytest.mark.parametrize(
    "key", ["broker.id", "zookeeper.connect", "advertised.host.name", "listeners", "log.dirs"]
)
def test_validate_overrides_rejects_managed_keys(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({key: "1"}, [*KNOWN_09, key], "0.9.0.1")
    assert f"{key!r} is set by kafka-chaos" in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"min.insync.replicas": "abc"}, "'min.insync.replicas' must be an integer, got 'abc'"),
        ({"replica.lag.time.max.ms": "10s"}, "'replica.lag.time.max.ms' must be an integer"),
        ({"unclean.leader.election.enable": "yes"}, "'unclean.leader.election.enable' must be true or false"),
        ({"min.insync.replicas": 0}, "'min.insync.replicas' must be at least 1, got 0"),
    ],
)
def test_validate_overrides_rejects_bad_values(overrides: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides(overrides, KNOWN_09, "0.9.0.1")  # type: ignore[arg-type]
    assert expected in str(info.value)


def test_parse_cli_overrides() -> None:
    assert parse_overrides(["min.insync.replicas=2", " a.b = c=d "]) == {
        "min.insync.replicas": "2",
        "a.b": "c=d",
    }
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_overrides(["min.insync.replicas"])


# -- history ---------------------------------------------------------------------------------------
def test_history_writer_lines_complete_after_close(tmp_path: Path) -> None:
    path = tmp_path / "history" / "writes.jsonl"
    events = [{"i": i, "value": f"v-{i}", "nested": {"ok": True}} for i in range(200)]
    with HistoryWriter(path) as writer:
        for event in events[:100]:
            writer.write(event)
    with HistoryWriter(path) as writer:  # reopening appends
        for event in events[100:]:
            writer.write(event)
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    assert [json.loads(line) for line in raw.splitlines()] == events
    assert [obj for _, obj in iter_jsonl(path)] == events
    with pytest.raises(HistoryError, match="already closed"):
        writer.write({"late": 1})


def test_history_writer_threads_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    with HistoryWriter(path) as writer:

        def work(thread: int) -> None:
            for i in range(300):
                writer.write({"thread": thread, "i": i, "pad": "x" * (i % 50)})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 1200
    seen = {(obj["thread"], obj["i"]) for obj in map(json.loads, lines)}
    assert len(seen) == 1200


_WRITER_CHILD = """
import sys
from pathlib import Path
from harness.history import HistoryWriter
writer = HistoryWriter(Path(sys.argv[1]))
i = 0
while True:
    writer.write({"i": i, "payload": "p" * (i % 4000)})
    i += 1
"""


def test_history_writer_survives_sigkill_mid_stream(tmp_path: Path) -> None:
    path = tmp_path / "history" / "writes.jsonl"
    child = subprocess.Popen([sys.executable, "-c", _WRITER_CHILD, str(path)])
    try:
        wait_until(
            lambda: (path.is_file() and path.stat().st_size > 2_000_000, "file still small"),
            what="the child to write 2 MB",
            timeout_s=30,
            interval_s=0.05,
        )
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    raw = path.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1].splitlines()
    # Linux may cut a multi-page write short on SIGKILL: only the very last line may be torn.
    numbers = [json.loads(line)["i"] for line in complete]  # every complete line parses
    assert len(numbers) > 900 and numbers == list(range(len(numbers)))  # in order, none lost
    assert [obj["i"] for _, obj in iter_jsonl(path)] == numbers  # readers skip only a torn tail


def test_iter_jsonl_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "faults.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n{"a": 4}\n')
    with pytest.raises(HistoryError) as info:
        list(iter_jsonl(path))
    assert info.value.path == str(path) and info.value.line == 4
    assert str(info.value).startswith(f"{path}:4: malformed JSON")

    path.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(HistoryError, match=r"faults\.jsonl:2: expected a JSON object"):
        list(iter_jsonl(path))


def test_iter_jsonl_torn_last_line_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "cluster.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b"')
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (2, {"a": 2})]
    path.write_text('{"a": 1}\n{"a": 2}')  # complete but without its newline: still read
    assert [obj["a"] for _, obj in iter_jsonl(path)] == [1, 2]
    missing = tmp_path / "nope.jsonl"
    assert list(iter_jsonl(missing, required=False)) == []
    with pytest.raises(HistoryError, match=r"nope\.jsonl: missing history file"):
        list(iter_jsonl(missing))


def test_load_run_json_errors(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="run directory does not exist"):
        load_run_json(tmp_path / "absent")
    with pytest.raises(HistoryError, match=r"run\.json: missing run\.json"):
        load_run_json(tmp_path)
    (tmp_path / "run.json").write_text('{\n  "format": 1,\n  "topics": [\n')
    with pytest.raises(HistoryError) as info:
        load_run_json(tmp_path)
    assert "not valid JSON" in str(info.value) and info.value.line is not None
    assert info.value.path == str(tmp_path / "run.json")
    (tmp_path / "run.json").write_text(json.dumps({"format": 99, "topics": [{"name": "t", "acks": "all"}]}))
    with pytest.raises(HistoryError, match="unknown format 99; this kafka-chaos reads format 1"):
        load_run_json(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"format": FORMAT, "topics": [{"name": "t", "acks": "2"}]}))
    with pytest.raises(HistoryError, match=r"field 'topics\[0\]\.acks': expected one of 0, 1, all, got '2'"):
        load_run_json(tmp_path)


def test_run_json_round_trip(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.write_run_json({"topics": [{"name": "t", "acks": "all"}], "seed": 7})
    loaded = run.load_run_json()
    assert loaded["format"] == FORMAT and loaded["seed"] == 7
    assert not list(run.root.glob("*.tmp"))


# -- Kafka distributions ----------------------------------------------------------------------------
def fake_dist(root: Path, jars: list[str]) -> Path:
    (root / "libs").mkdir(parents=True)
    for jar in jars:
        (root / "libs" / jar).write_bytes(b"PK\x03\x04 fake")
    return root


def test_distribution_version_from_kafka_jar(tmp_path: Path) -> None:
    root = fake_dist(
        tmp_path / "kafka_2.13-3.6.1",
        [
            "kafka-clients-3.6.1.jar",
            "kafka_2.13-3.6.1-sources.jar",
            "kafka_2.13-3.6.1.jar",
            "kafka_2.13-3.6.1-test.jar",
            "zookeeper-3.8.3.jar",
        ],
    )
    dist = KafkaDistribution.from_directory(root)
    assert dist.version == "3.6.1"
    assert dist.root == root
    assert KafkaDistribution.locate(root) == dist
    assert dist.config_keys() == []  # no site-docs


def test_distribution_fingerprint_follows_content(tmp_path: Path) -> None:
    root = fake_dist(tmp_path / "k", ["kafka_2.11-0.9.0.1.jar"])
    before = KafkaDistribution.from_directory(root).fingerprint()
    assert KafkaDistribution.from_directory(root).fingerprint() == before
    (root / "libs" / "kafka_2.11-0.9.0.1-javadoc.jar").write_bytes(b"docs")  # docs do not count
    assert KafkaDistribution.from_directory(root).fingerprint() == before
    (root / "extra.txt").write_text("changed")
    assert KafkaDistribution.from_directory(root).fingerprint() != before


def test_distribution_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError) as info:
        KafkaDistribution.from_directory(tmp_path / "empty")
    assert str(tmp_path / "empty") in str(info.value) and "libs/" in str(info.value)
    root = fake_dist(tmp_path / "nokafka", ["kafka-clients-3.6.1.jar"])
    with pytest.raises(ConfigError, match=r"no kafka_<scala>-<version>\.jar found"):
        KafkaDistribution.from_directory(root)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="expected a Kafka release tarball"):
        KafkaDistribution.locate(tmp_path / "notes.txt")


OLD_DOCS = """<table class="data-table">
<tr>
<th>Property</th><th>Default</th><th>Description</th>
</tr>
<tr>
<td>zookeeper.connect</td><td>null</td><td>Zookeeper host string</td>
</tr>
<tr>
<td>min.insync.replicas</td><td>1</td><td>...</td>
</tr>
<tr><td>unclean.leader.election.enable</td><td>true</td><td>...</td></tr>
</table>
"""

NEW_DOCS = """<ul class="config-list">
<li><h4><a id="brokerconfigs_min.insync.replicas"></a><a href="#brokerconfigs_min.insync.replicas">
min.insync.replicas</a></h4><p>When a producer sets acks...</p></li>
<li><h4><a id="brokerconfigs_listeners"></a></h4></li>
<li><h4><a id="topicconfigs_cleanup.policy"></a></h4></li>
</ul>
"""


def test_config_keys_from_09_table(tmp_path: Path) -> None:
    root = fake_dist(tmp_path / "k09", ["kafka_2.11-0.9.0.1.jar"])
    (root / "site-docs").mkdir()
    (root / "site-docs" / "kafka_config.html").write_text(OLD_DOCS)
    keys = KafkaDistribution.from_directory(root).config_keys()
    assert keys == ["min.insync.replicas", "unclean.leader.election.enable", "zookeeper.connect"]


def test_config_keys_from_generated_docs_in_site_docs_tarball(tmp_path: Path) -> None:
    root = fake_dist(tmp_path / "k36", ["kafka_2.13-3.6.1.jar"])
    (root / "site-docs").mkdir()
    data = NEW_DOCS.encode()
    with tarfile.open(root / "site-docs" / "kafka_2.13-3.6.1-site-docs.tgz", "w:gz") as tar:
        member = tarfile.TarInfo("site-docs/generated/kafka_config.html")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    keys = KafkaDistribution.from_directory(root).config_keys()
    assert keys == ["listeners", "min.insync.replicas"]  # topic configs are not broker configs


def test_wait_until_times_out_with_last_state() -> None:
    calls: list[float] = []

    def probe() -> tuple[bool, str]:
        calls.append(time.monotonic())
        return False, f"seen {len(calls)}"

    with pytest.raises(Exception, match=r"waiting for the thing; last seen: seen \d+\nlogs here") as info:
        wait_until(probe, what="the thing", timeout_s=0.3, interval_s=0.05, diagnostics=lambda: "logs here")
    assert type(info.value).__name__ == "ReadinessTimeout"
    assert len(calls) >= 3


def test_console_prints_data_as_it_is() -> None:
    # A line number rich knows as an emoji code, a path that looks like a closing tag and a scenario
    # text that looks like a style: all printed verbatim (once these were an emoji, a crash, nothing).
    console = make_console()
    console.file = io.StringIO()
    text = "writes.jsonl:100: bad in /runs/[/nightly] [bold]x"
    console.print(text)
    assert console.file.getvalue() == text + "\n"


def test_a_workload_narrowed_to_fewer_acks_modes_narrows_its_groups() -> None:
    groups = (
        GroupSpec("g-every", ("chaos-acks-0", "chaos-acks-1", "chaos-acks-all")),
        GroupSpec("g-zero", ("chaos-acks-0",)),
    )
    narrowed = WorkloadSpec(groups=groups).with_acks(("all",))
    assert narrowed.acks == ("all",)
    assert [(g.name, g.topics) for g in narrowed.groups] == [("g-every", ("chaos-acks-all",))]
    with pytest.raises(ConfigError, match=r"group 'g-zero': topics \['chaos-acks-0'\] are not written"):
        WorkloadSpec(acks=("all",), groups=groups[1:])
