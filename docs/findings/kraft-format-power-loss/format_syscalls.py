"""What `kafka-storage format` asks of the file system: the system calls Kafka's StorageTool makes
under a fresh KRaft data directory (strace), in order: mkdir, open, bytes written, fsync, close,
rename. It shows which files format fsyncs and which it does not, on any Kafka release and any
Linux with strace and a Java runtime, without a cluster or a power loss.

    python3 format_syscalls.py --libs kafka_2.13-3.9.2/libs
    python3 format_syscalls.py --libs /opt/kafka/libs --keep trace.txt

--libs is a Kafka distribution's libs directory. The node is one combined broker and controller
(static voters); the data directory is a fresh temporary one. Exit code: 1 when format renamed a
file into place whose content it never fsynced (the file's name can outlive its content in a
power loss), 0 when every file it renamed into place was fsynced first, 2 when it could not run.
Python 3.9+, standard library only.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
CALLS = "openat,write,fsync,fdatasync,close,rename,renameat,renameat2,mkdir"
CONFIG = """process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:19093
listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
controller.listener.names=CONTROLLER
log.dirs={data}
"""
LINE = re.compile(r"^(?P<pid>\d+) +(?P<call>\w+)\((?P<args>.*)\) += (?P<ret>-?\d+)")
RESUMED = re.compile(r"^(?P<pid>\d+) +<\.\.\. \w+ resumed>(?P<rest>.*)$")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass
class FileState:
    """One file under the data directory: whether what was written to it was fsynced."""

    written: int = 0
    fsynced_since_write: bool = True


def calls(trace: Path) -> list[tuple[int, str, str, int]]:
    """(pid, call, arguments, return value) of each finished call, `unfinished` ones joined."""
    pending: dict[int, str] = {}
    done = []
    for raw in trace.read_text(errors="replace").splitlines():
        if raw.endswith("<unfinished ...>"):
            pid = int(raw.split()[0])
            pending[pid] = raw[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = RESUMED.match(raw)
        if resumed:
            raw = pending.pop(int(resumed["pid"]), "") + resumed["rest"]
        m = LINE.match(raw)
        if m:
            done.append((int(m["pid"]), m["call"], m["args"], int(m["ret"])))
    return done


def events(trace: Path, data: str) -> tuple[list[str], list[str]]:
    """What format did under `data`, in order (writes to one file in a row merged), and the files
    it renamed into place whose content it had not fsynced."""
    said: list[str] = []
    unsynced: list[str] = []
    state: dict[str, FileState] = {}
    open_fds: dict[tuple[int, int], str] = {}

    def name(path: str) -> str:
        return path.replace(data, "<data>")

    for pid, call, args, ret in calls(trace):
        paths = STRING.findall(args)
        first = args.split(",", 1)[0].strip()
        if call == "openat" and ret >= 0 and paths and paths[0].startswith(data):
            open_fds[(pid, ret)] = paths[0]
            state.setdefault(paths[0], FileState())
            said.append(f"open   {name(paths[0])}" + (" (created)" if "O_CREAT" in args else ""))
        elif call == "mkdir" and ret == 0 and paths and paths[0].startswith(data):
            said.append(f"mkdir  {name(paths[0])}")
        elif call in ("write", "fsync", "fdatasync", "close") and first.isdigit():
            path = open_fds.get((pid, int(first)))
            if path is None:
                continue
            if call == "write":
                state[path].written += max(ret, 0)
                state[path].fsynced_since_write = False
                line = f"write  {name(path)}"
                if said and said[-1].startswith(line + ": "):
                    total = int(said[-1].rsplit(": ", 1)[1].split()[0]) + max(ret, 0)
                    said[-1] = f"{line}: {total} bytes"
                else:
                    said.append(f"{line}: {max(ret, 0)} bytes")
                continue
            if call == "close":
                del open_fds[(pid, int(first))]
            else:
                state[path].fsynced_since_write = True
            said.append(f"{call:<6} {name(path)}")
        elif call.startswith("rename") and ret == 0 and len(paths) == 2 and paths[1].startswith(data):
            state[paths[1]] = state.pop(paths[0], FileState())
            said.append(f"rename {name(paths[0])} -> {name(paths[1])}")
            if not state[paths[1]].fsynced_since_write:
                said[-1] += f"   <- {state[paths[1]].written} bytes never fsynced"
                unsynced.append(name(paths[1]))
    return said, unsynced


def main() -> int:
    parser = argparse.ArgumentParser(description="The system calls of kafka-storage format, per file.")
    parser.add_argument("--libs", required=True, type=Path, help="a Kafka distribution's libs directory")
    parser.add_argument("--java", default="java")
    parser.add_argument("--keep", type=Path, help="also keep strace's whole output in this file")
    args = parser.parse_args()
    if not args.libs.is_dir() or not list(args.libs.glob("kafka*.jar")):
        print(f"{args.libs}: not a Kafka libs directory (no kafka*.jar)", file=sys.stderr)
        return 2
    if shutil.which("strace") is None:
        print("strace is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kafka-format-") as tmp:
        data, config, trace = f"{tmp}/data", Path(tmp) / "node.properties", Path(tmp) / "trace"
        config.write_text(CONFIG.format(data=data))
        command = [
            *("strace", "-f", "-qq", "-e", f"trace={CALLS}", "-o", str(trace)),
            *(args.java, "-cp", f"{args.libs}/*", "kafka.tools.StorageTool"),
            *("format", "-t", CLUSTER_ID, "-c", str(config)),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        said = [line for line in done.stdout.splitlines() if line.startswith("Formatting")]
        if done.returncode != 0 or not said:
            print(f"format failed ({done.returncode}): {done.stderr.strip()[-400:]}", file=sys.stderr)
            return 2
        print(said[0])
        if args.keep:
            shutil.copyfile(trace, args.keep)
        said_calls, unsynced = events(trace, data)
    for line in said_calls:
        print(f"  {line}")
    if unsynced:
        print(f"renamed into place without an fsync of their content: {', '.join(unsynced)}")
        return 1
    print("every file renamed into place was fsynced first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
