"""Turn SIGTERM into KeyboardInterrupt, so `with` blocks heal faults and remove containers."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

terminated = threading.Event()
"""Set once a SIGTERM arrived under `terminate_as_interrupt`: what went on after its interrupt (as
`kchaos run` goes on to check what it recorded) can still end (the pytest plugin ends a session)."""


def _interrupt(signum: int, frame: FrameType | None) -> None:
    terminated.set()
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
