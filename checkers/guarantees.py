"""What each topic's configuration promises, and whether the run kept the promise.

Pure Python over run.json and per-topic anomaly counts. Settings resolve topic `config` first, then
the cluster's `broker_config`, then the Kafka version's default. Producer settings
(`enable.idempotence`, `max.in.flight.requests.per.connection`) are read from the topic's
`producer` object, then run.json's top-level `producer` object.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkers.release_facts import fact, message_format
from contract.anomaly_kinds import GUARANTEE_BY_ID, kind, kinds_of, promise, violations
from contract.events import FaultWindow

HELD, VIOLATED, NOT_PROMISED, UNKNOWN = "held", "violated", "not-promised", "unknown"
NOT_EXERCISED = "not-exercised"
"""Promised, and nothing found, but the run gave it no case to break on: not evidence that it holds."""


@dataclass(frozen=True)
class TopicConfig:
    """The settings of one topic that decide its guarantees."""

    topic: str
    acks: str
    replication_factor: int
    min_insync_replicas: int
    unclean_leader_election: bool
    unclean_is_default: bool
    idempotent: bool
    max_in_flight: int
    version: tuple[int, ...] | None
    client: str
    """The producer's client library and version, as run.json names it: the topic's `client` (the
    client that wrote it), else the run's (runs made before clients were recorded per topic)."""
    power_loss: bool = False
    """Some partition of the topic lost power on every replica at once (a `power-loss` fault whose
    targets held all its replicas): what was acknowledged from page caches alone may be gone."""
    fsync_each: bool = False
    """Every message is flushed to disk before it is acknowledged (flush.messages=1)."""
    message_format: tuple[int, ...] | None = None
    """The topic's message format version, when configured (KIP-101 needs v2, 0.11 or later)."""
    eligible_leaders: bool = False
    """Eligible Leader Replicas are on (KIP-966): KRaft, 4.0 and later, the feature's level >= 1. They
    change what a power loss of every replica does to availability, not what it loses."""
    transactional: bool = False
    """Written by transactional producers (run.json's topic has `transactions`), read read_committed."""
    pipeline: bool = False
    """The output of a consume-transform-produce pipeline (run.json's topic has `pipeline`)."""


def parse_version(text: object) -> tuple[int, ...] | None:
    """(0, 9, 0, 1) for "0.9.0.1"; None when the version is absent or not dotted numbers."""
    match = re.match(r"^(\d+(?:\.\d+)*)", str(text or ""))
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def _truthy(value: object) -> bool:
    return str(value).strip().lower() == "true"


def topic_config(
    run: Mapping[str, Any], topic: Mapping[str, Any], power_lost: Collection[str] = ()
) -> TopicConfig:
    """The settings of run.json's `topic`; `power_lost`, the topics some partition of which lost
    power on every replica at once (`lost_power_on_every_replica`)."""
    version = parse_version((run.get("kafka") or {}).get("version"))
    broker = (run.get("cluster") or {}).get("broker_config") or {}
    overrides = topic.get("config") or {}
    producer = {**(run.get("producer") or {}), **(topic.get("producer") or {})}

    def setting(key: str) -> Any:
        return overrides.get(key, broker.get(key))

    unclean = setting("unclean.leader.election.enable")
    flush = overrides.get("flush.messages", broker.get("log.flush.interval.messages"))
    fmt = overrides.get("message.format.version", broker.get("log.message.format.version"))
    return TopicConfig(
        topic=str(topic["name"]),
        acks=str(topic["acks"]),
        replication_factor=int(topic.get("replication_factor") or 1),
        min_insync_replicas=int(setting("min.insync.replicas") or 1),
        unclean_leader_election=not fact("KIP-106").holds_in(version)
        if unclean is None
        else _truthy(unclean),
        unclean_is_default=unclean is None,
        idempotent=fact("KIP-98").holds_in(version) and _truthy(producer.get("enable.idempotence", False)),
        max_in_flight=int(producer.get("max.in.flight.requests.per.connection") or 5),
        version=version,
        client=_client_text(topic.get("client") or run.get("client")),
        power_loss=str(topic["name"]) in power_lost,
        fsync_each=str(flush).strip() == "1",
        message_format=message_format(fmt),
        eligible_leaders=_eligible_leaders(run, version),
        transactional=bool(topic.get("transactions")),
        pipeline=bool(topic.get("pipeline")),
    )


def _eligible_leaders(run: Mapping[str, Any], version: tuple[int, ...] | None) -> bool:
    """ELR (KIP-966): a KRaft cluster of 4.0 or later whose feature eligible.leader.replicas.version is
    at least 1, as formatted (run.json's cluster.features) or by default (on from 4.1)."""
    cluster = run.get("cluster") or {}
    elr = fact("KIP-966")
    if cluster.get("metadata") != "kraft" or version is None or not elr.holds_in(version):
        return False
    level = (cluster.get("features") or {}).get("eligible.leader.replicas.version")
    return int(level) >= 1 if level is not None else version >= (4, 1)


def _client_text(client: object) -> str:
    if isinstance(client, Mapping) and client.get("library"):
        return " ".join(str(client[key]) for key in ("library", "version") if client.get(key))
    return "client not named in run.json"


def _version_text(config: TopicConfig) -> str:
    return ".".join(map(str, config.version)) if config.version else "unknown version"


def _row(config: TopicConfig, gid: str, promised: bool, verdict: str, reason: str, by: str) -> dict[str, Any]:
    return {
        "id": gid,
        "topic": config.topic,
        "acks": config.acks,
        "promise": promise(gid),
        "promised": promised,
        "promised_by": by,
        "verdict": verdict,
        "reason": reason,
    }


def _brokers(config: TopicConfig) -> str:
    return f"the brokers (Kafka {_version_text(config)})"


def _idempotent_producer(config: TopicConfig) -> str:
    return f"the idempotent producer ({config.client} with Kafka {_version_text(config)} brokers)"


def _verdict(promised: bool, violations: int) -> str:
    if not promised:
        return NOT_PROMISED
    return VIOLATED if violations else HELD


def _acks_are_durable(config: TopicConfig) -> bool:
    """The configuration under which Kafka promises acknowledged writes survive."""
    return (
        config.acks == "all"
        and config.replication_factor >= 3
        and config.min_insync_replicas >= 2
        and not config.unclean_leader_election
        and _survives_power_loss(config)
    )


def _survives_power_loss(config: TopicConfig) -> bool:
    return not config.power_loss or config.fsync_each


def _power_loss_text(config: TopicConfig) -> str:
    if config.fsync_each:
        return "every replica lost power; flush.messages=1: every acknowledged write was on disk"
    text = (
        "every replica lost power, and writes are acknowledged before they are flushed "
        "(flush.messages is not 1): acknowledged writes in the page cache are lost"
    )
    if config.eligible_leaders:
        elr = fact("KIP-966")
        text += (
            f"; Eligible Leader Replicas ({elr.cite()}) do not keep them: with no live replica in the ISR "
            "or ELR the controller elects the last known leader once it is back, as before 4.0"
        )
    return text


def _no_lost(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    unclean_origin = f" (Kafka {_version_text(config)} default)" if config.unclean_is_default else ""
    rf, min_isr = config.replication_factor, config.min_insync_replicas
    unclean = "enabled" if config.unclean_leader_election else "disabled"
    conditions = [
        (config.acks == "all", "acks=all" if config.acks == "all" else f"acks={config.acks} (not all)"),
        (
            config.replication_factor >= 3,
            f"replication factor {rf} {'>=' if rf >= 3 else '<'} 3",
        ),
        (
            config.min_insync_replicas >= 2,
            f"min.insync.replicas {min_isr} {'>=' if min_isr >= 2 else '<'} 2",
        ),
        (
            not config.unclean_leader_election,
            f"unclean leader election {unclean}{unclean_origin}",
        ),
    ]
    if config.power_loss:
        conditions.append((_survives_power_loss(config), _power_loss_text(config)))
    promised = _acks_are_durable(config)
    lost, divergent = int(counts["lost"]), int(counts["divergent"])
    verdict = _verdict(promised, violations("no-lost-acked-writes", counts))
    reason = ", ".join(text for _, text in conditions) + f"; {lost} lost, {divergent} divergent"
    reason += _known_truncation(config, verdict)
    return _row(
        config,
        "no-lost-acked-writes",
        promised,
        verdict,
        reason,
        _brokers(config),
    )


def _known_truncation(config: TopicConfig, verdict: str) -> str:
    """What a loss or divergence is known to come from in this release (KIP-101, KIP-279)."""
    if verdict != VIOLATED:
        return ""
    epochs, fast_failovers = fact("KIP-101"), fact("KIP-279")
    if not epochs.holds_in(config.version):
        return (
            f"; known in Kafka {_version_text(config)}: a follower truncates its log to its own high "
            "watermark when the leader changes and can then be elected without committed writes "
            f"({epochs.id}, fixed in {epochs.since_text} by leader epochs)"
        )
    if (
        config.message_format is not None
        and config.message_format < epochs.since
        and (config.version is None or config.version < (3, 0))  # 3.0 ignores the setting (KIP-724)
    ):
        return (
            f"; known: message format {'.'.join(map(str, config.message_format))} keeps the high-watermark "
            f"truncation of releases before {epochs.since_text} ({epochs.id} truncates by leader epoch "
            "only for message format v2)"
        )
    if not fast_failovers.holds_in(config.version):
        return (
            f"; known in Kafka {_version_text(config)}: replicas can still diverge after fast "
            f"successive leader fail-overs ({fast_failovers.id}, fixed in {fast_failovers.since_text})"
        )
    return ""


def _no_lost_reads(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    survives_power_loss = _survives_power_loss(config)
    promised = not config.unclean_leader_election and survives_power_loss
    read_lost = int(counts["read_lost"])
    verdict = _verdict(promised, violations("no-lost-reads", counts))
    if config.unclean_leader_election:
        basis = "unclean leader election enabled: an out-of-sync replica may lead without it"
    elif not survives_power_loss:
        basis = (
            "every replica lost power, and what consumers read need not be flushed (flush.messages is not 1)"
        )
    else:
        basis = "unclean leader election disabled: a record a consumer can read is on every in-sync replica"
    reason = f"{basis}; {read_lost} read then lost"
    return _row(
        config,
        "no-lost-reads",
        promised,
        verdict,
        reason + _known_truncation(config, verdict),
        _brokers(config),
    )


def _replicas_agree(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    diverged = int(counts["replica_divergent"] or 0)
    verdict = _verdict(True, violations("replicas-agree", counts))
    basis = "replicas copy their leader's log and truncate to it after a leader change"
    reason = f"{basis}; {diverged} offsets differ"
    if counts["replicas_not_read"]:
        reason += f" among the replicas read (not read: {counts['replicas_not_read']})"
    return _row(
        config,
        "replicas-agree",
        True,
        verdict,
        reason + _known_truncation(config, verdict),
        _brokers(config),
    )


def _always(
    config: TopicConfig, counts: Mapping[str, Any], gid: str, reason: str, by: str | None = None
) -> dict[str, Any]:
    """The row of a guarantee promised whatever the configuration (by the brokers, unless `by`)."""
    return _row(config, gid, True, _verdict(True, violations(gid, counts)), reason, by or _brokers(config))


def _epochs_advance(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    regressions = int(counts["epoch_regressions"])
    return _always(
        config,
        counts,
        "epochs-advance",
        f"always promised: leaders and controllers are fenced by their epochs; {regressions} went backwards",
    )


def _failed_disk_leaves_isr(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    offline = fact("KIP-112")
    if offline.holds_in(config.version):
        basis = (
            f"a log directory that fails an I/O goes offline, and a broker with none left shuts down "
            f"({offline.cite()})"
        )
    else:
        basis = (
            f"Kafka {_version_text(config)} halts a broker on an I/O error in an append or a checkpoint "
            f"(before {offline.id}, {offline.since_text})"
        )
    stayed = int(counts["failed_disk_in_isr"])
    return _always(
        config,
        counts,
        "failed-disk-leaves-isr",
        f"{basis}; {stayed} stayed in the ISR 30 s after the fault's heal",
    )


def _no_phantom(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    promised = config.acks in ("all", "1")
    phantom = int(counts["phantom"])
    basis = f"acks={config.acks}: " + (
        "a definite failure is never appended" if promised else "no failure is definite"
    )
    return _row(
        config,
        "no-phantom-writes",
        promised,
        _verdict(promised, violations("no-phantom-writes", counts)),
        f"{basis}; {phantom} phantom",
        _brokers(config),
    )


def _no_duplicates(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    if not fact("KIP-98").holds_in(config.version):
        basis = f"Kafka {_version_text(config)} has no idempotent producer ({fact('KIP-98').cite()})"
    else:
        basis = f"enable.idempotence={'true' if config.idempotent else 'false'}"
    duplicated = int(counts["duplicated"])
    return _row(
        config,
        "no-duplicates",
        config.idempotent,
        _verdict(config.idempotent, violations("no-duplicates", counts)),
        f"{basis}; {duplicated} duplicated",
        _idempotent_producer(config),
    )


def _order(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    single_flight = config.max_in_flight == 1
    # A truncated acknowledged write's offset is handed out again, which reorders by definition:
    # order can only be promised where acknowledged writes are promised to survive.
    durable = _acks_are_durable(config)
    in_order = fact("KAFKA-5494")
    idempotent_order = config.idempotent and (single_flight or in_order.holds_in(config.version))
    promised = config.acks != "0" and durable and (single_flight or idempotent_order)
    if config.acks == "0":
        basis = "acks=0 gives no offsets to order"
    elif not durable:
        basis = "acknowledged writes may be truncated here (see no-lost-acked-writes), reusing their offsets"
    elif config.idempotent and not idempotent_order:
        basis = (
            f"idempotent producer with {config.max_in_flight} requests in flight: Kafka "
            f"{_version_text(config)} keeps order for one only ({in_order.cite()})"
        )
    elif config.idempotent:
        basis = "idempotent producer"
    else:
        basis = f"max.in.flight.requests.per.connection={config.max_in_flight}"
    reordered = int(counts["reordered"])
    return _row(
        config,
        "per-partition-order",
        promised,
        _verdict(promised, violations("per-partition-order", counts)),
        f"{basis}; {reordered} reordered",
        _idempotent_producer(config) if config.idempotent else f"the producer client ({config.client})",
    )


def _no_unexpected(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    unexpected = int(counts["unexpected"])
    return _always(
        config,
        counts,
        "no-unexpected-values",
        f"always promised; {unexpected} unexpected",
        f"the brokers and the client together (Kafka {_version_text(config)}, {config.client})",
    )


def _transactions_text(config: TopicConfig) -> str | None:
    """Why transactions promise nothing here, or None when they do (Kafka >= 0.11)."""
    if fact("KIP-98").holds_in(config.version):
        return None
    return f"Kafka {_version_text(config)} has no transactions ({fact('KIP-98').cite()})"


def _transaction_coordinator(config: TopicConfig) -> str:
    versions = f"Kafka {_version_text(config)}, {config.client}"
    return f"the transaction coordinator and read_committed readers ({versions})"


def _on_durable_transactions(
    config: TopicConfig, counts: Mapping[str, Any], gid: str, held: str, lossy: str, found: str
) -> dict[str, Any]:
    """A guarantee of transactions that rests on their records surviving: promised with transactions
    where acknowledged writes are promised to survive; `held` and `lossy` say why it is promised or
    not, `found` what the counts found."""
    missing = _transactions_text(config)
    promised = missing is None and _acks_are_durable(config)
    verdict = _verdict(promised, violations(gid, counts))
    basis = missing or (held if promised else f"{lossy} (see no-lost-acked-writes' conditions)")
    reason = f"{basis}; {found}"
    return _row(
        config,
        gid,
        promised,
        verdict,
        reason + _known_truncation(config, verdict),
        _transaction_coordinator(config),
    )


def _committed_durable(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    return _on_durable_transactions(
        config,
        counts,
        "committed-transactions-durable",
        "a committed transaction's records are acknowledged acks=all writes on a durable topic",
        "a commit makes records visible, not durable: acknowledged writes may be lost here",
        f"{int(counts['lost_committed'])} records of committed transactions lost",
    )


def _no_aborted_reads(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    read = int(counts["aborted_read"])
    missing = _transactions_text(config)
    promised = missing is None
    basis = (
        missing
        or "read_committed readers skip the records of aborted transactions (the aborted-transaction index)"
    )
    return _row(
        config,
        "no-aborted-reads",
        promised,
        _verdict(promised, violations("no-aborted-reads", counts)),
        f"{basis}; {read} records of aborted transactions read",
        _transaction_coordinator(config),
    )


def _atomic(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    return _on_durable_transactions(
        config,
        counts,
        "atomic-transactions",
        "the coordinator writes a commit marker to every partition of the transaction",
        "a commit is atomic, but its records may be lost one by one here",
        f"{int(counts['torn_transactions'])} committed transactions torn",
    )


def _exactly_once(config: TopicConfig, counts: Mapping[str, Any]) -> dict[str, Any]:
    skipped, twice = int(counts["pipeline_skipped"]), int(counts["pipeline_duplicated"])
    mismatched = int(counts["pipeline_offset_mismatches"])
    return _on_durable_transactions(
        config,
        counts,
        "exactly-once-pipeline",
        "the pipeline commits its outputs and its input offsets in one transaction",
        "the pipeline's committed outputs may be lost here, so exactly once cannot be promised",
        f"{skipped} input records skipped, {twice} processed twice, {mismatched} stored offsets wrong",
    )


PLAIN_JUDGES = (
    _no_lost,
    _no_lost_reads,
    _replicas_agree,
    _failed_disk_leaves_isr,
    _no_phantom,
    _no_duplicates,
    _order,
    _no_unexpected,
    _epochs_advance,
)
"""The guarantees of a topic written without transactions."""
TRANSACTIONAL_JUDGES = (
    _committed_durable,
    _no_aborted_reads,
    _atomic,
    _no_lost_reads,
    _replicas_agree,
    _failed_disk_leaves_isr,
    _no_duplicates,
    _order,
    _no_unexpected,
    _epochs_advance,
)
"""The guarantees of a topic written in transactions: a write's `ok` says it was appended, its
transaction's commit that it is to be read."""


POWER_LOSS = "power-loss"


def lost_power_on_every_replica(
    run: Mapping[str, Any], faults: Iterable[FaultWindow], replicas: Iterable[Mapping[str, Any]] | None
) -> frozenset[str]:
    """The topics some partition of which lost power on every replica at once: a power loss whose
    targets hold every broker that held the partition (replicas.jsonl's `replica` lines). One that
    hit a leader or a follower alone leaves the others' copies, so Kafka's promise stands. Without
    replicas.jsonl the replicas are not known, and any power loss of a broker counts (the promise is
    withdrawn rather than a loss blamed on Kafka)."""
    lost = [set(w.targets) for w in faults if w.fault == POWER_LOSS and "error" not in w.detail]
    if not lost:
        return frozenset()
    topics = [str(t["name"]) for t in run.get("topics") or []]
    if replicas is None:
        return (
            frozenset(topics) if any(t.startswith("kafka-") for down in lost for t in down) else frozenset()
        )
    held: dict[tuple[str, int], set[str]] = {}
    for line in replicas:
        if line.get("type") == "replica":
            held.setdefault((str(line["topic"]), int(line["partition"])), set()).add(
                f"kafka-{line['broker']}"
            )
    return frozenset(topic for (topic, _), brokers in held.items() if any(brokers <= down for down in lost))


def derive_guarantees(
    run: Mapping[str, Any], topic_counts: Mapping[str, Mapping[str, Any]], power_lost: Collection[str] = ()
) -> list[dict[str, Any]]:
    """One row per (topic, guarantee): promise, whether promised, verdict, reason and cases.

    `topic_counts[topic]` holds each anomaly kind's count (`contract.anomaly_kinds`), its cases
    (`Guarantee.cases`), `unread` (its partitions whose final read is incomplete, as "topic
    partition N"), `replicas_read` (whether history/replicas.jsonl was there) and
    `replicas_not_read` (the brokers whose replicas could not be read, as text; empty when all
    were) and `disks_failed` (whether a `disk-full` or `fsync-error` ran: only then is
    `failed-disk-leaves-isr` judged). `power_lost` names the topics that lost power on every
    replica of a partition at once (`lost_power_on_every_replica`: it changes what is promised).
    """
    rows: list[dict[str, Any]] = []
    for topic in run["topics"]:
        config = topic_config(run, topic, power_lost)
        counts = topic_counts[config.topic]
        judges = TRANSACTIONAL_JUDGES if config.transactional else PLAIN_JUDGES
        judged = [
            with_cases(judge(config, counts), counts)
            for judge in judges
            if (judge is not _replicas_agree or counts["replicas_read"])  # judged where replicas were read
            and (judge is not _failed_disk_leaves_isr or counts["disks_failed"])  # and where disks failed
        ]
        rows += on_complete_reads(judged, counts["unread"])
        if config.pipeline:  # skips are judged over its inputs' complete partitions too
            inputs = [str(name) for name in (topic.get("pipeline") or {}).get("inputs") or []]
            unread = [*counts["unread"], *(p for name in inputs for p in topic_counts[name]["unread"])]
            rows += on_complete_reads([with_cases(_exactly_once(config, counts), counts)], unread)
    return rows


def on_complete_reads(rows: list[dict[str, Any]], unread: Sequence[str]) -> list[dict[str, Any]]:
    """Guarantee rows of one topic or group with `held` (or `not-exercised`) made `unknown` where
    the guarantee rests on complete final reads (one of its kinds counts over completely read
    partitions only: `AnomalyKind.complete_reads_only`) and some of its partitions (`unread`, as
    "topic partition N") were not read to their end: nothing found there is no evidence. A
    violation found stands. For topics and groups alike."""
    if not unread:
        return rows
    why = f"; the final read of {', '.join(unread)} is incomplete, so records there were not counted"
    return [
        {**row, "verdict": UNKNOWN, "reason": row["reason"] + why}
        if row["verdict"] in (HELD, NOT_EXERCISED)
        and any(kind.complete_reads_only for kind in kinds_of(row["id"]))
        else row
        for row in rows
    ]


def with_cases(row: dict[str, Any], counts: Mapping[str, Any]) -> dict[str, Any]:
    """A guarantee row with `exercised`, the count of the cases it was judged over (its table row's
    `cases`, from `counts`), and `not-exercised` in place of `held` where there were none."""
    guarantee = GUARANTEE_BY_ID[row["id"]]
    cases = int(counts.get(guarantee.cases) or 0)
    row = {**row, "exercised": {"count": cases, "what": guarantee.cases_are}}
    if row["verdict"] == HELD and not cases:
        why = f"{row['reason']}; not exercised: no {guarantee.cases_are}"
        row |= {"verdict": NOT_EXERCISED, "reason": why}
    return row


def unjudged(guarantees: list[dict[str, Any]], failed: Mapping[str, str]) -> list[dict[str, Any]]:
    """`guarantees` with the verdicts that rest on a failed checker (`failed`: kind id -> error)
    made `unknown`, the error in the reason: a crash never passes for a kept promise. A promise the
    other checkers already found broken stays `violated`: the crash cannot unfind what they found."""
    rows = []
    for row in guarantees:
        errors = [
            f"the {kind_id} checker failed ({error})"
            for kind_id, error in failed.items()
            if kind(kind_id).guarantee == row["id"]
        ]
        if errors:
            verdict = UNKNOWN if row["promised"] and row["verdict"] != VIOLATED else row["verdict"]
            row = {**row, "verdict": verdict, "reason": f"{row['reason']}; {'; '.join(errors)}"}
        rows.append(row)
    return rows


def is_valid(guarantees: list[dict[str, Any]], unexpected: int | None) -> bool:
    """Every promised guarantee held or was not exercised (it broke nowhere and nothing kept it from
    being judged), and no unexpected value was read."""
    return unexpected == 0 and all(g["verdict"] in (HELD, NOT_EXERCISED) for g in guarantees if g["promised"])
