"""The nightly chaos job of docs/CI.md, its commands run here on a tiny scale (not the CI systems):
one cell of the matrix (`scripts/nightly.sh run`: `baseline` for 10 s on the Java client, on a real
cluster, checked on Spark) and the carry into the history with its index page (`scripts/nightly.sh
index`), over two nights and a run too old to keep. Both recipes call exactly these commands."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.history import REPORT, RESULT, RUN_JSON, WRITES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "nightly.sh"
KCHAOS = Path(sys.executable).with_name("kchaos")
RELEASE = "3.9.2"
"""The Java client cannot talk to the suite's 0.9 brokers."""


def _recipes() -> dict[str, dict[str, object]]:
    """The YAML blocks of docs/CI.md, by the heading they are under."""
    text = (ROOT / "docs" / "CI.md").read_text()
    blocks: dict[str, dict[str, object]] = {}
    for heading, body in re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M):
        for block in re.findall(r"```yaml\n(.*?)```", body, flags=re.S):
            blocks[heading.strip()] = yaml.safe_load(block)
    return blocks


def test_both_recipes_parse_and_call_the_nightly_script_for_a_release_x_client_matrix() -> None:
    recipes = _recipes()
    assert set(recipes) == {"GitHub Actions", "GitLab CI"}
    github, gitlab = recipes["GitHub Actions"], recipes["GitLab CI"]
    cell = github["jobs"]["chaos"]  # type: ignore[index]
    assert cell["strategy"]["matrix"]["client"] == ["librdkafka", "java"]
    steps = " ".join(str(step.get("run", "")) for step in cell["steps"])
    assert "scripts/nightly.sh run" in steps
    assert "scripts/nightly.sh index" in " ".join(
        str(s.get("run", "")) for s in github["jobs"]["index"]["steps"]
    )  # type: ignore[index]
    assert gitlab["chaos"]["parallel"]["matrix"][0]["CLIENT"] == ["librdkafka", "java"]  # type: ignore[index]
    assert "scripts/nightly.sh run" in " ".join(gitlab[".chaos-cell"]["script"])  # type: ignore[index]
    assert gitlab[".chaos-cell"]["allow_failure"] == {"exit_codes": [2, 3]}  # type: ignore[index]
    assert "scripts/nightly.sh index" in " ".join(gitlab["index"]["script"])  # type: ignore[index]
    # The releases both matrices name are the newest of their lines, as the nightly list has them.
    nightly = (ROOT / "scripts" / "nightly-releases.txt").read_text().split()
    assert set(cell["strategy"]["matrix"]["kafka"]) <= set(nightly)


def _nightly(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env={**os.environ, "KCHAOS": str(KCHAOS), **env},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


@pytest.mark.docker
@pytest.mark.spark
def test_a_night_runs_a_cell_and_carries_it_into_the_history_and_its_index(tmp_path: Path) -> None:
    tonight, history = tmp_path / "tonight", tmp_path / "history"
    done = _nightly("run", RELEASE, "java", str(tonight), SCENARIOS="baseline", SEEDS="1", DURATION="10")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]  # every promise held
    (run,) = [p for p in tonight.iterdir() if p.is_dir()]
    assert (run / "report" / "junit.xml").is_file()  # what the CI publishes
    assert '"library": "kafka-clients"' in (run / RUN_JSON).read_text()
    # Another night's run (the same, under a later date), unpacked deeper as a CI system may; and
    # one in the history from long ago, past KEEP_DAYS.
    later = "20990101" + run.name[8:]
    shutil.copytree(run, tonight / "runs-3.9.2-java" / later)
    shutil.copytree(run, history / ("20000101" + run.name[8:]))
    done = _nightly("index", str(history), str(tonight), KEEP_DAYS="30")
    assert done.returncode == 0, done.stderr
    kept = sorted(p.name for p in history.iterdir() if p.is_dir())
    assert kept == sorted([run.name, later])  # tonight's two; the stale one dropped
    slim = history / run.name
    assert (slim / RESULT).is_file() and (slim / REPORT).is_file() and not (slim / WRITES).exists()
    page = (history / "index.html").read_text()
    assert page.count('class="run"') == 2 and "kafka-clients 3.9.2" in page
    tips = re.findall(r'data-tip="([^"]*)"', page)
    assert any(t.startswith(run.name) for t in tips) and any(t.startswith(later) for t in tips)  # a trend
    # The report was not rendered again (kept newer than its check), and the index is idempotent.
    assert _nightly("index", str(history), str(tonight)).returncode == 0
