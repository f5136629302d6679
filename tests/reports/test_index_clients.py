"""The index page compares client libraries side by side like Kafka releases: a scenario's runs on
librdkafka and on the Java client get a column each in its guarantees table, headed by the client,
and every run's row names its client (a mixed run both)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report_runs import make_failing, make_passing
from reportpage import parse

from reports import write_index
from reports.index import client_label

LIBRDKAFKA = {"library": "librdkafka", "version": "2.16.0", "python": "2.16.1"}
JAVA = {"library": "kafka-clients", "version": "4.1.1", "java": 'openjdk version "17.0.15"'}


def _written_by(run: Path, client: dict[str, str]) -> Path:
    data = json.loads((run / "run.json").read_text())
    for topic in data["topics"]:
        topic["client"] = client
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_a_run_names_the_clients_of_its_parts_else_the_runs() -> None:
    run: dict[str, Any] = {"client": LIBRDKAFKA, "topics": [{"name": "t"}]}
    assert client_label(run) == "librdkafka 2.16.0"  # made before clients were recorded per part
    run["topics"][0]["client"] = JAVA
    assert client_label(run) == "kafka-clients 4.1.1"
    run["groups"] = [{"name": "g", "client": LIBRDKAFKA}]
    assert client_label(run) == "kafka-clients 4.1.1 + librdkafka 2.16.0"
    assert client_label({}) == "client not recorded"


def test_the_index_tables_a_scenarios_guarantees_by_client(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _written_by(make_passing(runs / "n1-leader-kill", "2026-11-19T02:00:00Z"), LIBRDKAFKA)
    _written_by(make_failing(runs / "n2-leader-kill", "2026-11-20T02:00:00Z"), JAVA)
    _written_by(make_passing(runs / "n3-leader-kill", "2026-11-21T02:00:00Z"), JAVA)

    page = parse(write_index(runs).read_text(encoding="utf-8"))
    assert len(page.find("table", "releases")) == 1  # one release, two clients: compared
    heads = [
        " ".join(" ".join(th.text).split()) for th in page.find("th") if "".join(th.text).startswith("Kafka ")
    ]
    assert heads == ["Kafka 0.9.0.1 kafka-clients 4.1.1", "Kafka 0.9.0.1 librdkafka 2.16.0"]
    cells = {
        td.attrs["data-client"]: " ".join("".join(td.text).split())
        for td in page.find("td", data_guarantee="no-phantom-writes")
    }
    assert cells == {
        "kafka-clients 4.1.1": "violated 1 held 1 seed 7, seed 7",  # worst first
        "librdkafka 2.16.0": "held 1 seed 7",
    }
    named = [" ".join(td.text).strip() for td in page.find("td", "client")]
    assert named == ["kafka-clients 4.1.1", "kafka-clients 4.1.1", "librdkafka 2.16.0"]  # newest first


def test_one_client_and_one_release_make_no_table(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _written_by(make_passing(runs / "n1-leader-kill", "2026-11-19T02:00:00Z"), JAVA)
    _written_by(make_failing(runs / "n2-leader-kill", "2026-11-20T02:00:00Z"), JAVA)
    page = parse(write_index(runs).read_text(encoding="utf-8"))
    assert page.find("table", "releases") == []
