"""What a consumer group's commit mode promises, judged on its counts, each verdict with its reason.

    after-process   commits what was processed: nothing is skipped (at least once)
    before-process  processes only what it committed: nothing is redelivered (at most once)
    auto            librdkafka commits, on a timer, offsets as records are handed to the application:
                    neither (a crash after a commit and before processing skips; one before, redelivers)

Every mode relies on the coordinator: polls of one member advance within a generation, and commits
of synchronous modes never go backwards (commits of an old generation are refused). Both hold only
while the log is not cut under the group: a member whose position falls past a truncated log's end
resets it (`auto.offset.reset`), polls again from there and commits the lower offsets, all in one
generation. Caveats that
weaken every promise go into the reasons: the offsets topic's replication factor (Kafka < 0.11
creates it with as many replicas as brokers were alive, KIP-115) and truncated logs (no consumer
before Kafka 2.1 detects one: an out-of-range fetch resets the position, KIP-320).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from checkers.guarantees import HELD, NOT_PROMISED, VIOLATED, parse_version, topic_config, with_cases
from checkers.release_facts import fact
from contract.anomaly_kinds import promise, violations

TRUNCATION_DETECTED_SINCE = (2, 1)
"""KIP-320: consumers detect a log truncated under them (by leader epoch) from Kafka 2.1."""


def _row(gid: str, promised: bool, violations: int, reason: str, by: str) -> dict[str, Any]:
    verdict = NOT_PROMISED if not promised else (VIOLATED if violations else HELD)
    return {
        "id": gid,
        "promise": promise(gid),
        "promised": promised,
        "promised_by": by,
        "verdict": verdict,
        "reason": reason,
    }


def _caveats(run: Mapping[str, Any]) -> str:
    """What weakens every commit promise of this run, as a clause of a reason ('' when nothing)."""
    parts = []
    offsets = run.get("offsets_topic") or {}
    factor, brokers = offsets.get("replication_factor"), (run.get("cluster") or {}).get("brokers")
    if isinstance(factor, int) and isinstance(brokers, int) and factor < min(3, brokers):
        parts.append(
            f"__consumer_offsets has {factor} replica(s) of {brokers} brokers (created while fewer "
            "brokers were alive, KIP-115): one broker's loss can lose the group's commits"
        )
    version = parse_version((run.get("kafka") or {}).get("version"))
    if version is not None and version < TRUNCATION_DETECTED_SINCE:
        parts.append(
            "a consumer of Kafka < 2.1 cannot detect a log truncated under it (KIP-320): if an "
            "unclean election or a truncation cuts the log, its position resets and may skip"
        )
    return "; " + "; ".join(parts) if parts else ""


def _logs_cut(run: Mapping[str, Any], group: Mapping[str, Any], power_lost: Collection[str]) -> str:
    """Why the brokers may cut records the group read or committed past out of its topics' logs
    ('' when they promise not to): then a skip or a step back follows the broker's loss."""
    topics = {str(t["name"]): t for t in run.get("topics") or []}
    for name in group["topics"]:
        config = topic_config(run, topics[name], power_lost)
        if config.unclean_leader_election:
            return f"unclean leader election is enabled on {name}: records consumed may be cut from its log"
        if config.power_loss and not config.fsync_each:
            return f"every replica of {name} lost power, and records consumed need not have been flushed"
    return ""


def group_guarantees(
    run: Mapping[str, Any],
    group: Mapping[str, Any],
    counts: Mapping[str, Any],
    power_lost: Collection[str] = (),
) -> list[dict[str, Any]]:
    """The guarantee rows of one group (`group`: its run.json entry; `counts`: its result counts;
    `power_lost`: the topics that lost power on every replica of a partition at once)."""
    mode, asynchronous = group["commit"], bool(group.get("commit_async"))
    client = run.get("client") or {}
    library = " ".join(str(client[k]) for k in ("library", "version") if client.get(k)) or "the client"
    by = f"the consumer's commit mode ({mode}{', async' if asynchronous else ''}; {library})"
    version = (run.get("kafka") or {}).get("version") or "unknown version"
    coordinator = f"the group coordinator (Kafka {version})"
    caveats = _caveats(run)
    cut = _logs_cut(run, group, power_lost)
    at_least_once = mode == "after-process"
    skip_reason = {
        "after-process": "commits only offsets of records already processed",
        "before-process": "commits a batch before processing it: a crash between skips it (at most once)",
        "auto": "auto-commit commits offsets as records are handed out, processed or not",
    }[mode]
    redelivery_reason = {
        "after-process": "a crash after processing and before the commit redelivers (at least once)",
        "before-process": "processes only a batch whose commit is stored: no record is processed twice",
        "auto": "a crash before the next auto-commit redelivers what was processed since the last",
    }[mode]
    monotonic_reason = "a member's position only advances between rebalances"
    synchronous = mode == "before-process" or (at_least_once and not asynchronous)
    isolation = (group.get("config") or {}).get("isolation.level") or "read_uncommitted"
    read_committed = isolation == "read_committed" and _transactions_exist(version)
    transactional = {str(t["name"]) for t in run.get("topics") or [] if t.get("transactions")}
    rows = [
        _row(
            "no-consumer-skips",
            at_least_once and not cut,
            violations("no-consumer-skips", counts),
            f"{cut or skip_reason}; {counts['skipped']} skipped, {counts['poll_skips']} poll skips{caveats}",
            by,
        ),
        _row(
            "no-redeliveries",
            mode == "before-process",
            violations("no-redeliveries", counts),
            f"{redelivery_reason}; {counts['redelivered']} redelivered{caveats}",
            by,
        ),
        _row(
            "monotonic-polls",
            not cut,
            violations("monotonic-polls", counts),
            f"{cut or monotonic_reason}; {counts['nonmonotonic']} went back{caveats}",
            coordinator,
        ),
        _row(
            "commits-advance",
            synchronous and not cut,
            violations("commits-advance", counts),
            (
                cut
                or (
                    "synchronous commits of the current generation only"
                    if synchronous
                    else "asynchronous and automatic commits may complete out of order"
                )
            )
            + f"; {counts['commit_regressions']} went back",
            coordinator,
        ),
    ]
    if not transactional & set(group["topics"]):  # nothing it reads is written in transactions
        return rows
    basis = (
        "read_committed: a member is handed records below the last stable offset only, and none of "
        "an aborted transaction"
        if read_committed
        else f"isolation.level={isolation}: uncommitted and aborted records are handed out too"
    )
    uncommitted = f"{basis}; {counts['uncommitted_read']} uncommitted records polled"
    return [
        *rows,
        _row(
            "no-uncommitted-reads",
            read_committed,
            violations("no-uncommitted-reads", counts),
            uncommitted,
            coordinator,
        ),
    ]


def _transactions_exist(version: object) -> bool:
    """Kafka >= 0.11 (KIP-98): read_committed means something."""
    return fact("KIP-98").holds_in(parse_version(version))


def exercised(rows: list[dict[str, Any]], counts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A group's guarantee rows, each with the cases it was judged over (`with_cases`); `counts` the
    group's entry in result.json, with `aborted_appended` of its topics."""
    cases = {**counts, "commits_ok": (counts.get("commits") or {}).get("ok", 0)}
    return [with_cases(row, cases) for row in rows]
