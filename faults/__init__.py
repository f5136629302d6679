"""Faults: named, small classes that break a live Kafka cluster and heal it.

Public API:

- `Fault`: the protocol (`name`, `description`, `start(cluster, rng)`, `heal(cluster)`, `targets`,
  `detail`); `make_fault(name, params)`, `available()`, `register`: the registry by name.
- `Schedule` (`generate`, `from_entries`), `ScheduleEntry`, `Nemesis`: a seeded timeline of faults
  and the runner that applies it and records faults.jsonl.
- `kernel_capabilities(cluster)` -> `KernelCapabilities`: what the kernel offers for link faults;
  `host_kernel_capabilities(image)`: the same without a cluster (a scratch container of `image`).
- `leftover_rules(node)`: our iptables rules still in a container (empty after every heal).
- `heal_leftovers(cluster, healed)`: undo whatever faults are found on a live cluster (`kchaos heal`).
"""

# The built-in faults register themselves when their modules are imported, here, before any use.
from faults import disk, members, network, power, process, producers  # noqa: F401
from faults.base import Fault, available, make_fault, register
from faults.iptables import leftover_rules
from faults.leftovers import heal_leftovers
from faults.links import KernelCapabilities, host_kernel_capabilities, kernel_capabilities
from faults.schedule import Nemesis, Schedule, ScheduleEntry

__all__ = [
    "Fault",
    "KernelCapabilities",
    "Nemesis",
    "Schedule",
    "ScheduleEntry",
    "available",
    "heal_leftovers",
    "host_kernel_capabilities",
    "kernel_capabilities",
    "leftover_rules",
    "make_fault",
    "register",
]
