"""A service's verbs against a fake container: a pause the cgroup freezer gave up on is tried again, a
lasting failure names the verb, the node and the engine's words, and a crash is never repeated."""

from __future__ import annotations

from typing import Any

import pytest
from engine_errors import api_error

from contract.errors import ClusterError
from harness.services import Node

FREEZE_FAILED = "Cannot pause container x: OCI runtime pause failed: unable to freeze: unknown"


class BusyContainer:
    """Fails each verb `failures` times with the engine's freeze error, then does it."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[str] = []

    def _verb(self, name: str) -> None:
        self.calls.append(name)
        if len(self.calls) <= self.failures:
            raise api_error(500, FREEZE_FAILED)

    def pause(self) -> None:
        self._verb("pause")

    def unpause(self) -> None:
        self._verb("unpause")

    def kill(self, **_: Any) -> None:
        self._verb("kill")


def node_on(container: BusyContainer) -> Node:
    node = Node.__new__(Node)  # no engine: the verbs only need a name and a container
    node.name, node._container = "kafka-3", container
    return node


def test_a_pause_the_freezer_gave_up_on_is_tried_again() -> None:
    container = BusyContainer(failures=1)
    node_on(container).pause()
    assert container.calls == ["pause", "pause"]


def test_a_freezer_that_keeps_failing_is_reported_with_the_engines_words() -> None:
    container = BusyContainer(failures=99)
    with pytest.raises(ClusterError, match=r"^cannot pause kafka-3: .*unable to freeze"):
        node_on(container).pause()
    assert container.calls == ["pause"] * 3


def test_a_kill_is_not_repeated_after_an_engine_error() -> None:
    container = BusyContainer(failures=1)
    with pytest.raises(ClusterError, match=r"^cannot kill kafka-3"):
        node_on(container).kill()
    assert container.calls == ["kill"]
