"""A finding's numbers: counts picked from its runs' check/result.json, and the sentences that say
them with the runs, seeds and releases they rest on (docs/findings/<id>/finding.yaml's `counts`).

A count is a path into result.json (or, starting with `run.`, into run.json): keys separated by
dots, where `*` takes every value of an object or element of a list, `name[field=value]` the
elements of list `name` whose `field` is `value`, and a last `#` the number of elements of what it
reaches; the integers a path reaches are summed (`acks.all.lost`, `groups.*.skipped`,
`transactions[*].fatal_errors`, `run.workload.killed.#`). A path that reaches none (a count a
result of its time did not have) is None.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from contract.errors import ConfigError

_SEGMENT = re.compile(r"^(?P<key>[A-Za-z0-9_\-]+|\*|#)(?:\[(?P<select>\*|[A-Za-z0-9_]+=[^\]]+)\])?$")


@dataclass(frozen=True)
class Step:
    """One segment of a count path: a key (or `*`), then optionally a selection of list elements."""

    key: str
    select: tuple[str, str] | None = None
    """(field, value), or ("*", "") for every element."""


def parse_path(path: str, where: str) -> tuple[Step, ...]:
    """The steps of a count path; a ConfigError naming `where` (file and field) when malformed."""
    steps = []
    for segment in path.split("."):
        match = _SEGMENT.match(segment)
        if not segment or match is None:
            raise ConfigError(
                f"{where}: {path!r} is not a count path (keys separated by dots, `*`, `name[field=value]`)"
            )
        select = match["select"]
        if select is None:
            steps.append(Step(match["key"]))
        elif select == "*":
            steps.append(Step(match["key"], ("*", "")))
        else:
            field, _, value = select.partition("=")
            steps.append(Step(match["key"], (field, value)))
    return tuple(steps)


def pick(
    result: Mapping[str, Any], steps: Sequence[Step], run: Mapping[str, Any] | None = None
) -> int | None:
    """The sum of the integers `steps` reach in `result` (in `run` for a path starting `run.`);
    None when they reach none."""
    root = run if steps and steps[0] == Step("run") and run is not None else result
    steps = steps[1:] if root is run else steps
    values = [v for v in _walk(root, steps) if isinstance(v, int) and not isinstance(v, bool)]
    return sum(values) if values else None


def _walk(node: Any, steps: Sequence[Step]) -> Iterable[Any]:
    if not steps:
        yield node
        return
    step, rest = steps[0], steps[1:]
    if step.key == "#":
        if isinstance(node, list | dict) and not rest:
            yield len(node)
        return
    if step.key == "*":
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    elif isinstance(node, dict) and step.key in node:
        children = [node[step.key]]
    else:
        children = []
    for child in children:
        if step.select is None:
            yield from _walk(child, rest)
        elif isinstance(child, list):
            field, value = step.select
            for element in child:
                if field == "*" or (isinstance(element, dict) and str(element.get(field)) == value):
                    yield from _walk(element, rest)


@dataclass(frozen=True)
class CountSpec:
    """One clause of a finding's result: `say` (e.g. "acks=all lost"), a count over an `of`."""

    say: str
    count: tuple[Step, ...]
    of: tuple[Step, ...] | None
    releases: tuple[str, ...] | None
    """Only these releases' runs (None: every run)."""
    scenarios: tuple[str, ...] | None = None
    """Only the runs of these scenarios (as `BundledRun.scenario` says them; None: every run)."""
    clients: tuple[str, ...] | None = None
    """Only the runs of these clients (librdkafka, java; None: every run)."""


@dataclass(frozen=True)
class Measured:
    """A count measured in one run."""

    release: str
    seed: int
    count: int
    of: int | None
    scenario: str = ""
    """The run's scenario: one seed's fault schedule is its scenario's (`BundledRun.scenario`)."""
    client: str = ""
    """The run's client and its version (`BundledRun.client`): two clients are two runs, not one
    seed run twice."""


def version_key(release: str) -> tuple[int, ...]:
    """A Kafka release's sort key: 0.9.0.1 before 0.11.0.3 before 4.1.1."""
    return tuple(int(part) if part.isdigit() else -1 for part in release.split("."))


def number(n: int) -> str:
    return f"{n:,}"


def seeds_text(seeds: Iterable[int]) -> str:
    """`seed 1`, `seeds 1-5`, `seeds 0, 2`, `seeds 1 (twice), 2-5`: each seed run, in order."""
    times = Counter(seeds)
    ordered = sorted(times)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1 and times[ordered[j + 1]] == 1:
            j += 1
        first = ordered[i]
        if times[first] > 1:
            parts.append(f"{first} ({times_text(times[first])})")
            i += 1
            continue
        if j - i >= 2:
            parts.append(f"{first}-{ordered[j]}")
        else:
            parts.extend(str(s) for s in ordered[i : j + 1])
        i = j + 1
    word = "seed" if len(times) == 1 else "seeds"
    return f"{word} {', '.join(parts)}"


def times_text(n: int) -> str:
    return {2: "twice", 3: "three times"}.get(n, f"{n} times")


def runs_text(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def several(values: Iterable[str]) -> bool:
    """Whether runs differ in what `values` names (their client, their scenario): only then do the
    texts name it for each run."""
    return len(set(values)) > 1


def by_release(measured: Sequence[Measured]) -> list[tuple[str, list[Measured]]]:
    """The runs grouped by release, oldest release first, each release's runs by seed."""
    releases = sorted({m.release for m in measured}, key=version_key)
    return [(r, sorted((m for m in measured if m.release == r), key=lambda m: m.seed)) for r in releases]


def one_release(spec: CountSpec, runs: Sequence[Measured]) -> str:
    """What `spec` measured over one release's runs: a none found says over how many of what and
    runs; otherwise each run that found some, with its seed."""
    seeds = seeds_text(m.seed for m in runs)
    hits = [m for m in runs if m.count]
    if not hits:
        total = sum(m.of or 0 for m in runs)
        over = f" of {number(total)}" if spec.of is not None else ""
        return f"{spec.say} 0{over} ({runs_text(len(runs))}, {seeds})"
    listed = ", ".join(f"{_one(spec, m)} ({_which(m, runs)})" for m in hits)
    if len(runs) == 1:
        return f"{spec.say} {_one(spec, hits[0])} (1 run, {seeds})"
    return f"{spec.say} in {len(hits)} of {len(runs)} runs ({seeds}): {listed}"


def _which(m: Measured, runs: Sequence[Measured]) -> str:
    """Which run `m` is: its seed, and its client and scenario where the runs have several."""
    which = [f"seed {m.seed}"]
    if several(r.client for r in runs):
        which.append(m.client)
    if several(r.scenario for r in runs):
        which.append(PurePosixPath(m.scenario).stem)
    return ", ".join(which)


def _one(spec: CountSpec, m: Measured) -> str:
    return number(m.count) if spec.of is None or m.of is None else f"{number(m.count)} of {number(m.of)}"


def sentence(spec: CountSpec, measured: Sequence[Measured]) -> str:
    """The clause over every release (each named when there are several)."""
    groups = by_release(measured)
    if len(groups) == 1:
        return one_release(spec, groups[0][1])
    return "; ".join(f"{release}: {one_release(spec, runs)}" for release, runs in groups)


def compact(spec: CountSpec, measured: Sequence[Measured]) -> str:
    """The clause in few words, for README's table: in how many runs of each release it was found,
    the releases where it never was together."""
    parts, clean, clean_runs = [], [], 0
    for release, runs in by_release(measured):
        hits = sum(1 for m in runs if m.count)
        if hits:
            parts.append(f"in {hits} of {runs_text(len(runs))} on {release}")
        else:
            clean.append(release)
            clean_runs += len(runs)
    if clean:
        parts.append(f"0 in {runs_text(clean_runs)} on {', '.join(clean)}")
    return f"{spec.say} {'; '.join(parts)}"
