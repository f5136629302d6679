"""One local SparkSession for the whole checker test session (starting Spark takes seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from checkers.session import get_spark


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark("local[2]", app_name="kchaos-checker-tests", shuffle_partitions=2)
    yield session
    session.stop()
