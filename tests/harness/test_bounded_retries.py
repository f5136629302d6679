"""Waits with a bound, on pure logic: retries that stop after their attempts or their time, and
ZooKeeper reads that fail in time saying what they saw."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from docker.errors import NotFound
from engine_errors import api_error
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.handlers.threading import SequentialThreadingHandler

from contract.errors import ClusterError, ConfigError
from harness.retrying import bounded, kinds, transient_docker_error
from harness.zkstate import ZkStateReader


# -- bounded retries ------------------------------------------------------------------------------------
def failing(error: BaseException) -> tuple[Callable[[], None], list[int]]:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise error

    return call, calls


def test_retry_stops_after_its_attempts_and_reraises_the_last_error() -> None:
    call, calls = failing(ConfigError("last seen: 2 of 3 brokers"))
    sleeps: list[float] = []
    retrying = bounded(kinds(ConfigError), attempts=3, within_s=60, wait_s=5, sleep=sleeps.append)
    with pytest.raises(ConfigError, match="last seen: 2 of 3 brokers"):
        retrying(call)
    assert len(calls) == 3 and sleeps == [5, 5]


def test_retry_stops_at_its_time_bound_whatever_the_attempts_left() -> None:
    call, calls = failing(ConfigError("x"))
    with pytest.raises(ConfigError):
        bounded(kinds(ConfigError), attempts=1000, within_s=0, wait_s=0, sleep=lambda _s: None)(call)
    assert len(calls) == 1


def test_retry_leaves_other_errors_alone_and_returns_a_success() -> None:
    call, calls = failing(KeyError("not retried"))
    with pytest.raises(KeyError):
        bounded(kinds(ConfigError), attempts=3, within_s=60, wait_s=0)(call)
    assert len(calls) == 1
    results = iter([ConfigError("first"), "ok"])

    def flaky() -> str:
        result = next(results)
        if isinstance(result, Exception):
            raise result
        return result

    assert bounded(kinds(ConfigError), attempts=3, within_s=60, wait_s=0)(flaky) == "ok"


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (api_error(500), True),
        (api_error(409), True),  # e.g. "removal of container ... is already in progress"
        (api_error(400), False),
        (NotFound("no such container"), False),
        (requests.exceptions.ConnectionError("engine restarting"), True),
        (requests.exceptions.ReadTimeout("read timed out"), True),
        (ValueError("ours"), False),
    ],
)
def test_which_docker_errors_are_worth_another_try(error: BaseException, transient: bool) -> None:
    assert transient_docker_error(error) is transient


# -- ZooKeeper reads with a bound -------------------------------------------------------------------------
class FakeKazoo:
    """A kazoo client whose requests are answered (or not) as scripted; never connects anywhere."""

    def __init__(self, answers: list[BaseException | Any | None], state: str = "CONNECTED") -> None:
        self.handler = SequentialThreadingHandler()
        self.answers, self.state, self.requests = answers, state, 0

    def get_children_async(self, path: str) -> Any:
        self.requests += 1
        result = self.handler.async_result()
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, BaseException):
            result.set_exception(answer)
        elif answer is not None:
            result.set(answer)
        return result  # no answer: like a request queued on a suspended session


def reader_with(fake: FakeKazoo, request_timeout_s: float) -> ZkStateReader:
    reader = ZkStateReader("127.0.0.1:2181", request_timeout_s=request_timeout_s)  # never started
    reader._zk = fake
    return reader


def test_a_read_on_a_silent_zookeeper_fails_in_time_saying_what_it_saw() -> None:
    reader = reader_with(FakeKazoo([], state="SUSPENDED"), request_timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(ClusterError) as info:
        reader.live_brokers()
    assert time.monotonic() - started < 2
    assert str(info.value) == (
        "ZooKeeper 127.0.0.1:2181 did not answer a read of /brokers/ids within 0.3 s; "
        "last seen: session SUSPENDED, KazooTimeoutError"
    )


def test_a_read_is_asked_again_after_a_lost_connection() -> None:
    fake = FakeKazoo([ConnectionLoss(), ConnectionLoss(), ["2", "1"]])
    assert reader_with(fake, request_timeout_s=10).live_brokers() == (1, 2)
    assert fake.requests == 3


def test_a_read_is_asked_again_after_its_session_expired() -> None:
    # ZooKeeper paused past the session timeout: kazoo opens a new session, the read goes on in it.
    fake = FakeKazoo([SessionExpiredError(), ["3"]])
    assert reader_with(fake, request_timeout_s=10).live_brokers() == (3,)
    assert fake.requests == 2
