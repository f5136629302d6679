"""The kafka-chaos error tree.

Every error this project raises on purpose is a ``HarnessError``; third-party errors (Docker,
kazoo, librdkafka, Spark, PyYAML, tarfile) are translated into one of these where they enter our
code, so the CLI can print one clear line and exit 2 instead of a traceback. Exit 1 is kept for
the one verdict of failure (a promised guarantee or an expectation did not hold) and is never an
error's code. Any other exception that reaches the CLI is a bug of kafka-chaos: exit 3, with its
traceback in a log file (see `kchaos.cli`).

    HarnessError
    ├── InputError            the user gave us something unusable (exit 2)
    │   ├── ConfigError       a broker override, scenario field, CLI option, fault param or
    │   │                     environment variable is wrong
    │   ├── HistoryError      a run directory or history file breaks HISTORY_FORMAT.md
    │   └── TargetError       a fault target does not exist in the live cluster
    ├── EnvironmentError_     Docker engine, image, Java or Spark is missing (exit 2)
    ├── SparkError            a Spark job failed or its JVM died (not bad input: exit 2)
    ├── ClusterError          a container or cluster operation failed (exit 2)
    │   └── ReadinessTimeout  a wait condition was not met in time (shows state and logs)
    ├── FaultError            a fault could not be started or healed (exit 2)
    └── OutputError           standard output is closed or cannot take what is printed (exit 2)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class HarnessError(Exception):
    """Root of every error raised by kafka-chaos."""

    exit_code = 2


class InputError(HarnessError):
    """Something the user supplied is unusable; the message says where and what was expected."""


class ConfigError(InputError):
    """A configuration value (broker override, scenario field, CLI option) is invalid."""


class HistoryError(InputError):
    """A run directory or history file does not follow HISTORY_FORMAT.md.

    ``path`` and ``line`` (1-based) point at the offending place when known.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line


class TargetError(InputError):
    """A fault target names a node or partition the cluster does not have."""


class EnvironmentError_(HarnessError):
    """A required part of the machine (Docker engine, image, Java, Spark) is not available."""


class SparkError(HarnessError):
    """A Spark job of a check failed, or its JVM died (out of memory, killed); the input may be fine."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path is not None else message)
        self.path = path


class ClusterError(HarnessError):
    """A container or cluster operation failed."""


class ReadinessTimeout(ClusterError):
    """A wait condition did not hold within its timeout.

    The message carries what was waited for, the last state seen and recent container logs.
    """


class FaultError(HarnessError):
    """A fault could not be started or healed."""


class OutputError(HarnessError):
    """Standard output is closed, or writing to it failed (a full disk, a pipe closed early): what
    the command had to say did not all reach its reader, so there is no verdict to act on."""


class Failures:
    """Steps that must all be tried (cleanup, healing): each failing one becomes a line, and
    `raise_if_any` raises them together as one error, joined with '; '."""

    def __init__(self, error_class: type[HarnessError] = ClusterError) -> None:
        self.error_class = error_class
        self.lines: list[str] = []

    @contextlib.contextmanager
    def attempt(self, what: str = "") -> Iterator[None]:
        """Run the `with` body; an Exception (not an interrupt) is recorded as `what: error` (or as
        the error alone, when its message names the object already)."""
        try:
            yield
        except Exception as exc:
            self.lines.append(f"{what}: {exc}" if what else str(exc))

    def raise_if_any(self) -> None:
        if self.lines:
            raise self.error_class("; ".join(self.lines))


__all__ = [
    "ClusterError",
    "ConfigError",
    "EnvironmentError_",
    "Failures",
    "FaultError",
    "HarnessError",
    "HistoryError",
    "InputError",
    "ReadinessTimeout",
    "SparkError",
    "TargetError",
]
