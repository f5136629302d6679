"""Bounds on the numbers people and files give us, and the one check that enforces them.

Scenario files, CLI options, fault params and run directories all pass their numbers through
`finite` or `whole`: a NaN, an infinity, a count given as 2.5 or a value beyond its bound is a
ConfigError naming where it came from, never a loop that runs until memory is gone.
"""

from __future__ import annotations

import math

from contract.errors import ConfigError

NS = 1_000_000_000
MAX_DURATION_S = 7 * 24 * 3600
"""The longest experiment (and the longest single fault or gap in a schedule): a week."""
MAX_RUN_NS = (MAX_DURATION_S + 24 * 3600) * NS
"""The latest run time in a history: the longest duration plus a day of setup, heal and final read."""
MAX_SEED = 2**63 - 1
MAX_INT64 = 2**63 - 1
MAX_PRODUCERS = 64
"""Producer processes per acks mode (and live consumers): each is a process of its own."""
MAX_PARTITIONS = 10_000
MAX_RATE = 1_000_000.0
"""Writes per second per producer process."""
MAX_MESSAGE_BYTES = 10 * 1024 * 1024


def brief(value: object, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters, for error messages about hostile input."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def finite(where: str, value: object, low: float, high: float) -> float:
    """`value` as a float when it is a real number (not a bool) in [low, high]; else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, got {brief(value)}")
    number = float(value) if isinstance(value, float) or abs(value) <= MAX_INT64 else math.inf
    if not math.isfinite(number):
        raise ConfigError(f"{where}: expected a finite number, got {brief(value)}")
    if not low <= number <= high:
        raise ConfigError(f"{where}: expected a number from {low:g} to {high:g}, got {brief(value)}")
    return number


def whole(where: str, value: object, low: int, high: int) -> int:
    """`value` when it is an integer (not a bool, not 2.0) in [low, high]; else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: expected an integer, got {brief(value)}")
    if not low <= value <= high:
        raise ConfigError(f"{where}: expected an integer from {low} to {high}, got {brief(value)}")
    return value
