"""The pytest plugin's fixtures on a real cluster, in a pytest session of their own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness import docker_env
from harness.waiting import wait_until

pytestmark = pytest.mark.docker

CHILD_TEST = """
import os, pathlib, time

def test_holds_a_workload(kchaos_workload):
    up = pathlib.Path(os.environ["KCHAOS_TEST_UP"])
    up.write_text(f"{kchaos_workload.cluster.run_id} {kchaos_workload.rundir.root}")
    time.sleep(600)  # until the parent's SIGTERM
"""


def test_sigterm_to_a_session_unwinds_the_workload_and_the_cluster(tmp_path: Path) -> None:
    (tmp_path / "test_child.py").write_text(CHILD_TEST)
    up = tmp_path / "up.txt"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_child.py"],
        cwd=tmp_path,  # its own rootdir: only the plugin's fixtures, none of this suite's
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "KCHAOS_TEST_UP": str(up)},
    )

    def acknowledged() -> tuple[bool, str]:
        if process.poll() is not None:
            raise AssertionError(f"the child session ended by itself:\n{process.communicate()[0][-3000:]}")
        if not up.is_file():
            return False, "the kchaos_workload fixture not set up yet"
        writes = Path(up.read_text().split(" ", 1)[1]) / "history/writes.jsonl"
        oks = writes.read_text().count('"type":"ok"') if writes.is_file() else 0
        return oks > 0, f"{oks} acknowledged writes in {writes}"

    try:
        wait_until(acknowledged, what="the child's workload to have writes acknowledged", timeout_s=240)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    run_id, root = up.read_text().split(" ", 1)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt: signal 15" in output, output[-3000:]
    # The teardown ran in full: the final read recorded where it ended, then the cluster went.
    reads = [json.loads(line) for line in (Path(root) / "history/reads.jsonl").read_text().splitlines()]
    assert any(r["type"] == "end" and r["phase"] == "final" for r in reads), output[-3000:]
    left = docker_env.labelled_runs(run_id)
    assert not left, f"run {run_id} left {left[0].describe()}"
