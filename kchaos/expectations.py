"""Scenario expectations (`acks=all lost == 0`, `group=g-alo skipped == 0`) and how each is judged
against a check/result.json: `held`, `failed`, or `unknown`.

Some counts are taken only over partitions whose final read was complete (`FINAL_READ_COUNTS`):
on a topic or group with an incomplete partition such a count is a lower bound of the truth, so an
expectation on it is judged only when every value at or above the observed one gives the same
answer (`lost > 0` observed 5 holds, `lost == 0` observed 0 is unknown). An unknown expectation
does not pass: the run's exit code is 1, as for an unknown promised guarantee.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contract.anomaly_kinds import COUNT_KEYS, FINAL_READ_COUNTS, GROUP_COUNTS, unread_partitions
from contract.expectation_outcomes import FAILED, HELD, UNKNOWN, ExpectationOutcome

HEAL_RECOVERY = "heal_recovery_ms"
"""Per acks mode, the longest time after a heal until every partition acknowledged a write again;
per group, until it had polled every partition that acknowledged a write after the heal."""
ACKS_METRICS = (*COUNT_KEYS, HEAL_RECOVERY)
GROUP_METRICS = (*GROUP_COUNTS, HEAL_RECOVERY)
RUN_METRICS = ("unexpected", "valid", "complete")
"""The whole-run metrics an expectation may name without `acks=` or `group=`."""
FLAG_METRICS = ("valid", "complete")
"""The metrics that are true or false; every other one is a count."""

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
PATTERN = re.compile(
    r"^\s*(?:acks=(?P<acks>0|1|all)\s+|group=(?P<group>[A-Za-z0-9][A-Za-z0-9._-]{0,40})\s+)?"
    r"(?P<metric>[a-z_]+)\s*(?P<op>==|!=|<=|>=|<|>)\s*"
    r"(?P<value>\d{1,18}|true|false)\s*$"
)
HELP = (
    f"expected e.g. 'acks=all lost == 0' with a metric among {', '.join(ACKS_METRICS)}, or "
    f"'unexpected == 0', 'complete == true', 'valid == true', or 'group=<name> skipped == 0' with a "
    f"metric among {', '.join(GROUP_METRICS)}"
)


@dataclass(frozen=True)
class Expectation:
    text: str
    acks: str | None
    metric: str
    op: str
    value: int | bool
    group: str | None = None

    @classmethod
    def parse(cls, text: Any) -> Expectation | None:
        """The expectation `text` says, or None when it is not one (the caller names the field)."""
        match = PATTERN.match(text) if isinstance(text, str) else None
        if not match:
            return None
        # Each count is kept per group, per acks mode or for the whole run, and is a number or a
        # flag: any other pairing could never hold, and would fail every run it is in.
        metrics = GROUP_METRICS if match["group"] else ACKS_METRICS if match["acks"] else RUN_METRICS
        if match["metric"] not in metrics:
            return None
        raw = match["value"]
        value = raw == "true" if raw in ("true", "false") else int(raw)
        if isinstance(value, bool) != (match["metric"] in FLAG_METRICS):
            return None
        return cls(str(text), match["acks"], match["metric"], match["op"], value, match["group"])

    def evaluate(self, result: Mapping[str, Any]) -> ExpectationOutcome:
        """This expectation judged against a check/result.json."""
        observed = self._observed(result)
        if self.metric == HEAL_RECOVERY:
            return self._heal_recovery(result, observed)
        if observed is None:
            return ExpectationOutcome(self.text, FAILED, None, "the result has no such count")
        holds = OPERATORS[self.op](observed, self.value)
        unread = self._incomplete(result) if self.metric in FINAL_READ_COUNTS else []
        if unread and not self._settled_by_lower_bound(observed):
            why = (
                f"the final read of {', '.join(unread)} is incomplete: {self.metric} counts only completely "
                f"read partitions, so the true count is {observed} or more"
            )
            return ExpectationOutcome(self.text, UNKNOWN, observed, why)
        return ExpectationOutcome(self.text, HELD if holds else FAILED, observed)

    def _heal_recovery(self, result: Mapping[str, Any], observed: Any) -> ExpectationOutcome:
        """Judged like a count of an incomplete read when some partition had not acknowledged a
        write (or been polled by the group) again by the end of the writes (of the group's events):
        a lower bound; a run with no heal followed by writes has nothing to recover from, and holds."""
        scope = self._scope(result)
        if HEAL_RECOVERY not in scope:
            return ExpectationOutcome(self.text, FAILED, None, "the result has no such count")
        if observed is None:
            nothing = (
                "no write was acknowledged after a heal on the group's topics (acks=0 topics do not count)"
                if self.group is not None
                else "no heal was followed by writes to recover"
            )
            return ExpectationOutcome(self.text, HELD, None, nothing)
        holds = OPERATORS[self.op](observed, self.value)
        if not scope.get("heal_recovery_lower_bound"):
            return ExpectationOutcome(self.text, HELD if holds else FAILED, observed)
        not_again = (
            f"group {self.group} polled no record again of some partition written to, by the workload's end"
            if self.group is not None
            else f"some partition of acks={self.acks} acknowledged no write again by the writes' end"
        )
        why = (
            f"after a heal, {not_again} or the next fault: the true time is {math.floor(observed)} ms or more"
        )
        verdict = (HELD if holds else FAILED) if self._settled_by_lower_bound(observed) else UNKNOWN
        return ExpectationOutcome(self.text, verdict, observed, why)

    def _observed(self, result: Mapping[str, Any]) -> Any:
        return self._scope(result).get(self.metric)

    def _scope(self, result: Mapping[str, Any]) -> Mapping[str, Any]:
        """What this expectation's metric is one of: the group's entry, the acks mode's, or the run's."""
        if self.group is not None:
            return (result.get("groups") or {}).get(self.group) or {}
        if self.acks is not None:
            return (result.get("acks") or {}).get(self.acks) or {}
        return result

    def _incomplete(self, result: Mapping[str, Any]) -> list[str]:
        """The incompletely read partitions ("topic partition N") this expectation's count covers."""
        if self.group is not None:
            topics = set((result.get("groups") or {}).get(self.group, {}).get("topics") or [])
        else:
            topics = {row.get("topic") for row in result.get("topics") or [] if row.get("acks") == self.acks}
        return unread_partitions(result.get("incomplete_partitions") or [], topics)

    def _settled_by_lower_bound(self, observed: float) -> bool:
        """Whether every count at or above `observed` judges this expectation alike: a comparison
        with an integer changes its answer only around the value, so those counts and `observed`
        stand for all of them."""
        value = int(self.value)
        counts = {observed, *(n for n in (value - 1, value, value + 1) if n > observed)}
        return len({OPERATORS[self.op](n, value) for n in counts}) == 1
