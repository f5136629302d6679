"""Checks on CLI options that typer's types let through: a float option takes `nan` and `inf`, an
int option any size, and a path option a file where a directory is meant."""

from __future__ import annotations

import os
from pathlib import Path

from contract.errors import ConfigError
from contract.limits import finite, whole
from harness.images import DEFAULT_KAFKA_VERSION, KAFKA_ENV

METADATA_OPTION_HELP = "zookeeper or kraft (default: ZooKeeper before Kafka 4.0, KRaft from 4.0)."
KAFKA_OPTION_HELP = (
    "Kafka release: a version resolved from Maven Central (e.g. 3.9.1), a release tarball "
    f"or an unpacked directory (default: ${KAFKA_ENV}, else {DEFAULT_KAFKA_VERSION})."
)


def number(option: str, value: float | None, low: float, high: float) -> float | None:
    """`value` (None: not given) when finite and in [low, high]; else ConfigError naming `option`."""
    return None if value is None else finite(option, value, low, high)


def integer(option: str, value: int | None, low: int, high: int) -> int | None:
    return None if value is None else whole(option, value, low, high)


def output_dir(option: str, path: Path) -> Path:
    """`path` as a directory to create run directories in (made if missing); ConfigError naming
    `option` when it is a file, or cannot be made or written."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"{option} {path}: exists and is not a directory") from None
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot create the directory ({exc.strerror})") from None
    if not path.is_dir():
        raise ConfigError(f"{option} {path}: exists and is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: this user cannot write in it")
    return path


def releases(option: str, text: str | None) -> list[str | None]:
    """The Kafka releases a comma-separated `option` names, in order and once each; [None] (the
    scenario's own) when not given. ConfigError naming `option` for an empty entry."""
    if text is None:
        return [None]
    entries = [entry.strip() for entry in text.split(",")]
    if not all(entries):
        raise ConfigError(f"{option} {text!r}: an empty release between commas (e.g. 0.9.0.1,3.9.1)")
    return list(dict.fromkeys(entries))
