"""The fixtures of the refresh tests."""

import pytest

import ivm
from tests.support.cdf import CDF
from tests.support.helpers import TOTALS


@pytest.fixture
def totals(spark, fresh_db):
    """The view ``totals`` (:data:`~tests.support.helpers.TOTALS`) over a table ``r`` of
    three rows in two groups; the fresh database's name."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20), (2, 5)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    return fresh_db
