"""One Spark session per process, whichever thread starts it: a run starts it in the background."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

STARTED_IN_THE_BACKGROUND = textwrap.dedent(
    """
    import signal, threading
    from checkers import session
    session.start_in_background(None, history_bytes=1000)
    session.start_in_background(None, history_bytes=1000)  # one is under way: no second start
    [starter] = [t for t in threading.enumerate() if t.name == "kchaos-spark-start"]
    starter.join(timeout=120)
    assert not starter.is_alive(), "the background start did not end in 120 s"
    started = session._session
    assert started is not None, "the background start left no session"
    spark = session.get_spark()  # from the main thread, which has no active session of its own
    session.start_in_background(None, history_bytes=1000)  # it runs: nothing to start
    starts = sum(t.name == "kchaos-spark-start" for t in threading.enumerate())
    print(spark is started, spark.range(3).count(), signal.getsignal(signal.SIGINT).func.__name__, starts)
    """
)


def test_a_session_started_in_the_background_is_the_one_the_main_thread_gets() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STARTED_IN_THE_BACKGROUND], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # The same session, working, and Ctrl-C cancels its jobs (set once the main thread asked for it);
    # asked again while it starts or runs, nothing more is started.
    assert done.stdout.split() == ["True", "3", "_cancel_and_interrupt", "0"]
