"""README.md is for users: under 10,000 characters, and its scenario example is a valid scenario."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from kchaos.scenario import parse_scenario

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8")) < 10_000


def test_the_readme_scenario_parses() -> None:
    (block,) = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    scenario = parse_scenario(yaml.safe_load(block), "README.md")
    assert scenario.name == "my-experiment"
