"""The session's py4j view looks classes and static methods up once, and nothing else changes."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from checkers.jvm_view import KeptLookupsView

pytestmark = pytest.mark.spark


def test_classes_and_static_methods_are_looked_up_once(spark: SparkSession) -> None:
    jvm = SparkContext._jvm
    assert isinstance(jvm, KeptLookupsView)
    assert spark.range(3).select("id", F.col("id") + F.lit(1)).collect()[-1] == (2, 3)
    # What PySpark just used (by both names it gives the class) is kept: the same objects, no JVM
    # round trip.
    assert jvm.__dict__["functions"] is jvm.functions
    assert "org.apache.spark.sql.functions" in jvm.__dict__
    assert jvm.functions.col is jvm.functions.col
    assert jvm.PythonUtils.toSeq is jvm.PythonUtils.toSeq


def test_fields_are_read_each_time_and_misses_still_fail(spark: SparkSession) -> None:
    jvm = SparkContext._jvm
    assert jvm.Integer.MAX_VALUE == 2**31 - 1
    assert "MAX_VALUE" not in jvm.Integer.__dict__
    with pytest.raises(Py4JError, match="does not exist"):
        jvm.functions.no_such_function  # noqa: B018
    assert "no_such_function" not in jvm.functions.__dict__
