"""The process serving one lossy mount, its control socket, and the commands that talk to it.

    python -m harness.lossy.daemon serve --backing DIR --stash DIR --mount DIR --control SOCKET
    python -m harness.lossy.daemon drop --control SOCKET [--torn SEED] [--written-back-older-than S]
    python -m harness.lossy.daemon stats --control SOCKET
    python -m harness.lossy.daemon fault --control SOCKET [--full] [--fsync-error] [--fsync-delay S]
    python -m harness.lossy.daemon heal --control SOCKET

`serve` mounts in the foreground and unmounts when it ends: on SIGTERM, SIGINT or SIGHUP (libfuse's
own handlers end its loop and unmount), or when the mount is taken away (`fusermount3 -u`). The
control socket speaks one JSON object per line each way: a request {"command": ..., params} and its
answer {"ok": true, ...} or {"ok": false, "error": "..."}.

A drop first makes the kernel hand over what it still holds for the mount (syncfs: pages a killed
process dirtied through mmap reach the layer as writes, not as fsyncs), then undoes every unsynced
change (`harness.lossy.undo.Books.drop`).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import socket
import socketserver
import sys
import threading
from pathlib import Path
from typing import Any

from contract.errors import ClusterError
from harness.lossy.fs import DiskFaults, LossyFuse, LossyOperations
from harness.lossy.undo import Books

log = logging.getLogger("kchaos.lossy")
REQUEST_LIMIT = 1 << 16
FSNAME = "kchaos-lossy"
"""The file system's name in /proc/mounts (how leftover mounts are found)."""


def syncfs(path: Path) -> None:
    """syncfs(2) on the file system mounted at `path`: its dirty pages written out (to the layer)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if libc.syncfs(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(path))
    finally:
        os.close(fd)


class Control:
    """What the control socket does: the commands, over the books and faults of one mount."""

    def __init__(self, operations: LossyOperations, mount: Path) -> None:
        self.operations = operations
        self.books = operations.books
        self.faults = operations.faults
        self.mount = mount
        self.drops = 0

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        command = request.get("command")
        if command == "stats":
            return {"unsynced": self.books.unsynced(), "faults": self.faults.describe(), "drops": self.drops}
        if command == "drop":
            syncfs(self.mount)
            dropped = self.books.drop(
                _optional(request, "torn_seed", int), _optional(request, "written_back_older_than_s", float)
            )
            self.operations.forget_cached(dropped.touched)  # once the books' lock is free again
            self.drops += 1
            return {"dropped": dropped.as_json()}
        if command == "fault":
            self.faults.full = bool(request.get("full", self.faults.full))
            self.faults.fsync_error = bool(request.get("fsync_error", self.faults.fsync_error))
            delay = _optional(request, "fsync_delay_s", float)
            self.faults.fsync_delay_s = self.faults.fsync_delay_s if delay is None else delay
            return {"faults": self.faults.describe()}
        if command == "heal":
            was = self.faults.active()
            self.faults.full = self.faults.fsync_error = False
            self.faults.fsync_delay_s = 0.0
            return {"faults": self.faults.describe(), "healed": was}
        raise ValueError(f"unknown command {command!r}: expected stats, drop, fault or heal")


def _optional(request: dict[str, Any], name: str, kind: type[int] | type[float]) -> Any:
    value = request.get(name)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (kind is int and not isinstance(value, int))
    ):
        raise ValueError(f"{name} must be a {kind.__name__}, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return kind(value)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        line = self.rfile.readline(REQUEST_LIMIT)
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
            answer = {"ok": True, **self.server.control.answer(request)}
        except (ValueError, OSError) as exc:
            log.warning("control request %r failed: %s", line[:200], exc)
            answer = {"ok": False, "error": str(exc)}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, control: Control) -> None:
        self.control = control
        super().__init__(str(path), _Handler)


def serve(backing: Path, stash: Path, mount: Path, control_path: Path) -> None:
    """Mount the lossy disk over `backing` at `mount` and serve it (and its control socket) until
    the mount ends."""
    for folder in (backing, stash, mount):
        folder.mkdir(parents=True, exist_ok=True)
    operations = LossyOperations(Books(backing, stash), DiskFaults())
    control_path.unlink(missing_ok=True)
    server = _Server(control_path, Control(operations, mount))
    thread = threading.Thread(target=server.serve_forever, name="lossy-control", daemon=True)
    thread.start()
    try:
        LossyFuse(
            operations,
            str(mount),
            foreground=True,
            allow_other=True,  # the containers' processes reach it through a bind mount
            fsname=FSNAME,
            subtype="lossy",
            # One thread: five times the small writes per second of libfuse's thread pool, whose
            # threads only contend for the GIL (benchmarks/bench_lossy.py). A slow fsync then
            # holds up the operations behind it, as a disk's queue does.
            nothreads=True,
        )
    finally:
        server.shutdown()
        server.server_close()
        control_path.unlink(missing_ok=True)


def request(control: Path, command: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
    """Send one command to the daemon behind `control`; its answer, or ClusterError saying why not."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout_s)
            connection.connect(str(control))
            connection.sendall(json.dumps(command).encode() + b"\n")
            with connection.makefile("rb") as reader:
                line = reader.readline(1 << 26)
    except OSError as exc:
        raise ClusterError(f"the lossy disk behind {control} does not answer: {exc}") from None
    try:
        answer = json.loads(line)
    except ValueError:
        raise ClusterError(f"the lossy disk behind {control} answered {line[:200]!r}") from None
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else answer
        raise ClusterError(f"the lossy disk behind {control} refused {command.get('command')}: {error}")
    return answer


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m harness.lossy.daemon", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    served = commands.add_parser("serve", help="mount and serve until unmounted or signalled")
    for name in ("backing", "stash", "mount"):
        served.add_argument(f"--{name}", type=Path, required=True)
    for name in ("drop", "stats", "fault", "heal", "serve"):
        chosen = served if name == "serve" else commands.add_parser(name)
        chosen.add_argument("--control", type=Path, required=True, help="the daemon's control socket")
    drop = commands.choices["drop"]
    drop.add_argument("--torn", type=int, default=None, metavar="SEED", help="keep a seeded prefix per file")
    drop.add_argument(
        "--written-back-older-than", type=float, default=None, metavar="S", help="keep pages older than S s"
    )
    fault = commands.choices["fault"]
    fault.add_argument("--full", action="store_true", help="writes past a file's end fail with ENOSPC")
    fault.add_argument("--fsync-error", action="store_true", help="fsync fails with EIO")
    fault.add_argument("--fsync-delay", type=float, default=None, metavar="S", help="each fsync waits S s")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.command == "serve":
        serve(args.backing, args.stash, args.mount, args.control)
        return 0
    command: dict[str, Any] = {"command": args.command}
    if args.command == "drop":
        command.update(torn_seed=args.torn, written_back_older_than_s=args.written_back_older_than)
    elif args.command == "fault":
        command.update({"full": True} if args.full else {})
        command.update({"fsync_error": True} if args.fsync_error else {})
        command.update({"fsync_delay_s": args.fsync_delay} if args.fsync_delay is not None else {})
    try:
        print(json.dumps(request(args.control, command), indent=2))
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
