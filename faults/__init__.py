"""Faults: named, small classes that break a live Kafka cluster and heal it.

Public API:

- `Fault`: the protocol (`name`, `description`, `start(cluster, rng)`, `heal(cluster)`, `targets`, `detail`).
- `make_fault(name, params)`, `available()`, `register`: the registry by name.
- `Schedule`, `ScheduleEntry`, `Nemesis`: a seeded timeline of faults and the runner that applies it.
- `kernel_capabilities(cluster)`: what the kernel offers for link faults (netem or not).
"""

from faults.base import Fault, available, make_fault, register

__all__ = ["Fault", "available", "make_fault", "register"]
