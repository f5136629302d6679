"""A class-data-sharing (CDS) archive of the classes a check loads, so that later checks start warm.

A check's JVM loads, parses and links some ten thousand classes of Spark and its libraries, most of
them during its first jobs. A JVM started with an archive of those classes maps them from one file
instead; measured with `benchmarks/bench_check.py`, this is the largest single saving in a first
check. The archive belongs to one Java binary and one set of Spark jars at one place: `archive_path`
names it after all three, so an upgrade of either, or a second checkout (another .venv), means a new
archive. A JVM rejects an archive whose class path differs from the one it was dumped with, silently,
and loads classes as usual: slower, with nothing said. `kchaos spark-archive` (run by `make setup`)
builds it by checking a small synthetic history in a child process whose JVM writes the archive when
it exits.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark

from contract.errors import ConfigError, EnvironmentError_
from contract.limits import brief
from contract.userdirs import user_cache_dir

ARCHIVE_ENV = "KCHAOS_SPARK_CLASS_ARCHIVE"
"""Set to `off` to start checks without the archive (to measure what it saves, or to rule it out)."""
DUMP_ENV = "_KCHAOS_CLASS_ARCHIVE_DUMP"
"""Set in the builder's child process only: the file its JVM writes the archive to when it exits."""
BUILD_TIMEOUT_S = 600
TRAINING_VERSION = 3
"""Part of the archive's name: raised when `checkers.archive_training` checks other histories, so
that an archive of older training is built again."""


def _java_binary() -> Path | None:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else the first on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where the archive for this Java and these Spark jars lives (None without a Java)."""
    java = _java_binary()
    if java is None:
        return None
    stat = java.stat()
    identity = [f"{java}:{stat.st_size}:{stat.st_mtime_ns}", f"training:{TRAINING_VERSION}"]
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    identity.append(f"classpath:{jars}")  # the JVM checks the archive's class path, place included
    identity += sorted(f"{jar.name}:{jar.stat().st_size}" for jar in jars.glob("*.jar"))
    key = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:16]
    return user_cache_dir() / f"spark-classes-{key}.jsa"


def _size_record(path: Path) -> Path:
    return path.with_name(f"{path.name}.size")


def is_complete(path: Path) -> bool:
    """True when the archive is there whole: the size its builder recorded after writing it.

    A JVM given a truncated archive crashes (SIGBUS) instead of ignoring it, so a file cut short
    (a full disk, a killed copy) must never be used.
    """
    try:
        return path.stat().st_size == int(_size_record(path).read_text())
    except (OSError, ValueError):
        return False


def driver_options() -> str:
    """JVM options for a check's driver: use the archive if there is one, or write it (builder only)."""
    dump_to = os.environ.get(DUMP_ENV)
    if dump_to:
        return f"-XX:ArchiveClassesAtExit={dump_to}"
    setting = os.environ.get(ARCHIVE_ENV, "").strip().lower()
    if setting not in ("", "on", "off"):
        raise ConfigError(f"{ARCHIVE_ENV}={brief(setting)}: expected off (or on, the default)")
    if setting == "off":
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path}" if path is not None and is_complete(path) else ""


def build(rebuild: bool = False) -> tuple[Path, bool]:
    """Build the archive unless it exists (or `rebuild`); return its path and whether it was built."""
    path = archive_path()
    if path is None:
        raise EnvironmentError_("no Java found (set JAVA_HOME or put java on PATH)")
    if is_complete(path) and not rebuild:
        return path, False
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    env = {**os.environ, DUMP_ENV: str(partial)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _size_record(path).unlink(missing_ok=True)
        child = subprocess.run(
            [sys.executable, "-m", "checkers.archive_training"],
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if child.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            detail = (child.stderr.strip().splitlines() or ["no output"])[-1]
            raise EnvironmentError_(f"building the Spark class archive failed: {detail}")
        os.replace(partial, path)
        _size_record(path).write_text(f"{path.stat().st_size}\n")
    except OSError as exc:
        raise EnvironmentError_(
            f"cannot write the Spark class archive {path}: {exc.strerror or exc}"
        ) from None
    except subprocess.TimeoutExpired:
        raise EnvironmentError_(
            f"building the Spark class archive took longer than {BUILD_TIMEOUT_S} s"
        ) from None
    finally:
        partial.unlink(missing_ok=True)
    return path, True
