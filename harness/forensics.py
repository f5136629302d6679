"""Forensics kept before a cluster is removed: what each replica holds (history/replicas.jsonl) and
each broker's own log files (RUN/logs/kafka-N/), read from the containers' file systems.

A container's files are read through the Docker archive API, which works whether the broker runs,
was killed or stopped, so a run that ends in any way can still say what each replica held. What
cannot be read is said in run.json's `replicas` (and the check goes on without it).
"""

from __future__ import annotations

import io
import logging
import tarfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePosixPath
from typing import IO, Any

from contract.errors import ClusterError, HarnessError
from contract.events import replica_state, replica_values
from contract.history import NODE_LOGS, REPLICAS, RunDir, write_atomic
from harness.broker_config import DATA_DIR, KAFKA_LOG_DIR
from harness.replica_logs import (
    CHECKPOINTS,
    PARTITION_DIR,
    SegmentContents,
    read_checkpoint,
    read_segment,
    segment_order,
)
from harness.services import KafkaBroker, KafkaProcess

log = logging.getLogger("kchaos")
VALUES_PER_LINE = 10_000
BYTES_PER_LINE = 1 << 20
BROKER_LOG_FILES = ("server.log", "state-change.log", "controller.log")
"""The broker's log4j files kept in RUN/logs/kafka-N/: truncations, elections and ISR changes."""


class _ChunkReader(io.RawIOBase):
    """A file over an iterator of byte chunks (the Docker archive stream), for tarfile's stream mode."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = chunk
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size


def _archive(broker: KafkaProcess, path: str) -> tarfile.TarFile:
    try:
        chunks = broker.archive(path)
    except ClusterError as exc:
        raise HarnessError(f"cannot read {path} of {broker.name}: {exc}") from None
    stream: IO[bytes] = io.BufferedReader(_ChunkReader(chunks), buffer_size=1 << 20)
    return tarfile.open(fileobj=stream, mode="r|")


def _partitions_of(
    archive: tarfile.TarFile, topics: set[str]
) -> Iterator[tuple[str, tuple[str, int] | None, dict[str, bytes]]]:
    """(directory name, its workload partition or None, file name -> bytes) for each directory of the
    archive whose files matter: checkpoints at the top, segments of the workload topics' partitions.
    Docker's archive lists a directory's files together, so one partition is in memory at a time."""
    current: str | None = None
    files: dict[str, bytes] = {}
    for member in archive:
        parts = PurePosixPath(member.name).parts[1:]  # the archive's first part is the directory itself
        if not parts:
            continue  # the directory itself
        folder, name = ("", parts[0]) if len(parts) == 1 else ("/".join(parts[:-1]), parts[-1])
        if folder != current:
            if current is not None:
                yield current, _workload_partition(current, topics), files
            current, files = folder, {}
        wanted = (folder == "" and name in CHECKPOINTS) or (
            _workload_partition(folder, topics) is not None and name.endswith(".log")
        )
        if member.isfile() and wanted:
            extracted = archive.extractfile(member)
            if extracted is not None:
                files[name] = extracted.read()
    if current is not None:
        yield current, _workload_partition(current, topics), files


def _workload_partition(folder: str, topics: set[str]) -> tuple[str, int] | None:
    match = PARTITION_DIR.fullmatch(folder)
    if match is None or match["topic"] not in topics:
        return None
    return match["topic"], int(match["partition"])


def read_broker(broker: KafkaBroker, topics: set[str], write: Callable[[dict[str, Any]], None]) -> int:
    """Write the replica lines of every workload partition `broker` holds; return how many."""
    checkpoints: dict[str, dict[tuple[str, int], int]] = {}
    replicas: dict[tuple[str, int], SegmentContents] = {}
    with _archive(broker, DATA_DIR) as archive:
        for folder, partition, files in _partitions_of(archive, topics):
            if folder == "":
                for name, what in CHECKPOINTS.items():
                    if name in files:
                        checkpoints[what] = read_checkpoint(files[name].decode())
            elif partition is not None:
                contents = SegmentContents()
                for name in segment_order(list(files)):
                    read_segment(files[name], contents)
                replicas[partition] = contents
    for (topic, number), contents in sorted(replicas.items()):
        marks = {what: checkpoints.get(what, {}).get((topic, number)) for what in CHECKPOINTS.values()}
        write(replica_state(broker.broker_id, topic, number, contents, **marks))
        if contents.unreadable:
            why = ", ".join(f"{n} {reason}" for reason, n in sorted(contents.why_unreadable.items()))
            log.warning(
                "%s %s-%d: %d records not read: %s", broker.name, topic, number, contents.unreadable, why
            )
        for offset, values in value_runs(contents):
            write(replica_values(broker.broker_id, topic, number, offset, values))
    return len(replicas)


def value_runs(contents: SegmentContents) -> Iterator[tuple[int, list[str | None]]]:
    """Values in lines of consecutive offsets, at most VALUES_PER_LINE values and about
    BYTES_PER_LINE characters each (readers take lines of a few MiB at most)."""
    start, size = 0, 0
    offsets, values = contents.offsets, contents.values
    for i in range(1, len(offsets) + 1):
        size += len(values[i - 1] or "")
        if (
            i == len(offsets)
            or offsets[i] != offsets[i - 1] + 1
            or i - start == VALUES_PER_LINE
            or size >= BYTES_PER_LINE
        ):
            yield offsets[start], values[start:i]
            start, size = i, 0


def broker_log_files(broker: KafkaProcess) -> Iterator[tuple[str, bytes]]:
    """A Kafka process's log4j files (BROKER_LOG_FILES: server, state change, controller), name and
    content: a broker's, or a dedicated KRaft controller's."""
    with _archive(broker, KAFKA_LOG_DIR) as archive:
        for member in archive:
            name = PurePosixPath(member.name).name
            extracted = archive.extractfile(member) if member.isfile() and name in BROKER_LOG_FILES else None
            if extracted is not None:
                yield name, extracted.read()


def keep_broker_logs(broker: KafkaProcess, rundir: RunDir) -> None:
    """Copy a Kafka process's log4j files to RUN/logs/<node>/ (kafka-N, or controller-N)."""
    for name, content in broker_log_files(broker):
        write_atomic(rundir.root, f"{NODE_LOGS}/{broker.name}/{name}", content)


def collect(brokers: Iterable[KafkaBroker], rundir: RunDir, topics: Iterable[str]) -> dict[str, Any]:
    """Write history/replicas.jsonl and keep the brokers' log files; return run.json's `replicas`:
    which brokers were read, and why any was not."""
    wanted = set(topics)
    read: dict[str, int] = {}
    missing: dict[str, str] = {}
    with rundir.writer(REPLICAS) as writer:
        for broker in brokers:
            try:
                read[broker.name] = read_broker(broker, wanted, writer.write)
                keep_broker_logs(broker, rundir)
            except (HarnessError, OSError, tarfile.TarError, ValueError) as exc:
                missing[broker.name] = str(exc)
                log.warning("could not read %s's replicas: %s", broker.name, exc)
    summary: dict[str, Any] = {"collected": not missing, "partitions_read": read}
    if missing:
        summary["not_read"] = missing
    return summary
