"""Checks on CLI options that typer's types let through: a float option takes `nan` and `inf`, an
int option any size, and a path option a file where a directory is meant."""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import ConfigError
from harness.limits import finite, whole


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
