"""Waiting on a condition with a timeout whose error says what was seen (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable

from contract.errors import ReadinessTimeout

Probe = Callable[[], tuple[bool, str]]
"""Returns (condition holds, description of the state seen)."""


def wait_until(
    probe: Probe,
    *,
    what: str,
    timeout_s: float,
    interval_s: float = 0.25,
    diagnostics: Callable[[], str] | None = None,
) -> str:
    """Poll `probe` until it holds; return the last state description.

    On timeout raise ReadinessTimeout naming `what`, the last state seen and `diagnostics()`
    (typically recent container logs). A probe that can tell the wait is hopeless (a container
    exited) raises instead of returning False.
    """
    deadline = time.monotonic() + timeout_s
    seen = "nothing observed yet"
    while True:
        ok, seen = probe()
        if ok:
            return seen
        if time.monotonic() >= deadline:
            extra = f"\n{diagnostics()}" if diagnostics else ""
            raise ReadinessTimeout(
                f"timed out after {timeout_s:.0f} s waiting for {what}; last seen: {seen}{extra}"
            )
        time.sleep(interval_s)
