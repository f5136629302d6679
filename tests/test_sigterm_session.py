"""SIGTERM ends a pytest session even when a test goes on after its interrupt, as one that calls
`kchaos run` in process does (it checks what it recorded): the plugin stops the session after that
test. A child pytest session, no Docker."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD_TESTS = """
import os, signal, time
from pathlib import Path

from kchaos.signals import terminate_as_interrupt


def test_goes_on_after_the_interrupt():
    with terminate_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        except KeyboardInterrupt:
            pass  # what `kchaos run` does: checks and reports what it recorded, returns 130


def test_after_it():
    Path(os.environ["KCHAOS_TEST_MARKER"]).write_text("ran")
"""


def test_a_sigterm_a_test_went_on_after_ends_the_session_after_that_test(tmp_path: Path) -> None:
    (tmp_path / "test_child.py").write_text(textwrap.dedent(CHILD_TESTS))
    marker = tmp_path / "after-it-ran"
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_child.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KCHAOS_TEST_MARKER": str(marker)},
        cwd=tmp_path,
    )
    said = child.stdout + child.stderr
    assert child.returncode == 2, said  # interrupted
    assert "SIGTERM: the session ends after the test it interrupted" in said
    assert "1 passed" in said and not marker.exists()
