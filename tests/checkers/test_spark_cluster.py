"""`kchaos check --master` on a real Spark standalone cluster: a master and a worker JVM, from the
Spark that pyspark ships, on loopback only."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pyspark
import pytest
from checker_rundirs import acked, all_ends, make_run, record
from pyspark.sql import SparkSession

from contract.history import RESULT
from harness.waiting import wait_until
from kchaos.cli import main

pytestmark = pytest.mark.spark

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
REGISTERED = "Successfully registered with master"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tail(path: Path, lines: int = 20) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return f"--- {path.name}:\n" + "\n".join(text.splitlines()[-lines:])


@pytest.fixture(scope="module")
def spark_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a running standalone master with one registered worker (2 cores, 2 GiB)."""
    root = tmp_path_factory.mktemp("spark-cluster")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root)}
    url = f"spark://127.0.0.1:{_free_port()}"
    roles = {
        "master": ["org.apache.spark.deploy.master.Master", "--port", url.rsplit(":", 1)[1]],
        "worker": [
            *("org.apache.spark.deploy.worker.Worker", "--cores", "2", "--memory", "2g"),
            *("--port", str(_free_port()), "--work-dir", str(root / "work"), url),
        ],
    }
    started: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
    try:
        for role, args in roles.items():
            log: IO[bytes] = (root / f"{role}.log").open("wb")
            command = [str(SPARK_CLASS), args[0], "--host", "127.0.0.1", "--webui-port", str(_free_port())]
            started.append((subprocess.Popen([*command, *args[1:]], stdout=log, stderr=log, env=env), log))
        worker_log = root / "worker.log"
        wait_until(
            lambda: (
                REGISTERED in worker_log.read_text(errors="replace"),
                ", ".join(
                    f"{role} exit code {p.poll()}" for role, (p, _) in zip(roles, started, strict=True)
                ),
            ),
            what="the Spark worker to register with its master",
            timeout_s=120,
            diagnostics=lambda: "\n".join(_tail(root / f"{role}.log") for role in roles),
        )
        yield url
    finally:
        for process, output in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
            output.close()


def _history(root: Path) -> Path:
    """Three acknowledged writes, one of them missing from the complete final read: a lost write."""
    writes = [*acked(100, "p:1", 0), *acked(200, "p:2", 1), *acked(300, "p:3", 2)]
    reads = [record(900, "p:1", 0), record(901, "p:3", 2), *all_ends()]
    return make_run(root, writes, reads)


def test_check_on_a_spark_cluster_finds_what_a_local_check_finds(
    spark: SparkSession, spark_master: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    on_cluster, local = _history(tmp_path / "cluster" / "run"), _history(tmp_path / "local" / "run")
    # Its own process: this one's SparkSession is local.
    checked = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(on_cluster), "--master", spark_master],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert main(["check", str(local)]) == checked.returncode == 1, checked.stdout + checked.stderr
    capfd.readouterr()
    results = [json.loads((run / RESULT).read_text()) for run in (on_cluster, local)]
    assert results[0]["spark"]["master"] == spark_master
    assert results[0]["anomalies"]["lost-write"]["count"] == 1
    for result in results:
        del result["spark"], result["checked_at"]
    assert results[0] == results[1]
