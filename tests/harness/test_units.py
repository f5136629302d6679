"""Unit tests of the cluster foundation that need no Docker engine.

The history writer and readers (including a writer SIGKILLed mid-stream), reading a Kafka
distribution's version and config keys, waiting, the console and narrowing a workload.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contract.errors import ConfigError, HistoryError
from contract.history import FORMAT, HistoryWriter, RunDir
from contract.history_readers import iter_jsonl, load_run_json
from harness.groups import GroupSpec
from harness.images import KafkaDistribution, broker_config_keys
from harness.waiting import wait_until
from harness.workload import WorkloadSpec
from kchaos.console import make_console


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
from contract.history import HistoryWriter
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
    loaded = load_run_json(run.root)
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
    assert dist.source == f"directory:{root}"


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
    with pytest.raises(ConfigError, match=r"expected a Kafka release number .*, a release tarball"):
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


def test_config_keys_from_09_table() -> None:
    assert broker_config_keys(OLD_DOCS) == [
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "zookeeper.connect",
    ]


def test_config_keys_from_generated_docs() -> None:
    assert broker_config_keys(NEW_DOCS) == [
        "listeners",
        "min.insync.replicas",
    ]  # topic configs are not broker's


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
