"""The findings' tables, made from their bundles (`kchaos.finding_bundles`) so that no number is
typed twice: FINDINGS.md's summary and release matrix, each finding's runs, README's short table,
and each bundle's counts.md.

Tables live in a document between markers, which `kchaos findings tables --write` rewrites and
`kchaos findings check` compares:

    <!-- findings:summary -->  ...  <!-- /findings:summary -->
    <!-- findings:matrix -->   ...  <!-- /findings:matrix -->
    <!-- findings:runs:ID -->  ...  <!-- /findings:runs:ID -->     (a finding's runs)
    <!-- findings:readme -->   ...  <!-- /findings:readme -->      (README.md)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from contract.errors import ConfigError
from contract.history import write_atomic
from kchaos.finding_bundles import COUNTS, Bundle, BundledRun, read_quotes
from kchaos.finding_counts import (
    Measured,
    compact,
    number,
    pick,
    runs_text,
    seeds_text,
    sentence,
    several,
    times_text,
    version_key,
)

_BLOCK = re.compile(
    r"<!-- findings:(?P<name>[a-z0-9:-]+) -->\n(?P<body>.*?)<!-- /findings:(?P=name) -->", re.S
)
_OPEN = re.compile(r"<!-- (/?)findings:([a-z0-9:-]+) -->")
METADATA = {"zookeeper": "ZooKeeper", "kraft": "KRaft"}


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as dashes."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {anchor(line.lstrip("#")) for line in markdown.splitlines() if line.startswith("#")}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code_list(items: Sequence[str]) -> str:
    return ", ".join(f"`{item}`" for item in dict.fromkeys(items))


def releases_text(bundle: Bundle) -> str:
    releases = ", ".join(sorted({r.release for r in bundle.runs}, key=version_key))
    if bundle.finding.client:
        clients = ", ".join(sorted({r.client for r in bundle.runs}))
        return f"{clients} on {releases}"
    return releases


def result_text(bundle: Bundle) -> str:
    """The summary's result: each count over every run it applies to (runs, seeds, releases)."""
    return "; ".join(sentence(spec, bundle.measured(spec)) for spec in bundle.finding.counts)


def summary_table(bundles: Sequence[Bundle]) -> str:
    lines = ["| finding | release | scenario | result | whose promise |", "| --- | --- | --- | --- | --- |"]
    for b in bundles:
        if not b.finding.summary or not b.runs:
            continue
        cells = [
            f"[{b.finding.title}](#{b.finding.section})",
            releases_text(b),
            _code_list([r.scenario for r in b.runs]),
            result_text(b),
            b.finding.whose,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def readme_table(bundles: Sequence[Bundle]) -> str:
    """The README's short table: finding, releases, the first count; the scenarios are in FINDINGS'
    summary table (the README stays short)."""
    lines = ["| finding | release | result |", "| --- | --- | --- |"]
    for b in bundles:
        if b.finding.readme is None or not b.runs:
            continue
        headline = b.finding.counts[0]  # the README's short table: the first count alone
        result = compact(headline, b.measured(headline))
        cells = [
            f"[{b.finding.readme}](docs/FINDINGS.md#{b.finding.section})",
            releases_text(b),
            result,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _verdicts(runs: Sequence[BundledRun], guarantee: str, acks: str) -> str:
    """One guarantee's verdict over runs: the verdict when all agree, else each with its count."""
    seen = Counter(
        g.get("verdict")
        for r in runs
        for g in r.result.get("guarantees", [])
        if g.get("id") == guarantee and g.get("acks") == acks
    )
    if not seen:
        return "-"
    if len(seen) == 1:
        return str(next(iter(seen)))
    return ", ".join(f"{verdict} {n}" for verdict, n in sorted(seen.items(), key=lambda kv: -kv[1]))


def _matrix_cell(bundle: Bundle, runs: Sequence[BundledRun]) -> str:
    column = bundle.finding.matrix
    assert column is not None
    spec = bundle.finding.counts[column.count]
    measured = [m for m in bundle.measured(spec) if m.release == runs[0].release]
    hits = [m for m in measured if m.count]
    total = sum(m.of or 0 for m in measured)
    if len(measured) == 1:
        counted = f"{number(measured[0].count)} / {number(measured[0].of or 0)}"
    elif not hits:
        counted = f"0 / {number(total)} ({runs_text(len(measured))})"
    else:
        low, high = min(m.count for m in hits), max(m.count for m in hits)
        spread = number(low) if low == high else f"{number(low)}-{number(high)}"
        counted = f"{spread} lost in {len(hits)} of {runs_text(len(measured))}"
    verdicts = " / ".join(_verdicts(runs, g, column.acks) for g in column.verdicts)
    return f"{counted}: {verdicts}"


def matrix_table(bundles: Sequence[Bundle]) -> str:
    """FINDINGS' release matrix: a row per release, a column per bundle with `matrix`."""
    with_column = [(b.finding.matrix, b) for b in bundles if b.finding.matrix is not None]
    columns = [b for _, b in sorted(with_column, key=lambda cb: cb[0].order)]
    releases = sorted({r.release for b in columns for r in b.runs}, key=version_key)
    header = [
        "release",
        "metadata",
        *(column.title for column, _ in sorted(with_column, key=lambda cb: cb[0].order)),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for release in releases:
        runs_of = {b.id: [r for r in b.runs if r.release == release] for b in columns}
        metadata = sorted({METADATA.get(r.metadata, r.metadata) for runs in runs_of.values() for r in runs})
        cells = [release, ", ".join(metadata)]
        cells += [_matrix_cell(b, runs_of[b.id]) if runs_of[b.id] else "" for b in columns]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def runs_table(bundle: Bundle) -> str:
    """A finding's runs: release, seed, scenario, each count, the promised guarantees that broke."""
    specs = bundle.finding.counts
    clients = several(run.client for run in bundle.runs)
    header = ["run", "release", *(["client"] if clients else []), "seed", "scenario"]
    header += [*(s.say for s in specs), "promised and broken"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for run in sorted(bundle.runs, key=lambda r: (version_key(r.release), r.seed, r.client, r.run_id)):
        counts = []
        for spec in specs:
            if not run.counted_by(spec):
                counts.append("")
                continue
            count = pick(run.result, spec.count, run.run)
            of = pick(run.result, spec.of, run.run) if spec.of else None
            counts.append(number(count or 0) + (f" of {number(of)}" if of is not None else ""))
        broken = sorted(
            {
                str(g.get("id"))
                for g in run.result.get("guarantees", [])
                if g.get("promised") and g.get("verdict") == "violated"
            }
        )
        cells = [
            f"`{run.run_id}`",
            run.release,
            *([run.client] if clients else []),
            str(run.seed),
            f"`{run.scenario}`",
            *counts,
            ", ".join(broken) or "none",
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n" + _repeated_seeds(bundle)


def _repeated_seeds(bundle: Bundle) -> str:
    """A seed of one scenario run more than once on one release, with what each run of it found: one
    seed's fault schedule is the same every time, but not the timing of what it hits. (The same seed
    of two scenarios is two schedules.)"""
    spec = bundle.finding.counts[0]
    measured = bundle.measured(spec)
    scenarios = several(m.scenario for m in measured)
    clients = several(m.client for m in measured)
    by_seed: dict[tuple[str, int, str, str], list[Measured]] = {}
    for m in measured:
        by_seed.setdefault((m.release, m.seed, m.scenario, m.client), []).append(m)
    lines = []
    for (release, seed, scenario, client), ms in sorted(
        by_seed.items(), key=lambda kv: (version_key(kv[0][0]), kv[0][1], kv[0][2], kv[0][3])
    ):
        if len(ms) < 2:
            continue
        counts = [number(m.count) for m in ms]
        said = " and ".join([", ".join(counts[:-1]), counts[-1]])
        differ = "" if len({m.count for m in ms}) == 1 else ": one seed, different results"
        of = f" of `{scenario}`" if scenarios else ""
        on = f"{release} with {client}" if clients else release
        lines.append(f"\nSeed {seed}{of} on {on}, run {times_text(len(ms))}: {spec.say} {said}{differ}.\n")
    return "".join(lines)


def reproduce_text(bundle: Bundle) -> str:
    """The commands that run the bundle's runs again: per scenario, release and client, its seeds."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for run in bundle.runs:
        client = f" --client {run.client_option}" if run.client_option else ""
        groups.setdefault((run.scenario, run.release, client), []).append(run.seed)
    lines = []
    for (scenario, release, client), seeds in sorted(
        groups.items(), key=lambda kv: (kv[0][0], version_key(kv[0][1]), kv[0][2])
    ):
        listed = ",".join(str(s) for s in sorted(set(seeds)))
        flag = f"--seed {listed}" if len(set(seeds)) == 1 else f"--seeds {listed}"
        lines.append(f"    kchaos run {scenario} --kafka {release}{client} {flag}\n")
    return "".join(lines)


def counts_md(bundle: Bundle) -> str:
    """A bundle's counts.md: what it rests on, per run and seed, and how to make the runs again."""
    f = bundle.finding
    parts = [
        f"# {f.title}\n\n",
        f"Generated by `kchaos findings` from this bundle's runs: do not edit. "
        f"The finding: [docs/FINDINGS.md](../../FINDINGS.md#{f.section}). Whose promise: {f.whose}.\n\n",
    ]
    if not bundle.runs:
        parts.append("No runs bundled yet: `kchaos findings bundle RUN... --id " + bundle.id + "`.\n")
        return "".join(parts)
    parts += [
        f"{runs_text(len(bundle.runs))}, {seeds_text(r.seed for r in bundle.runs)}. ",
        f"Result: {result_text(bundle)}.\n\n",
        runs_table(bundle),
        "\nReproduce (each run's own `evidence/RUN/scenario.yaml` is the scenario exactly as it ran, "
        "fault timeline included):\n\n",
        reproduce_text(bundle),
    ]
    quotes = read_quotes(bundle.path)
    if quotes:
        parts.append("\nQuoted log lines (run, file:line):\n\n")
        parts += [f"- `{q.run}` {q.file}:{q.line}: `{q.text}`\n" for q in quotes]
    return "".join(parts)


def blocks(text: str, where: str) -> dict[str, str]:
    """The generated blocks of a document, by name; markers that do not pair are an error."""
    found = {m["name"]: m["body"] for m in _BLOCK.finditer(text)}
    opened = Counter(m.group(2) for m in _OPEN.finditer(text))
    for name, n in opened.items():
        if n != 2 or name not in found:
            raise ConfigError(
                f"{where}: the markers of block findings:{name} do not pair (open, then close, once)"
            )
    return found


def replace_blocks(text: str, contents: Mapping[str, str], where: str) -> str:
    """`text` with each block named in `contents` made of that content (the others kept)."""
    blocks(text, where)
    return _BLOCK.sub(
        lambda m: (
            f"<!-- findings:{m['name']} -->\n{contents[m['name']]}<!-- /findings:{m['name']} -->"
            if m["name"] in contents
            else m.group(0)
        ),
        text,
    )


def findings_blocks(bundles: Sequence[Bundle]) -> dict[str, str]:
    """Every block FINDINGS.md may hold, by name."""
    contents = {"summary": summary_table(bundles), "matrix": matrix_table(bundles)}
    contents.update({f"runs:{b.id}": runs_table(b) for b in bundles if b.runs})
    return contents


def disagreements(text: str, contents: Mapping[str, str], required: Sequence[str], where: str) -> list[str]:
    """Where a document's blocks differ from what the bundles make: a block that is required and
    missing, or whose text is not the generated one (its first differing line named)."""
    found = blocks(text, where)
    problems = [
        f"{where}: no block findings:{name} (add its markers)" for name in required if name not in found
    ]
    for name, body in found.items():
        if name not in contents:
            problems.append(f"{where}: block findings:{name} names no bundle with runs")
            continue
        if body != contents[name]:
            line = text[: text.index(f"<!-- findings:{name} -->")].count("\n") + 2
            have, want = body.splitlines(), contents[name].splitlines()
            n = next(
                (i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b),
                min(len(have), len(want)),
            )
            expected = want[n] if n < len(want) else "(the end of the block)"
            problems.append(
                f"{where}:{line + n}: block findings:{name} is not what the bundles make "
                f"(`kchaos findings tables --write`); the bundles say: {expected!r}"
            )
    return problems


def check_sections(bundles: Sequence[Bundle], findings_text: str, where: str) -> list[str]:
    """Every bundle's `section` is a heading of FINDINGS.md."""
    known = anchors(findings_text)
    return [
        f"{b.path}/finding.yaml: section {b.finding.section!r} is no heading of {where}"
        for b in bundles
        if b.finding.section not in known
    ]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None


def check_documents(bundles: Sequence[Bundle], findings: Path, readme: Path) -> list[str]:
    """Every way FINDINGS.md, README.md and the bundles' counts.md disagree with the bundles."""
    findings_text = _read(findings)
    problems = check_sections(bundles, findings_text, str(findings))
    problems += disagreements(findings_text, findings_blocks(bundles), ["summary", "matrix"], str(findings))
    problems += disagreements(_read(readme), {"readme": readme_table(bundles)}, ["readme"], str(readme))
    for b in bundles:
        counts = b.path / COUNTS
        if not counts.is_file() or _read(counts) != counts_md(b):
            problems.append(f"{counts}: not what the bundle makes (`kchaos findings tables --write`)")
    return problems


def write_documents(bundles: Sequence[Bundle], findings: Path, readme: Path) -> list[Path]:
    """Rewrite the generated blocks of FINDINGS.md and README.md and every bundle's counts.md;
    the files written."""
    written = []
    for path, contents in ((findings, findings_blocks(bundles)), (readme, {"readme": readme_table(bundles)})):
        text = _read(path)
        new = replace_blocks(text, contents, str(path))
        if new != text:
            write_atomic(path.parent, path.name, new)
            written.append(path)
    for b in bundles:
        counts = b.path / COUNTS
        text = counts_md(b)
        if not counts.is_file() or _read(counts) != text:
            write_atomic(b.path, COUNTS, text)
            written.append(counts)
    return written
