"""Faults of transactional producers (`harness.transactional_producer`, each a workload process):
hold one's transaction open past transaction.timeout.ms and let it go on (`freeze-producer`: a
zombie producer), through the process's `freeze` and `thaw` commands.

`producer` picks the target: a process name (`tx-0`), `random` (one not frozen yet) or `all`. Heal
thaws it: it then commits (or aborts) a transaction the coordinator has long aborted, and must be
fenced.
"""

from __future__ import annotations

import random

from contract.errors import FaultError
from faults.base import FaultContext, register, text_param
from harness.workload_process import WorkloadProcess


@register
class FreezeProducer:
    name = "freeze-producer"
    description = (
        "Stall a transactional producer with a transaction open (its records written, the commit "
        "not sent), like a long GC pause of the application (its client's threads go on): held "
        "past transaction.timeout.ms and the coordinator's sweep for timed-out transactions, the "
        "coordinator aborts the transaction and bumps the producer's epoch, and at heal the zombie "
        "wakes and tries to commit it. It must be fenced, and nothing of that transaction read."
    )

    def __init__(self, *, producer: str = "random") -> None:
        self.producer = text_param("producer", producer)
        self.targets: list[str] = []
        self.detail: dict[str, object] = {}
        self.healed: dict[str, object] = {}
        self._frozen: list[WorkloadProcess] = []

    def describe(self) -> str:
        return self.description

    def start(self, context: FaultContext, rng: random.Random) -> None:
        pool = context.workload.transactional_producers
        if not pool:
            raise FaultError(
                f"{self.name}: the workload has no transactional producers (workload.transactions)"
            )
        names = [p.process for p in pool]
        if self.producer == "all":
            chosen = list(pool)
        elif self.producer == "random":
            chosen = [rng.choice([p for p in pool if not p.frozen] or list(pool))]
        elif self.producer in names:
            chosen = [pool[names.index(self.producer)]]
        else:
            raise FaultError(f"{self.name}: no producer {self.producer!r} (producers: {', '.join(names)})")
        self._frozen = chosen
        self.targets = [p.process for p in chosen]
        self.detail["transactional_ids"] = [p.transactional_id for p in chosen]
        for producer in chosen:
            producer.freeze()

    def heal(self, context: FaultContext) -> None:
        for producer in self._frozen:
            producer.thaw()


PRODUCER_FAULTS = (FreezeProducer.name,)
"""The faults aimed at transactional producers: a workload without transactions has no target for them."""
