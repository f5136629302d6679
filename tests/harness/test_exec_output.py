"""A command run in a container hands back all it wrote: the Docker engine now and then hands over
none of an exec's output (docker-py #2042, moby #27289; seen here in 2 of 100 execs of `echo
hello`, and in a `slow` heal that read `tc qdisc show` as empty and left the qdisc in place), and
`docker_env.exec_run` then reads what the command wrote from a file in the container."""

from __future__ import annotations

import io
import tarfile
from typing import Any, NamedTuple

import pytest

from harness.docker_env import ScratchContainer, exec_run
from harness.images import KafkaImage

EXECS = 100


@pytest.mark.docker
def test_every_exec_hands_back_its_output_and_exit_code(kafka_image: KafkaImage) -> None:
    with ScratchContainer(kafka_image.tag, "exec-output", lifetime_s=300) as container:
        seen = [
            container.exec(["sh", "-c", f"echo hello {n}; exit {n % 3}"], timeout_s=30) for n in range(EXECS)
        ]
        assert seen == [(n % 3, f"hello {n}\n") for n in range(EXECS)]
        assert container.exec(["printf", "no newline"]) == (0, "no newline")
        code, output = container.exec(["sh", "-c", "echo out; echo err >&2; exit 7"])
        assert (code, sorted(output.split())) == (7, ["err", "out"])
        # One file per exec (this one's too), kept for ten minutes in case its output must be read.
        code, listed = container.exec(["sh", "-c", "ls /tmp | grep -c kchaos-exec-"])
        assert code == 0 and int(listed) == EXECS + 3


class _Result(NamedTuple):
    exit_code: int
    output: bytes


class _LosingContainer:
    """A container whose exec hands over no output (as the engine sometimes does) and whose archive
    API holds what the command wrote to its file."""

    def __init__(self, written: bytes) -> None:
        self.written, self.path = written, ""

    def exec_run(self, command: list[str], demux: bool) -> _Result:
        self.path = command[4]  # sh -c SCRIPT sh FILE COMMAND...
        return _Result(3, b"")

    def get_archive(self, path: str) -> tuple[Any, dict[str, Any]]:
        assert path == self.path
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as archive:
            info = tarfile.TarInfo(path.rsplit("/", 1)[1])
            info.size = len(self.written)
            archive.addfile(info, io.BytesIO(self.written))
        return iter([data.getvalue()]), {}


def test_output_the_engine_lost_is_read_from_the_commands_file() -> None:
    container = _LosingContainer(b"qdisc tbf 1: root refcnt 3 rate 2Mbit\n")
    assert exec_run(container, ["tc", "qdisc", "show"], 20) == (3, "qdisc tbf 1: root refcnt 3 rate 2Mbit\n")
    assert container.path.startswith("/tmp/kchaos-exec-")
