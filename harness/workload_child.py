"""A librdkafka workload process: `python -m harness.workload_child SPEC` (docs/CLIENTS.md).

The one entry of every librdkafka role (`producer`, `transactional-producer`, `pipeline`,
`member`): it reads its spec, runs the role in its main thread, writes each event as a tagged line
to stdout (`TaggedLines`) and its log (its client library's included) to stderr. A thread of its
own reads the commands on stdin, so a main thread blocked in a client call still answers `stack`;
at the end of stdin (the conductor is gone) the process exits at once.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import logging
import os
import sys
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from contract.errors import ConfigError
from contract.history import RunClock
from harness.client_log import ClientLog
from harness.group_member import Member, MemberSpec
from harness.pipeline import Pipeline, PipelineSpec
from harness.process_protocol import (
    FREEZE,
    STACK,
    STACK_END,
    STACK_START,
    STOP,
    TAGGED_FILES,
    THAW,
    EventSink,
    LineEmitter,
    ProcessSpec,
    TaggedLines,
    decode_spec,
    run_clock,
)
from harness.producer import AcksProducer, ProducerSpec
from harness.transactional_producer import TransactionalProducer, TransactionalProducerSpec

log = logging.getLogger("kchaos")

ROLE_SPECS: dict[str, type[ProcessSpec]] = {
    spec.role: spec for spec in (ProducerSpec, TransactionalProducerSpec, PipelineSpec, MemberSpec)
}
ORPHANED = 3
"""The exit status of a process whose stdin ended before it was stopped."""


class Role(Protocol):
    def run(self) -> None:
        """Work until stopped (or done), in the calling thread."""

    def stop(self) -> None:
        """Ask `run` to finish its unit of work and return (from another thread)."""


def role_of(spec: ProcessSpec, sinks: Mapping[str, EventSink], clock: RunClock) -> Role:
    """The role `spec` names, its client logging to `client` lines (and stderr). A role's
    constructor takes its spec's fields by name, with the client's settings and its sinks."""
    config: dict[str, Any] = {**spec.config, "logger": ClientLog(spec.process, sinks["client"], clock)}
    own = (f.name for f in dataclasses.fields(spec) if f.name not in ("origin_ns", "config"))
    fields = {name: getattr(spec, name) for name in own}
    writes, steps = sinks["writes"], sinks["transactions"]
    if isinstance(spec, ProducerSpec):
        return AcksProducer(**fields, client_config=config, writer=writes, clock=clock)
    if isinstance(spec, TransactionalProducerSpec):
        return TransactionalProducer(**fields, client_config=config, writer=writes, steps=steps, clock=clock)
    if isinstance(spec, PipelineSpec):
        return Pipeline(**fields, client_config=config, writer=writes, steps=steps, clock=clock)
    assert isinstance(spec, MemberSpec), spec
    return Member(spec, config, sinks["consumes"])


def _note(text: str) -> None:
    os.write(2, f"{text}\n".encode(errors="replace"))


def obey(role: Role, commands: Iterable[bytes]) -> None:
    """Carry out the commands read from `commands` (lines of bytes) until they end."""
    for line in commands:
        command = line.strip()
        if command == STOP:
            role.stop()
        elif command in (FREEZE, THAW) and isinstance(role, TransactionalProducer):
            (role.freeze if command == FREEZE else role.thaw)()
        elif command == STACK:
            if isinstance(role, AcksProducer):
                role.serve_client()  # what its client logged while a call blocks
            sys.stderr.flush()
            os.write(2, STACK_START)
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            os.write(2, STACK_END)
        else:
            _note(f"command {command[:40]!r} ignored: not one this role takes")


def _obey_then_exit(role: Role, finished: threading.Event) -> None:
    obey(role, sys.stdin.buffer)
    os._exit(0 if finished.is_set() else ORPHANED)


def main(argv: list[str]) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        spec = decode_spec(argv[1] if len(argv) > 1 else "", ROLE_SPECS)
    except ConfigError as exc:
        _note(f"error: {exc}")
        os._exit(2)
    emit = LineEmitter()
    sinks = {tag: TaggedLines(tag, emit) for tag in TAGGED_FILES}
    role = role_of(spec, sinks, run_clock(spec.origin_ns))
    finished = threading.Event()
    threading.Thread(target=_obey_then_exit, args=(role, finished), name="commands", daemon=True).start()
    try:
        role.run()
    except BaseException:  # the conductor sees the exit status; the traceback goes to the log
        log.error("%s failed:\n%s", spec.process, traceback.format_exc())
        os._exit(1)
    finished.set()
    if spec.keeps_client:
        # Every event is written: stdout ends here (what the conductor waits for), and the client
        # lives on until stdin ends.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        threading.Event().wait()
    # Not sys.exit: interpreter shutdown would wait on the stdin reader's lock and abort ("could not
    # acquire lock for <stdin>"); every event is already written (unbuffered).
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
