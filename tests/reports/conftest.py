"""Fixtures: handwritten run directories (see report_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_runs import add_transactions, make_failing, make_passing, make_plain_run, make_transaction_run


@pytest.fixture
def passing_run(tmp_path: Path) -> Path:
    return make_passing(tmp_path / "20261120-020000-leader-kill")


@pytest.fixture
def failing_run(tmp_path: Path) -> Path:
    return make_failing(tmp_path / "20261121-020000-leader-kill")


@pytest.fixture
def transactional_run(tmp_path: Path) -> Path:
    return add_transactions(make_failing(tmp_path / "20261122-020000-txn-leader-kill"))


@pytest.fixture
def plain_run(tmp_path: Path) -> Path:
    """Three plain topics, each with the guarantees the checker judges and their cases."""
    return make_plain_run(tmp_path / "20261120-030000-leader-kill")


@pytest.fixture
def transaction_run(tmp_path: Path) -> Path:
    """Transactional topics, an exactly-once pipeline and two consumer groups, one the control."""
    return make_transaction_run(tmp_path / "20261122-030000-txn-pipeline")
