"""What a producer's client logs goes to the harness log and, with its process, to client.jsonl."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from contract.history import HistoryWriter, RunClock
from contract.history_readers import iter_client_lines
from harness.client_log import ClientLog

FORMAT = "%s [%s] %s"  # how confluent-kafka calls a client's logger
DEPRECATION = "Configuration property api.version.request is deprecated: ..."


def test_client_lines_are_forwarded_and_recorded_with_their_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    forward = logging.getLogger("test.librdkafka")
    with HistoryWriter(tmp_path / "history/client.jsonl", tmp_path) as writer, caplog.at_level(logging.INFO):
        log = ClientLog("p-all-0", writer, RunClock(), forward)
        log.log(logging.INFO, FORMAT, "REQTMOUT", "rdkafka#producer-1", "[thrd:10.0.0.2:9092/2]: Timed out")
        log.log(
            logging.WARNING,
            FORMAT,
            "CONFWARN",
            "rdkafka#producer-1",
            "[thrd:app]: " + DEPRECATION,
        )
    lines = [line for _, line in iter_client_lines(tmp_path)]
    assert [(line["process"], line["level"], line["facility"], line["message"]) for line in lines] == [
        ("p-all-0", "info", "REQTMOUT", "Timed out")  # the deprecation we chose is left out
    ]
    assert 0 <= lines[0]["time_ns"] < 10**10
    assert [r.getMessage() for r in caplog.records if r.name == "test.librdkafka"] == [
        "REQTMOUT [rdkafka#producer-1] [thrd:10.0.0.2:9092/2]: Timed out",
        "CONFWARN [rdkafka#producer-1] [thrd:app]: " + DEPRECATION,
    ]


def test_a_line_logged_after_the_history_closed_goes_to_the_harness_log_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = HistoryWriter(tmp_path / "client.jsonl")
    log = ClientLog("p-1-0", writer, RunClock(), logging.getLogger("test.librdkafka"))
    writer.close()
    with caplog.at_level(logging.INFO):
        log.log(logging.INFO, FORMAT, "DESTROY", "rdkafka#producer-1", "Terminating instance")
    assert (tmp_path / "client.jsonl").read_text() == ""
    assert [r.getMessage() for r in caplog.records] == ["DESTROY [rdkafka#producer-1] Terminating instance"]
