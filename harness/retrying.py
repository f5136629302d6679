"""Bounded retries, with tenacity, of calls to parties that fail now and then: the Docker engine,
ZooKeeper, a fault's heal, a broker's restart.

Every policy stops after a few attempts and within a time bound, and then re-raises the last error
as it was: our errors say what was last seen, so the last one is the one to show.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import requests
from docker.errors import APIError, NotFound
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_fixed

T = TypeVar("T")


def bounded(
    retry_on: Callable[[BaseException], bool],
    *,
    attempts: int,
    within_s: float,
    wait_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Retrying:
    """A policy: retry errors `retry_on` accepts, at most `attempts` times in all and not after
    `within_s` seconds, `wait_s` apart; the last error is re-raised unchanged."""
    return Retrying(
        stop=stop_after_attempt(attempts) | stop_after_delay(within_s),
        wait=wait_fixed(wait_s),
        retry=retry_if_exception(retry_on),
        reraise=True,
        sleep=sleep,
    )


def kinds(*types: type[BaseException]) -> Callable[[BaseException], bool]:
    """`retry_on` for errors of the given types."""
    return lambda exc: isinstance(exc, types)


def transient_docker_error(exc: BaseException) -> bool:
    """A Docker engine hiccup worth another try: a lost or timed-out connection, a server error, or a
    conflict with another operation on the same object still in progress (e.g. a removal)."""
    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        return True
    if isinstance(exc, NotFound) or not isinstance(exc, APIError):
        return False
    return bool(exc.is_server_error()) or exc.status_code == 409


def docker_call(call: Callable[[], T], *, attempts: int = 3, within_s: float = 30.0) -> T:
    """`call` (an idempotent Docker API call), retried on transient engine errors."""
    return bounded(transient_docker_error, attempts=attempts, within_s=within_s, wait_s=1.0)(call)
