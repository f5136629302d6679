"""What each Apache Kafka release changed in what it promises: one row per fact, with the release
that brought it, named by its KIP or JIRA. The guarantee table (`checkers.guarantees`) decides
what a run was promised from these rows and cites them in its reasons; docs/FINDINGS.md cites the
same ids. Each row was checked against the release's source or upgrade notes; where a condition
narrows a fact, `condition` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

Version = tuple[int, ...]


@dataclass(frozen=True)
class ReleaseFact:
    id: str
    """The KIP or JIRA that made the change."""
    since: Version
    """The first release with it."""
    what: str
    condition: str = ""

    @property
    def since_text(self) -> str:
        return ".".join(map(str, self.since))

    def cite(self) -> str:
        """`KIP-101, 0.11`: how a reason names the fact."""
        return f"{self.id}, {self.since_text}"

    def holds_in(self, version: Version | None) -> bool:
        """Whether `version` has it; an unknown version is taken to be current."""
        return version is None or version >= self.since


FACTS = {
    fact.id: fact
    for fact in (
        ReleaseFact(
            "KIP-101",
            (0, 11),
            "a follower truncates its log by leader epoch, not to its own high watermark, when the "
            "leader changes",
            "only for batches in message format v2 (log.message.format.version 0.11 or later) and with "
            "inter.broker.protocol.version 0.11.0-IV2 or later; otherwise the high watermark, as before",
        ),
        ReleaseFact(
            "KIP-106", (0, 11), "unclean leader election is off unless unclean.leader.election.enable=true"
        ),
        ReleaseFact("KIP-98", (0, 11), "the idempotent producer: a retried batch is written once"),
        ReleaseFact(
            "KAFKA-5494",
            (1, 0),
            "an idempotent producer keeps its order with up to 5 requests in flight",
            "before 1.0, idempotence needs max.in.flight.requests.per.connection=1",
        ),
        ReleaseFact(
            "KIP-112",
            (1, 0),
            "a log directory that fails an I/O goes offline (its replicas leave the ISR), and a broker "
            "with no log directory left shuts down; before, a broker halted on an I/O error in an "
            "append or a checkpoint",
            "a broker with several log directories stays up on the others; in KRaft, only from 3.7 "
            "(KIP-858): before, a KRaft broker whose log directory fails shuts down",
        ),
        ReleaseFact(
            "KAFKA-2729",
            (1, 1),
            "a broker whose ZooKeeper session expired no longer leaves partitions stuck with a "
            "shrunk ISR (the controller rewrite, KAFKA-5642)",
        ),
        ReleaseFact(
            "KIP-279",
            (2, 0),
            "leader epochs also keep replicas from diverging after fast successive leader fail-overs",
        ),
        ReleaseFact(
            "KIP-320",
            (2, 1),
            "replicas fence a zombie leader by its leader epoch",
            "consumers detect a truncated log by leader epoch only from 2.3 (KAFKA-7440)",
        ),
        ReleaseFact(
            "KIP-903",
            (3, 5),
            "a replica with a stale broker epoch cannot join the ISR",
            "in KRaft mode only; ZooKeeper mode still lets it in",
        ),
        ReleaseFact("KIP-833", (3, 3), "KRaft is production-ready; ZooKeeper mode is removed in 4.0"),
        ReleaseFact(
            "KIP-966",
            (4, 0),
            "Eligible Leader Replicas: replicas the ISR dropped below min.insync.replicas stay electable, "
            "so a partition fails over without loss while its ISR is empty",
            "opt-in in 4.0 (feature eligible.leader.replicas.version=1), on for new clusters from 4.1; "
            "with no live ISR or ELR member the controller still elects the last known leader once it "
            "is back, as before 4.0 (the 4.x documentation), unflushed writes lost or not",
        ),
    )
}


def fact(fact_id: str) -> ReleaseFact:
    return FACTS[fact_id]


def message_format(text: object) -> Version | None:
    """The version a `log.message.format.version` setting names ("0.10.2-IV0" -> (0, 10, 2))."""
    numbers = []
    for part in str(text or "").split("-")[0].split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers) or None
