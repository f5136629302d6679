"""Lossy mounts on the host: one per node of a cluster, each served by its own daemon process
(`harness.lossy.daemon`), found again by run id, and removed with the run.

A node's directory `<user cache>/kchaos/lossy/<run id>/<node>/` holds the backing directory
(`backing/`, the node's real data), the stash (`stash/`), the mount point (`mount/`, bind-mounted
into the node's container), the control socket, the daemon's pid and its log. The daemon runs in a
session of its own: it outlives the command that started it (a cluster from `kchaos cluster up` is
used by later commands) and a `docker kill` of the node. `remove_run` unmounts (the daemon then
exits), stops a daemon that does not, and deletes the directory; `leftover_runs` lists what a
killed run left (`kchaos cleanup` removes it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.errors import ClusterError, ConfigError, Failures
from contract.userdirs import user_cache_dir
from harness.lossy.daemon import FSNAME, request
from harness.waiting import wait_until

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
SOCKET_PATH_LIMIT = 107
"""The longest path a unix socket can be bound to on Linux (sun_path less its NUL)."""


def lossy_root() -> Path:
    return user_cache_dir() / "lossy"


def mounted_points() -> dict[str, str]:
    """Mount point -> file system name of every lossy mount the kernel has (from /proc/mounts)."""
    found = {}
    with open("/proc/mounts", encoding="utf-8", errors="replace") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) >= 3 and fields[0] == FSNAME:
                found[fields[1].replace("\\040", " ")] = fields[2]
    return found


@dataclass(frozen=True)
class LossyMount:
    """One lossy mount: its directory, and the daemon serving it."""

    root: Path

    @property
    def backing(self) -> Path:
        return self.root / "backing"

    @property
    def stash(self) -> Path:
        return self.root / "stash"

    @property
    def mount(self) -> Path:
        return self.root / "mount"

    @property
    def control(self) -> Path:
        return self.root / "control.sock"

    @property
    def log(self) -> Path:
        return self.root / "daemon.log"

    @property
    def pid_file(self) -> Path:
        return self.root / "daemon.pid"

    @property
    def mounted(self) -> bool:
        return str(self.mount) in mounted_points()

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the daemon and wait until the mount is there and answers its control socket."""
        if len(str(self.control).encode()) > SOCKET_PATH_LIMIT:
            raise ConfigError(
                f"the lossy disk's control socket {self.control} is longer than a unix socket path "
                f"may be ({SOCKET_PATH_LIMIT} bytes): use a shorter run id or XDG_CACHE_HOME"
            )
        if self.mounted:
            raise ClusterError(f"{self.mount} is mounted already (a leftover: `kchaos cleanup` removes it)")
        for folder in (self.backing, self.stash, self.mount):
            folder.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "harness.lossy.daemon",
                    "serve",
                    *("--backing", str(self.backing), "--stash", str(self.stash)),
                    *("--mount", str(self.mount), "--control", str(self.control)),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives this command, and its Ctrl-C
                cwd=self.root,
            )
        self.pid_file.write_text(f"{process.pid}\n")

        def ready() -> tuple[bool, str]:
            if process.poll() is not None:
                raise ClusterError(
                    f"the lossy disk at {self.mount} exited ({process.returncode}): {self.tail()}"
                )
            if not self.mounted:
                return False, "not mounted yet"
            try:
                self.request({"command": "stats"}, timeout_s=2.0)
            except ClusterError as exc:
                return False, str(exc)
            return True, "mounted, control socket answers"

        try:
            wait_until(ready, what=f"the lossy disk at {self.mount}", timeout_s=timeout_s, interval_s=0.05)
        except BaseException:
            self.stop()
            raise

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError as exc:
            return f"(no log: {exc})"

    def request(self, command: dict[str, Any], timeout_s: float = 120.0) -> dict[str, Any]:
        return request(self.control, command, timeout_s)

    def drop(
        self, torn_seed: int | None = None, written_back_older_than_s: float | None = None
    ) -> dict[str, Any]:
        """Drop everything unsynced; what was dropped (`harness.lossy.undo.Dropped.as_json`)."""
        answer = self.request(
            {
                "command": "drop",
                "torn_seed": torn_seed,
                "written_back_older_than_s": written_back_older_than_s,
            }
        )
        return dict(answer["dropped"])

    def _pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def daemon_alive(self) -> bool:
        """Whether the pid in the pid file is still this mount's daemon (not a reused pid)."""
        pid = self._pid()
        if pid is None:
            return False
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"harness.lossy.daemon" in command and str(self.mount).encode() in command

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Unmount (the daemon then exits); a daemon that does not is ended, and a mount whose
        daemon is gone is detached. Safe to call more than once."""
        if self.mounted:
            done = subprocess.run(
                ["fusermount3", "-u", str(self.mount)], capture_output=True, text=True, check=False
            )
            if done.returncode != 0 and self.mounted:  # busy, or its daemon died: detach it
                subprocess.run(["fusermount3", "-u", "-z", str(self.mount)], capture_output=True, check=False)
        deadline = time.monotonic() + timeout_s
        while self.daemon_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = self._pid()
        if pid is not None and self.daemon_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.mount)], capture_output=True, check=False)
        if self.mounted:
            raise ClusterError(f"cannot unmount the lossy disk at {self.mount}")
        self.pid_file.unlink(missing_ok=True)


def run_dir(run_id: str) -> Path:
    return lossy_root() / run_id


def node_mount(run_id: str, node: str) -> LossyMount:
    return LossyMount(run_dir(run_id) / node)


def run_mounts(run_id: str) -> Iterator[LossyMount]:
    """The lossy mounts of a run (its nodes' directories), whether mounted or not."""
    folder = run_dir(run_id)
    if folder.is_dir():
        for node in sorted(folder.iterdir()):
            if node.is_dir():
                yield LossyMount(node)


def serving(run_id: str) -> bool:
    """Whether a daemon of the run's lossy mounts still runs."""
    return any(mount.daemon_alive() for mount in run_mounts(run_id))


def leftover_runs() -> list[str]:
    """Run ids with lossy directories on this host (mounted or not)."""
    root = lossy_root()
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def remove_run(run_id: str) -> list[str]:
    """Unmount every lossy mount of a run and delete its directories (the nodes' data with them);
    the mount points unmounted. ClusterError naming each that could not be, after trying all."""
    failures = Failures()
    unmounted = []
    for mount in run_mounts(run_id):
        with failures.attempt(f"cannot remove the lossy disk of {mount.root.name}"):
            was_mounted = mount.mounted
            mount.stop()
            if was_mounted:
                unmounted.append(str(mount.mount))
    if not failures.lines:
        shutil.rmtree(run_dir(run_id), ignore_errors=True)
    failures.raise_if_any()
    return unmounted
