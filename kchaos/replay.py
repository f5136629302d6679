"""Running a finished run again: its scenario as it ran, and what it broke.

A run directory written by `kchaos run` holds `scenario.yaml`, the effective scenario (seed,
duration, and the fault timeline written out entry by entry); run.json names the Kafka image. A
replay is that scenario pinned to that image. What a run "broke" is its violated guarantees and
failed expectations, each named by one stable text (`Breakage.key`), so runs can be compared.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.errors import ConfigError, HistoryError
from contract.expectation_outcomes import FAILED, ExpectationOutcome, read_expectations
from contract.history import RESULT, SCENARIO
from contract.history_readers import load_run_json, read_json_object
from harness.images import KafkaImage
from kchaos.scenario import Scenario, load_scenario
from kchaos.scenario_dump import pinned


@dataclass(frozen=True)
class Breakage:
    """One broken promise of a run: a violated guarantee or a failed scenario expectation."""

    key: str
    """`chaos-acks-all per-partition-order` or `expect acks=1 lost == 0`."""
    detail: str


def breakages(result: Mapping[str, Any], expectations: Sequence[ExpectationOutcome]) -> list[Breakage]:
    """What a checked run broke, guarantees first, in result.json's order. An unknown expectation
    (a count over an incomplete final read) broke nothing a replay could show again."""
    found = [
        Breakage(f"{g.get('topic')} {g.get('id')}", str(g.get("reason", "")))
        for g in result.get("guarantees") or []
        if isinstance(g, dict) and g.get("verdict") == "violated"
    ]
    found += [
        Breakage(f"expect {e.text}", f"observed {e.observed}") for e in expectations if e.verdict == FAILED
    ]
    return found


@dataclass(frozen=True)
class RecordedRun:
    """A finished run directory, ready to be run again."""

    root: Path
    scenario: Scenario
    image: str
    broke: list[Breakage]


def load_recorded_run(root: Path) -> RecordedRun:
    """The run at `root`, its scenario pinned to its image. Raises ConfigError/HistoryError (exit 2)
    for a directory that is no run, one from before `scenario.yaml` existed, one never checked, or
    an image this machine does not have."""
    run = load_run_json(root)
    if not (root / SCENARIO).is_file():
        raise ConfigError(
            f"{root}: no {SCENARIO}: the run was recorded by an older kafka-chaos (or by `kchaos "
            f"workload`), so its fault timeline cannot be replayed exactly; run its scenario again "
            f"with `{_rerun_command(run)}`"
        )
    image = (run.get("kafka") or {}).get("image")
    if not isinstance(image, str) or not image:
        raise HistoryError("kafka.image: expected the image tag the run used", str(root / "run.json"))
    KafkaImage.inspect(image)  # ConfigError naming the image when this machine does not have it
    scenario = pinned(load_scenario(str(root / SCENARIO)), image)
    if not (root / RESULT).is_file():
        raise ConfigError(f"{root}: not checked yet (no {RESULT}); run `kchaos check {root}` first")
    result = read_json_object(root / RESULT)
    return RecordedRun(root, scenario, image, breakages(result, read_expectations(root)))


def _rerun_command(run: Mapping[str, Any]) -> str:
    source, seed = run.get("scenario_source") or run.get("scenario"), run.get("seed")
    name = (
        shlex.quote(source)
        if isinstance(source, str) and 0 < len(source) <= 200 and source.isprintable()
        else "SCENARIO"
    )
    number = isinstance(seed, int) and not isinstance(seed, bool)
    return f"kchaos run {name} --seed {seed if number else 'N'}"
