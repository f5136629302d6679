"""The nightly chaos job of docs/CI.md: both recipes parse and call `scripts/nightly.sh` for a
release x client matrix. The script's commands themselves run on a real cluster, on a small scale,
in tests/scenarios/test_clients_real.py (a night on mixed clients, carried into the history)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

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
