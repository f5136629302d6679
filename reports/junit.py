"""`report/junit.xml`: one JUnit test case per guarantee and per scenario expectation, for CI dashboards.

A violated guarantee is a <failure> carrying the checker's reason and anomaly evidence; a promised
guarantee the checker could not judge (incomplete final read) is an <error>; a guarantee the
configuration does not promise, or one the run did not exercise (no case to break it on), is
<skipped>. An expectation (`expect[acks=all lost == 0]`) that failed is a <failure>, one that could
not be judged an <error>. The document follows the Jenkins JUnit schema.
"""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from datetime import datetime

from contract.anomaly_kinds import BY_ID, GROUP_BY_ID
from contract.checked_run import NOT_EXERCISED, Anomalies, Run, Verdict
from reports import explain

MAX_EVIDENCE = 20


def evidence(g: Verdict, anomalies: tuple[Anomalies, ...]) -> str:
    lines = [g.reason] + ([f"promised by {g.promised_by}"] if g.promised_by else []) + [""]
    kinds = {**BY_ID, **GROUP_BY_ID}
    for a in anomalies:
        if kinds[a.kind].guarantee != g.id or not a.count:  # the kinds that decide this guarantee
            continue
        mine = [e for e in a.examples if not g.topic or e.get("topic") in (None, g.topic)]
        lines.append(f"{a.count} {a.kind} in the run ({explain.anomaly_explanation(a.kind)})")
        lines += [json.dumps(e, sort_keys=True) for e in mine[:MAX_EVIDENCE]]
        if len(mine) > MAX_EVIDENCE or a.capped:
            lines.append("... more in report/index.html and check/result.json")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def not_exercised_message(g: Verdict) -> str:
    """Why a promised guarantee is a skipped test case: the run gave it nothing to break on."""
    cases = f"not exercised: {g.exercised.count:,} {g.exercised.what}" if g.exercised else "not exercised"
    return f"{cases} ({g.reason})" if g.reason else cases


def render_junit(run: Run) -> str:
    info, result = run.info, run.result
    suites = ET.Element("testsuites", name="kafka-chaos")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"kchaos.{info.scenario}",
        id="0",
        package="kchaos",
        hostname="localhost",
        time=f"{run.end_ns / 1e9:.3f}",
    )
    with contextlib.suppress(ValueError):  # run.json is free text: leave a bad time out
        suite.set("timestamp", datetime.fromisoformat(info.started_at).strftime("%Y-%m-%dT%H:%M:%S"))
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run_id", info.run_id),
        ("seed", str(info.seed)),
        ("kafka_version", info.kafka_version),
        ("complete", str(result.complete).lower()),
        ("valid", str(result.valid).lower()),
    ):
        ET.SubElement(props, "property", name=name, value=value)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    # (guarantee, case name, class name, the anomalies that may be its evidence)
    cases = [
        (g, f"{g.id}[{g.topic}]" if g.topic else g.id, f"acks-{g.acks or 'any'}", result.anomalies)
        for g in result.guarantees
    ]
    cases += [
        (g, f"{g.id}[{group.name}]", f"group-{group.name}", group.anomalies)
        for group in result.groups
        for g in group.guarantees
    ]
    for g, name, classname, anomalies in cases:
        case = ET.SubElement(
            suite, "testcase", name=name, classname=f"kchaos.{info.scenario}.{classname}", time="0"
        )
        counts["tests"] += 1
        if g.verdict == "violated":
            counts["failures"] += 1
            node = ET.SubElement(case, "failure", message=g.reason or g.promise, type="violated")
            node.text = evidence(g, anomalies)
        elif g.verdict == NOT_EXERCISED:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=not_exercised_message(g))
        elif g.verdict == "not-promised" or (g.verdict == "unknown" and not g.promised):
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=g.reason or explain.VERDICTS[g.verdict])
        elif g.verdict != "held":  # promised but not judged, or a verdict this version does not know
            counts["errors"] += 1
            node = ET.SubElement(case, "error", message=g.reason or f"verdict {g.verdict}", type=g.verdict)
            node.text = explain.VERDICTS.get(g.verdict, "the checker gave no usable verdict") + "\n"
    for e in run.expectations:
        case = ET.SubElement(
            suite, "testcase", name=f"expect[{e.text}]", classname=f"kchaos.{info.scenario}.expect", time="0"
        )
        counts["tests"] += 1
        if e.verdict == "failed":
            counts["failures"] += 1
            why = f"; {e.why}" if e.why else ""
            ET.SubElement(case, "failure", message=f"observed {e.observed}{why}", type="failed")
        elif e.verdict != "held":
            counts["errors"] += 1
            ET.SubElement(case, "error", message=e.why or f"observed {e.observed}", type=e.verdict)
    for key, count in counts.items():
        suite.set(key, str(count))
        if key != "skipped":
            suites.set(key, str(count))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
