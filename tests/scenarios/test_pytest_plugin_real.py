"""The pytest plugin's fixtures on a real cluster, each in a pytest session of its own that the
test ends with SIGTERM, as a CI runner's cancel does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contract.history import READS, RESULT, RUN_JSON, WRITES
from harness import docker_env
from harness.waiting import wait_until

pytestmark = [pytest.mark.docker, pytest.mark.spark]

CHILD_TESTS = {
    "kchaos_workload": """
import pathlib, time

def test_holds_a_workload(kchaos_workload):
    pathlib.Path("in-the-test").write_text(kchaos_workload.cluster.run_id)
    time.sleep(600)  # until the parent's SIGTERM
""",
    "chaos_run": """
import pathlib

def test_runs_a_scenario(chaos_run):
    pathlib.Path("in-the-test").touch()  # the run's id is its directory's name
    chaos_run("baseline", duration_s=600, report=False)  # until the parent's SIGTERM
""",
}


@pytest.mark.parametrize("fixture", sorted(CHILD_TESTS))
def test_sigterm_ends_the_session_with_the_history_complete_and_nothing_left(
    fixture: str, tmp_path: Path
) -> None:
    (tmp_path / "test_child.py").write_text(CHILD_TESTS[fixture])
    base = tmp_path / "child-tmp"  # the child's tmp_path, so its run directory, is under it
    child = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--basetemp={base}",
        "test_child.py",
    ]
    process = subprocess.Popen(
        child,
        cwd=tmp_path,  # its own rootdir: the plugin's fixtures (the editable install's entry point) only
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
    )

    def acknowledged() -> tuple[bool, str]:
        if process.poll() is not None:
            raise AssertionError(f"the child session ended by itself:\n{process.communicate()[0][-3000:]}")
        # In the test's body: pytest 9 fails its own tmp_path teardown (KeyError) when an
        # interrupt comes during a fixture's setup, which is not what this test is about.
        if not (tmp_path / "in-the-test").exists():
            return False, "the child's fixtures are still being set up"
        writes = list(base.glob(f"**/{WRITES}"))
        oks = writes[0].read_text().count('"type":"ok"') if writes else 0
        return oks > 0, f"{oks} acknowledged writes in {writes or 'no history yet'}"

    try:
        wait_until(acknowledged, what=f"the child's {fixture} to have writes acknowledged", timeout_s=240)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=240)
    finally:
        if process.poll() is None:  # the test failed before the child ended: end it as intended first
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
        # The child's runs only: another run on this machine is none of this test's business.
        marker = tmp_path / "in-the-test"
        run_ids = {path.parents[1].name for path in base.glob(f"**/{WRITES}")}
        if marker.exists() and marker.read_text():
            run_ids.add(marker.read_text())  # kchaos_cluster's, which names no run directory
        left = [run for run_id in sorted(run_ids) for run in docker_env.labelled_runs(run_id)]
        for run in left:
            docker_env.remove_run(run)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert "KeyboardInterrupt" in output, output[-3000:]
    (rundir,) = {path.parents[1] for path in base.glob(f"**/{WRITES}")}
    # The teardown ran in full: the final read recorded where it ended, then the cluster went.
    reads = [json.loads(line) for line in (rundir / READS).read_text().splitlines()]
    assert any(r["type"] == "end" and r["phase"] == "final" for r in reads), output[-3000:]
    if fixture == "chaos_run":  # checked what it recorded, as `kchaos run` does on Ctrl-C
        assert json.loads((rundir / RUN_JSON).read_text())["interrupted"] is True
        assert (rundir / RESULT).is_file(), output[-3000:]
    assert not left, f"left {[run.describe() for run in left]}"
